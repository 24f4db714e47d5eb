"""Tool-call matching: pure comparators and one optimal one-to-one assignment.

Two axes: **order** (:data:`OrderMode`: ``strict``, ``unordered``, ``subset``,
``superset``, ``in_order``) says how the call lists correspond; **arguments**
(:data:`ArgsMode`: ``exact``, ``ignore``, ``subset``, ``superset``, or per tool a list of
key paths or a predicate) says when one call's arguments match another's. Values compare
recursively (:func:`compare_values`). Pairing is a maximum bipartite matching (Kuhn's
augmenting paths): optimal, independent of list order, and duplicates count.
"""
from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, Sequence, Union, get_args

from evaltape.grader.io.expectations import ArgsMode
from evaltape.grader.matching.bfcl import standardize as standardize_string
from evaltape.grader.model import ExpectedCall, ToolCall

OrderMode = Literal["strict", "unordered", "subset", "superset", "in_order"]
#: A per-tool override: a mode, dotted key paths to compare, or a predicate.
ArgsOverride = Union[str, Sequence[str], Callable[[Mapping[str, Any], Mapping[str, Any]], bool]]


def check_overrides(overrides: Any) -> None:
    """Check that each per-tool override is a mode, a list of dotted key paths, or a callable.

    Raises:
        ValueError: naming the tool and the valid modes.
    """
    if overrides is None:
        return
    if not isinstance(overrides, Mapping):
        raise ValueError(f"overrides must be a table {{tool: mode}}, got {type(overrides).__name__}")
    for tool, value in overrides.items():
        if isinstance(value, str):
            check_mode(value, ArgsMode, f"args mode for tool {tool!r}")
        elif callable(value):
            continue
        elif not (isinstance(value, (list, tuple)) and all(isinstance(k, str) for k in value)):
            raise ValueError(f"override for tool {tool!r} must be a mode "
                             f"({', '.join(get_args(ArgsMode))}), a list of key paths or a "
                             f"callable, got {value!r}"[:200])


def check_mode(value: str, mode_type: Any, what: str) -> str:
    """Return ``value`` if it is one of the ``Literal`` alias's values.

    Raises:
        ValueError: naming ``what`` and listing the valid values.
    """
    valid = get_args(mode_type)
    if value not in valid:
        raise ValueError(f"unknown {what} {value!r}; valid: {', '.join(valid)}")
    return value


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _kind(x: Any) -> str:
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "boolean"
    if _is_number(x):
        return "number"
    if isinstance(x, str):
        return "string"
    if isinstance(x, Mapping):
        return "object"
    if isinstance(x, (list, tuple)):
        return "array"
    return type(x).__name__


def compare_values(actual: Any, expected: Any, *, unordered_lists: bool = False,
                   path: str = "$", standardize: bool = False,
                   tolerance: float | None = None, ignore_case: bool = False) -> str | None:
    """Compare two JSON values recursively: ``None`` when equal, else ``"PATH: TEXT"`` for the
    first difference. NFC strings, numbers by value, bools only with bools, ordered arrays
    (multisets with ``unordered_lists``); ``standardize``, ``tolerance``, ``ignore_case`` apply.
    """
    diff = value_difference(actual, expected, unordered_lists=unordered_lists, path=path,
                            standardize=standardize, tolerance=tolerance,
                            ignore_case=ignore_case)
    return None if diff is None else f"{diff[1]}: {diff[2]}"


#: The kinds of difference :func:`value_difference` names.
VALUE_KINDS = ("type_mismatch", "keys_differ", "length_differs", "items_differ",
               "value_differs")


def _fold_keys(obj: Mapping[str, Any]) -> dict[str, str] | None:
    """``{lower-case key: key}`` of an object; ``None`` when two keys differ only in case."""
    out = {nfc(k).lower(): k for k in obj}
    return out if len(out) == len(obj) else None


