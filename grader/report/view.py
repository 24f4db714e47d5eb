"""The data of ``evaltape view``'s page: one or two graded runs as JSON chunks.

The page (:mod:`evaltape.grader.report.view_files` writes it, ``view.js`` draws it) reads a
small ``meta`` object first and every other piece as a *chunk* when it needs it, so a run of
100,000 episodes opens without loading every transcript:

- ``r<R>-cases``: one row per case, ``[id, [tag index...], difficulty index or -1, first
  episode, episodes]`` (a case's episodes are consecutive: dataset order, then trial);
- ``r<R>-index-<K>``: :data:`INDEX_CHUNK` episodes per chunk, one compact row each (see
  :func:`index_row`); loaded when the page opens (filters and sorting need every episode);
- ``r<R>-text-<K>``: :data:`TEXT_CHUNK` episodes' input and final answer, each cut at
  :data:`TEXT_LIMIT` characters: loaded for the rows on screen, and all of them when the
  user searches;
- ``r<R>-ep-<K>``: :data:`DETAIL_CHUNK` episodes' whole detail (conversation, calls,
  expected calls, metric details, grounding's unsupported claims, recorded judge answers):
  loaded when an episode is opened;
- ``compare``: two runs side by side (flips, per-case counts, metric deltas with intervals,
  setup differences), when two runs are given.

Every string from a recording (ids, inputs, answers, tool arguments and results) goes
through :func:`evaltape.grader.report.common.plain` (control characters and bidirectional
overrides shown as U+FFFD, key-shaped strings redacted) and is cut at a stated length; the
page inserts them as text, never as markup.
"""
from __future__ import annotations

import dataclasses
import json
import re
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import orjson

from evaltape.grader.errors import BadInputError
from evaltape.grader.io.jsonfiles import iter_json_lines
from evaltape.grader.io.names import cassette_name
from evaltape.grader.io.run import Run
from evaltape.grader.io.traces import line_digest, parse_trace
from evaltape.grader.matching.calls import compare_values, match_calls
from evaltape.grader.matching.claims import KINDS as CLAIM_KINDS
from evaltape.grader.model import Case, ExpectedCall, ToolCall, Trace
from evaltape.grader.report.common import (gate_failures, gating, k_coverage, plain, threshold_text,
                                           verdict_lines)
from evaltape.grader.results import EpisodeResult, Report
from evaltape.grader.stats.intervals import cluster_delta, cluster_mean, nearest_rank
from evaltape.grader.stats.trials import wilson_ci

VIEW_SCHEMA = "evaltape.view/1"
#: Episodes per index chunk (loaded at once when the page opens).
INDEX_CHUNK = 5000
#: Episodes per search-text chunk.
TEXT_CHUNK = 500
#: Episodes per detail chunk (one is loaded when an episode is opened).
DETAIL_CHUNK = 100
#: Characters of an input or an answer kept for the list and the search.
TEXT_LIMIT = 2000
#: Characters of one text (a message, a tool result, an answer) kept in an episode's detail.
DETAIL_TEXT_LIMIT = 100_000
#: Messages of one conversation shown; the rest are counted.
TURN_LIMIT = 400
#: Characters of a case id shown (the id itself stays the key).
ID_LIMIT = 300
#: Distinct cases, flips or labels listed in the comparison (the counts are always given).
COMPARE_LIST_LIMIT = 50_000
#: Episodes of one run the page lists (dataset order, then trial); the overview's numbers
#: and the comparison cover every episode. 250,000 index rows are about 20 MB of memory in
#: the browser and open in a few seconds (docs/view.md has the measurements).
LIST_LIMIT = 250_000


