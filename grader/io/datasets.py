"""Load datasets (DESIGN.md §4): a JSON array or JSONL of cases in any seed's format.

Seed 000 (``id``, ``user_query``, ``expected_tools``, ``expected_args``,
``expected_outcome_keywords``, ``tags``), seed 002 (``name``, ``task``, ``script``,
``expected_answer_contains``, ``expected_tools``, ``max_steps``), seed 001 (``ticket``,
``expected_category``, ``must_mention``) and the seed 003/004 fields load unchanged.
"""
from __future__ import annotations

import difflib
import hashlib
from pathlib import Path
from typing import Any, Iterable

import orjson

from evaltape.grader.errors import BadInputError
from evaltape.grader.io.jsonfiles import iter_json_lines
from evaltape.grader.model import Case

ID_KEYS = ("id", "name")
INPUT_KEYS = ("user_query", "task", "ticket", "user_input", "input")
#: Keys that are recorded inputs: changing one after recording invalidates the run.
#: Everything else is an expectation and may change freely.
MODELED_KEYS = {
    "id", "name", "user_query", "task", "ticket", "user_input", "input",
    "expected_tools", "expected_args", "expected_outcome_keywords",
    "expected_answer_contains", "script", "max_steps", "tags",
}
EXTRA_KEYS = {
    # seed 001
    "expected_category", "must_mention",
    # seed 003
    "description", "difficulty", "final_response_contains", "final_response_excludes",
    "factual_claims", "exact_output", "grading_strategy",
    # seed 004
    "expected_tool_calls", "expected_topics", "should_not_contain",
    # evaltape's own
    "reference_label", "expected_actions", "expected_outputs", "metadata", "notes",
}
KNOWN_KEYS = frozenset(MODELED_KEYS | EXTRA_KEYS)


