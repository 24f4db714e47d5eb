"""The metric protocol, declared on the class and checked once at resolution
(:func:`check_metric`): ``name`` (report column), ``version`` (bumped with the formula),
``higher_is_better``, ``judged`` (reads recorded judge answers), optional
``pass_threshold`` or ``case_threshold(case)``, optional ``outcome_check`` (``"tools"`` or
``"answer"``), ``score(ctx) -> Score`` and ``requests(ctx, model=None) -> list[dict]``
(judge request bodies). Subclass :class:`Metric` for the defaults.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, ClassVar, Mapping

import orjson

from evaltape.grader.errors import UsageError
from evaltape.grader.matching.calls import case_schemas, trace_schemas
from evaltape.grader.model import EpisodeContext, Score

#: Default pass threshold of a score (score >= 0.8).
PASS_THRESHOLD = 0.8
#: The threshold of a lower-is-better rate (``grounding``, ``hallucination``): one
#: unsupported claim already fails.
RATE_THRESHOLD = 0.0


def default_threshold(metric: Any, case: Any = None) -> float:
    """A metric's own pass threshold on ``case``: its ``case_threshold(case)``, else its
    ``pass_threshold``, else :data:`PASS_THRESHOLD` (0.8), or :data:`RATE_THRESHOLD` (0)
    when lower is better.
    """
    tier = getattr(metric, "case_threshold", None)
    if callable(tier):
        return float(tier(case))
    own = getattr(metric, "pass_threshold", None)
    if isinstance(own, (int, float)) and not isinstance(own, bool):
        return float(own)
    return PASS_THRESHOLD if metric.higher_is_better else RATE_THRESHOLD


class Metric:
    """Base class of every metric, with the protocol's defaults; subclasses set ``name`` and
    implement :meth:`score` (judged ones also ``judged = True`` and :meth:`requests`).
    """

    name: ClassVar[str]
    version: ClassVar[int] = 1
    higher_is_better: ClassVar[bool] = True
    judged: ClassVar[bool] = False

    def score(self, ctx: EpisodeContext) -> Score:
        """The verdict on one episode (:class:`evaltape.grader.model.Score`); a subclass states
        its formula and null cases in its class docstring."""
        raise NotImplementedError(f"{type(self).__name__}.score")

    def requests(self, ctx: EpisodeContext, model: str | None = None) -> list[dict]:
        """The judge request bodies :meth:`score` looks up for ``ctx`` (``[]``: none)."""
        return []


_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")

#: The protocol's attributes with their types (``bool`` is checked apart from ``int``).
PROTOCOL: dict[str, type] = {"name": str, "version": int, "higher_is_better": bool,
                             "judged": bool}


class ExpectedCallsMetric(Metric):
    """A metric of the tool calls against ``expected_calls``: null (``not_applicable``) without
    them, else :meth:`score_calls` with the trace's and case's tool schemas (the case's win).
    """

    def score(self, ctx: EpisodeContext) -> Score:
        expected = ctx.case.expected_calls
        if expected is None:
            return Score(None, "case states no expected tool calls", code="not_applicable")
        schemas = {**trace_schemas(ctx.trace.raw), **case_schemas(ctx.case.tools)}
        return self.score_calls(ctx, expected, schemas)

    def score_calls(self, ctx: EpisodeContext, expected: Any,
                    schemas: dict[str, Any]) -> Score:
        """The score of the calls of an episode whose case expects ``expected``."""
        raise NotImplementedError


def check_metric(metric: Any, label: str) -> Any:
    """Return ``metric`` if it satisfies the protocol.

    Args:
        metric: an instantiated metric.
        label: how the user named it (``--metrics`` entry), for the message.

    Raises:
        UsageError: a missing or wrongly typed attribute, a bad name, version, threshold or
            ``outcome_check``, or a missing ``score``/``requests`` method.
    """
    problems = []
    for attr, kind in PROTOCOL.items():
        value = getattr(metric, attr, None)
        if value is None:
            problems.append(f"no '{attr}'")
        elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            problems.append(f"'{attr}' is {type(value).__name__}, not {kind.__name__}")
    name = getattr(metric, "name", None)
    if isinstance(name, str) and not _NAME.fullmatch(name):
        problems.append(f"'name' {name!r} is not a lower-case word ([a-z][a-z0-9_]*, at most "
                        "64 characters: it is a report column)")
    version = getattr(metric, "version", None)
    if isinstance(version, int) and not isinstance(version, bool) and not 0 <= version < 2 ** 31:
        problems.append(f"'version' {version!r} is not from 0 to 2**31 - 1")
    own = getattr(metric, "pass_threshold", None)
    if own is not None and (isinstance(own, bool) or not isinstance(own, (int, float))
                            or not 0 <= own <= 1):
        problems.append(f"'pass_threshold' {own!r} is not a number from 0 to 1")
    check_name = getattr(metric, "outcome_check", None)
    if check_name is not None and check_name not in ("tools", "answer"):
        problems.append(f"'outcome_check' {check_name!r} is not 'tools' or 'answer'")
    for method in ("score", "requests"):
        if not callable(getattr(metric, method, None)):
            problems.append(f"no '{method}' method")
    if problems:
        raise UsageError(f"{label!r} is not a metric: {', '.join(problems)} (subclass "
                         "evaltape.Metric: it declares name, version, higher_is_better, "
                         "judged, score(ctx) and requests(ctx))")
    return metric


def metric_spec(metric: Any) -> dict[str, Any]:
    """``{"name", "version", "args"}``: ``args`` the fields that differ from their defaults, as
    JSON (:func:`spec_value`), those with ``metadata={"spec": False}`` left out; hashed into
    ``config_sha256`` (after pydantic_evals' ``as_spec``).
    """
    args: dict[str, Any] = {}
    if dataclasses.is_dataclass(metric):
        for f in dataclasses.fields(metric):
            if not f.metadata.get("spec", True):
                continue
            value = getattr(metric, f.name)
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            if value != default:
                args[f.name] = spec_value(value)
    return {"name": metric.name, "version": metric.version, "args": args}


def spec_value(value: Any) -> Any:
    """``value`` as plain JSON for a metric spec: mappings as objects, sequences and sets (sorted)
    as lists, a callable as ``{"callable": "module.qualname"}``, a dataclass as its fields,
    anything else as its ``repr``.
    """
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(k): spec_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [spec_value(v) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [spec_value(v) for v in value]
        return sorted(items, key=lambda v: orjson.dumps(v, option=orjson.OPT_SORT_KEYS))
    if callable(value):
        target = value if hasattr(value, "__qualname__") else type(value)
        module = getattr(target, "__module__", None) or "?"
        return {"callable": f"{module}.{target.__qualname__}"}
    if dataclasses.is_dataclass(value):
        return {f.name: spec_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return repr(value)
