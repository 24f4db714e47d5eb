"""Parse a case's expectations into typed values at dataset load; each parser raises
:class:`FieldError` naming the place inside the key (``[2].arguments``). Forms
(docs/formats.md): ``expected_tool_calls`` items are ``"tool"``, ``{"name", "arguments",
"args_mode"?, "unordered_lists"?, "options"?}`` or BFCL's ``{"tool": {"param":
[acceptable, ..., ""]}}``; ``expected_actions`` items ``{"name", "kwargs"}`` (τ-bench,
with τ²-bench's ``action_id``, ``compare_args``, ``requestor``); answer text a phrase,
``{"regex": ...}`` or ``{"any_of": [...]}``; an argument value may be ``{"one_of": [...]}``.
"""
from __future__ import annotations

import re
from typing import Any, Literal, Mapping, get_args

from evaltape.grader.model import (TEXT_FORMS, AnswerText, ArgOptions, ExpectedCall,
                                   FactualClaim, OneOf, UserSpec, acceptable_values)

ArgsMode = Literal["exact", "ignore", "subset", "superset"]
#: Values of a case's ``matching`` key: the Berkeley Function-Calling Leaderboard's AST
#: checker, or τ²-bench's action checks.
MATCHING = ("bfcl", "tau2")
_OPTION_KEYS = ("unordered", "ignore", "standardize", "tolerance")


class FieldError(ValueError):
    """A value of the wrong shape inside an expectation.

    Attributes:
        field: the path inside the key (``"[2].arguments"``), ``""`` for the key itself.
        message: what is wrong.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field, self.message = field, message


def _kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean",
            type(None): "null"}.get(type(value), "number" if isinstance(value, (int, float))
                                    else type(value).__name__)


def str_list(value: Any, where: str = "") -> tuple[str, ...]:
    """A list of strings as a tuple.

    Raises:
        FieldError: not a list, or an item that is not a string (its index named).
    """
    if not isinstance(value, list):
        raise FieldError(where, f"expected a list of strings, got {_kind(value)}")
    for i, v in enumerate(value):
        if not isinstance(v, str):
            raise FieldError(f"{where}[{i}]", f"expected a string, got {_kind(v)}")
    return tuple(value)


def parse_expected_call(item: Any, where: str = "") -> ExpectedCall:
    """One ``expected_tool_calls`` item (the three forms of the module doc).

    Raises:
        FieldError: any other shape, naming the place (``[i]``, ``[i].arguments``...).
    """
    if isinstance(item, str):
        if not item:
            raise FieldError(where, "expected a non-empty tool name")
        return ExpectedCall(item)
    if not isinstance(item, Mapping):
        raise FieldError(where, f"expected a tool name, {{name, arguments}} or BFCL "
                                f"{{name: {{param: [values]}}}}, got {_kind(item)}")
    if "name" in item:
        name = item["name"]
        if not isinstance(name, str) or not name:
            raise FieldError(f"{where}.name", "expected a non-empty string")
        unknown = sorted(set(item) - {"name", "arguments", "args", "args_mode",
                                      "unordered_lists", "options"})
        if unknown:
            raise FieldError(f"{where}.{unknown[0]}", "unknown key (known: name, arguments, "
                                                     "args_mode, unordered_lists, options)")
        key = "arguments" if "arguments" in item else "args"
        args = item.get(key)
        if args is not None and not isinstance(args, Mapping):
            raise FieldError(f"{where}.{key}", f"expected an object, got {_kind(args)}")
        mode = item.get("args_mode")
        if mode is not None and mode not in get_args(ArgsMode):
            raise FieldError(f"{where}.args_mode", f"unknown mode {mode!r}; valid: "
                                                  f"{', '.join(get_args(ArgsMode))}")
        lists = item.get("unordered_lists", False)
        if not isinstance(lists, bool):
            raise FieldError(f"{where}.unordered_lists", f"expected true/false, got "
                                                        f"{_kind(lists)}")
        return ExpectedCall(name, None if args is None else {
                                k: acceptable_values(parse_arg_value(v, f"{where}.{key}.{k}"))
                                for k, v in args.items()},
                            args_mode=mode, unordered_lists=lists,
                            options=parse_options(item.get("options"), f"{where}.options"))
    if len(item) != 1:
        raise FieldError(where, "expected {name, arguments} or BFCL's one-key "
                                "{tool_name: {param: [values]}}")
    (name, params), = item.items()
    if not isinstance(params, Mapping):
        raise FieldError(f"{where}.{name}", f"expected {{param: [acceptable values]}}, got "
                                            f"{_kind(params)}")
    for k, v in params.items():
        if not isinstance(v, list):
            raise FieldError(f"{where}.{name}.{k}", f"expected a list of acceptable values, "
                                                   f"got {_kind(v)}")
    acceptable = {k: tuple(x for x in v if x != "") for k, v in params.items()}
    optional = frozenset(k for k, v in params.items() if "" in v)
    return ExpectedCall(str(name), acceptable, optional, args_mode="exact")


def parse_options(value: Any, where: str = "") -> dict[str, ArgOptions]:
    """``{param: {unordered?, ignore?, standardize?, tolerance?}}`` → ``{param: ArgOptions}``.

    Raises:
        FieldError: not an object, an unknown option (the known ones listed), a flag that is
            not true/false, or a tolerance that is not a number >= 0.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise FieldError(where, f"expected {{param: {{option: value}}}}, got {_kind(value)}")
    out = {}
    for param, opts in value.items():
        w = f"{where}.{param}"
        if not isinstance(opts, Mapping):
            raise FieldError(w, f"expected an object of options, got {_kind(opts)}")
        for key, v in opts.items():
            if key not in _OPTION_KEYS:
                raise FieldError(f"{w}.{key}", f"unknown option (known: {', '.join(_OPTION_KEYS)})")
            if key == "tolerance":
                if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                    raise FieldError(f"{w}.{key}", f"expected a number >= 0, got {v!r}")
            elif not isinstance(v, bool):
                raise FieldError(f"{w}.{key}", f"expected true/false, got {_kind(v)}")
        out[str(param)] = ArgOptions(**{k: (float(v) if k == "tolerance" else v)
                                        for k, v in opts.items()})
    return out