def _str_list(value: Any, path: str, line: int, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadInputError("expected a list of strings", path=path, line=line, field=key)
    return tuple(value)


def _check_actions(value: Any, path: str, line: int) -> None:
    """Validate ``expected_actions``: a list of ``{name, kwargs}`` (grader/actions.py)."""
    from evaltape.grader.matching.actions import action_parts
    if not isinstance(value, list):
        raise BadInputError("expected a list of {name, kwargs}", path=path, line=line,
                            field="expected_actions")
    for i, action in enumerate(value):
        try:
            action_parts(action, f"expected_actions[{i}]")
        except ValueError as e:
            field, _, msg = str(e).partition(": ")
            raise BadInputError(msg, path=path, line=line, field=field) from None


def parse_case(obj: Any, *, path: str, line: int, position: int) -> Case:
    """Normalise one case object into a :class:`Case`.

    Args:
        obj: the decoded case.
        path, line: its file and 1-based line (JSONL) or 1-based index (JSON array).
        position: 0-based index, used for ``case_NNN`` ids of seed 001 cases without id.

    Raises:
        BadInputError: not an object; an unknown key (the message suggests the nearest known
            key); no input key; a field of the wrong type.
    """
    if not isinstance(obj, dict):
        raise BadInputError(f"case must be an object, got {type(obj).__name__}", path=path,
                            line=line)
    for key in obj:
        if key not in KNOWN_KEYS:
            near = difflib.get_close_matches(key, sorted(KNOWN_KEYS), n=1, cutoff=0.6)
            hint = f"; did you mean '{near[0]}'?" if near else ""
            ident = obj.get("id") or obj.get("name") or f"#{position + 1}"
            raise BadInputError(f"unknown key in case {ident!r}{hint}", path=path, line=line,
                                field=key)
    case_id = next((obj[k] for k in ID_KEYS if k in obj), None)
    if case_id is None:
        case_id = f"case_{position + 1:03d}"
    if not isinstance(case_id, str) or not case_id:
        raise BadInputError("case id must be a non-empty string", path=path, line=line,
                            field="id")
    text = next((obj[k] for k in INPUT_KEYS if k in obj), None)
    if text is None:
        raise BadInputError(f"case {case_id!r} has no input (one of {', '.join(INPUT_KEYS)})",
                            path=path, line=line)
    if not isinstance(text, str):
        raise BadInputError("input must be a string", path=path, line=line,
                            field=next(k for k in INPUT_KEYS if k in obj))
    exp_tools = obj.get("expected_tools")
    if exp_tools is None and "expected_tool_calls" in obj:
        exp_tools = obj["expected_tool_calls"]  # seed 004's name for the same expectation
    exp_args = obj.get("expected_args")
    if exp_args is not None and not (isinstance(exp_args, dict) and
                                     all(isinstance(v, dict) for v in exp_args.values())):
        raise BadInputError("expected {tool: {param: value}}", path=path, line=line,
                            field="expected_args")
    contains = obj.get("expected_answer_contains")
    if contains is not None and not isinstance(contains, str):
        raise BadInputError("expected a string", path=path, line=line,
                            field="expected_answer_contains")
    max_steps = obj.get("max_steps")
    if max_steps is not None and (not isinstance(max_steps, int) or isinstance(max_steps, bool)
                                  or max_steps < 1):
        raise BadInputError("expected a positive integer", path=path, line=line,
                            field="max_steps")
    if obj.get("expected_actions") is not None:
        _check_actions(obj["expected_actions"], path, line)
    script = obj.get("script")
    kws = obj.get("expected_outcome_keywords")
    if kws is None and "expected_topics" in obj:
        kws = obj["expected_topics"]  # seed 004's name for the same expectation
    return Case(
        id=case_id, input=text,
        expected_tools=None if exp_tools is None else _str_list(exp_tools, path, line,
                                                                "expected_tools"),
        expected_args=exp_args,
        expected_outcome_keywords=None if kws is None else _str_list(
            kws, path, line, "expected_outcome_keywords"),
        expected_answer_contains=contains,
        script=None if script is None else _str_list(script, path, line, "script"),
        max_steps=max_steps,
        tags=_str_list(obj.get("tags", []), path, line, "tags"),
        extra={k: v for k, v in obj.items() if k in EXTRA_KEYS},
        line=line,
    )


def load_dataset(path: str | Path) -> list[Case]:
    """Load every case of a ``.json`` (array) or ``.jsonl`` dataset file.

    Returns:
        Cases in file order.

    Raises:
        BadInputError: unreadable file, invalid JSON (with line), a bad case, or a
            duplicate case id (names both lines).
    """
    p = str(path)
    try:
        data = Path(p).read_bytes()
    except OSError as e:
        raise BadInputError(f"cannot read dataset: {e.strerror}", path=p) from None
    items: list[tuple[int, Any]] = []
    if p.endswith(".jsonl"):
        items = list(iter_json_lines(data, path=p))
    else:
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as e:
            raise BadInputError(f"not valid JSON ({e})", path=p) from None
        if not isinstance(doc, list):
            raise BadInputError("a .json dataset must be an array of cases", path=p)
        items = [(i + 1, obj) for i, obj in enumerate(doc)]
    cases: list[Case] = []
    seen: dict[str, int] = {}
    is_array = not p.endswith(".jsonl")
    for position, (lineno, obj) in enumerate(items):
        try:
            case = parse_case(obj, path=p, line=lineno, position=position)
            if case.id in seen:
                raise BadInputError(f"duplicate case id {case.id!r} (first at "
                                    f"{'case #' if is_array else 'line '}{seen[case.id]})",
                                    path=p, line=lineno, field="id")
        except BadInputError as e:
            if not is_array:
                raise
            # in a JSON array the number is the case's position, not a file line
            raise BadInputError(e.message, path=p, field=f"[{position}]" + (
                f".{e.field}" if e.field else "")) from None
        seen[case.id] = lineno
        cases.append(case)
    return cases


def case_input_sha256(case: Case) -> str:
    """sha256 (hex) of what a case feeds the agent: id, input, script and max_steps.

    Expectations are excluded on purpose: they may change after recording (DESIGN.md §1).
    """
    blob = orjson.dumps({"id": case.id, "input": case.input,
                         "script": list(case.script) if case.script is not None else None,
                         "max_steps": case.max_steps}, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(blob).hexdigest()


def inputs_sha256(cases: Iterable[Case]) -> str:
    """sha256 (hex) over the per-case input hashes, in case-id order."""
    h = hashlib.sha256()
    for sha in sorted(f"{c.id}\0{case_input_sha256(c)}" for c in cases):
        h.update(sha.encode())
        h.update(b"\n")
    return h.hexdigest()
