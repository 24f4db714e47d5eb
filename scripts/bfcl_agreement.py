"""Agreement of evaltape's BFCL verdicts with the rules of BFCL's AST checker, on crafted items.

Usage: ``python scripts/bfcl_agreement.py [CORPUS_BFCL_DIR]`` (default: the BFCL folder of the corpus beside the repository).

For every question of the four Python categories a correct answer is built from the ground
truth (each parameter's first acceptable value; nested dicts key by key; optional parameters
left out) and mutated once per kind. Each item's *reference verdict* is written down here by
hand from BFCL's documented rules (ShishirPatil/gorilla ``ast_checker.py``), not computed by
the grader:

| kind | mutation | BFCL decides |
|---|---|---|
| correct | none | pass |
| string_case | a string value upper-cased, spaces doubled | pass (standardisation) |
| string_wrong | a string value replaced | fail (value) |
| int_as_float | an ``integer`` parameter sent as ``5.0`` | fail (type) |
| float_as_int | a ``float`` parameter with an integral value sent as ``5`` | pass |
| number_wrong | a number moved off every acceptable value | fail (value) |
| bool_as_int | a ``boolean`` parameter sent as ``1`` | fail (type) |
| dict_case | a nested dict's string values upper-cased | pass |
| dotted_name | every ``.`` of a function name sent as ``_`` | pass (name mapping) |
| omit_optional | a parameter whose answer lists ``""`` left out | pass |
| omit_required | a parameter required by the answer (no ``""``) left out | fail |
| extra_param | an undeclared parameter added | fail (unexpected) |
| reversed | parallel calls in reverse order | pass, unless greedy pairing fails (below) |
| extra_call | the first call sent twice | fail (count) |

Parallel items are paired greedily by BFCL (``parallel_function_checker_no_order``: each
answer, in order, takes the first unused call it accepts), so a reordering or an optional
value sent can fail when an earlier answer accepts a call a later answer needs; the
reference for ``reversed``, ``send_optional`` and ``omit_optional`` applies that rule with
:func:`accepts`, written from the rule's text (names, values among the acceptable ones,
non-optional parameters present; no types).

Prints, per kind and overall, how often evaltape's verdict (``matching: bfcl``) equals the
reference, Cohen's kappa, and the same for evaltape's default matcher (exact arguments,
one-to-one) for contrast.
"""
from __future__ import annotations

import copy
import json
import sys
from collections import defaultdict
from pathlib import Path

from evaltape.grader.importers.bfcl import import_bfcl
from evaltape.grader.importers import build_cases
from evaltape.grader.matching.calls import match_calls
from evaltape.grader.model import ToolCall, Trace
from evaltape.grader.stats.agreement import cohen_kappa
from evaltape.grader.stats.outcome import classify

FILES = ("BFCL_v4_simple_python.json", "BFCL_v4_multiple.json", "BFCL_v4_parallel.json",
         "BFCL_v4_parallel_multiple.json")


def first_value(values):
    """The first acceptable value (``""`` skipped), with nested dicts built key by key."""
    v = next((x for x in values if x != ""), None)
    return build(v)


def build(v):
    """A value from an acceptable value: nested dicts (``{key: [values]}``) and lists of
    them built key by key from each key's first acceptable value."""
    if isinstance(v, dict):  # nested dict answer: {key: [acceptable...]}
        return {k: first_value(vals) for k, vals in v.items() if "" not in vals}
    if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
        return [build(x) for x in v]
    return copy.deepcopy(v)


def correct_calls(gt, case):
    """Each parameter's first acceptable value; optional ones (``""``) left out unless the
    schema requires them (BFCL checks the schema's ``required`` before the answer)."""
    calls = []
    for item in gt:
        (name, params), = item.items()
        _, required = schema_props(case, name)
        calls.append([name, {p: first_value(vals) for p, vals in params.items()
                             if "" not in vals or p in required}])
    return calls


def _std(v):
    import re
    return re.sub(r"[ ,./\-_*^]", "", v).lower().replace("'", '"') if isinstance(v, str) else v


def _value_ok(v, acceptable):
    if isinstance(v, dict):  # each acceptable dict: {key: [values]}, "" = optional key
        return any(isinstance(a, dict) and all(k in a and _std(x) in [_std(y) for y in a[k]]
                                               for k, x in v.items())
                   and all(k in v for k, ys in a.items() if "" not in ys) for a in acceptable)
    return _std(v) in [_std(x) for x in acceptable]


