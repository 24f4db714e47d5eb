"""BFCL: one test per rule of the AST checker, the importer end to end (on hand-made files, and
on the real question files of the corpus when it is there), the agreement figure,
and the bfcl agent recorded through ``make record`` against the stand-in script server.

Every expected verdict is read off the rule text of BFCL's ``ast_checker.py`` (module doc of
:mod:`evaltape.grader.matching.bfcl`), not taken from the program's output.
"""
from __future__ import annotations

import importlib.util
import json
import sys
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import CORPUS, ROOT, corpus_mark, run_cli, write_jsonl
from evaltape.grader.io.datasets import parse_case
from evaltape.grader.matching import bfcl
from evaltape.grader.model import ToolCall, Trace
from evaltape.grader.stats.outcome import classify

BFCL = CORPUS / "bfcl"
needs_corpus = corpus_mark(BFCL / "BFCL_v4_parallel_multiple.json",
                           BFCL / "possible_answer" / "BFCL_v4_parallel_multiple.json",
                           what="the Berkeley Function-Calling Leaderboard v4 question and "
                                "answer files (ShishirPatil/gorilla, "
                                "berkeley-function-call-leaderboard/bfcl_eval/data/)")

GEO = {"name": "geo.distance", "description": "Distance between two cities.",
       "parameters": {"type": "dict", "required": ["origin", "count"], "properties": {
           "origin": {"type": "string"}, "count": {"type": "integer"},
           "scale": {"type": "float"}, "exact": {"type": "boolean"},
           "stops": {"type": "array", "items": {"type": "string"}},
           "filters": {"type": "dict", "properties": {"city": {"type": "string"},
                                                      "year": {"type": "integer"}}},
           "unit": {"type": "string"}}}}
ANSWER = {"geo.distance": {"origin": ["New York, NY", "NYC"], "count": [5],
                           "scale": [2.0], "exact": [True, ""], "stops": [["Boston", "DC"]],
                           "filters": [{"city": ["Paris"], "year": [2020, ""]}],
                           "unit": ["km", ""]}}
GOOD = {"origin": "New York, NY", "count": 5, "scale": 2.0, "stops": ["Boston", "DC"],
        "filters": {"city": "Paris"}}


def _case(answers, tools=(GEO,), category="simple"):
    return parse_case({"id": "x", "input": "q", "tools": list(tools), "matching": "bfcl",
                       "expected_tool_calls": answers,
                       "metadata": {"category": category}}, path="t", line=1, position=0)


def _verdict(calls, answers=(ANSWER,), category="simple", tools=(GEO,)):
    case = _case(list(answers), tools, category)
    trace = Trace("x", 0, "q", tuple(ToolCall(f"c{i}", n, a, step=1)
                                     for i, (n, a) in enumerate(calls)), None, "tool_use", 1)
    return classify(trace, case)


def _with(**changes):
    args = dict(GOOD)
    for k, v in changes.items():
        if v is None:
            args.pop(k, None)
        else:
            args[k] = v
    return [("geo.distance", args)]


def test_correct_answer_passes():
    assert _verdict(_with()) is None


def test_strings_compare_after_standardisation():
    # spaces and ",./-_*^" dropped, lower case: "new-york ny" == "New York, NY"
    assert _verdict(_with(origin="new-york ny")) is None
    assert _verdict(_with(origin="Newark")) == "wrong_call:value_error:string"


def test_integer_refuses_float_and_float_accepts_integer():
    assert _verdict(_with(count=5.0)) == "wrong_call:type_error:simple"
    assert _verdict(_with(scale=2)) is None  # Python's int -> float conversion
    assert _verdict(_with(count=6)) == "wrong_call:value_error:others"


def test_boolean_refuses_one():
    assert _verdict(_with(exact=1)) == "wrong_call:type_error:simple"
    assert _verdict(_with(exact=True)) is None


def test_lists_compare_in_order_with_standardised_strings():
    assert _verdict(_with(stops=["boston", "dc"])) is None
    assert _verdict(_with(stops=["DC", "Boston"])) == "wrong_call:value_error:list/tuple"
    assert _verdict(_with(stops=["Boston", 3])) == "wrong_call:type_error:nested"


