"""Load datasets: a JSON array or JSONL file of cases, each parsed into a :class:`Case`
(keys: docs/formats.md).
"""
from __future__ import annotations

import difflib
import hashlib
from pathlib import Path
from typing import Any, Iterable

import orjson

from evaltape.grader.errors import BadInputError
from evaltape.grader.io.jsonfiles import (depth_error, is_depth_error, iter_json_lines,
                                         repeated_key_error, screen)
from evaltape.grader.io.expectations import (FieldError, parse_actions, parse_budgets,
                                            parse_answer_text, parse_answer_texts,
                                            parse_arg_value, parse_claims, parse_env,
                                            parse_expected_calls, parse_matching, parse_state,
                                            parse_tools, parse_user, str_list)
from evaltape.grader.io.judges import parse_case_judges
from evaltape.grader.model import GROUNDING_SOURCES, Case

ID_KEYS = ("id", "name")
INPUT_KEYS = ("user_query", "task", "ticket", "user_input", "input")
#: Keys parsed into typed :class:`Case` fields. The recorded inputs among them (id, input,
#: script, max_steps, tools, user, env, initial_state) may not change after recording
#: (:func:`case_input_sha256`); every other key is an expectation and may change freely.
MODELED_KEYS = {
    "id", "name", "user_query", "task", "ticket", "user_input", "input", "script",
    "max_steps", "tags",
    # answer and tool expectations
    "expected_tools", "expected_args", "expected_outcome_keywords", "expected_answer_contains",
    # triage
    "expected_category", "must_mention",
    # difficulty tiers, required and forbidden phrases, judged claims
    "difficulty", "final_response_contains", "final_response_excludes", "factual_claims",
    # expected calls and topics, forbidden phrases
    "expected_tool_calls", "expected_topics", "should_not_contain",
    # evaltape's own
    "expected_actions", "reference_label", "tools", "matching", "budgets",
    "expected_output", "judges", "thresholds", "grounding_sources",
    # multi-turn conversations and stateful tools
    "user", "env", "initial_state", "expected_state", "gold_actions", "expect_unchanged",
}
#: Known keys kept verbatim in ``Case.extra`` (descriptions and metadata no metric reads).
EXTRA_KEYS = {"description", "exact_output", "grading_strategy", "expected_outputs",
              "metadata", "notes"}
KNOWN_KEYS = frozenset(MODELED_KEYS | EXTRA_KEYS)


def _field(key: str, sub: str) -> str:
    return key + sub if sub.startswith("[") or not sub else f"{key}.{sub}"


def _parse(obj: dict, key: str, parser: Any, path: str, line: int) -> Any:
    """``parser(obj[key])``, or ``None`` when absent or null; a :class:`FieldError` becomes a
    ``BadInputError`` naming the field.
    """
    value = obj.get(key)
    if value is None:
        return None
    try:
        return parser(value)
    except FieldError as e:
        raise BadInputError(e.message, path=path, line=line, field=_field(key, e.field)) from None


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise FieldError("", f"expected a string, got {type(value).__name__}")
    return value


def _grounding_sources(value: Any) -> tuple[str, ...]:
    """A case's ``grounding_sources``: names of :data:`~evaltape.grader.model.GROUNDING_SOURCES`."""
    names = str_list(value)
    for i, name in enumerate(names):
        if name not in GROUNDING_SOURCES:
            raise FieldError(f"[{i}]", f"unknown source {name!r} (sources: "
                             f"{', '.join(GROUNDING_SOURCES)})")
    return tuple(dict.fromkeys(names))


def _label(value: Any) -> bool:
    if not isinstance(value, bool):
        raise FieldError("", f"expected true/false/null, got {value!r}")
    return value


