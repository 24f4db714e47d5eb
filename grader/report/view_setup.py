"""A run's setup (what was recorded, how it was graded) as rows, and two runs' setups side
by side, for the page of ``evaltape view`` and ``evaltape diff``."""
from __future__ import annotations

import json
from typing import Any, Mapping

from evaltape.grader.report.common import gating, threshold_text
from evaltape.grader.report.view_source import ViewSource
from evaltape.grader.report.view_text import text


def setup_rows(source: ViewSource) -> list[list[str]]:
    """The run's setup as ``[[section, key, value], ...]``: what was recorded (agent,
    model, dataset, trials, prompt and tool hashes, versions, the manifest's extras) and
    how it was graded (evaltape's version, the configuration's hash, each metric's
    version and arguments, thresholds and gating metrics)."""
    r = source.report
    rows: list[list[str]] = []

    def add(section: str, key: str, value: Any) -> None:
        if value is None or value == "" or value == [] or value == {}:
            return
        if not isinstance(value, str):
            value = json.dumps(value, sort_keys=True, ensure_ascii=False)
        rows.append([section, key, text(value, 4000)])

    add("run", "name", r.run.name)
    add("run", "path", r.run.path)
    add("run", "agent", r.run.agent)
    add("run", "model", r.run.model)
    add("run", "model note", r.run.model_note)
    man = source.run.manifest if source.run is not None else {}
    ds = man.get("dataset") if isinstance(man.get("dataset"), Mapping) else {}
    add("dataset", "path", ds.get("path") if source.run is None
        else str(source.run.dataset_path))
    add("dataset", "inputs sha256", r.run.inputs_sha256)
    if source.run is not None:
        add("dataset", "cases", str(len(source.run.cases)))
    add("recording", "recorded at", man.get("created_at"))
    add("recording", "trials", None if man.get("trials") is None else str(man.get("trials")))
    add("recording", "stream", None if man.get("stream") is None else str(man.get("stream")))
    add("recording", "server", man.get("base_url_host"))
    add("recording", "system prompt sha256", man.get("system_prompt_sha256"))
    add("recording", "tools sha256", man.get("tools_sha256"))
    add("recording", "stand-in scripts", man.get("standin_scripts"))
    cmd = man.get("command_line")
    if isinstance(cmd, list):
        add("recording", "command", " ".join(str(x) for x in cmd))
    for k, v in sorted((man.get("versions") or {}).items()) if isinstance(
            man.get("versions"), Mapping) else ():
        add("recording", f"version of {k}", str(v))
    for k, v in sorted((man.get("extra") or {}).items()) if isinstance(
            man.get("extra"), Mapping) else ():
        add("recording", str(k), v)
    add("grading", "evaltape", r.grader.version)
    add("grading", "config sha256", r.grader.config_sha256)
    lower = r.lower_is_better
    v = r.summary.verdict if isinstance(r.summary.verdict, Mapping) else {}
    gates = sorted(gating(r.summary)) if isinstance(v.get("gate"), list) else None
    if gates is not None and not gates:
        add("grading", "gating metrics", "none (the outcome checks alone)")
    specs = {s["name"]: s for s in r.grader.metric_specs
             if isinstance(s, Mapping) and isinstance(s.get("name"), str)}
    thresholds = r.summary.thresholds or {}
    for name in r.grader.metrics:
        spec = specs.get(name) or {}
        parts = [] if spec.get("version") is None else [f"version {spec.get('version')}"]
        if spec.get("args"):
            parts.append("arguments " + json.dumps(spec["args"], sort_keys=True,
                                                   ensure_ascii=False))
        if name in thresholds:
            parts.append("threshold " + threshold_text(thresholds[name], name in lower))
        if gates is not None:
            parts.append("gates the verdict" if name in gates else "informational")
        add("metrics", name, "; ".join(parts) or "graded")
    return rows


def setup_comparison(old: ViewSource, new: ViewSource) -> list[list[Any]]:
    """The two runs' setups side by side, as the page's Compare view shows them:
    ``[[section, key, before, after, changed], ...]`` over the rows of either
    (:func:`setup_rows`), the run's name and path left out (they always differ).
    ``evaltape diff`` prints the changed rows (:func:`setup_changes`)."""
    setup_a = {(s, k): v for s, k, v in setup_rows(old)}
    setup_b = {(s, k): v for s, k, v in setup_rows(new)}
    return [[s, k, setup_a.get((s, k)), setup_b.get((s, k)),
             setup_a.get((s, k)) != setup_b.get((s, k))]
            for s, k in dict.fromkeys([*setup_a, *setup_b])
            if k not in ("name", "path") or s != "run"]


def setup_changes(old: ViewSource, new: ViewSource) -> list[str]:
    """Every setup row that differs between the two runs (:func:`setup_comparison`), in
    words: ``recording stand-in scripts: a.json → b.json`` (``(none)`` for a side
    without the row)."""
    return [f"{s} {k}: {'(none)' if a is None else a} → {'(none)' if b is None else b}"
            for s, k, a, b, changed in setup_comparison(old, new) if changed]