def value_difference(actual: Any, expected: Any, *, unordered_lists: bool = False,
                     path: str = "$", standardize: bool = False,
                     tolerance: float | None = None,
                     ignore_case: bool = False) -> tuple[str, str, str] | None:
    """The first difference between two JSON values as ``(kind, path, text)``, or ``None`` when
    equal under :func:`compare_values`' rules. ``kind`` is one of :data:`VALUE_KINDS`;
    ``path`` is a JSON path (``$.ids[1]``). ``ignore_case`` pairs object keys by lower-case
    form unless two keys of one object differ only in case.
    """
    ka, ke = _kind(actual), _kind(expected)
    if ka != ke:
        return "type_mismatch", path, f"type mismatch: {ka} {actual!r} vs {ke} {expected!r}"
    if ka == "object":
        fa = _fold_keys(actual) if ignore_case else None
        fe = _fold_keys(expected) if fa is not None else None
        if fa is not None and fe is not None:
            keys = {k: (fa.get(k), fe[k]) for k in fe}
            missing = sorted(fe[k] for k in set(fe) - set(fa))
            extra = sorted(fa[k] for k in set(fa) - set(fe))
        else:
            keys = {k: (k, k) for k in expected}
            missing = sorted(set(expected) - set(actual))
            extra = sorted(set(actual) - set(expected))
        if missing or extra:
            return "keys_differ", path, f"keys differ (missing {missing}, unexpected {extra})"
        for k in sorted(keys):
            ak, ek = keys[k]
            diff = value_difference(actual[ak], expected[ek], unordered_lists=unordered_lists,
                                    path=f"{path}.{ek}", standardize=standardize,
                                    tolerance=tolerance, ignore_case=ignore_case)
            if diff:
                return diff
        return None
    if ka == "array":
        if len(actual) != len(expected):
            return "length_differs", path, f"length {len(actual)} vs {len(expected)}"
        if unordered_lists:
            adj = [[value_difference(a, e, unordered_lists=True, standardize=standardize,
                                     tolerance=tolerance, ignore_case=ignore_case) is None
                    for a in actual] for e in expected]
            pairs = max_matching(adj)
            if len(pairs) < len(expected):
                return "items_differ", path, (f"items differ (as multisets, {len(pairs)}/"
                                              f"{len(expected)} paired)")
            return None
        for i, (a, e) in enumerate(zip(actual, expected)):
            diff = value_difference(a, e, unordered_lists=False, path=f"{path}[{i}]",
                                    standardize=standardize, tolerance=tolerance,
                                    ignore_case=ignore_case)
            if diff:
                return diff
        return None
    if actual != expected:  # numbers (12 == 12.0), strings, booleans, null
        if ka == "string" and nfc(actual) == nfc(expected):
            return None  # the same text in another Unicode normal form
        if ka == "string" and ignore_case and (actual.lower() == expected.lower() or
                                               nfc(actual).lower() == nfc(expected).lower()):
            return None
        if ka == "string" and standardize and \
                standardize_string(nfc(actual)) == standardize_string(nfc(expected)):
            return None
        if ka == "number" and tolerance is not None and abs(actual - expected) <= tolerance:
            return None
        return "value_differs", path, (
            f"{ascii(actual) if ka == 'string' else repr(actual)} != "
            f"{ascii(expected) if ka == 'string' else repr(expected)}")
    return None


def nfc(text: str) -> str:
    r"""``text`` in Unicode normal form C, so "Zu\u0308rich" equals "Z\u00fcrich"."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def _coerce(value: Any, schema: Mapping[str, Any] | None) -> Any:
    """Parse a JSON-string value when ``schema`` says object/array (agents do send these)."""
    if not isinstance(value, str) or not schema:
        return value
    kinds = schema.get("type")
    kinds = {kinds} if isinstance(kinds, str) else set(kinds or ())
    if kinds & {"object", "array"} and "string" not in kinds:
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def coerce_arguments(args: Mapping[str, Any],
                     input_schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Arguments with JSON-string values parsed where ``input_schema`` wants object/array."""
    props = (input_schema or {}).get("properties") or {}
    return {k: _coerce(v, props.get(k)) for k, v in args.items()}


def _dig(value: Any, parts: Sequence[str]) -> tuple[bool, Any]:
    for p in parts:
        if isinstance(value, Mapping) and p in value:
            value = value[p]
        else:
            return False, None
    return True, value


@dataclass(frozen=True)
class Mismatch:
    """Why one actual call does not match one expected call, in parts a program can read.

    Attributes:
        kind: ``name``, ``name_case``, ``missing_arguments``, ``unexpected_arguments``,
            ``schema_type``, ``not_in_expected``, ``no_acceptable_value``, ``custom``, or one
            of :data:`VALUE_KINDS`.
        message: the human text (what :func:`call_mismatch` returns).
        path: the JSON path of the differing value (``$.time.start``), or ``None``.
        arguments: the top-level arguments concerned (missing, unexpected, or holding the path).
    """

    kind: str
    message: str
    path: str | None = None
    arguments: tuple[str, ...] = ()

    def prefixed(self, prefix: str) -> "Mismatch":
        """The same mismatch with ``prefix`` before its message."""
        return Mismatch(self.kind, prefix + self.message, self.path, self.arguments)


