"""Record LLM-judge answers into a run's ``judge/`` cassettes (``evaltape judge``): each
judged metric builds its requests as ``grade`` will; requests with fewer than ``samples``
answers are sent inside ``judge/<case_id>__t<trial>.jsonl`` in vcrpy's ``new_episodes``
mode, so reruns send only what is missing.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Sequence

import anthropic
import orjson

from evaltape.grader.errors import UsageError
from evaltape.grader.judge import DEFAULT_JUDGE_MODEL, JUDGE_DIR, JudgeStore, request_key
from evaltape.grader.metrics import BUILTIN
from evaltape.grader.model import EpisodeContext
from evaltape.grader.io.run import open_run

from .cassette import cassette_name, make_vcr


def judged_metrics(names: Sequence[str] | None, cases: Sequence[Any] = (),
                   config: Any = None, dataset_path: Any = None) -> list[Any]:
    """The judged metrics named (default: every built-in judged metric and every judge the
    configuration or the cases define), resolved as ``grade`` resolves them
    (:func:`evaltape.grader.api.resolve_metrics`).

    Raises:
        UsageError: an unknown name, or a named metric that is not judged.
        BadInputError: a bad configuration, or a judge named like a built-in metric.
    """
    from evaltape.grader.api import load_config_table, resolve_metrics, user_judges
    if not names:
        table, where = load_config_table(config)
        names = [n for n, cls in sorted(BUILTIN.items()) if cls.judged]
        names += list(user_judges(cases, table, where, dataset_path))
    metrics = resolve_metrics(list(names), cases, config, dataset_path=dataset_path)
    plain = [m.name for m in metrics if not m.judged]
    if plain:
        raise UsageError(f"not judged metric(s): {', '.join(plain)}; judged ones: "
                         + ", ".join(n for n, c in sorted(BUILTIN.items())
                                     if c.judged))
    return metrics


def drop_failed(cassette: Any) -> int:
    """Remove interactions whose response is not an HTTP 200 JSON message, so a rerun sends
    those requests again instead of replaying a failure. Returns how many were removed."""
    keep = []
    for req, resp in cassette.data:
        ok = (resp.get("status") or {}).get("code") == 200
        body = (resp.get("body") or {}).get("string")
        if ok:
            try:
                ok = isinstance(orjson.loads(body), dict)
            except (orjson.JSONDecodeError, TypeError):
                ok = False
        if ok:
            keep.append((req, resp))
    removed = len(cassette.data) - len(keep)
    if removed:
        cassette.data[:] = keep
        cassette.dirty = True
    return removed


def _all_used(cassette: Any) -> None:
    """Count every answer in the cassette as used, so the next request goes to the judge
    even when an identical one was answered before (earlier runs, or the sample just taken):
    N samples are N live answers. The answers stay in the cassette; new ones are appended."""
    for i in range(len(cassette.data)):
        cassette.play_counts[i] = max(cassette.play_counts[i], 1)


def judge_run(run: str, *, metric_names: Sequence[str] | None = None,
              model: str | None = None, base_url: str | None = None, samples: int = 1,
              dataset: str | None = None, max_retries: int = 4,
              progress: Callable[[dict], None] | None = None,
              config: Any = None) -> dict[str, int]:
    """Record the missing judge answers of ``run`` for ``metric_names`` (default: every judged
    metric) with judge ``model`` (not part of the lookup key), ``samples`` answers per request;
    ``config`` may define user judges.

    Returns:
        ``{"requests", "complete", "sent", "errors"}`` counts.

    Raises:
        UsageError: ``samples`` < 1, no key and no base URL, or bad metric names.
        BadInputError: bad run files, dataset or configuration.
    """
    if samples < 1:
        raise UsageError("--judge-samples must be at least 1")
    opened = open_run(run, dataset)
    metrics = judged_metrics(metric_names, opened.cases, config, opened.dataset_path)
    api_key = os.environ.get("ANTHROPIC_API_KEY")
    base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL")
    if not api_key and not base_url:
        raise UsageError("no judge to talk to: set ANTHROPIC_API_KEY, or pass --base-url "
                         "(or set ANTHROPIC_BASE_URL) for a Messages-API server")
    from .record import sdk_client
    from .runfolder.options import check_base_url
    check_base_url(base_url)
    store = JudgeStore.load(opened.root)
    client = sdk_client(base_url, api_key, max_retries)
    vcr = make_vcr("new_episodes")
    out_dir = Path(opened.root) / JUDGE_DIR
    counts = {"requests": 0, "complete": 0, "sent": 0, "errors": 0}
    for trace, case in opened.episodes():
        ctx = EpisodeContext(trace=trace, case=case)
        unique: dict[str, dict] = {}
        for m in metrics:
            for req in m.requests(ctx, model or DEFAULT_JUDGE_MODEL):
                unique.setdefault(request_key(req), req)
        counts["requests"] += len(unique)
        todo = [r for r in unique.values() if store.count(r) < samples]
        counts["complete"] += len(unique) - len(todo)
        if not todo:
            continue
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / cassette_name(trace.case_id, trace.trial)
        with vcr.use_cassette(str(path)) as cassette:
            drop_failed(cassette)  # failed answers of an earlier run are sent again
            for req in todo:
                for _ in range(samples - store.count(req)):  # only the missing answers
                    _all_used(cassette)
                    try:
                        client.messages.create(**req)
                    except (anthropic.APIError, ValueError) as e:  # ValueError: a cut-off body
                        counts["errors"] += 1
                        counts.setdefault("first_error", f"{type(e).__name__}: {e}"[:200])
                        break
                    counts["sent"] += 1
            drop_failed(cassette)  # only HTTP-200 JSON answers are kept
        if progress:
            progress({"case_id": trace.case_id, "trial": trace.trial, **counts})
    return counts
