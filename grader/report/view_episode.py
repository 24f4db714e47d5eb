"""Everything the page of ``evaltape view`` shows of one episode (an ``r<R>-ep-<K>``
chunk's entry): metric details, what the case expects, the conversation, calls against
the expected ones, marked claims, recorded judge answers and the trace's facts."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Mapping

from evaltape.grader.io.jsonfiles import iter_json_lines
from evaltape.grader.io.names import cassette_name
from evaltape.grader.io.run import Run
from evaltape.grader.model import Case, Trace
from evaltape.grader.report.view_calls import call_pairs
from evaltape.grader.report.view_claims import claim_marks, review_marks
from evaltape.grader.report.view_conversation import conversation, final_block
from evaltape.grader.report.view_text import json_text, num, text
from evaltape.grader.results import EpisodeResult, Report

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



def judge_answers(run: Run | None, case_id: str, trial: int) -> list[dict[str, Any]]:
    """The judge exchanges recorded for one episode (``RUN/judge/<case>__t<trial>.jsonl``):
    ``[{"prompt", "system", "answer", "stop_reason", "model", "status"}]``; ``[]`` when none.

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
            prompt = content if isinstance(content, str) else json_text(content)
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
    """Everything the page shows of one episode: ``metrics`` ``[[name, score, threshold, passed,
    code, details]]`` and, with a trace, ``turns``, ``final``, ``answer``, ``calls``, ``pairs``,
    ``claims``, ``judge`` and the trace's facts (stop reason, error, usage, latency, model).
    """
    names = report.grader.metrics
    out: dict[str, Any] = {
        "metrics": [[n, num(m.score), num(m.threshold), m.passed,
                     None if m.code is None else text(m.code, 80), text(m.message, 20_000)]
                    for n in names if (m := ep.metrics.get(n)) is not None],
        "expect": expectations(case),
        "end_state": end_state_expectation(case),
        "expected": _gold_calls(case) if case is not None and case.expected_calls is None
        and case.gold_actions is not None else
        None if case is None or case.expected_calls is None else [
            {"name": text(e.name, 300),
             "args": None if e.acceptable is None else {
                 text(k, 200): [json_text(v, 2000) for v in vals]
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
        "latency_s": num(trace.latency_s, 3), "model": None if trace.model is None
        else text(trace.model, 300)}
    out["turns"], out["turns_left"] = turns, left
    out["final"] = final_block(turns, answer)
    out["answer"] = answer
    out["calls"] = [{"id": text(c.id, 200), "name": text(c.name, 300),
                     "args": json_text(dict(c.arguments)),
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
             "args": {text(k, 200): [json_text(v, 2000)]
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