def _value_mismatch(diff: tuple[str, str, str], argument: str) -> Mismatch:
    kind, path, text = diff
    return Mismatch(kind, f"{path}: {text}", path, (argument,))


def args_difference(actual: Mapping[str, Any], expected: ExpectedCall, mode: str = "exact",
                    override: ArgsOverride | None = None,
                    schema: Mapping[str, Any] | None = None) -> Mismatch | None:
    """Why ``actual`` arguments do not match ``expected`` under ``mode`` (a
    :class:`Mismatch`); ``None`` if they do.

    ``override`` replaces ``mode``: a mode, dotted key paths (each present on both sides and
    equal), or a predicate on ``(actual_args, expected.literal_args())``. ``exact`` refuses
    unexpected and missing keys, ``superset`` missing ones, ``subset`` unexpected ones; shared
    keys must equal an acceptable value. Per-parameter :class:`ArgOptions` apply; a schema
    ``integer`` refuses a float (BFCL's ``type_checker``).
    """
    if expected.acceptable is None:
        return None
    if callable(override) and not isinstance(override, str):
        return None if override(actual, expected.literal_args()) else \
            Mismatch("custom", "custom comparator said no")
    unordered = expected.unordered_lists
    if override is not None and not isinstance(override, str):
        for dotted in override:
            top, *rest = dotted.split(".")
            ok_a, a = _dig(actual, [top, *rest])
            if not ok_a:
                return Mismatch("missing_arguments", f"$.{dotted}: missing in actual call",
                                f"$.{dotted}", (top,))
            diffs = [value_difference(a, v, unordered_lists=unordered, path=f"$.{dotted}")
                     for ok, v in (_dig({top: c}, [top, *rest])
                                   for c in expected.acceptable.get(top, ())) if ok]
            if not diffs:
                return Mismatch("not_in_expected", f"$.{dotted}: not in expected call",
                                f"$.{dotted}", (top,))
            if all(diffs):
                return _value_mismatch(diffs[0], top)
        return None
    mode = check_mode(override or mode, ArgsMode, "args mode")
    if mode == "ignore":
        return None
    opts = expected.options
    ignored = {k for k, o in opts.items() if o.ignore}
    keys_a, keys_e = set(actual) - ignored, set(expected.acceptable) - ignored
    required = keys_e - expected.optional
    props = (schema or {}).get("properties") or {}
    if mode in ("exact", "subset") and keys_a - keys_e:
        extra = sorted(keys_a - keys_e)
        return Mismatch("unexpected_arguments", f"unexpected argument(s) {extra}", None,
                        tuple(extra))
    if mode in ("exact", "superset") and required - keys_a:
        missing = sorted(required - keys_a)
        return Mismatch("missing_arguments", f"missing argument(s) {missing}", None,
                        tuple(missing))
    for k in sorted(keys_a & keys_e):
        declared = (props.get(k) or {}).get("type") if isinstance(props.get(k), Mapping) else None
        if declared == "integer" and isinstance(actual[k], float):
            return Mismatch("schema_type", f"$.{k}: type mismatch: the schema declares "
                            f"integer, got {actual[k]!r}", f"$.{k}", (k,))
        o = opts.get(k)
        options = expected.acceptable[k]
        diffs = [value_difference(actual[k], v,
                                  unordered_lists=unordered or bool(o and o.unordered),
                                  path=f"$.{k}", standardize=bool(o and o.standardize),
                                  tolerance=o.tolerance if o else None)
                 for v in options]
        if not options:
            return Mismatch("no_acceptable_value", f"$.{k}: no acceptable value", f"$.{k}",
                            (k,))
        if all(diffs):
            return _value_mismatch(diffs[0], k)
    return None


def call_mismatch(actual: ToolCall, expected: ExpectedCall, *, args_mode: str = "exact",
                  overrides: Mapping[str, ArgsOverride] | None = None,
                  schemas: Mapping[str, Mapping[str, Any]] | None = None) -> str | None:
    """Why one actual call does not match one expected call; ``None`` when it matches.

    Names compare exactly (a case-only difference is named). Arguments are coerced with the
    tool's schema, then compared by :func:`args_difference` with the per-tool override, else
    the call's own mode, else ``args_mode``. In parts: :func:`call_difference`.
    """
    diff = call_difference(actual, expected, args_mode=args_mode, overrides=overrides,
                           schemas=schemas)
    return None if diff is None else diff.message


