"""Parse the judges users write (``[judges.NAME]`` tables and a case's ``judges`` object) into
:class:`evaltape.grader.model.JudgeCriteria`, G-Eval's form (Liu et al. 2023): ``criteria``,
``evaluation_steps``, ``scale`` (``"LO-HI"`` or ``"pass/fail"``), ``threshold``, ``include``
and ``model``; a case may define or override one. Errors are :class:`FieldError` (case
side) or :class:`BadInputError` (configuration side). Shape: docs/metrics.md.
"""
from __future__ import annotations

import difflib
import math
import re
from typing import Any, Mapping

from evaltape.grader.errors import BadInputError
from evaltape.grader.io.expectations import FieldError
from evaltape.grader.model import JudgeCriteria, summary_name_problem

#: What a judge may be shown, in the order its prompt shows them.
INCLUDE = ("input", "tool_calls", "expected_output", "answer")
#: What a judge is shown when its table does not say.
DEFAULT_INCLUDE = ("input", "tool_calls", "answer")
DEFAULT_SCALE = "1-5"
DEFAULT_THRESHOLD = 0.5
PASS_FAIL = "pass/fail"
#: Keys of a ``[judges.NAME]`` table; a case's entry takes all but ``model``.
CONFIG_KEYS = ("criteria", "evaluation_steps", "scale", "threshold", "include", "model")
CASE_KEYS = CONFIG_KEYS[:-1]
#: A judge's name is a report column, as every metric name is.
NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_RANGE = re.compile(r"(\d{1,3})\s*-\s*(\d{1,3})")


def parse_scale(value: Any, where: str = "scale") -> str:
    """A scale: ``"pass/fail"`` or ``"LO-HI"`` with whole 0 <= LO < HI <= 100, in plain form.

    Raises:
        FieldError: another string or type.
    """
    if isinstance(value, str):
        text = value.strip().lower()
        if text in (PASS_FAIL, "pass-fail", "passfail"):
            return PASS_FAIL
        m = _RANGE.fullmatch(text)
        if m and int(m.group(1)) < int(m.group(2)) <= 100:
            return f"{int(m.group(1))}-{int(m.group(2))}"
    raise FieldError(where, f"expected \"LO-HI\" (whole numbers, LO < HI <= 100, such as "
                            f"\"0-1\" or \"1-5\") or \"pass/fail\", got {value!r}"[:200])


def scale_bounds(scale: str) -> tuple[int, int] | None:
    """``(LO, HI)`` of a parsed numeric scale; ``None`` for ``pass/fail``."""
    if scale == PASS_FAIL:
        return None
    lo, _, hi = scale.partition("-")
    return int(lo), int(hi)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise FieldError(where, "expected a non-empty string")
    return value


def parse_judge(obj: Any, where: str = "", *, keys: tuple[str, ...] = CASE_KEYS) -> JudgeCriteria:
    """One judge table or case entry, with only the keys it sets (``keys``: :data:`CONFIG_KEYS`
    or :data:`CASE_KEYS`); ``where`` names it in messages.

    Raises:
        FieldError: not an object, an unknown key, or a key of the wrong type or value.
    """
    def at(key: str) -> str:
        return f"{where}.{key}" if where else key

    if not isinstance(obj, Mapping):
        raise FieldError(where, f"expected a table of {', '.join(keys)}, got "
                                f"{type(obj).__name__}")
    for key in obj:
        if key not in keys:
            near = difflib.get_close_matches(str(key), keys, n=1)
            extra = (" (a case's judge cannot set its model)" if key == "model" else
                     f"; did you mean '{near[0]}'?" if near else "")
            raise FieldError(at(str(key)), f"unknown key{extra}; known: {', '.join(keys)}")
    out: dict[str, Any] = {}
    if "criteria" in obj:
        out["criteria"] = _text(obj["criteria"], at("criteria"))
    if "model" in obj:
        out["model"] = _text(obj["model"], at("model"))
    if "evaluation_steps" in obj:
        steps = obj["evaluation_steps"]
        if not isinstance(steps, list):
            raise FieldError(at("evaluation_steps"), "expected a list of strings")
        out["evaluation_steps"] = tuple(_text(s, f"{at('evaluation_steps')}[{i}]")
                                        for i, s in enumerate(steps))
    if "scale" in obj:
        out["scale"] = parse_scale(obj["scale"], at("scale"))
    if "threshold" in obj:
        t = obj["threshold"]
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not (
                math.isfinite(t) and 0 <= t <= 1):
            raise FieldError(at("threshold"), f"expected a number from 0 to 1 (on the "
                                              f"normalised score), got {t!r}")
        out["threshold"] = float(t)
    if "include" in obj:
        inc = obj["include"]
        if not isinstance(inc, list) or not inc:
            raise FieldError(at("include"), f"expected a non-empty list of "
                                            f"{', '.join(INCLUDE)}")
        for i, item in enumerate(inc):
            if item not in INCLUDE:
                raise FieldError(f"{at('include')}[{i}]", f"unknown item {item!r}; known: "
                                                          f"{', '.join(INCLUDE)}")
            if item in inc[:i]:
                raise FieldError(f"{at('include')}[{i}]", f"{item!r} is listed twice")
        out["include"] = tuple(x for x in INCLUDE if x in inc)  # the prompt's order
    return JudgeCriteria(**out)


def parse_case_judges(value: Any) -> dict[str, JudgeCriteria]:
    """A case's ``judges``: ``{NAME: {criteria?, evaluation_steps?, scale?, threshold?,
    include?}}``.

    Raises:
        FieldError: not an object, a name not a lower-case word, or a bad entry.
    """
    if not isinstance(value, Mapping):
        raise FieldError("", "expected an object {judge name: {criteria, ...}}")
    out = {}
    for name, entry in value.items():
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise FieldError(str(name), "a judge's name is its report column: a lower-case "
                                        "word ([a-z][a-z0-9_]*, at most 64 characters)")
        out[name] = parse_judge(entry, name)
    return out


def config_judges(table: Mapping[str, Any], path: str | None) -> dict[str, JudgeCriteria]:
    """The ``judges`` tables of a configuration, each with its ``criteria``.

    Raises:
        BadInputError: not a table of tables, a bad or reserved name, no ``criteria``, or a
            bad key (file and ``judges.NAME.key`` named).
    """
    judges = table.get("judges", {})
    if not isinstance(judges, Mapping):
        raise BadInputError("expected tables [judges.NAME]", path=path, field="judges")
    out = {}
    for name, entry in judges.items():
        where = f"judges.{name}"
        if not NAME.fullmatch(name):
            raise BadInputError("a judge's name is its report column: a lower-case word "
                                "([a-z][a-z0-9_]*, at most 64 characters)", path=path,
                                field=where)
        problem = summary_name_problem(name)
        if problem is not None:
            raise BadInputError(problem, path=path, field=where)
        try:
            judge = parse_judge(entry, "", keys=CONFIG_KEYS)
        except FieldError as e:
            raise BadInputError(e.message, path=path,
                                field=f"{where}.{e.field}" if e.field else where) from None
        if judge.criteria is None:
            raise BadInputError("a judge needs its criteria (what it checks, in words)",
                                path=path, field=f"{where}.criteria")
        out[name] = judge
    return out
