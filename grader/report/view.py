"""The data of ``evaltape view``'s page: one or two graded runs as JSON chunks, loaded when
needed after a small ``meta`` object: ``r<R>-cases`` (a row per case), ``r<R>-index-<K>``
(:func:`~evaltape.grader.report.view_rows.index_row` rows, loaded at once),
``r<R>-text-<K>`` (inputs and answers, cut), ``r<R>-ep-<K>`` (an episode's whole detail)
and ``compare`` (:mod:`~evaltape.grader.report.view_compare`). Recorded strings go through
:func:`evaltape.grader.report.view_text.text`.
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

from evaltape.grader.report.common import (gate_failures, gating, k_coverage, threshold_text,
                                           verdict_lines)
from evaltape.grader.report.view_compare import compare_data
from evaltape.grader.report.view_conversation import TURN_LIMIT
from evaltape.grader.report.view_episode import episode_detail
from evaltape.grader.report.view_rows import index_row
from evaltape.grader.report.view_setup import setup_rows
from evaltape.grader.report.view_source import ViewSource
from evaltape.grader.report.view_text import DETAIL_TEXT_LIMIT, ID_LIMIT, num, text
from evaltape.grader.report.view_totals import RunTotals, breakdowns, usage_block
from evaltape.grader.stats.intervals import cluster_mean

VIEW_SCHEMA = "evaltape.view/1"
#: Episodes per index chunk (loaded at once when the page opens).
INDEX_CHUNK = 5000
#: Episodes per search-text chunk.
TEXT_CHUNK = 500
#: Episodes per detail chunk (one is loaded when an episode is opened).
DETAIL_CHUNK = 100
#: Characters of an input or an answer kept for the list and the search.
TEXT_LIMIT = 2000
#: Episodes of one run the page lists (dataset order, then trial); the overview's numbers
#: and the comparison cover every episode. 250,000 index rows are about 20 MB of memory in
#: the browser and open in a few seconds (docs/view.md has the measurements).
LIST_LIMIT = 250_000


class ViewBuilder:
    """Builds the page's chunks for one or two runs (:func:`build_view` drives it).

    The first source is the baseline when two are given (``evaltape view OLD NEW``); the
    page opens on the last.
    """

    def __init__(self, sources: Sequence[ViewSource], prices: Mapping[str, Any] | None = None
                 ) -> None:
        from evaltape.grader.metrics.efficiency import DEFAULT_PRICES
        self.sources = list(sources)
        self.prices = DEFAULT_PRICES if prices is None else prices
        self.meta: dict[str, Any] = {}
        self._keys: list[dict[tuple[str, int], int]] = []
        self._case_ids: list[list[str]] = []
        self._counts: list[dict[int, list[int]]] = []

    def _order(self, source: ViewSource) -> tuple[list[int], list[str]]:
        """The report's episodes in page order (dataset order, then trial) and the case
        ids in that order."""
        eps = source.report.episodes
        rank: dict[str, int] = {}
        if source.run is not None:
            for c in source.run.cases:
                rank.setdefault(c.id, len(rank))
        keys = []
        for i, ep in enumerate(eps):
            if ep.case_id not in rank:
                rank[ep.case_id] = len(rank)
            keys.append((rank[ep.case_id], ep.trial, i))
        keys.sort()
        seen: dict[str, int] = {}
        case_ids: list[str] = []
        for r, _t, i in keys:
            cid = eps[i].case_id
            if cid not in seen:
                seen[cid] = len(case_ids)
                case_ids.append(cid)
        return [i for _r, _t, i in keys], case_ids

    def chunks(self) -> Iterator[tuple[str, Any]]:
        """``(chunk name, JSON value)`` of every chunk; :attr:`meta` is complete once the
        iterator is exhausted."""
        runs_meta = []
        for r, source in enumerate(self.sources):
            yield from self._run_chunks(r, source, runs_meta)
        compare = None
        if len(self.sources) == 2:
            yield "compare", self._compare()
            compare = "compare"
        self.meta = {"schema": VIEW_SCHEMA, "runs": runs_meta, "compare": compare,
                     "limits": {"index_chunk": INDEX_CHUNK, "text_chunk": TEXT_CHUNK,
                                "detail_chunk": DETAIL_CHUNK, "text_limit": TEXT_LIMIT,
                                "detail_text_limit": DETAIL_TEXT_LIMIT,
                                "turn_limit": TURN_LIMIT, "list_limit": LIST_LIMIT}}

    def _run_chunks(self, r: int, source: ViewSource, runs_meta: list) -> Iterator[
            tuple[str, Any]]:
        from evaltape.grader.metrics.efficiency import cost_usd
        report = source.report
        names = list(report.grader.metrics)
        order, case_ids = self._order(source)
        by_id = source.run.case_by_id if source.run is not None else {}
        tags = sorted({t for c in by_id.values() for t in c.tags})
        diffs = sorted({c.difficulty for c in by_id.values() if c.difficulty})
        tag_ix = {t: i for i, t in enumerate(tags)}
        diff_ix = {d: i for i, d in enumerate(diffs)}
        pos_of = {cid: p for p, cid in enumerate(case_ids)}
        acc = RunTotals(names, gating(report.summary))
        index: list[list[Any]] = []
        texts: list[list[Any]] = []
        details: list[dict[str, Any]] = []
        names_out = {"index": [], "text": [], "ep": []}
        case_rows: list[list[Any]] = []
        keys: dict[tuple[str, int], int] = {}
        eps = report.episodes
        for k, i in enumerate(order):
            ep = eps[i]
            pos = pos_of[ep.case_id]
            if k >= LIST_LIMIT:  # counted in the overview, not listed
                found = None if source.traces is None else source.traces.get(ep.case_id,
                                                                             ep.trial)
                trace = None if found is None else found[0]
                acc.add(pos, ep, trace, None if trace is None else cost_usd(trace, self.prices),
                        None if found is None else found[1])
                continue
            if pos == len(case_rows):
                case = by_id.get(ep.case_id)
                case_rows.append([text(ep.case_id, ID_LIMIT),
                                  [] if case is None else [tag_ix[t] for t in case.tags],
                                  -1 if case is None or not case.difficulty
                                  else diff_ix[case.difficulty], k, 0])
            case_rows[pos][4] += 1
            keys[(ep.case_id, ep.trial)] = k
            found = None if source.traces is None else source.traces.get(ep.case_id, ep.trial)
            trace = None if found is None else found[0]
            cost = None if trace is None else cost_usd(trace, self.prices)
            acc.add(pos, ep, trace, cost, None if found is None else found[1])
            index.append(index_row(pos, ep, names, trace, cost))
            case = by_id.get(ep.case_id)
            texts.append([None if trace is None and case is None else
                          text(trace.input if trace is not None else case.input, TEXT_LIMIT),
                          None if trace is None or trace.final_response is None
                          else text(trace.final_response, TEXT_LIMIT)])
            details.append(episode_detail(ep, report, case, found, source.run))
            for kind, buf, size in (("index", index, INDEX_CHUNK), ("text", texts, TEXT_CHUNK),
                                    ("ep", details, DETAIL_CHUNK)):
                if len(buf) == size:
                    name = f"r{r}-{kind}-{len(names_out[kind])}"
                    names_out[kind].append(name)
                    yield name, list(buf)
                    buf.clear()
        for kind, buf in (("index", index), ("text", texts), ("ep", details)):
            if buf:
                name = f"r{r}-{kind}-{len(names_out[kind])}"
                names_out[kind].append(name)
                yield name, list(buf)
        if source.traces is not None:
            source.traces.close()
        yield f"r{r}-cases", case_rows
        self._keys.append(keys)
        self._case_ids.append(case_ids)
        self._counts.append(acc.case_counts)
        runs_meta.append(self._run_meta(r, source, names, case_ids, acc, tags, diffs,
                                        names_out, len(order)))

    def _run_meta(self, r: int, source: ViewSource, names: list[str], case_ids: list[str],
                  acc: RunTotals, tags: list[str], diffs: list[str],
                  chunk_names: dict[str, list[str]], episodes: int) -> dict[str, Any]:
        report = source.report
        s = report.summary
        lower = report.lower_is_better
        gates = gating(s)
        failed = gate_failures(s)
        metrics = []
        for n in names:
            ci = cluster_mean([tuple(v) for v in acc.scores.get(n, {}).values()])
            thr = (s.thresholds or {}).get(n)
            metrics.append({
                "name": n, "mean": s.metrics.get(n), "ci": None if ci is None else
                [ci["low"], ci["high"], ci["n"]], "threshold": threshold_text(thr, n in lower),
                "thr": num(thr) if not isinstance(thr, Mapping) else None,
                "lower": n in lower, "gate": n in gates,
                "failed": failed.get(n) if n in gates else None,
                "skipped": s.metrics_skipped.get(n, 0),
                "errors": (s.metrics_errors or {}).get(n, 0), "fails": acc.fails.get(n, 0)})
        ci = s.pass_rate_ci95 or {}
        label = source.label or report.run.name or report.run.path or f"run {r + 1}"
        return {
            "label": text(label, 300), "source": text(source.source or report.run.path, 1000),
            "note": None if source.note is None else text(source.note, 4000),
            "agent": None if report.run.agent is None else text(report.run.agent, 300),
            "model": None if report.run.model is None else text(report.run.model, 300),
            "model_note": None if report.run.model_note is None
            else text(report.run.model_note, 1000),
            "episodes": episodes, "listed": min(episodes, LIST_LIMIT),
            "cases": len(case_ids), "trials": s.trials,
            "reasons": sorted(([k, v] for k, v in acc.reasons.items()),
                              key=lambda kv: (-kv[1], kv[0])),
            "has_traces": source.traces is not None, "has_dataset": source.run is not None,
            "metrics": metrics,
            "summary": {
                "cases": s.cases, "trials": s.trials, "episodes": s.episodes,
                "passed": s.passed, "pass_rate": s.pass_rate,
                "exact_tool_match_rate": s.exact_tool_match_rate, "avg_steps": s.avg_steps,
                "ci": [ci.get("low"), ci.get("high"), ci.get("n"), ci.get("method")]
                if ci.get("low") is not None else None,
                "pass_at_k": dict(s.pass_at_k or {}), "pass_hat_k": dict(s.pass_hat_k or {}),
                "k_cases": {k: k_coverage(s, k) for k in (s.pass_at_k or {})},
                "infra_failures": s.infra_failures,
                "unrecorded": [text(c, ID_LIMIT) for c in s.unrecorded_cases[:1000]],
                "unrecorded_count": len(s.unrecorded_cases),
                "judge_not_recorded": None if s.judge is None else s.judge.not_recorded,
                "judge_command": None if s.judge is None else text(s.judge.record_command,
                                                                    2000)},
            "verdict_lines": [text(x, 4000) for x in verdict_lines(s, lower)],
            "review": review_view(s.review),
            "setup": setup_rows(source), "usage": usage_block(acc, episodes),
            "breakdowns": breakdowns(source, case_ids, acc, tags, diffs),
            "tags": [text(t, 200) for t in tags], "difficulties": [text(d, 200) for d in diffs],
            "chunks": {"cases": f"r{r}-cases", **chunk_names},
        }

    def _compare(self) -> dict[str, Any]:
        """The ``compare`` chunk: the first source is the baseline, the second the current
        run (see :func:`~evaltape.grader.report.view_compare.compare_data`)."""
        return compare_data(self.sources[0], self.sources[1], self._keys, self._case_ids,
                            self._counts)


def review_view(block: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The overview's review block (``None`` without ``summary.review``): the line and the
    pending human-graded episodes the terminal prints first, and one row per grader with
    its figures as the terminal words them (:func:`~evaltape.grader.reviews.review_rows`)."""
    if not block:
        return None
    from evaltape.grader.reviews import review_headline, review_rows
    head = review_headline(block)
    return {"line": text(head["line"], 4000), "waiting": text(head["waiting"], 4000),
            "human_pending": int(block["human_pending"]),
            "rows": [{k: text(v, 300) if isinstance(v, str) else v for k, v in r.items()}
                     for r in review_rows(block)]}


def build_view(sources: Sequence[ViewSource]) -> ViewBuilder:
    """A :class:`ViewBuilder` for one run, or two (baseline first, then the current run).

    Raises:
        ValueError: no source, or more than two.
    """
    if not 1 <= len(sources) <= 2:
        raise ValueError(f"the page shows one run or two, got {len(sources)}")
    return ViewBuilder(sources)