@dataclass
class TraceIndex:
    """Where each episode's trace line is in a run's ``traces.jsonl``, for reading them in
    any order (the report's order is the dataset's; the file's is the recording's).

    Build it with :func:`index_traces`; :meth:`get` reads and parses one trace.

    Attributes:
        path: the traces file.
        lines: ``{(case_id, trial): 1-based line}``.
        starts: byte offset of each line of the file (index = line − 1).
    """

    path: Path
    lines: dict[tuple[str, int], int]
    starts: array = field(repr=False)
    _fh: Any = field(default=None, repr=False, compare=False)

    def get(self, case_id: str, trial: int) -> tuple[Trace, str, int] | None:
        """``(trace, trace digest, line)`` of one episode, or ``None`` when the run has no
        trace for it. The file stays open between calls (:meth:`close` closes it).

        Raises:
            BadInputError: the line changed since :func:`index_traces` read it and no
                longer parses as a trace (file and line named).
        """
        line = self.lines.get((case_id, trial))
        if line is None:
            return None
        if self._fh is None:
            self._fh = open(self.path, "rb")
        self._fh.seek(self.starts[line - 1])
        raw = self._fh.readline()
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise BadInputError("the line changed since it was read (not JSON now)",
                                path=str(self.path), line=line) from None
        trace = parse_trace(obj, path=str(self.path), line=line)
        return trace, line_digest(raw), line

    def close(self) -> None:
        """Close the traces file (:meth:`get` opens it again when called)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def index_traces(run: Run) -> TraceIndex:
    """Read a run's traces once, checked as ``grade`` checks them (:meth:`Run.episodes`:
    the dataset's cases, no repeated episode, unchanged inputs), and note where each is.

    Raises:
        BadInputError: an invalid trace line, a case the dataset lacks, a repeated
            episode or a changed input (file, line and field named).
    """
    lines = {(t.case_id, t.trial): t.source_line for t, _case in run.episodes()}
    starts = array("Q", [0])
    pos = 0
    with open(run.traces_path, "rb") as fh:
        for raw in fh:
            pos += len(raw)
            starts.append(pos)
    return TraceIndex(Path(run.traces_path), lines, starts)


@dataclass(frozen=True)
class ViewSource:
    """One graded run as the page shows it.

    Attributes:
        report: the graded report (from :func:`evaltape.grade` or ``report.json``).
        run: the opened run (manifest, dataset), or ``None`` when only the report is known.
        traces: where its traces are (:func:`index_traces`), or ``None``: the page then
            shows scores and details without conversations.
        label: the run's name on the page (default: the report's run name).
        source: the path the user gave.
        note: why conversations or the dataset are missing, shown on the page.
    """

    report: Report
    run: Run | None = None
    traces: TraceIndex | None = None
    label: str = ""
    source: str = ""
    note: str | None = None


def text(value: Any, limit: int = DETAIL_TEXT_LIMIT) -> str:
    """A recorded string as the page may show it: line ends as ``\\n``, control characters
    and bidirectional overrides as U+FFFD and key-shaped strings redacted
    (:func:`~evaltape.grader.report.common.plain`), cut after ``limit`` characters with a
    note of how many more there were."""
    s = value if isinstance(value, str) else str(value)
    if "\r" in s:
        s = s.replace("\r\n", "\n").replace("\r", "\n")
    cut = len(s) - limit
    if cut > 0:
        s = s[:limit]
    s = plain(s)
    if cut > 0:
        s += f"\n… [{cut:,} more characters not shown]"
    return s


_PRETTY = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def _json_text(value: Any, limit: int = DETAIL_TEXT_LIMIT) -> str:
    """A JSON value pretty-printed (sorted keys, 2-space indent) for the page (orjson; the
    standard library's writer for what orjson refuses, an integer beyond 64 bits)."""
    try:
        raw = orjson.dumps(value, option=_PRETTY).decode()
    except TypeError:
        try:
            raw = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            raw = repr(value)
    return text(raw, limit)


def _num(value: Any, digits: int = 4) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    return round(float(value), digits)


# --------------------------------------------------------------------------- one episode
#: Outcome reasons (the verdict's first checks) start with one of these; any other failure
#: text is the list of failing gates (``argument_correctness 0.00 < 0.80; ...``).
OUTCOME_PREFIXES = ("infra_error", "no_answer", "wrong_tools", "wrong_answer", "wrong_call",
                    "wrong_state")


def outcome_reason(ep: EpisodeResult) -> str | None:
    """The outcome check that failed (``no_answer:loop_detected``, ``wrong_tools``...), or
    ``None`` when the outcome passed (the episode passed, or only gating metrics failed:
    :mod:`evaltape.grader.stats.verdict` writes those as ``name score < threshold``)."""
    f = ep.failure
    if ep.passed or not f:
        return None
    return f if f.split(":", 1)[0].split(" ", 1)[0] in OUTCOME_PREFIXES else None


def episode_reasons(ep: EpisodeResult, failing_gates: Sequence[str]) -> list[str]:
    """Why an episode failed, as the page groups failures: its outcome reason
    (:func:`outcome_reason`), else ``gate:<metric>`` for each gating metric that failed
    (an episode may fail several), else ``gate``; ``[]`` for a passing episode."""
    if ep.passed:
        return []
    reason = outcome_reason(ep)
    if reason is not None:
        return [reason]
    return [f"gate:{n}" for n in failing_gates] or ["gate"]


def flags(ep: EpisodeResult, names: Sequence[str]) -> str:
    """One letter per metric: ``P`` passes its threshold, ``F`` fails it, ``E`` the metric
    raised, ``-`` a null score (skipped)."""
    out = []
    for n in names:
        m = ep.metrics.get(n)
        if m is None or (m.score is None and m.code != "error"):
            out.append("-")
        elif m.score is None:
            out.append("E")
        else:
            ok = m.passed
            out.append("-" if ok is None else "P" if ok else "F")
    return "".join(out)


def _usage(trace: Trace | None) -> tuple[int | None, int | None]:
    """The episode's tokens in and out (:func:`evaltape.grader.model.usage_tokens`)."""
    from evaltape.grader.model import usage_tokens
    return (None, None) if trace is None else usage_tokens(trace.usage)


def index_row(position: int, ep: EpisodeResult, names: Sequence[str], trace: Trace | None,
              cost: float | None) -> list[Any]:
    """The compact row of one episode in an index chunk:
    ``[case position, trial, passed 1/0, failure, outcome reason, steps, input tokens,
    output tokens, latency s, cost USD, [score per metric], flags, has answer 1/0,
    tool calls]`` (input tokens include prompt-cache reads and writes; ``None`` where the
    trace does not say; scores rounded to 4 places; flags as :func:`flags`)."""
    tin, tout = _usage(trace)
    return [position, ep.trial, int(ep.passed),
            None if ep.failure is None else text(ep.failure, 2000),
            outcome_reason(ep), ep.steps, tin, tout,
            None if trace is None else _num(trace.latency_s, 3),
            None if cost is None else round(cost, 8),
            [None if ep.metrics.get(n) is None else _num(ep.metrics[n].score)
             for n in names], flags(ep, names),
            int(trace is not None and trace.final_response is not None),
            None if trace is None else len(trace.tool_calls)]


def _blocks_of(content: Any, names_by_id: Mapping[str, str]) -> list[dict[str, Any]]:
    """The blocks of one message's content (Anthropic's Messages format; a plain string is
    one text block)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"k": "text", "text": text(content)}]
    if not isinstance(content, list):
        return [{"k": "other", "type": type(content).__name__, "text": _json_text(content)}]
    out: list[dict[str, Any]] = []
    for b in content:
        if not isinstance(b, Mapping):
            out.append({"k": "text", "text": text(b)})
            continue
        kind = b.get("type")
        if kind == "text":
            out.append({"k": "text", "text": text(b.get("text") or "")})
        elif kind in ("tool_use", "server_tool_use"):
            out.append({"k": "call", "id": text(b.get("id") or "", 200),
                        "name": text(b.get("name") or "", 300),
                        "args": _json_text(b.get("input"))})
        elif kind == "tool_result":
            inner = b.get("content")
            if isinstance(inner, list):
                inner = "\n".join(str(x.get("text", "")) if isinstance(x, Mapping) and
                                  x.get("type") == "text" else _json_text(x) for x in inner)
            tid = str(b.get("tool_use_id") or "")
            out.append({"k": "result", "id": text(tid, 200),
                        "name": text(names_by_id.get(tid, ""), 300),
                        "text": text("" if inner is None else inner),
                        "error": bool(b.get("is_error"))})
        elif kind == "thinking":
            out.append({"k": "thinking", "text": text(b.get("thinking") or "")})
        elif kind == "redacted_thinking":
            out.append({"k": "note", "text": "(redacted thinking)"})
        elif kind == "image":
            media = (b.get("source") or {}).get("media_type") if isinstance(
                b.get("source"), Mapping) else None
            out.append({"k": "note", "text": f"(image{': ' + text(media, 80) if media else ''})"})
        else:
            out.append({"k": "other", "type": text(kind or "?", 80), "text": _json_text(b)})
    return out


def conversation(trace: Trace) -> tuple[list[dict[str, Any]], int]:
    """The episode's conversation turn by turn: ``([{"role", "blocks"}...], turns left
    out)``. From the trace's ``messages`` (user text, assistant text, each tool call with
    its arguments, each tool result with the tool's name and error flag, thinking); an
    OpenAI-style message's ``tool_calls`` and ``tool`` role are read too. A trace without
    messages gets them rebuilt from its input, calls and final answer. At most
    :data:`TURN_LIMIT` turns."""
    names_by_id = {c.id: c.name for c in trace.tool_calls}
    changes_by_id = state_changes_by_call(trace.raw if isinstance(trace.raw, Mapping) else {})
    msgs = list(trace.messages or ())
    turns: list[dict[str, Any]] = []
    if not msgs:
        turns.append({"role": "user", "who": "user",
                      "blocks": [{"k": "text", "text": text(trace.input)}]})
        for step, group in _by_step(trace.tool_calls):
            turns.append({"role": "assistant", "who": "agent", "blocks": [
                {"k": "call", "id": text(c.id, 200), "name": text(c.name, 300),
                 "args": _json_text(dict(c.arguments))} for c in group]})
            turns.append({"role": "user", "who": "tool results", "blocks": [
                {"k": "result", "id": text(c.id, 200), "name": text(c.name, 300),
                 "text": "(not run)" if c.result is None else text(c.result),
                 "error": bool(c.is_error)} for c in group]})
        if trace.final_response is not None:
            turns.append({"role": "assistant", "who": "agent", "blocks": [
                {"k": "text", "text": text(trace.final_response)}]})
        return turns[:TURN_LIMIT], max(0, len(turns) - TURN_LIMIT)
    for m in msgs[:TURN_LIMIT]:
        if not isinstance(m, Mapping):
            turns.append({"role": "?", "blocks": [{"k": "other", "type": "message",
                                                    "text": _json_text(m)}]})
            continue
        role = text(m.get("role") or "?", 40)
        blocks = _blocks_of(m.get("content"), names_by_id)
        for b in blocks:
            if b.get("k") == "call" and b.get("id") in changes_by_id:
                b["changes"] = changes_by_id[b["id"]]
        for tc in m.get("tool_calls") or ():  # OpenAI's assistant message
            fn = tc.get("function") if isinstance(tc, Mapping) else None
            if isinstance(fn, Mapping):
                args = fn.get("arguments")
                try:
                    args = json.loads(args) if isinstance(args, str) else args
                except ValueError:
                    pass
                blocks.append({"k": "call", "id": text(tc.get("id") or "", 200),
                               "name": text(fn.get("name") or "", 300),
                               "args": _json_text(args)})
        if role == "tool":  # OpenAI's tool result message
            tid = str(m.get("tool_call_id") or "")
            blocks = [{"k": "result", "id": text(tid, 200),
                       "name": text(names_by_id.get(tid, ""), 300),
                       "text": "\n".join(b.get("text", "") for b in blocks),
                       "error": False}]
        turns.append({"role": role, "who": _who(m, role, blocks), "blocks": blocks})
    return turns, max(0, len(msgs) - TURN_LIMIT)


def _who(message: Mapping[str, Any], role: str, blocks: Sequence[Mapping[str, Any]]) -> str:
    """A message's label on the page: its ``speaker`` (conversations: ``user``, ``agent``,
    ``tool`` shown as ``tool results``), else ``tool results`` for a message of tool
    results alone, ``agent`` for an assistant message, else its role."""
    speaker = message.get("speaker")
    if speaker == "tool" or (blocks and all(b.get("k") == "result" for b in blocks)):
        return "tool results"
    if speaker in ("user", "agent"):
        return str(speaker)
    return "agent" if role == "assistant" else role


def state_changes_by_call(raw: Mapping[str, Any]) -> dict[str, list[list[str]]]:
    """``{call id: [[path, before, after], ...]}`` from the trace's ``tool_calls[i]
    .state_changes`` (stateful episodes; values as short JSON text, ``null`` for an absent
    side)."""
    out: dict[str, list[list[str]]] = {}
    for c in raw.get("tool_calls") or ():
        if isinstance(c, Mapping) and isinstance(c.get("state_changes"), list):
            out[text(str(c.get("id")), 200)] = [
                [text(str(ch.get("path")), 500), _json_text(ch.get("before"), 500),
                 _json_text(ch.get("after"), 500)]
                for ch in c["state_changes"][:100] if isinstance(ch, Mapping)]
    return out


def _by_step(calls: Sequence[ToolCall]) -> list[tuple[int, list[ToolCall]]]:
    out: list[tuple[int, list[ToolCall]]] = []
    for c in calls:
        if out and out[-1][0] == c.step and c.step:
            out[-1][1].append(c)
        else:
            out.append((c.step, [c]))
    return out


def _final_block(turns: list[dict[str, Any]], answer: str | None) -> list[int] | None:
    """``[turn, block]`` of the text block that is the final answer (the last assistant
    text equal to it), or ``None`` (the page then shows the answer after the turns)."""
    if answer is None:
        return None
    for ti in range(len(turns) - 1, -1, -1):
        if turns[ti]["role"] != "assistant":
            continue
        for bi in range(len(turns[ti]["blocks"]) - 1, -1, -1):
            b = turns[ti]["blocks"][bi]
            if b["k"] == "text":
                return [ti, bi] if b["text"].strip() == answer.strip() else None
        return None
    return None


def _arg_status(actual: Any, options: Sequence[Any], ec: ExpectedCall, key: str) -> str:
    """``same`` when the value equals one acceptable value (typed JSON, strings NFC, the
    parameter's options), ``case`` when only letter case differs, else ``diff``."""
    o = ec.options.get(key)
    for v in options:
        if compare_values(actual, v, unordered_lists=ec.unordered_lists or bool(
                o and o.unordered), path=f"$.{key}", standardize=bool(o and o.standardize),
                tolerance=o.tolerance if o else None) is None:
            return "same"
    if isinstance(actual, str) and any(isinstance(v, str) and v.lower() == actual.lower()
                                       for v in options):
        return "case"
    return "diff"


def call_pairs(expected: Sequence[ExpectedCall] | None, calls: Sequence[ToolCall]
               ) -> list[dict[str, Any]]:
    """Expected and actual calls side by side, one row per pair.

    Calls that match an expected call exactly are paired first by
    :func:`~evaltape.grader.matching.calls.match_calls` (one to one, Kuhn's maximum
    matching, any order); each expected call left is paired with the first call left of the
    same name (ignoring letter case), and the calls left after that are extra. Each row:
    ``{"e": expected index or None, "a": actual index or None, "status": "match" |
    "differs" | "missing" | "extra", "args": [[name, expected values as JSON text or None,
    actual value as JSON text or None, state], ...]}`` where state is ``same``, ``case``
    (only letter case differs), ``diff``, ``missing``, ``optional`` (absent and allowed),
    ``extra`` (not expected), ``any`` (the case names the tool only) or ``unpaired`` (an
    argument of a call no expected call pairs with). Rows follow the
    expected order; extra calls come last, in call order.
    """
    exp = list(expected or ())
    if not exp and not calls:
        return []
    m = match_calls(calls, exp)
    pair = {i: j for i, j in m.pairs}
    used = set(pair.values())
    for i, e in enumerate(exp):
        if i in pair:
            continue
        for j, c in enumerate(calls):
            if j not in used and c.name.lower() == e.name.lower():
                pair[i] = j
                used.add(j)
                break
    matched = set(m.pairs)
    rows = []
    for i, e in enumerate(exp):
        j = pair.get(i)
        if j is None:
            rows.append({"e": i, "a": None, "status": "missing", "args": [
                [text(k, 200), [_json_text(v, 2000) for v in vals], None,
                 "optional" if k in e.optional else "missing"]
                for k, vals in sorted((e.acceptable or {}).items())]})
            continue
        c = calls[j]
        args = []
        if e.acceptable is None:
            args = [[text(k, 200), None, _json_text(v, 2000), "any"]
                    for k, v in sorted(c.arguments.items())]
        else:
            for k in sorted(set(e.acceptable) | set(c.arguments)):
                vals = e.acceptable.get(k)
                shown = None if vals is None else [_json_text(v, 2000) for v in vals]
                if k not in c.arguments:
                    args.append([text(k, 200), shown, None,
                                 "optional" if k in e.optional else "missing"])
                elif vals is None:
                    args.append([text(k, 200), None, _json_text(c.arguments[k], 2000),
                                 "extra"])
                else:
                    args.append([text(k, 200), shown, _json_text(c.arguments[k], 2000),
                                 _arg_status(c.arguments[k], vals, e, k)])
        rows.append({"e": i, "a": j, "status": "match" if (i, j) in matched else "differs",
                     "args": args})
    for j, c in enumerate(calls):
        if j not in used:
            rows.append({"e": None, "a": j, "status": "extra", "args": [
                [text(k, 200), None, _json_text(v, 2000), "unpaired"]
                for k, v in sorted(c.arguments.items())]})
    return rows


#: Case keys shown beside the expected calls (label, attribute).
EXPECTATION_FIELDS = (
    ("expected tools (in order)", "expected_tools"),
    ("answer keywords", "expected_outcome_keywords"),
    ("answer contains", "expected_answer_contains"),
    ("expected topics", "expected_topics"),
    ("answer contains (composite)", "final_response_contains"),
    ("answer excludes", "final_response_excludes"),
    ("must not contain", "should_not_contain"),
    ("expected category", "expected_category"),
    ("must mention", "must_mention"),
    ("reference answer", "expected_output"),
    ("budgets", "budgets"),
    ("thresholds of this case", "thresholds"),
    ("difficulty", "difficulty"),
    ("reference label", "reference_label"),
)


def expectations(case: Case | None) -> list[list[str]]:
    """``[[label, value as text], ...]`` of what a case expects besides its calls."""
    if case is None:
        return []
    out = []
    for label, attr in EXPECTATION_FIELDS:
        v = getattr(case, attr, None)
        if v is None:
            continue
        if isinstance(v, (tuple, list)):
            shown = ", ".join(json.dumps(x, ensure_ascii=False) if not isinstance(x, str)
                              else x for x in v)
        elif isinstance(v, Mapping):
            shown = json.dumps(dict(v), sort_keys=True, ensure_ascii=False)
        else:
            shown = str(v)
        out.append([label, text(shown, 5000)])
    if case.factual_claims:
        out.append(["factual claims", text("; ".join(
            f"{c.statement} ({'true' if c.expected_truth else 'false'})"
            for c in case.factual_claims), 5000)])
    if case.expected_actions:
        out.append(["expected actions", text("; ".join(
            f"{a.name}({json.dumps(a.literal_args(), sort_keys=True, ensure_ascii=False)})"
            for a in case.expected_actions), 5000)])
    return out


#: One unsupported claim as grounding's ``message`` quote it: ``kind 'text' (why) in
#: "sentence"``, items joined by ``; `` (:class:`evaltape.grader.metrics.grounding.Grounding`).
_CLAIM = re.compile(r"(?:^|; |: )(?P<kind>" + "|".join(CLAIM_KINDS) + r") '(?P<text>.+?)' "
                    r"\((?P<why>.+?)\) in \"(?P<sentence>.*?)\"(?=; (?:"
                    + "|".join(CLAIM_KINDS) + r") '|; \d+ to review, not counted: |$)", re.S)


def claim_marks(answer: str, metric: Any) -> list[list[Any]]:
    """Grounding's unsupported claims as ``[[start, end, kind, why], ...]`` offsets in
    ``answer`` (the answer as the page shows it), read from the report's ``grounding``
    details (what the report says, whichever version graded it; no second grounding
    pass). A claim of an earlier agent reply (its reason starts "in reply N of M") is
    not marked. Each claim is looked for in its sentence, else anywhere in the answer; a claim
    not found, or overlapping one already marked, is left unmarked (it stays in the
    details)."""
    if metric is None or not metric.score or not metric.message:
        return []
    marks: list[list[Any]] = []
    taken: list[tuple[int, int]] = []
    for m in _CLAIM.finditer(metric.message):
        claim, sentence = m.group("text"), m.group("sentence")
        if m.group("why").startswith("in reply "):
            continue  # a claim of an earlier agent reply, not of this answer
        at = answer.find(sentence[:200]) if sentence else -1
        start = answer.find(claim, at) if at >= 0 else -1
        if start < 0:
            start = answer.find(claim)
        if start < 0:
            continue
        end = start + len(claim)
        if any(a < end and start < b for a, b in taken):
            continue
        taken.append((start, end))
        marks.append([start, end, m.group("kind"), text(m.group("why"), 2000)])
    return sorted(marks)


#: One claim grounding lists to review: ``'text' (kind: why) in "sentence"``, after ``N to
#: review, not counted: `` in its ``message``, items joined by ``; ``.
_REVIEW = re.compile(r"'(?P<text>.+?)' \((?P<kind>" + "|".join(CLAIM_KINDS) + r"): "
                     r"(?P<why>.+?)\) in \"(?P<sentence>.*?)\"(?=; '|$)", re.S)


def review_marks(answer: str, metric: Any) -> list[list[Any]]:
    """The claims grounding lists to review, not counted, as ``[[start, end, kind, why],
    ...]`` offsets in ``answer``, read from the report's ``grounding`` details. A claim is
    marked only where its sentence is found in the answer (a claim of an earlier reply is
    not marked); ``[]`` when none is listed."""
    details = getattr(metric, "message", None) or ""
    at = details.find(" to review, not counted: ")
    if at < 0:
        return []
    marks: list[list[Any]] = []
    for m in _REVIEW.finditer(details, at + len(" to review, not counted: ")):
        where = answer.find(m.group("sentence")[:200]) if m.group("sentence") else -1
        start = answer.find(m.group("text"), where) if where >= 0 else -1
        if start < 0:
            continue
        end = start + len(m.group("text"))
        if any(a < end and start < b for a, b, _k, _w in marks):
            continue
        marks.append([start, end, m.group("kind"), text(m.group("why"), 2000)])
    return sorted(marks)


def judge_answers(run: Run | None, case_id: str, trial: int) -> list[dict[str, Any]]:
    """The judge exchanges recorded for one episode (``RUN/judge/<case>__t<trial>.jsonl``,
    written by ``evaltape judge``): ``[{"prompt", "system", "answer", "stop_reason",
    "model", "status"}]`` in recording order; ``[]`` when none were recorded.

    Raises:
        BadInputError: a line of the cassette is not JSON (file and line named).
    """
    if run is None:
        return []
    path = Path(run.root) / "judge" / cassette_name(case_id, trial)
    if not path.is_file():
        return []
    from evaltape.grader.judge import answer_text
    out = []
    for _line, obj in iter_json_lines(path):
        if not isinstance(obj, Mapping) or "format" in obj:
            continue
        req = ((obj.get("request") or {}).get("body") or {}).get("json") or {}
        resp = obj.get("response") or {}
        answer = (resp.get("body") or {}).get("json") or {}
        msgs = req.get("messages") if isinstance(req, Mapping) else None
        prompt = ""
        if isinstance(msgs, list) and msgs and isinstance(msgs[0], Mapping):
            content = msgs[0].get("content")
            prompt = content if isinstance(content, str) else _json_text(content)
        out.append({"prompt": text(prompt, 20_000),
                    "system": text(req.get("system") or "", 4000) if isinstance(
                        req, Mapping) else "",
                    "answer": text(answer_text(answer) if isinstance(answer, Mapping) else "",
                                   20_000),
                    "stop_reason": text((answer or {}).get("stop_reason") or "", 80)
                    if isinstance(answer, Mapping) else "",
                    "model": text((answer or {}).get("model") or "", 200)
                    if isinstance(answer, Mapping) else "",
                    "status": (resp.get("status") or {}).get("code")
                    if isinstance(resp.get("status"), Mapping) else None})
    return out


def episode_detail(ep: EpisodeResult, report: Report, case: Case | None,
                   found: tuple[Trace, str, int] | None, run: Run | None) -> dict[str, Any]:
    """Everything the page shows of one episode (the ``r<R>-ep-<K>`` chunk's entries):
    ``metrics`` ``[[name, score, threshold, passed, code, details], ...]`` in the report's
    order; with its trace: ``turns`` (:func:`conversation`), ``final`` (where the final
    answer is among them), ``answer``, ``calls``, ``pairs`` (:func:`call_pairs`),
    ``claims`` (:func:`claim_marks`), ``judge`` (:func:`judge_answers`), and the trace's
    facts (stop reason, error, usage, latency, model, line, digest)."""
    names = report.grader.metrics
    out: dict[str, Any] = {
        "metrics": [[n, _num(m.score), _num(m.threshold), m.passed,
                     None if m.code is None else text(m.code, 80), text(m.message, 20_000)]
                    for n in names if (m := ep.metrics.get(n)) is not None],
        "expect": expectations(case),
        "end_state": end_state_expectation(case),
        "expected": _gold_calls(case) if case is not None and case.expected_calls is None
        and case.gold_actions is not None else
        None if case is None or case.expected_calls is None else [
            {"name": text(e.name, 300),
             "args": None if e.acceptable is None else {
                 text(k, 200): [_json_text(v, 2000) for v in vals]
                 for k, vals in sorted(e.acceptable.items())},
             "optional": sorted(text(k, 200) for k in e.optional)}
            for e in case.expected_calls],
        "trace": None}
    if found is None:
        return out
    trace, digest, line = found
    turns, left = conversation(trace)
    answer = None if trace.final_response is None else text(trace.final_response)
    raw = trace.raw or {}
    out["trace"] = {
        "line": line, "digest": digest,
        "digest_graded": ep.trace_digest,
        "stop_reason": text(trace.stop_reason, 200), "steps": trace.steps,
        "error": None if trace.error is None else text(trace.error, 20_000),
        "infra_error": None if raw.get("infra_error") is None else text(raw["infra_error"],
                                                                         2000),
        "partial": None if raw.get("partial_response") is None else text(
            raw["partial_response"]),
        "unfinished": bool(raw.get("unfinished")),
        "usage": {text(k, 80): v for k, v in (trace.usage or {}).items()
                  if isinstance(v, (int, float)) and not isinstance(v, bool)},
        "latency_s": _num(trace.latency_s, 3), "model": None if trace.model is None
        else text(trace.model, 300)}
    out["turns"], out["turns_left"] = turns, left
    out["final"] = _final_block(turns, answer)
    out["answer"] = answer
    out["calls"] = [{"id": text(c.id, 200), "name": text(c.name, 300),
                     "args": _json_text(dict(c.arguments)),
                     "result": None if c.result is None else text(c.result),
                     "error": bool(c.is_error), "step": c.step,
                     "malformed": bool((c_raw or {}).get("malformed_tool_input")) if isinstance(
                         c_raw := _raw_call(raw, i), Mapping) else False}
                    for i, c in enumerate(trace.tool_calls)]
    gold = None if case is None or case.expected_calls is not None else case.gold_actions
    if gold is not None:  # τ²'s compare_args: the named arguments only (none: the name)
        gold = [dataclasses.replace(a, acceptable=None if a.compare_args == () else {
            k: v for k, v in (a.acceptable or {}).items()
            if a.compare_args is None or k in a.compare_args}) for a in gold]
    out["pairs"] = call_pairs(gold if gold is not None else
                              (None if case is None else case.expected_calls), trace.tool_calls)
    out["conversation"] = conversation_facts(raw)
    out["claims"] = [] if answer is None else claim_marks(answer, ep.metrics.get("grounding"))
    out["review"] = [] if answer is None else review_marks(answer, ep.metrics.get("grounding"))
    out["judge"] = judge_answers(run, ep.case_id, ep.trial)
    return out


def _gold_calls(case: Case) -> list[dict[str, Any]]:
    """A case's gold actions as the page's expected calls (exact arguments), for a case
    without ``expected_calls``."""
    return [{"name": text(a.name, 300),
             "args": {text(k, 200): [_json_text(v, 2000)]
                      for k, v in sorted(a.literal_args().items())}
             if a.compare_args is None or a.compare_args else None,
             "optional": []} for a in case.gold_actions or ()]


def end_state_expectation(case: Case | None) -> dict[str, Any] | None:
    """What the page shows of a case's expected end state: ``{"expected_state": JSON text
    or None, "unchanged": bool, "gold": [name(arguments) text, ...]}``, or ``None`` for a
    case that states no end state."""
    from evaltape.grader.matching.state_diff import state_case
    if case is None or not state_case(case):
        return None
    return {"expected_state": None if case.expected_state is None else text(json.dumps(
                dict(case.expected_state), sort_keys=True, indent=1, ensure_ascii=False),
                20_000),
            "unchanged": bool(case.expect_unchanged),
            "gold": [text(a.name + "(" + json.dumps(a.literal_args(), sort_keys=True,
                                                    ensure_ascii=False) + ")", 2000)
                     for a in case.gold_actions or ()]}


def conversation_facts(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """A conversation's end as the page shows it: ``{"end", "user", "user_turns",
    "user_retries", "out_of_role"}`` from the trace's ``conversation``, or ``None``."""
    conv = raw.get("conversation")
    if not isinstance(conv, Mapping):
        return None
    return {k: (text(str(conv[k]), 200) if isinstance(conv.get(k), str) else conv.get(k))
            for k in ("end", "user", "user_turns", "user_retries", "out_of_role")
            if conv.get(k) is not None and not isinstance(conv.get(k), (dict, list))}


def _raw_call(raw: Mapping[str, Any], i: int) -> Any:
    calls = raw.get("tool_calls")
    return calls[i] if isinstance(calls, list) and i < len(calls) else None


# --------------------------------------------------------------------------- one run
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


@dataclass
class _Acc:
    """What one run's pass over its episodes adds up for the page's overview."""

    names: Sequence[str]
    gates: frozenset[str] = frozenset()
    scores: dict[str, dict[int, list[float]]] = field(default_factory=dict)
    fails: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    with_usage: int = 0
    cost: float = 0.0
    priced: int = 0
    with_trace: int = 0
    mismatched: int = 0
    case_counts: dict[int, list[int]] = field(default_factory=dict)

    def add(self, pos: int, ep: EpisodeResult, trace: Trace | None, cost: float | None,
            digest: str | None) -> None:
        failing = []
        for n in self.names:
            m = ep.metrics.get(n)
            if m is None:
                continue
            if m.score is not None:
                s = self.scores.setdefault(n, {}).setdefault(pos, [0.0, 0])
                s[0] += m.score
                s[1] += 1
            if m.passed is False:
                self.fails[n] = self.fails.get(n, 0) + 1
                if n in self.gates:
                    failing.append(n)
        for key in episode_reasons(ep, failing):
            self.reasons[key] = self.reasons.get(key, 0) + 1
        cc = self.case_counts.setdefault(pos, [0, 0])
        cc[0] += int(ep.passed)
        cc[1] += 1
        if trace is None:
            return
        self.with_trace += 1
        if digest is not None and ep.trace_digest is not None and digest != ep.trace_digest:
            self.mismatched += 1
        if trace.latency_s is not None:
            self.latencies.append(float(trace.latency_s))
        tin, tout = _usage(trace)
        if tin is not None or tout is not None:
            self.with_usage += 1
            self.tokens_in += tin or 0
            self.tokens_out += tout or 0
        if cost is not None:
            self.priced += 1
            self.cost += cost


def _usage_block(acc: _Acc, episodes: int) -> dict[str, Any]:
    lat = sorted(acc.latencies)
    return {
        "episodes": episodes, "with_trace": acc.with_trace, "with_usage": acc.with_usage,
        "tokens_in": acc.tokens_in, "tokens_out": acc.tokens_out,
        "tokens_in_mean": round(acc.tokens_in / acc.with_usage, 1) if acc.with_usage else None,
        "tokens_out_mean": round(acc.tokens_out / acc.with_usage, 1) if acc.with_usage else None,
        "cost_usd": round(acc.cost, 6) if acc.priced else None, "priced": acc.priced,
        "latency": None if not lat else {
            "n": len(lat), "mean": round(sum(lat) / len(lat), 3),
            "p50": round(nearest_rank(lat, 50), 3), "p90": round(nearest_rank(lat, 90), 3),
            "max": round(lat[-1], 3), "total": round(sum(lat), 3)},
        "mismatched_traces": acc.mismatched}


def _breakdowns(source: ViewSource, case_ids: list[str], acc: _Acc,
                tags: list[str], diffs: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Pass rates by tag and by difficulty with a Wilson interval over the group's cases
    (:func:`evaltape.grader.stats.trials.wilson_ci`); the report's ``avg_composite`` beside
    them when it has one. Without the dataset: the report's own ``by_tag`` and
    ``by_difficulty``."""
    s = source.report.summary
    report_groups = {"tag": s.by_tag or {}, "difficulty": s.by_difficulty or {}}
    out: dict[str, list[dict[str, Any]]] = {"tag": [], "difficulty": []}
    if source.run is None:
        for kind, groups in report_groups.items():
            for name, g in groups.items():
                if isinstance(g, Mapping):
                    out[kind].append({"name": text(name, 200), "episodes": g.get("episodes"),
                                      "passed": g.get("passed"), "pass_rate": g.get("pass_rate"),
                                      "avg_composite": g.get("avg_composite"), "ci": None,
                                      "cases": None})
        return out
    by_id = source.run.case_by_id
    members: dict[tuple[str, str], list[int]] = {}
    for pos, cid in enumerate(case_ids):
        case = by_id.get(cid)
        if case is None or pos not in acc.case_counts:
            continue
        for t in case.tags:
            members.setdefault(("tag", t), []).append(pos)
        if case.difficulty:
            members.setdefault(("difficulty", case.difficulty), []).append(pos)
    for (kind, name), poss in sorted(members.items()):
        counts = {str(p): (acc.case_counts[p][1], acc.case_counts[p][0]) for p in poss}
        n = sum(v[0] for v in counts.values())
        passed = sum(v[1] for v in counts.values())
        ci = wilson_ci(counts)
        g = report_groups[kind].get(name) if isinstance(report_groups[kind], Mapping) else None
        out[kind].append({"name": text(name, 200), "episodes": n, "passed": passed,
                          "pass_rate": round(passed / n, 4) if n else None,
                          "ci": [ci["low"], ci["high"]], "cases": len(poss),
                          "avg_composite": g.get("avg_composite") if isinstance(g, Mapping)
                          else None})
    return out


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
        acc = _Acc(names, gating(report.summary))
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
                  acc: _Acc, tags: list[str], diffs: list[str],
                  chunk_names: dict[str, list[str]], episodes: int) -> dict[str, Any]:
        report = source.report
        s = report.summary
        lower = report.lower_is_better
        gates = gating(s)
        failed = gate_failures(s)
        metrics = []
        for n in names:
            ci = cluster_mean(tuple(v) for v in acc.scores.get(n, {}).values())
            thr = (s.thresholds or {}).get(n)
            metrics.append({
                "name": n, "mean": s.metrics.get(n), "ci": None if ci is None else
                [ci["low"], ci["high"], ci["n"]], "threshold": threshold_text(thr, n in lower),
                "thr": _num(thr) if not isinstance(thr, Mapping) else None,
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
            "setup": setup_rows(source), "usage": _usage_block(acc, episodes),
            "breakdowns": _breakdowns(source, case_ids, acc, tags, diffs),
            "tags": [text(t, 200) for t in tags], "difficulties": [text(d, 200) for d in diffs],
            "chunks": {"cases": f"r{r}-cases", **chunk_names},
        }

    def _compare(self) -> dict[str, Any]:
        """The ``compare`` chunk: the first source is the baseline, the second the current
        run (see :func:`compare_data`)."""
        return compare_data(self.sources[0], self.sources[1], self._keys, self._case_ids,
                            self._counts)


def compare_data(old: ViewSource, new: ViewSource, keys: Sequence[Mapping],
                 case_ids: Sequence[Sequence[str]], counts: Sequence[Mapping]
                 ) -> dict[str, Any]:
    """Two runs side by side, for the page's Compare view.

    ``keys``, ``case_ids`` and ``counts``: per run, ``{(case, trial): episode index}``, the
    case ids in page order and ``{case position: [passed, episodes]}``. The gate is
    :func:`evaltape.grader.report.diff.compare_reports` (the same rules as ``evaltape
    diff``; the current report's own ``baseline_comparison`` when it has one). Each mean's
    change gets an interval over the episodes both runs have, cases as clusters
    (:func:`evaltape.grader.stats.intervals.cluster_delta`); ``pass_rate`` is the mean of
    the verdicts (1 pass, 0 fail).

    Returns:
        ``{"labels", "level", "gate", "failures", "warnings", "unrelated", "changes",
        "setup", "metrics", "flips", "regressed", "fixed", "mcnemar_p", "cases",
        "cases_only", "episodes_only", "shared"}``.
    """
    from evaltape.grader.report.diff import (compare_reports, describe_change, gate_lines,
                                             unrelated)
    a, b = old.report, new.report
    cmp = b.baseline_comparison or compare_reports(a, b, baseline=old.source or None)
    why = unrelated(a, b)
    ka, kb = keys
    shared = ka.keys() & kb.keys()
    # per case and metric, sums over the shared episodes (both sides)
    both = [n for n in b.grader.metrics if n in a.grader.metrics]
    names = list(dict.fromkeys([*both, *b.grader.metrics, *a.grader.metrics]))
    sums: dict[str, dict[str, list[float]]] = {}
    for side, report in ((0, a), (1, b)):
        for ep in report.episodes:
            if (ep.case_id, ep.trial) not in shared:
                continue
            row = sums.setdefault("pass_rate", {}).setdefault(ep.case_id, [0.0, 0, 0.0, 0])
            row[2 * side] += int(ep.passed)
            row[2 * side + 1] += 1
            for n in names:
                m = ep.metrics.get(n)
                if m is not None and m.score is not None:
                    row = sums.setdefault(n, {}).setdefault(ep.case_id, [0.0, 0, 0.0, 0])
                    row[2 * side] += m.score
                    row[2 * side + 1] += 1
    moves = {m.name: m for m in cmp.metrics}
    lower = a.lower_is_better | b.lower_is_better
    metrics = []
    for n in ["pass_rate", *names]:
        rows = list(sums.get(n, {}).values())
        d = cluster_delta(tuple(v) for v in rows)
        if d is None and rows:  # scored on one side only: that side's mean, no change
            mb, ma = sum(r[1] for r in rows), sum(r[3] for r in rows)
            d = {"before": round(sum(r[0] for r in rows) / mb, 4) if mb else None,
                 "after": round(sum(r[2] for r in rows) / ma, 4) if ma else None,
                 "delta": None, "low": None, "n": len(rows)}
        mv = moves.get(n)
        in_a = n == "pass_rate" or n in a.summary.metrics
        in_b = n == "pass_rate" or n in b.summary.metrics
        metrics.append({"name": n, "before": None if d is None else d["before"],
                        "after": None if d is None else d["after"],
                        "delta": None if d is None else d["delta"],
                        "ci": None if d is None or d["low"] is None else [d["low"], d["high"]],
                        "n": None if d is None else d["n"],
                        "level": None if mv is None else mv.level,
                        "lower": n in lower,
                        "graded": [in_a, in_b]})
    ca, cb = counts
    pos_a = {c: i for i, c in enumerate(case_ids[0])}
    pos_b = {c: i for i, c in enumerate(case_ids[1])}
    fell = {c.case_id: c for c in cmp.cases}
    cases = []
    for cid in [*case_ids[1], *(c for c in case_ids[0] if c not in pos_b)]:
        pa, pb = pos_a.get(cid), pos_b.get(cid)
        before = None if pa is None else ca.get(pa)
        after = None if pb is None else cb.get(pb)
        f = fell.get(cid)
        cases.append([text(cid, ID_LIMIT), None if before is None else before[0],
                      None if before is None else before[1],
                      None if after is None else after[0], None if after is None else after[1],
                      None if f is None else f.p, None if f is None else f.level,
                      -1 if pa is None else pa, -1 if pb is None else pb])
    flips = [[text(f.case_id, ID_LIMIT), f.trial, f.before, f.after,
              None if f.failure_before is None else text(f.failure_before, 2000),
              None if f.failure is None else text(f.failure, 2000), f.same_recording,
              ka.get((f.case_id, f.trial), -1), kb.get((f.case_id, f.trial), -1)]
             for f in cmp.flips[:COMPARE_LIST_LIMIT]]
    setup = setup_comparison(old, new)
    only_a = [c for c in case_ids[0] if c not in pos_b]
    only_b = [c for c in case_ids[1] if c not in pos_a]
    return {
        "labels": [text(old.label or a.run.name, 300), text(new.label or b.run.name, 300)],
        "level": cmp.level, "gate": [text(x, 4000) for x in gate_lines(cmp)],
        "failures": [text(x, 4000) for x in cmp.failures],
        "warnings": [text(x, 4000) for x in cmp.warnings],
        "unrelated": None if why is None else text(why[1], 2000),
        "changes": [[c.kind, text(describe_change(c), 4000)] for c in cmp.changes],
        "setup": setup, "metrics": metrics, "flips": flips, "flips_total": len(cmp.flips),
        "regressed": cmp.regressed, "fixed": cmp.fixed, "mcnemar_p": cmp.mcnemar_p,
        "cases": cases[:COMPARE_LIST_LIMIT], "cases_total": len(cases),
        "cases_only": [[text(c, ID_LIMIT) for c in only_a[:COMPARE_LIST_LIMIT]],
                       [text(c, ID_LIMIT) for c in only_b[:COMPARE_LIST_LIMIT]]],
        "cases_only_total": [len(only_a), len(only_b)],
        "episodes_only": [[text(x, ID_LIMIT) for x in cmp.only_in_baseline[:COMPARE_LIST_LIMIT]],
                          [text(x, ID_LIMIT) for x in cmp.only_in_current[:COMPARE_LIST_LIMIT]]],
        "episodes_only_total": [len(cmp.only_in_baseline), len(cmp.only_in_current)],
        "shared": len(shared), "means_over": text(cmp.means_over, 200),
        "regraded": cmp.regraded, "rerecorded": cmp.rerecorded}


def build_view(sources: Sequence[ViewSource]) -> ViewBuilder:
    """A :class:`ViewBuilder` for one run, or two (baseline first, then the current run).

    Raises:
        ValueError: no source, or more than two.
    """
    if not 1 <= len(sources) <= 2:
        raise ValueError(f"the page shows one run or two, got {len(sources)}")
    return ViewBuilder(sources)