def call_difference(actual: ToolCall, expected: ExpectedCall, *, args_mode: str = "exact",
                    overrides: Mapping[str, ArgsOverride] | None = None,
                    schemas: Mapping[str, Mapping[str, Any]] | None = None
                    ) -> Mismatch | None:
    """:func:`call_mismatch` as a :class:`Mismatch`, or ``None`` when the call matches."""
    if actual.name != expected.name:
        if actual.name.lower() == expected.name.lower():
            return Mismatch("name_case", f"name differs only in case: {actual.name!r} vs "
                            f"{expected.name!r}")
        return Mismatch("name", f"name {actual.name!r} != {expected.name!r}")
    schema = (schemas or {}).get(actual.name)
    args = coerce_arguments(actual.arguments, schema)
    override = (overrides or {}).get(expected.name)
    diff = args_difference(args, expected, expected.args_mode or args_mode, override, schema)
    return None if diff is None else diff.prefixed(f"{expected.name}: ")


def max_matching(adj: Sequence[Sequence[bool]]) -> list[tuple[int, int]]:
    """Maximum bipartite matching by augmenting paths (Kuhn 1955; O(V·E)).

    Args:
        adj: ``adj[i][j]`` is true when left item ``i`` may pair with right item ``j``.

    Returns:
        ``(i, j)`` pairs sorted by ``i``; their number is the maximum possible, whatever
        the order of either side.
    """
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j, ok in enumerate(adj[i]):
            if ok and j not in seen:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    for i in range(len(adj)):
        augment(i, set())
    return sorted((i, j) for j, i in owner.items())


@dataclass(frozen=True)
class MissedCall:
    """An expected call no actual call matched, and why.

    Attributes:
        expected_index: its 0-based position among the expected calls.
        name: its tool name.
        actual_index: 0-based position of the nearest namesake compared with, or ``None``.
        mismatch: a :class:`Mismatch` against that call, or kind ``not_called`` /
            ``already_paired``.
    """

    expected_index: int | None
    name: str | None
    actual_index: int | None
    mismatch: Mismatch


@dataclass(frozen=True)
class CallMatch:
    """Result of pairing actual calls with expected calls one to one.

    Attributes:
        pairs: ``(expected_index, actual_index)`` pairs of the optimal matching.
        n_expected, n_actual: list lengths.
        misses: for each unmatched expected call, why the nearest candidate failed.
        missed: the same, in parts (:class:`MissedCall`), in expected order.
    """

    pairs: tuple[tuple[int, int], ...]
    n_expected: int
    n_actual: int
    misses: tuple[str, ...] = field(default=())
    missed: tuple[MissedCall, ...] = field(default=())

    @property
    def matched(self) -> int:
        """Number of matched pairs."""
        return len(self.pairs)


def match_calls(actual: Sequence[ToolCall], expected: Sequence[ExpectedCall], *,
                args_mode: str = "exact", overrides: Mapping[str, ArgsOverride] | None = None,
                schemas: Mapping[str, Mapping[str, Any]] | None = None) -> CallMatch:
    """Optimally pair actual with expected calls (:func:`max_matching`). ``misses`` explains
    each unmatched expected call against its first unpaired namesake (case-insensitive),
    else its first namesake, or ``"<name>: not called"``.
    """
    reasons = [[call_difference(a, e, args_mode=args_mode, overrides=overrides,
                                schemas=schemas)
                for a in actual] for e in expected]
    pairs = max_matching([[r is None for r in row] for row in reasons])
    used_e = {i for i, _ in pairs}
    used_a = {j for _, j in pairs}
    missed = []
    for i, e in enumerate(expected):
        if i in used_e:
            continue
        near = [j for j, a in enumerate(actual)
                if j not in used_a and a.name.lower() == e.name.lower()]
        near = near or [j for j, a in enumerate(actual) if a.name.lower() == e.name.lower()]
        if not near:
            missed.append(MissedCall(i, e.name, None,
                                     Mismatch("not_called", f"{e.name}: not called")))
        elif reasons[i][near[0]] is None:
            missed.append(MissedCall(i, e.name, None, Mismatch(
                "already_paired", f"{e.name}: every matching call is already paired with "
                "another expected call (duplicates need one call each)")))
        else:
            missed.append(MissedCall(i, e.name, near[0], reasons[i][near[0]]))
    return CallMatch(tuple(pairs), len(expected), len(actual),
                     tuple(m.mismatch.message for m in missed), tuple(missed))