def parse_tools(value: Any) -> tuple[Mapping[str, Any], ...]:
    """A case's ``tools``: function schemas, each an object with a non-empty ``name`` and an
    object ``parameters`` (BFCL/OpenAI) or ``input_schema`` (Anthropic), kept verbatim.

    Raises:
        FieldError: not a list, or a schema of the wrong shape (index and key named).
    """
    if not isinstance(value, list):
        raise FieldError("", f"expected a list of function schemas, got {_kind(value)}")
    for i, t in enumerate(value):
        if not isinstance(t, Mapping):
            raise FieldError(f"[{i}]", f"expected an object, got {_kind(t)}")
        if not isinstance(t.get("name"), str) or not t["name"]:
            raise FieldError(f"[{i}].name", "expected a non-empty string")
        key = "input_schema" if "input_schema" in t else "parameters"
        if not isinstance(t.get(key), Mapping):
            raise FieldError(f"[{i}].{key}", "expected an object (the JSON schema of the "
                                             "arguments)")
    return tuple(value)


def parse_matching(value: Any) -> str:
    """A case's ``matching``: one of :data:`MATCHING`.

    Raises:
        FieldError: any other value (the valid ones listed).
    """
    if value not in MATCHING:
        raise FieldError("", f"unknown matching {value!r}; valid: {', '.join(MATCHING)}")
    return value