def unit_number(value: Any) -> bool:
    """Whether ``value`` is a finite number from 0 to 1 (a boolean is not a number)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and 0 <= value <= 1)


def parse_thresholds(value: Any) -> dict[str, float]:
    """A case's ``thresholds``: ``{metric name: finite number in [0, 1]}``.

    Raises:
        FieldError: not an object, or an entry that is not such a number (the entry named).
    """
    if not isinstance(value, dict):
        raise FieldError("", "expected {metric: threshold from 0 to 1}, e.g. "
                         '{"tool_selection_accuracy": 0.6}')
    out = {}
    for name, v in value.items():
        if not unit_number(v):
            raise FieldError(name, f"a threshold must be a number from 0 to 1, got {v!r}")
        out[name] = float(v)
    return out


def _args(value: Any) -> dict:
    """``expected_args``: ``{tool: {param: value}}``, ``{"one_of": [...]}`` values as ``OneOf``."""
    if not (isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())):
        raise FieldError("", "expected {tool: {param: value}}")
    return {tool: {k: parse_arg_value(v, f"{tool}.{k}") for k, v in params.items()}
            for tool, params in value.items()}


#: Keys of a case whose values go to the agent (and so into cassettes and the input hash).
FED_KEYS = ("max_steps", "script", "tools", "user", "env", "initial_state")
_INT_LOW, _INT_HIGH = -(1 << 63), (1 << 64) - 1


def beyond_64_bits(value: Any) -> str | None:
    """The path (``""``, ``".a[2]"``) of the first integer outside -2^63..2^64-1 in a decoded
    JSON value, or ``None``; iterative.
    """
    todo: list[tuple[Any, str]] = [(value, "")]
    while todo:
        item, where = todo.pop()
        if type(item) is int:
            if not _INT_LOW <= item <= _INT_HIGH:
                return where
        elif isinstance(item, dict):
            todo.extend((v, f"{where}.{k}") for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            todo.extend((v, f"{where}[{i}]") for i, v in reversed(list(enumerate(item))))
    return None


def parse_case(obj: Any, *, path: str, line: int, position: int) -> Case:
    """Normalise one case object into a :class:`Case`, every expectation parsed.

    Args:
        obj: the decoded case.
        path, line: its file and 1-based line (JSONL) or 1-based index (JSON array).
        position: 0-based index, for the ``case_NNN`` id of a case without one.

    Raises:
        BadInputError: not an object, an unknown key (with the nearest known one), no input,
            an integer beyond 64 bits in a fed key, or a field of the wrong shape (named as
            written: ``expected_tool_calls[1].arguments``).
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
    id_key = next((k for k in ID_KEYS if k in obj), None)
    case_id = obj[id_key] if id_key else f"case_{position + 1:03d}"
    if not isinstance(case_id, str) or not case_id:
        raise BadInputError("case id must be a non-empty string", path=path, line=line,
                            field=id_key or "id")
    input_key = next((k for k in INPUT_KEYS if k in obj), None)
    if input_key is None:
        raise BadInputError(f"case {case_id!r} has no input (one of {', '.join(INPUT_KEYS)})",
                            path=path, line=line)
    text = obj[input_key]
    if not isinstance(text, str):
        raise BadInputError("input must be a string", path=path, line=line, field=input_key)
    max_steps = obj.get("max_steps")
    if max_steps is not None and (not isinstance(max_steps, int) or isinstance(max_steps, bool)
                                  or max_steps < 1):
        raise BadInputError("expected a positive integer", path=path, line=line,
                            field="max_steps")

    for key in FED_KEYS:  # sent to the agent and stored: orjson writes 64-bit integers only
        where = beyond_64_bits(obj.get(key))
        if where is not None:
            raise BadInputError("an integer beyond 64 bits (from -2^63 to 2^64 - 1 are "
                                "recorded and hashed)", path=path, line=line, field=key + where)

    def get(key: str, parser: Any) -> Any:
        return _parse(obj, key, parser, path, line)

    calls = get("expected_tool_calls", parse_expected_calls)
    tools = get("expected_tools", str_list)
    if tools is None and calls is not None:
        # expected_tool_calls also gives the expected tool names
        tools = tuple(c.name for c in calls)
    topics = get("expected_topics", str_list)
    keywords = get("expected_outcome_keywords", parse_answer_texts)
    case = Case(
        id=case_id, input=text,
        expected_tools=tools,
        expected_args=get("expected_args", _args),
        expected_calls=calls,
        expected_actions=get("expected_actions", parse_actions),
        expected_outcome_keywords=keywords if keywords is not None else topics,
        expected_answer_contains=get("expected_answer_contains", parse_answer_text),
        expected_topics=topics,
        final_response_contains=get("final_response_contains", parse_answer_texts),
        final_response_excludes=get("final_response_excludes", str_list),
        should_not_contain=get("should_not_contain", str_list),
        factual_claims=get("factual_claims", parse_claims),
        expected_category=get("expected_category", _text),
        must_mention=get("must_mention", _text),
        difficulty=get("difficulty", _text),
        reference_label=get("reference_label", _label),
        tools=get("tools", parse_tools),
        matching=get("matching", parse_matching),
        budgets=get("budgets", parse_budgets),
        expected_output=get("expected_output", _text),
        judges=get("judges", parse_case_judges),
        script=get("script", str_list),
        max_steps=max_steps,
        tags=get("tags", str_list) or (),
        thresholds=get("thresholds", parse_thresholds),
        grounding_sources=get("grounding_sources", _grounding_sources),
        user=get("user", parse_user),
        env=get("env", parse_env),
        initial_state=get("initial_state", parse_state),
        expected_state=get("expected_state", parse_state),
        gold_actions=get("gold_actions", parse_actions),
        expect_unchanged=get("expect_unchanged", _label),
        extra={k: v for k, v in obj.items() if k in EXTRA_KEYS},
        line=line,
    )
    check_state_expectation(case, path=path, line=line)
    return case