def accepts(item, call, declared=None):
    """By BFCL's rules as written: ground-truth ``item`` accepts ``call`` (one built from some
    item's first values): same name, every given parameter declared by the schema
    (``declared``) and among the item's acceptable values (strings standardised, dicts key
    by key), every non-optional answer parameter given."""
    (name, params), = item.items()
    if call[0] != name:
        return False
    args = call[1]
    if any(p not in params or (declared is not None and p not in declared)
           or not _value_ok(v, params[p]) for p, v in args.items()):
        return False
    return all(p in args for p, vals in params.items() if "" not in vals)


def greedy_passes(gt, calls, case):
    """BFCL ``parallel_function_checker_no_order``: answers in order, each takes the first
    unused call it accepts."""
    used = set()
    for item in gt:
        declared = schema_props(case, list(item)[0])[0]
        j = next((j for j, c in enumerate(calls) if j not in used
                  and accepts(item, c, declared)), None)
        if j is None:
            return False
        used.add(j)
    return True


def schema_props(case, name):
    """``(properties, required)`` of function ``name`` in the imported case's ``tools``."""
    for t in case["tools"]:
        if t["name"] == name:
            return t["parameters"].get("properties", {}), t["parameters"].get("required", [])
    return {}, []


def variants(case):
    """``(kind, calls, reference_passes)`` for one question."""
    gt = case["expected_tool_calls"]
    base = correct_calls(gt, case)
    out = [("correct", base, True)]

    def mutate(kind, fn, verdict):
        calls = copy.deepcopy(base)
        for i, (name, args) in enumerate(calls):
            props, required = schema_props(case, name)
            params = list(gt[i].values())[0]
            if fn(calls, i, name, args, props, required, params):
                out.append((kind, calls, verdict))
                return

    def string_case(calls, i, name, args, props, required, params):
        for p, v in args.items():
            if props.get(p, {}).get("type") == "string" and isinstance(v, str) and " " in v:
                args[p] = v.upper().replace(" ", "  ")
                return True

    def string_wrong(calls, i, name, args, props, required, params):
        for p, v in args.items():
            if props.get(p, {}).get("type") == "string" and isinstance(v, str):
                args[p] = "zz not an answer"
                return True

    def int_as_float(calls, i, name, args, props, required, params):
        for p, v in args.items():
            if props.get(p, {}).get("type") == "integer" and type(v) is int and all(
                    type(x) is int for x in params[p] if x != ""):
                args[p] = float(v)
                return True

    def float_as_int(calls, i, name, args, props, required, params):
        for p, v in args.items():
            if props.get(p, {}).get("type") == "float" and type(v) is float and v.is_integer():
                args[p] = int(v)
                return True

    def number_wrong(calls, i, name, args, props, required, params):
        for p, v in args.items():
            if props.get(p, {}).get("type") in ("integer", "float") and type(v) in (int, float):
                args[p] = v + 1000003
                return True

    def bool_as_int(calls, i, name, args, props, required, params):
        for p, v in args.items():
            if props.get(p, {}).get("type") == "boolean" and type(v) is bool:
                args[p] = int(v)
                return True

    def dict_case(calls, i, name, args, props, required, params):
        for p, v in args.items():
            if isinstance(v, dict) and any(isinstance(x, str) for x in v.values()):
                args[p] = {k: x.upper() if isinstance(x, str) else x for k, x in v.items()}
                return True

    def dotted(calls, i, name, args, props, required, params):
        if any("." in c[0] for c in calls):
            for c in calls:
                c[0] = c[0].replace(".", "_")
            return True

    def omit_required(calls, i, name, args, props, required, params):
        for p in list(args):
            if "" not in params[p] or p in required:
                del args[p]
                return True

    def extra_param(calls, i, name, args, props, required, params):
        args["zz_unexpected"] = 1
        return True

    def reversed_(calls, i, name, args, props, required, params):
        if len(calls) > 1:
            calls.reverse()
            return True

    def extra_call(calls, i, name, args, props, required, params):
        calls.append(copy.deepcopy(calls[0]))
        return True

    mutate("string_case", string_case, True)
    mutate("string_wrong", string_wrong, False)
    mutate("int_as_float", int_as_float, False)
    mutate("float_as_int", float_as_int, True)
    mutate("number_wrong", number_wrong, False)
    mutate("bool_as_int", bool_as_int, False)
    mutate("dict_case", dict_case, True)
    mutate("dotted_name", dotted, True)
    mutate("omit_required", omit_required, False)
    mutate("extra_param", extra_param, False)
    rev = list(reversed(base))
    if len(base) > 1:  # greedy pairing can refuse a reordering (an earlier answer takes
        out.append(("reversed", copy.deepcopy(rev), greedy_passes(gt, rev, case)))  # a later's call)
    mutate("extra_call", extra_call, False)
    # omit_optional: the base already leaves optional parameters out; send them instead
    # and compare with the base, so the pair shows both sides of the rule
    with_optional = copy.deepcopy(base)
    added = False
    for i, item in enumerate(gt):
        for p, vals in list(item.values())[0].items():
            if "" in vals and any(x != "" for x in vals) and p not in with_optional[i][1]:
                with_optional[i][1][p] = first_value(vals)
                added = True
    if added:  # both lists go through greedy pairing (parallel items)
        out.append(("send_optional", with_optional, greedy_passes(gt, with_optional, case)))
        out.append(("omit_optional", base, greedy_passes(gt, base, case)))
    return out