def test_nested_dict_acceptable_lists_per_key():
    assert _verdict(_with(filters={"city": "paris", "year": 2020})) is None
    assert _verdict(_with(filters={"city": "Rome"})) == "wrong_call:value_error:dict_value"
    assert _verdict(_with(filters={"city": "Paris", "zip": 1})) == \
        "wrong_call:value_error:dict_key"
    assert _verdict(_with(filters={"year": 2020})) == "wrong_call:value_error:dict_key"


def test_dotted_names_map_to_underscores():
    assert _verdict([("geo_distance", GOOD)]) is None
    assert _verdict([("geo-distance", GOOD)]) == \
        "wrong_call:simple_function_checker:wrong_func_name"


def test_optional_and_required_parameters():
    assert _verdict(_with(unit="km")) is None          # optional, given
    assert _verdict(_with(unit=None)) is None          # optional ("" listed), left out
    assert _verdict(_with(scale=None)) == \
        "wrong_call:simple_function_checker:missing_optional"  # answer has no ""
    assert _verdict(_with(count=None)) == \
        "wrong_call:simple_function_checker:missing_required"  # schema-required


def test_unexpected_parameter():
    assert _verdict(_with(speed=3)) == "wrong_call:simple_function_checker:unexpected_param"


def test_simple_and_multiple_need_exactly_one_call():
    two = _with() + _with()
    assert _verdict(two) == "wrong_call:simple_function_checker:wrong_count"
    assert _verdict(two, category="multiple") == "wrong_call:multiple_function_checker:wrong_count"


ADD = {"name": "add", "parameters": {"type": "dict", "required": ["a"],
                                     "properties": {"a": {"type": "integer"}}}}


def test_parallel_any_order_one_to_one():
    answers = [{"add": {"a": [1]}}, {"add": {"a": [2]}}]
    calls = [("add", {"a": 2}), ("add", {"a": 1})]
    assert _verdict(calls, answers, "parallel", (ADD,)) is None
    assert _verdict([("add", {"a": 1}), ("add", {"a": 1})], answers, "parallel", (ADD,)) == \
        "wrong_call:parallel_function_checker_no_order:cannot_find_match"
    assert _verdict(calls[:1], answers, "parallel", (ADD,)) == \
        "wrong_call:parallel_function_checker_no_order:wrong_count"


def test_parallel_pairing_is_greedy_in_answer_order():
    # answer 0 accepts a=1 or a=2 and takes the first call it accepts (a=2); answer 1 then
    # finds only a=1 left and refuses it, although a perfect pairing exists: BFCL fails it.
    answers = [{"add": {"a": [1, 2]}}, {"add": {"a": [2]}}]
    assert _verdict([("add", {"a": 2}), ("add", {"a": 1})], answers, "parallel", (ADD,)) == \
        "wrong_call:parallel_function_checker_no_order:cannot_find_match"
    assert _verdict([("add", {"a": 1}), ("add", {"a": 2})], answers, "parallel", (ADD,)) is None


def test_standardize_is_bfcls_rule():
    assert bfcl.standardize("April 1, 2024") == bfcl.standardize("april 1 2024") == "april12024"
    assert bfcl.standardize("It's") == 'it"s'


