"""``openai-messages`` and ``anthropic-messages``: a JSONL of conversations, one episode per
line (a message array or ``{"messages", "id"?, "trial"?, "reference_label"?, "expected_*"?,
"model"?, "metadata"?}``). OpenAI lines are converted
(:func:`~evaltape.grader.importers.openai_chat.openai_to_anthropic`); system messages and a
top-level ``system``/``tools`` become the trace's ``system``/``tools``. Case id ``id`` or
``<file stem>:<line>``; final answer the last assistant text. A call with non-object
arguments is kept as ``malformed_tool_input`` with a warning; a bad line is one error.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from evaltape.grader.errors import BadInputError
from evaltape.grader.io.jsonfiles import iter_json_lines
from evaltape.grader.importers.common import (EpisodeError, EpisodeProblem, ImportResult,
                                              read_source, system_messages, system_text,
                                              tool_schemas, trace_from_messages, unique_id)
from evaltape.grader.importers.openai_chat import openai_to_anthropic
from evaltape.grader.io.traces import INT_MAX

CASE_KEYS = ("expected_actions", "expected_tools", "expected_outputs", "metadata")


def _episode(obj: Any, flavour: str, default_id: str, path: str, lineno: int,
             model: str | None) -> tuple[dict, dict]:
    meta: dict[str, Any] = obj if isinstance(obj, dict) else {"messages": obj}
    raw = meta.get("messages")
    if not isinstance(raw, list):
        raise EpisodeProblem("expected a list of messages (or {\"messages\": [...]})",
                             "messages")
    malformed: dict[str, str] = {}  # call id → the raw arguments, not a JSON object
    if flavour == "openai":
        messages = openai_to_anthropic(raw, "messages", malformed)
    else:
        messages = [m for m in raw if not (isinstance(m, dict) and m.get("role") == "system")]
    if not any(isinstance(m, dict) and m.get("role") == "user" for m in messages):
        raise EpisodeProblem("no user message: nothing asked, so no episode (an empty "
                             "conversation, or only system/assistant messages)", "messages")
    case_id = meta.get("id", meta.get("case_id", default_id))
    trial = meta.get("trial", 0)
    if not isinstance(case_id, str) or not case_id:
        raise EpisodeProblem("id must be a non-empty string", "id")
    if type(trial) is not int or not 0 <= trial <= INT_MAX:  # as the trace reader checks it
        raise EpisodeProblem(f"trial must be an integer from 0, got {trial!r}"[:120], "trial")
    label = meta.get("reference_label")
    if label is not None and not isinstance(label, bool):
        raise EpisodeProblem(f"expected true/false/null, got {label!r}", "reference_label")
    extra: dict[str, Any] = {"source": {"format": f"{flavour}-messages", "path": path,
                                        "place": f"line {lineno}"}}
    if label is not None:
        extra["reference_label"] = label
    system = system_text([system_text(meta.get("system")) or "",
                          system_messages(raw) or ""])
    trace = trace_from_messages(messages, case_id=case_id, trial=trial, final="last_text",
                                model=meta.get("model", model), extra=extra,
                                malformed=malformed, system=system,
                                tools=tool_schemas(meta.get("tools")))
    case = {"id": case_id, "input": trace["input"]}
    case.update({k: meta[k] for k in CASE_KEYS if meta.get(k) is not None})
    return trace, case


def import_file(path: str, result: ImportResult, *, flavour: str,
                model: str | None = None) -> None:
    """Import one JSONL file of conversations (``flavour`` ``"openai"`` or ``"anthropic"``);
    errors go to ``result.errors`` with file, line and place.
    """
    data = read_source(path, result)
    if data is None:
        return
    stem = Path(path).stem
    seen = {(t["case_id"], t["trial"]) for t in result.traces}
    for lineno, obj in iter_json_lines(data, path=str(path), keep_going=True):
        if isinstance(obj, BadInputError):
            result.errors.append(EpisodeError(path, obj.field or "", obj.message, line=lineno))
            continue
        try:
            trace, case = _episode(obj, flavour, f"{stem}:{lineno}", path, lineno, model)
            if (trace["case_id"], trace["trial"]) in seen:
                if isinstance(obj, dict) and ("id" in obj or "case_id" in obj):
                    raise EpisodeProblem(f"duplicate episode {trace['case_id']!r} trial "
                                         f"{trace['trial']}", "id")
                trace["case_id"] = case["id"] = unique_id(case["id"], result.cases)
            old = result.cases.get(case["id"])
            if old is not None and old["input"] != case["input"]:
                raise EpisodeProblem(f"case {case['id']!r}: first user message differs from "
                                     "an earlier trial's", "messages")
        except EpisodeProblem as p:
            result.errors.append(EpisodeError(path, p.place, p.message, line=lineno))
            continue
        seen.add((trace["case_id"], trace["trial"]))
        result.add_case(case)
        result.traces.append(trace)
        for call in trace["tool_calls"]:
            if call.get("malformed_tool_input"):
                result.warnings.append(
                    f"{path}:{lineno}: {trace['case_id']}#t{trace['trial']}: tool call "
                    f"{call['id']} ({call['name']}): malformed_tool_input, its arguments are "
                    f"not a JSON object: {call['raw_arguments'][:60]!r}; kept with arguments "
                    "{} (graded as a call without the expected arguments)")