def measure(corpus: Path) -> dict:
    """Craft every item, decide it with evaltape (``matching: bfcl`` and the default
    matcher) and count agreement with the hand-written references.

    Returns:
        ``{"items", "per_kind": {kind: {items, agree, default_agree}}, "agree", "kappa",
        "default_agree", "default_kappa", "disagreements": [(id, kind, reference, failure)]}``.
    """
    res = import_bfcl([str(corpus / f) for f in FILES])
    if res.errors:
        raise SystemExit(f"import errors: {res.errors[:3]}")
    cases = {c.id: c for c in build_cases(res)}
    per_kind = defaultdict(lambda: [0, 0, 0])  # items, ours agree, default agree
    cells = {"ours": [0, 0, 0, 0], "default": [0, 0, 0, 0]}
    disagreements = []
    for cid, raw in res.cases.items():
        case = cases[cid]
        for kind, calls, ref in variants(raw):
            tcs = tuple(ToolCall(f"c{j}", n, a, step=1) for j, (n, a) in enumerate(calls))
            trace = Trace(cid, 0, case.input, tcs, None, "tool_use", 1)
            failure = classify(trace, case)
            ours = failure is None
            m = match_calls(tcs, case.expected_calls, args_mode="exact")
            default = m.matched == m.n_expected == m.n_actual
            k = per_kind[kind]
            k[0] += 1
            k[1] += ours == ref
            k[2] += default == ref
            for who, v in (("ours", ours), ("default", default)):
                idx = {(True, True): 0, (True, False): 1, (False, True): 2,
                       (False, False): 3}[(v, ref)]
                cells[who][idx] += 1
            if ours != ref:
                disagreements.append((cid, kind, ref, failure))
    n = sum(k[0] for k in per_kind.values())
    return {
        "items": n,
        "per_kind": {k: {"items": v[0], "agree": v[1], "default_agree": v[2]}
                     for k, v in sorted(per_kind.items())},
        "agree": sum(k[1] for k in per_kind.values()),
        "kappa": cohen_kappa(*cells["ours"]),
        "default_agree": sum(k[2] for k in per_kind.values()),
        "default_kappa": cohen_kappa(*cells["default"]),
        "disagreements": disagreements,
    }


def main() -> None:
    """Print the per-kind table, both agreement figures and the first disagreements."""
    corpus = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/corpus/bfcl")
    r = measure(corpus)
    for k, v in r["per_kind"].items():
        print(f"{k:14s} {v['agree']:4d}/{v['items']:<4d} default {v['default_agree']:4d}")
    print(f"evaltape (matching: bfcl): {r['agree']}/{r['items']} = "
          f"{r['agree'] / r['items']:.4f}, kappa {r['kappa']:.4f}")
    print(f"evaltape default matcher:  {r['default_agree']}/{r['items']} = "
          f"{r['default_agree'] / r['items']:.4f}, kappa {r['default_kappa']:.4f}")
    for d in r["disagreements"][:20]:
        print("disagree:", json.dumps(d))


if __name__ == "__main__":
    main()