@needs_corpus
def test_agreement_with_bfcl_rules_on_crafted_items():
    spec = importlib.util.spec_from_file_location("bfcl_agreement",
                                                  ROOT / "scripts" / "bfcl_agreement.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    r = mod.measure(BFCL)
    assert r["items"] > 8000  # 1,000 questions x up to 15 kinds
    assert set(r["per_kind"]) >= {"correct", "string_case", "int_as_float", "float_as_int",
                                  "dict_case", "dotted_name", "omit_optional",
                                  "omit_required", "extra_param", "reversed", "extra_call"}
    assert r["agree"] / r["items"] >= 0.995
    assert r["kappa"] >= 0.99


@needs_corpus
def test_import_with_results_end_to_end(tmp_path):
    q = BFCL / "BFCL_v4_parallel_multiple.json"
    results = write_jsonl(tmp_path / "BFCL_v4_parallel_multiple_result.json", [
        # the ground truth of parallel_multiple_0, dotted names sent with underscores,
        # arguments as JSON strings (BFCL's FC result format), calls in reverse order
        {"id": "parallel_multiple_0", "result": [
            {"math_toolkit_product_of_primes": json.dumps({"count": 5})},
            {"math_toolkit_sum_of_multiples": json.dumps(
                {"lower_limit": 1, "upper_limit": 1000, "multiples": [3, 5]})}]},
        # integer parameter sent as a float
        {"id": "parallel_multiple_2", "result": [
            {"circle.calculate_area": {"radius": 5.0}},
            {"circle.calculate_circumference": {"diameter": 10}}]},
        {"id": "parallel_multiple_3", "result": "Sorry, I cannot call functions."},
    ])
    out = tmp_path / "run"
    p = run_cli("import", "bfcl", str(q), "--results", str(results), "--out", str(out))
    assert p.returncode == 0, p.stderr
    dataset = [json.loads(x) for x in (out / "dataset.jsonl").read_text().splitlines()]
    assert len(dataset) == 200 and dataset[0]["tools"][0]["name"] == \
        "math_toolkit.sum_of_multiples"
    assert dataset[0]["matching"] == "bfcl"
    p = run_cli("grade", str(out), "--out", str(tmp_path / "rep"))
    assert p.returncode == 0, p.stderr
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    by = {e["case_id"]: e for e in report["episodes"]}
    assert by["parallel_multiple_0"]["passed"] is True
    # circle.calculate_area's radius is declared integer in the schema
    assert by["parallel_multiple_2"]["failure"] == \
        "wrong_call:parallel_function_checker_no_order:cannot_find_match"
    assert "type_error:simple" in by["parallel_multiple_2"]["metrics"]["bfcl_ast"]["message"]
    assert by["parallel_multiple_3"]["failure"] == \
        "wrong_call:parallel_function_checker_no_order:wrong_count"


# Hand-made files in BFCL's layout (one question a line; the ground truth in
# possible_answer/ under the same name), so the importer runs end to end without the
# corpus. The verdicts follow the rules tested one by one above.
PRIMES = {"name": "math_toolkit.product_of_primes", "description": "Product of the first n "
          "primes.", "parameters": {"type": "dict", "required": ["count"],
                                    "properties": {"count": {"type": "integer"}}}}
AREA = {"name": "circle.area", "description": "Area of a circle.",
        "parameters": {"type": "dict", "required": ["radius"],
                       "properties": {"radius": {"type": "integer"}}}}


def _bfcl_files(tmp_path: Path, category: str, questions: list[dict],
                answers: list[dict]) -> Path:
    q = write_jsonl(tmp_path / "data" / f"BFCL_v4_{category}.json", questions)
    write_jsonl(tmp_path / "data" / "possible_answer" / f"BFCL_v4_{category}.json", answers)
    return q


def test_import_with_results_end_to_end_on_hand_made_files(tmp_path):
    ask = lambda text: [[{"role": "user", "content": text}]]  # noqa: E731
    q = _bfcl_files(tmp_path, "parallel_multiple", [
        {"id": "pm_0", "question": ask("Product of the first 5 primes; area of radius 2."),
         "function": [PRIMES, AREA]},
        {"id": "pm_1", "question": ask("Area of radius 3, product of the first 2 primes."),
         "function": [PRIMES, AREA]},
        {"id": "pm_2", "question": ask("Area of radius 4 and of radius 5."),
         "function": [AREA]}], [
        {"id": "pm_0", "ground_truth": [{"math_toolkit.product_of_primes": {"count": [5]}},
                                        {"circle.area": {"radius": [2]}}]},
        {"id": "pm_1", "ground_truth": [{"circle.area": {"radius": [3]}},
                                        {"math_toolkit.product_of_primes": {"count": [2]}}]},
        {"id": "pm_2", "ground_truth": [{"circle.area": {"radius": [4]}},
                                        {"circle.area": {"radius": [5]}}]}])
    results = write_jsonl(tmp_path / "BFCL_v4_parallel_multiple_result.json", [
        # pm_0: both calls, in reverse order, the dotted name sent with an underscore and
        # the arguments as a JSON string (BFCL's FC result format): accepted
        {"id": "pm_0", "result": [{"circle_area": json.dumps({"radius": 2})},
                                  {"math_toolkit_product_of_primes": {"count": 5}}]},
        # pm_1: radius 3.0 for an integer parameter: no answer pairs with that call
        {"id": "pm_1", "result": [{"circle.area": {"radius": 3.0}},
                                  {"math_toolkit.product_of_primes": {"count": 2}}]},
        # pm_2: text, no call: two answers, zero calls
        {"id": "pm_2", "result": "I cannot call functions."}])
    out = tmp_path / "run"
    p = run_cli("import", "bfcl", str(q), "--results", str(results), "--out", str(out))
    assert p.returncode == 0, p.stderr
    dataset = [json.loads(x) for x in (out / "dataset.jsonl").read_text().splitlines()]
    assert [c["id"] for c in dataset] == ["pm_0", "pm_1", "pm_2"]
    assert dataset[0]["tools"] == [PRIMES, AREA] and dataset[0]["matching"] == "bfcl"
    assert dataset[0]["input"] == "Product of the first 5 primes; area of radius 2."
    p = run_cli("grade", str(out), "--out", str(tmp_path / "rep"))
    assert p.returncode == 0, p.stderr
    by = {e["case_id"]: e for e in
          json.loads((tmp_path / "rep" / "report.json").read_text())["episodes"]}
    assert by["pm_0"]["passed"] is True
    assert by["pm_1"]["failure"] == \
        "wrong_call:parallel_function_checker_no_order:cannot_find_match"
    assert by["pm_2"]["failure"] == "wrong_call:parallel_function_checker_no_order:wrong_count"


def test_import_refuses_other_languages_and_misplaced_options(tmp_path):
    java = _bfcl_files(tmp_path, "simple_java", [
        {"id": "simple_java_0", "question": [[{"role": "user", "content": "Sort [3, 1]."}]],
         "function": [{"name": "Sorter.sort", "parameters": {"type": "dict", "properties": {
             "items": {"type": "String", "description": "a Java array literal"}}}}]}],
        [{"id": "simple_java_0", "ground_truth": [{"Sorter.sort": {"items": ["new int[]{3, 1}"]}}]}])
    p = run_cli("import", "bfcl", str(java), "--out", str(tmp_path / "a"))
    assert p.returncode == 3 and "simple_java" in p.stderr and "Traceback" not in p.stderr
    p = run_cli("import", "taubench", str(java), "--results", str(tmp_path), "--out",
                str(tmp_path / "b"))
    assert p.returncode == 2 and "--results applies to bfcl" in p.stderr


@pytest.mark.slow
@needs_corpus
def test_make_record_with_the_bfcl_agent(tmp_path):
    """``make record`` with the built-in agent, the model played by the stand-in server on
    127.0.0.1: one correct parallel turn (names as the API must spell them), one text turn."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    data = tmp_path / "data"
    p = run_cli("import", "bfcl", str(BFCL / "BFCL_v4_parallel_multiple.json"),
                "--out", str(data))
    assert p.returncode == 0, p.stderr
    lines = (data / "dataset.jsonl").read_text().splitlines()[:2]
    small = tmp_path / "small.jsonl"
    small.write_text("\n".join(lines) + "\n")
    script = tmp_path / "standin.json"
    script.write_text(json.dumps({
        "parallel_multiple_0": [json.dumps([
            {"tool": "math_toolkit_product_of_primes", "arguments": {"count": 5}},
            {"tool": "math_toolkit_sum_of_multiples",
             "arguments": {"lower_limit": 1, "upper_limit": 1000, "multiples": [3, 5]}}])],
        "parallel_multiple_1": ["No function fits."]}))
    out = tmp_path / "rec"
    # the venv running this test; "-o" keeps make from re-creating it (a test must never
    # rebuild the developer's or CI's environment)
    venv = Path(sys.prefix)
    proc = subprocess.run(["make", "-s", "-o", f"{venv}/.installed", "record",
                           f"DATASET={small}", "AGENT=bfcl", f"OUT={out}",
                           f"ARGS=--standin-script {script}", f"VENV={venv}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                               "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    traces = [json.loads(x) for x in (out / "traces.jsonl").read_text().splitlines()]
    by = {t["case_id"]: t for t in traces}
    calls = by["parallel_multiple_0"]["tool_calls"]
    assert [c["name"] for c in calls] == ["math_toolkit.product_of_primes",
                                          "math_toolkit.sum_of_multiples"]
    assert all(c["step"] == 1 and c["result"] is None for c in calls)
    assert by["parallel_multiple_1"]["tool_calls"] == []
    p = run_cli("grade", str(out), "--out", str(tmp_path / "rep"))
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert [e["passed"] for e in report["episodes"]] == [True, False]