def parse_expected_calls(value: Any) -> tuple[ExpectedCall, ...]:
    """Every item of ``expected_tool_calls``.

    Raises:
        FieldError: not a list, or a bad item (its index named).
    """
    if not isinstance(value, list):
        raise FieldError("", f"expected a list, got {_kind(value)}")
    return tuple(parse_expected_call(x, f"[{i}]") for i, x in enumerate(value))


def parse_actions(value: Any) -> tuple[ExpectedCall, ...]:
    """``expected_actions`` as calls with literal arguments in ``exact`` mode.

    Raises:
        FieldError: not a list, an item that is not an object, ``name`` not a non-empty
            string, or ``kwargs``/``arguments`` not an object (index and key named).
    """
    if not isinstance(value, list):
        raise FieldError("", f"expected a list of {{name, kwargs}}, got {_kind(value)}")
    out = []
    for i, action in enumerate(value):
        where = f"[{i}]"
        if not isinstance(action, dict):
            raise FieldError(where, f"expected an object, got {_kind(action)}")
        name = action.get("name")
        if not isinstance(name, str) or not name:
            raise FieldError(f"{where}.name", "expected a non-empty string")
        key = "kwargs" if "kwargs" in action else "arguments"
        kwargs = action.get(key, {})
        if not isinstance(kwargs, dict):
            raise FieldError(f"{where}.{key}", f"expected an object, got {_kind(kwargs)}")
        action_id = action.get("action_id")
        if action_id is not None and not isinstance(action_id, str):
            raise FieldError(f"{where}.action_id", f"expected a string, got {_kind(action_id)}")
        compare = action.get("compare_args")
        if compare is not None:
            compare = str_list(compare, f"{where}.compare_args")
        requestor = action.get("requestor", "assistant")
        if requestor not in ("assistant", "user"):
            raise FieldError(f"{where}.requestor", f"expected 'assistant' or 'user', got "
                                                  f"{requestor!r}")
        out.append(ExpectedCall(name, {k: (v,) for k, v in kwargs.items()}, args_mode="exact",
                                action_id=action_id, compare_args=compare,
                                requestor=requestor))
    return tuple(out)


def parse_claims(value: Any) -> tuple[FactualClaim, ...]:
    """A case's ``factual_claims``: ``{"statement": str, "expected_truth"?: bool,
    "source_ref"?: str}`` objects (``expected_truth`` defaults to true).

    Raises:
        FieldError: not a list, or an item of the wrong shape (index and key named).
    """
    if not isinstance(value, list):
        raise FieldError("", f"expected a list of {{statement, expected_truth}}, got "
                             f"{_kind(value)}")
    out = []
    for i, c in enumerate(value):
        where = f"[{i}]"
        if not isinstance(c, dict):
            raise FieldError(where, f"expected an object, got {_kind(c)}")
        if not isinstance(c.get("statement"), str) or not c["statement"].strip():
            raise FieldError(f"{where}.statement", "expected a non-empty string")
        truth = c.get("expected_truth", True)
        if not isinstance(truth, bool):
            raise FieldError(f"{where}.expected_truth", f"expected true/false, got "
                                                       f"{_kind(truth)}")
        ref = c.get("source_ref")
        if ref is not None and not isinstance(ref, str):
            raise FieldError(f"{where}.source_ref", f"expected a string, got {_kind(ref)}")
        out.append(FactualClaim(c["statement"], truth, ref))
    return tuple(out)


#: A case's ``budgets`` keys: whole-number ones (counts) and the others (USD, seconds).
BUDGET_COUNTS = ("max_tool_calls", "max_steps")
BUDGET_AMOUNTS = ("max_cost_usd", "max_latency_s")
BUDGET_KEYS = BUDGET_COUNTS + BUDGET_AMOUNTS