def pair_json(expected_index: int, actual_index: int, actual: Sequence[ToolCall]
              ) -> dict[str, Any]:
    """One pairing as evidence: ``{"expected_index", "actual_index", "name", "call_id"}``
    (0-based positions in the case's expected calls and the trace's ``tool_calls``)."""
    call = actual[actual_index]
    return {"expected_index": expected_index, "actual_index": actual_index,
            "name": call.name, "call_id": call.id}


def difference_json(expected_index: int | None, name: str | None, actual_index: int | None,
                    mismatch: Mismatch, actual: Sequence[ToolCall]) -> dict[str, Any]:
    """One call difference as evidence: ``{"expected_index", "name", "actual_index",
    "call_id", "kind", "path", "arguments", "message"}`` (``None`` where it does not apply;
    ``kind``, ``path`` and ``arguments`` from the :class:`Mismatch`)."""
    return {"expected_index": expected_index, "name": name, "actual_index": actual_index,
            "call_id": None if actual_index is None else actual[actual_index].id,
            "kind": mismatch.kind, "path": mismatch.path,
            "arguments": list(mismatch.arguments), "message": mismatch.message}


def match_evidence(m: CallMatch, actual: Sequence[ToolCall]) -> dict[str, Any]:
    """The evidence of a one-to-one matching: ``{"pairs", "unmatched_expected",
    "unmatched_actual"}`` lists (:func:`pair_json`, :func:`difference_json`), by position.
    """
    used = {j for _, j in m.pairs}
    return {"pairs": [pair_json(i, j, actual) for i, j in m.pairs],
            "unmatched_expected": [difference_json(x.expected_index, x.name, x.actual_index,
                                                   x.mismatch, actual) for x in m.missed],
            "unmatched_actual": [{"actual_index": j, "name": a.name, "call_id": a.id}
                                 for j, a in enumerate(actual) if j not in used]}


def step_groups(calls: Sequence[ToolCall]) -> list[list[ToolCall]]:
    """Calls grouped by model turn: consecutive calls sharing a ``step`` > 0 form one
    parallel step; a call with ``step`` 0 (unknown) is a step of its own."""
    groups: list[list[ToolCall]] = []
    for c in calls:
        if groups and c.step > 0 and groups[-1][-1].step == c.step:
            groups[-1].append(c)
        else:
            groups.append([c])
    return groups


def show_steps(calls: Sequence[ToolCall]) -> str:
    """Call names with parallel steps bracketed: ``get_a, {b | c}, d``."""
    return ", ".join(g[0].name if len(g) == 1 else "{" + " | ".join(c.name for c in g) + "}"
                     for g in step_groups(calls))


@dataclass(frozen=True)
class SequenceMatch:
    """Result of an order-keeping comparison, which stops at the first difference.

    Attributes:
        pairs: ``(expected_index, actual_index)`` pairs found before it, by expected index.
        difference: the first difference as a message, or ``None`` when the lists match.
        missed: the same in parts (kind ``call_count`` for a count difference), or ``None``.
    """

    pairs: tuple[tuple[int, int], ...]
    difference: str | None = None
    missed: MissedCall | None = None


def strict_sequence(actual: Sequence[ToolCall], expected: Sequence[ExpectedCall],
                    **kw: Any) -> SequenceMatch:
    """Strict comparison: equal lengths, call ``i`` matches expected call ``i``; calls of one
    parallel step (:func:`step_groups`) match in any order. Keywords go to
    :func:`call_mismatch`. Returns the pairs before the first difference and that difference.
    """
    if len(actual) != len(expected):
        text = f"{len(actual)} calls made, {len(expected)} expected"
        return SequenceMatch((), text, MissedCall(None, None, None,
                                                  Mismatch("call_count", text)))
    found: list[tuple[int, int]] = []
    i = 0
    for group in step_groups(actual):
        want = expected[i:i + len(group)]
        if len(group) == 1:
            diff = call_difference(group[0], want[0], **kw)
            if diff:
                diff = diff.prefixed(f"call {i + 1}: ")
                return SequenceMatch(tuple(found), diff.message,
                                     MissedCall(i, want[0].name, i, diff))
            found.append((i, i))
        else:
            reasons = [[call_difference(a, e, **kw) for a in group] for e in want]
            pairs = max_matching([[r is None for r in row] for row in reasons])
            if len(pairs) < len(want):
                used = {k for k, _ in pairs}
                k = next(k for k in range(len(want)) if k not in used)
                near = [(j, r) for j, r in enumerate(reasons[k]) if r]
                text = (f"calls {i + 1}-{i + len(group)} (one parallel step): expected call "
                        f"{i + k + 1} has no partner"
                        + (f": {near[0][1].message}" if near else ""))
                if near:
                    j, r = near[0]
                    missed = MissedCall(i + k, want[k].name, i + j,
                                        Mismatch(r.kind, text, r.path, r.arguments))
                else:
                    missed = MissedCall(i + k, want[k].name, None,
                                        Mismatch("already_paired", text))
                found.extend((i + e, i + a) for e, a in pairs)
                return SequenceMatch(tuple(sorted(found)), text, missed)
            found.extend((i + e, i + a) for e, a in pairs)
        i += len(group)
    return SequenceMatch(tuple(sorted(found)))