def check_state_expectation(case: Case, *, path: str, line: int) -> None:
    """Refuse an end-state expectation that an agent doing nothing would meet.

    Refused: an ``expected_state`` naming no path; an expected end
    (:func:`evaltape.grader.envs.documents.expected_end`) equal to the initial state, unless
    ``"expect_unchanged": true``; ``expect_unchanged`` with an end that changes it; a gold
    action the environment refuses. A case whose environment cannot be loaded is checked at
    grading.

    Raises:
        BadInputError: one of the above, naming the case and the field.
    """
    from evaltape.grader.envs import resolve_env
    from evaltape.grader.envs.documents import expected_end, named_paths, same_value
    if case.expected_state is None and case.gold_actions is None:
        return
    if case.expected_state is not None and not named_paths(case.expected_state) \
            and not case.expect_unchanged:
        raise BadInputError(
            f"case {case.id!r}: expected_state names no path, so any end state would pass; "
            "name the keys the end state must hold, or say \"expect_unchanged\": true when "
            "the correct end is no change", path=path, line=line, field="expected_state")
    env = None
    if case.env is not None:
        try:
            env = resolve_env(case.env)
        except LookupError:
            env = None
    if env is None and (case.initial_state is None or case.gold_actions is not None):
        return  # nothing to apply the expectation to here
    initial = env.initial_state(case.initial_state) if env is not None \
        else dict(case.initial_state or {})
    expected = expected_end(case, initial, env)
    if expected.problems:  # a gold action the environment refuses describes no end state
        raise BadInputError(
            f"case {case.id!r}: {expected.problems[0]}: a gold action must be one the "
            "environment can carry out from the initial state", path=path, line=line,
            field="gold_actions")
    unchanged = same_value(expected.state, initial)
    field = "expected_state" if case.expected_state is not None else "gold_actions"
    if unchanged and not case.expect_unchanged:
        raise BadInputError(
            f"case {case.id!r}: the expected end state is the initial state, so an agent "
            "that does nothing would pass; say \"expect_unchanged\": true when the "
            "correct end is no change", path=path, line=line, field=field)
    if not unchanged and case.expect_unchanged:
        raise BadInputError(
            f"case {case.id!r}: expect_unchanged is true but the {field} "
            f"{'changes' if field == 'expected_state' else 'change'} the initial state",
            path=path, line=line, field="expect_unchanged")