def check_budget(key: str, value: Any, where: str = "") -> int | float | None:
    """One budget value: a whole number >= 0 for :data:`BUDGET_COUNTS`, a finite number
    >= 0 for :data:`BUDGET_AMOUNTS`, or ``None`` (no budget).

    Raises:
        FieldError: a boolean, a string, a negative, fractional (counts) or infinite value.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FieldError(where, f"expected a number >= 0 or null, got {_kind(value)}")
    if key in BUDGET_COUNTS:
        if not (isinstance(value, int) or float(value).is_integer()) or value < 0:
            raise FieldError(where, f"expected a whole number >= 0 (a count), got {value!r}")
        return int(value)
    if not 0 <= value < float("inf"):  # also refuses NaN
        raise FieldError(where, f"expected a finite number >= 0, got {value!r}")
    return value


def parse_budgets(value: Any) -> dict[str, int | float | None]:
    """A case's ``budgets``: ``{"max_tool_calls"?: int, "max_steps"?: int,
    "max_cost_usd"?: number, "max_latency_s"?: number}``; a ``null`` value means "no
    budget for this case" (a configured default does not apply).

    Raises:
        FieldError: not an object, an unknown key (the nearest known one suggested), or a
            value :func:`check_budget` refuses (the key named).
    """
    import difflib

    if not isinstance(value, Mapping):
        raise FieldError("", f"expected an object {{budget: limit}}, got {_kind(value)}")
    out = {}
    for key, v in value.items():
        if key not in BUDGET_KEYS:
            near = difflib.get_close_matches(str(key), BUDGET_KEYS, n=1)
            raise FieldError(str(key), "unknown budget" + (f"; did you mean '{near[0]}'?"
                                                          if near else "")
                             + f" (known: {', '.join(BUDGET_KEYS)})")
        out[key] = check_budget(key, v, key)
    return out


#: Keys of a case's ``user`` object.
USER_KEYS = ("instructions", "persona", "known_facts", "turns", "max_turns", "stop")


def parse_user(value: Any) -> UserSpec:
    """A case's ``user``: ``{"instructions"?, "persona"?, "known_facts"?, "turns"?,
    "max_turns"?: int >= 1, "stop"?}``; ``turns`` (scripted) or ``instructions`` (simulated)
    is required. ``max_turns`` defaults to :data:`~evaltape.grader.model.DEFAULT_MAX_TURNS`,
    at least the scripted turns + 1.

    Raises:
        FieldError: not an object, an unknown key (nearest suggested), a wrong type, or
            neither ``turns`` nor ``instructions``.
    """
    import difflib

    from evaltape.grader.model import DEFAULT_MAX_TURNS, USER_STOP
    if not isinstance(value, dict):
        raise FieldError("", f"expected an object {{instructions | turns, ...}}, got "
                         f"{_kind(value)}")
    for key in value:
        if key not in USER_KEYS:
            near = difflib.get_close_matches(key, USER_KEYS, n=1, cutoff=0.6)
            raise FieldError(key, "unknown key" + (f"; did you mean '{near[0]}'?" if near
                                                   else f" (known: {', '.join(USER_KEYS)})"))
    for key in ("instructions", "persona", "stop"):
        v = value.get(key)
        if v is not None and (not isinstance(v, str) or not v.strip()):
            raise FieldError(key, f"expected a non-empty string, got {_kind(v)}")
    facts = value.get("known_facts")
    if facts is not None:
        if not isinstance(facts, dict):
            raise FieldError("known_facts", f"expected {{name: value}}, got {_kind(facts)}")
        for k, v in facts.items():
            if not isinstance(v, (str, int, float)) or isinstance(v, bool):
                raise FieldError(f"known_facts.{k}", f"expected a string or number, got "
                                 f"{_kind(v)}")
        facts = {k: str(v) for k, v in facts.items()}
    turns = value.get("turns")
    if turns is not None:
        turns = str_list(turns, "turns")
        for i, t in enumerate(turns):
            if not t.strip():
                raise FieldError(f"turns[{i}]", "a user message may not be empty")
    if turns is None and value.get("instructions") is None:
        raise FieldError("", "a user needs 'turns' (a scripted user) or 'instructions' "
                         "(a simulated user)")
    max_turns = value.get("max_turns")
    if max_turns is None:
        max_turns = max(DEFAULT_MAX_TURNS, len(turns) + 1 if turns is not None else 0)
    elif type(max_turns) is not int or max_turns < 1:
        raise FieldError("max_turns", f"expected a whole number >= 1, got {max_turns!r}"[:120])
    return UserSpec(instructions=value.get("instructions"), persona=value.get("persona"),
                    known_facts=facts, turns=turns, max_turns=max_turns,
                    stop=value.get("stop") or USER_STOP)


def parse_state(value: Any) -> dict:
    """An ``initial_state`` or ``expected_state``: a JSON object.

    Raises:
        FieldError: not an object.
    """
    if not isinstance(value, dict):
        raise FieldError("", f"expected a JSON object (the environment's state), got "
                         f"{_kind(value)}")
    return value


def parse_env(value: Any) -> str:
    """A case's ``env``: a built-in environment name or ``module:object``.

    Raises:
        FieldError: not a non-empty string.
    """
    if not isinstance(value, str) or not value.strip():
        raise FieldError("", f"expected an environment name (e.g. 'clinic') or "
                         f"module:object, got {_kind(value)}")
    return value


def parse_answer_text(value: Any, where: str = "") -> str | AnswerText:
    """One expected piece of answer text: a string, or ``{"regex": ...}`` / ``{"any_of": [...]}``.

    Raises:
        FieldError: another type or keys, a pattern that does not compile (with the
            compiler's message), or ``any_of`` not a non-empty list of non-empty strings.
    """
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        raise FieldError(where, f"expected a phrase (string), {{\"regex\": PATTERN}} or "
                                f"{{\"any_of\": [PHRASE, ...]}}, got {_kind(value)}")
    keys = sorted(value)
    if len(keys) != 1 or keys[0] not in TEXT_FORMS:
        raise FieldError(where, "an expected-text object has exactly one key, regex or "
                                f"any_of; got {', '.join(keys) or 'none'}")
    key = keys[0]
    inner = value[key]
    at = f"{where}.{key}" if where else key
    if key == "regex":
        if not isinstance(inner, str) or not inner:
            raise FieldError(at, f"expected {TEXT_FORMS[key]}, got {_kind(inner)}")
        try:
            re.compile(inner)
        except re.error as e:
            raise FieldError(at, f"not a valid regular expression: {e}") from None
    else:
        if not isinstance(inner, list) or not inner:
            raise FieldError(at, f"expected {TEXT_FORMS[key]}, got {_kind(inner)}")
        for i, p in enumerate(inner):
            if not isinstance(p, str) or not p:
                raise FieldError(f"{at}[{i}]", f"expected a non-empty string, got {_kind(p)}")
    return AnswerText(value)


def parse_answer_texts(value: Any, where: str = "") -> tuple[str | AnswerText, ...]:
    """A list of expected pieces of answer text (:func:`parse_answer_text` each).

    Raises:
        FieldError: not a list, or a bad item (its index named).
    """
    if not isinstance(value, list):
        raise FieldError(where, f"expected a list of phrases, got {_kind(value)}")
    return tuple(parse_answer_text(v, f"{where}[{i}]") for i, v in enumerate(value))


def parse_arg_value(value: Any, where: str = "") -> Any:
    """An expected argument value: ``{"one_of": [...]}`` (a non-empty list) becomes a
    :class:`OneOf`; any other value is returned as it is (a literal).

    Raises:
        FieldError: ``one_of`` that is not a non-empty list (``where.one_of`` named).
    """
    if isinstance(value, dict) and list(value) == ["one_of"]:
        options = value["one_of"]
        if not isinstance(options, list) or not options:
            raise FieldError(f"{where}.one_of" if where else "one_of",
                             f"expected a non-empty list of acceptable values, got "
                             f"{_kind(options)}")
        return OneOf(value)
    return value