def in_order_sequence(actual: Sequence[ToolCall], expected: Sequence[ExpectedCall],
                      **kw: Any) -> SequenceMatch:
    """Find the expected calls in order among the actual ones, others allowed between (a
    subsequence match; a parallel step's calls in any order). Keywords go to
    :func:`call_mismatch`.

    Each step takes the longest run of next expected calls it can pair (:func:`max_matching`);
    greedy over steps, which finds the longest in-order prefix. The first call not found is
    ``not_called``, ``out_of_order``, or a mismatch against its first later namesake.
    """
    positions: list[int] = []
    k, start, last = 0, 0, -1
    for group in step_groups(actual):
        if k == len(expected):
            break
        best: list[tuple[int, int]] = []
        for j in range(1, min(len(group), len(expected) - k) + 1):
            adj = [[call_mismatch(a, e, **kw) is None for a in group] for e in expected[k:k + j]]
            pairs = max_matching(adj)
            if len(pairs) < j:
                break
            best = pairs
        if best:
            found = [start + a for _e, a in sorted(best)]
            positions.extend(found)
            last = max(last, *found)
            k += len(best)
        start += len(group)
    pairs = tuple(enumerate(positions))
    if k == len(expected):
        return SequenceMatch(pairs)
    want = expected[k]
    after = f" after call {last + 1}" if last >= 0 else ""
    later = [j for j in range(last + 1, len(actual))
             if actual[j].name.lower() == want.name.lower()]
    diff = call_difference(actual[later[0]], want, **kw) if later else None
    prefix = f"expected call {k + 1} "
    if diff is not None:
        missed = MissedCall(k, want.name, later[0], diff.prefixed(prefix))
    else:
        called = any(a.name.lower() == want.name.lower() for a in actual)
        missed = MissedCall(k, want.name, None, Mismatch(
            "out_of_order" if called else "not_called",
            f"{prefix}{want.name}: not called{after}"))
    return SequenceMatch(pairs, missed.mismatch.message, missed)


def sequence_evidence(m: SequenceMatch, actual: Sequence[ToolCall]) -> dict[str, Any]:
    """The evidence of an order-keeping comparison: ``{"pairs": [...], "difference": ...}``
    (:func:`pair_json`; the first difference as :func:`difference_json`, or ``None``)."""
    x = m.missed
    return {"pairs": [pair_json(i, j, actual) for i, j in m.pairs],
            "difference": None if x is None else difference_json(
                x.expected_index, x.name, x.actual_index, x.mismatch, actual)}


def case_schemas(tools: Sequence[Mapping[str, Any]] | None) -> dict[str, Mapping[str, Any]]:
    """``{tool: JSON schema of its arguments}`` from a case's ``tools`` (``parameters`` in
    BFCL/OpenAI schemas, ``input_schema`` in Anthropic's); ``{}`` without tools."""
    return {t["name"]: t.get("input_schema") or t.get("parameters") or {}
            for t in tools or () if isinstance(t.get("name"), str)}


def trace_schemas(raw: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """``{tool: input_schema}`` from a trace's optional ``tools`` list; ``{}`` without one."""
    tools = raw.get("tools") if isinstance(raw, Mapping) else None
    if not isinstance(tools, list):
        return {}
    return {t["name"]: t.get("input_schema") or {} for t in tools
            if isinstance(t, Mapping) and isinstance(t.get("name"), str)}