def load_dataset(path: str | Path) -> list[Case]:
    """Load every case of a ``.json`` (array) or ``.jsonl`` dataset file.

    Returns:
        Cases in file order.

    Raises:
        BadInputError: unreadable file, invalid JSON (with line), a bad case, or a
            duplicate case id (names both lines).
    """
    p = str(path)
    if Path(p).exists() and not Path(p).is_file():  # a FIFO or a device would be read forever
        raise BadInputError("not a regular file (a folder, pipe or device)", path=p)
    try:
        data = Path(p).read_bytes()
    except OSError as e:
        raise BadInputError(f"cannot read dataset: {e.strerror}", path=p) from None
    items: list[tuple[int, Any]] = []
    if p.endswith(".jsonl"):
        items = list(iter_json_lines(data, path=p, unique_keys=True))
    else:
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as e:
            if is_depth_error(e):
                raise depth_error(data, p) from None
            raise BadInputError(f"not valid JSON ({e})", path=p) from None
        if not isinstance(doc, list):
            raise BadInputError("a .json dataset must be an array of cases", path=p)
        doc, dup = screen(data, doc, p)
        if dup is not None:
            raise repeated_key_error(dup, p)
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
    """sha256 (hex) of what a case feeds the agent: id, input, script, max_steps, and, when
    set, ``tools``, ``user``, ``env`` and ``initial_state``. Expectations are excluded.
    """
    fed = {"id": case.id, "input": case.input,
           "script": list(case.script) if case.script is not None else None,
           "max_steps": case.max_steps}
    if case.tools is not None:
        fed["tools"] = list(case.tools)
    if case.user is not None:
        u = case.user
        fed["user"] = {"instructions": u.instructions, "persona": u.persona,
                       "known_facts": dict(u.known_facts) if u.known_facts else None,
                       "turns": list(u.turns) if u.turns is not None else None,
                       "max_turns": u.max_turns, "stop": u.stop}
    if case.env is not None:
        fed["env"] = case.env
    if case.initial_state is not None:
        fed["initial_state"] = case.initial_state
    blob = orjson.dumps(fed, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(blob).hexdigest()


def _json_default(value: Any) -> Any:
    """orjson's ``default``: sets (sorted by ``repr``) and non-dict mappings."""
    if isinstance(value, (frozenset, set)):
        return sorted(value, key=repr)
    if hasattr(value, "items"):
        return dict(value.items())
    raise TypeError(f"{type(value).__name__} is not JSON")


#: Hex digits of a case or trace digest kept in ``report.json`` (64 bits: enough to tell
#: two versions of one case or episode apart, 16 bytes per episode).
DIGEST_HEX = 16


def case_digest(case: Case) -> str:
    """The first :data:`DIGEST_HEX` hex digits of the sha256 of the canonical JSON of every set
    field of a case (``line`` and ``None`` fields left out); differing digests mean differing
    case versions.
    """
    import dataclasses
    stated = {f.name: getattr(case, f.name) for f in dataclasses.fields(case)
              if f.name != "line" and getattr(case, f.name) is not None}
    try:
        blob = orjson.dumps(stated, default=_json_default,
                            option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:  # an integer beyond 64 bits (kept exact at load): the slow writer
        import json
        whole = dataclasses.asdict(case)
        blob = json.dumps({k: whole[k] for k in stated}, default=_json_default,
                          sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()[:DIGEST_HEX]


def inputs_sha256(cases: Iterable[Case]) -> str:
    """sha256 (hex) over the per-case input hashes, in case-id order."""
    h = hashlib.sha256()
    for sha in sorted(f"{c.id}\0{case_input_sha256(c)}" for c in cases):
        h.update(sha.encode())
        h.update(b"\n")
    return h.hexdigest()
