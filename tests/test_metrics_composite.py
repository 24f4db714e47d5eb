"""The tiered-composite scoring design: composite score, difficulty thresholds, breakdowns, TOML
configuration."""
from __future__ import annotations

import json

import pytest

from conftest import load_case

from evaltape.grader.stats.breakdown import breakdowns
from evaltape.grader.io.config import configure, load_config
from evaltape.grader.aggregate import config_sha256
from evaltape.grader.metrics.base import default_threshold
from evaltape.grader.metrics.composite import Composite
from evaltape.grader.stats.verdict import check
from evaltape.grader.model import Case, EpisodeContext, ToolCall, Trace


def ctx(difficulty, final="done ok", contains=None, excludes=None):
    obj = {"id": "c", "user_query": "q", "expected_tools": ["a"],
           "expected_args": {"a": {"x": 1}}, "expected_outcome_keywords": ["ok", "missing"],
           "difficulty": difficulty}
    if contains:
        obj["final_response_contains"] = contains
    if excludes:
        obj["final_response_excludes"] = excludes
    case = load_case(obj)
    trace = Trace(case_id="c", trial=0, input="q", tool_calls=(ToolCall("1", "a", {"x": 1}),),
                  final_response=final, stop_reason="end_turn", steps=2)
    return EpisodeContext(trace=trace, case=case)


@pytest.mark.parametrize("difficulty,verdict", [("advanced", "PASS"), ("basic", "FAIL"),
                                                ("challenge", "PASS"), (None, "FAIL")])
def test_composite_and_thresholds(difficulty, verdict):
    # tools 1.0·0.30 + args 1.0·0.25 + response (1/2 keywords) 0.5·0.25 = 0.675;
    # no judge record → no hallucination penalty. 0.675 ≥ 0.6 advanced, < 0.8 basic,
    # ≥ 0.4 challenge, < 0.7 default.
    c = ctx(difficulty)
    s = Composite().score(c)
    assert s.value == pytest.approx(0.675)
    assert s.message.endswith(f"difficulty={difficulty or 'n/a'}")
    # the tier is the metric's default threshold; the report applies it (PASS at >=)
    thr = default_threshold(Composite(), c.case)
    assert thr == {"advanced": 0.6, "basic": 0.8, "challenge": 0.4, None: 0.7}[difficulty]
    assert check(s.value, s.code, thr) is (verdict == "PASS")


def test_composite_response_content_with_excludes():
    # contains 2/2 = 1.0, one excluded phrase present → 1.0 - 0.3 = 0.7
    # composite = 0.30 + 0.25 + 0.7·0.25 = 0.725
    s = Composite().score(ctx("basic", final="alpha beta secret", contains=["alpha", "beta"],
                              excludes=["secret"]))
    assert s.value == pytest.approx(0.725)


def test_config_toml_changes_weights_and_hash(tmp_path):
    p = tmp_path / "pyproject.toml"
    p.write_text("[tool.evaltape.metrics_args.composite]\n"
                 "weights = {tools = 0.5, arguments = 0.25, response = 0.25, hallucination = 0.2}\n")
    [m] = configure([Composite()], load_config(p))
    # 0.5 + 0.25 + 0.5·0.25 = 0.875
    assert m.score(ctx("basic")).value == pytest.approx(0.875)
    assert config_sha256([m]) != config_sha256([Composite()])
    from evaltape.grader.errors import BadInputError
    with pytest.raises(BadInputError, match="metric 'composite' takes no argument 'nope'"):
        configure([Composite()], {"metrics_args": {"composite": {"nope": 1}}})


def test_breakdowns_by_difficulty_and_tag():
    cases = [Case(id="a", input="q", tags=("x",), difficulty="basic"),
             Case(id="b", input="q", tags=("x", "y"), difficulty="challenge")]
    from evaltape.grader.results import EpisodeResult, MetricResult
    eps = [EpisodeResult("a", 0, True, None, 2, "end_turn",
                         {"composite": MetricResult(0.75, "d", None, 0.8, False)}),
           EpisodeResult("b", 0, False, "wrong_tools", 2, "end_turn",
                         {"composite": MetricResult(0.45, "e", None, 0.4, True)})]
    out = breakdowns(eps, cases, [Composite()])
    # a: 0.75 < 0.8 basic → composite fails; b: 0.45 ≥ 0.4 challenge → passes
    assert out["by_difficulty"]["basic"] == {"episodes": 1, "passed": 1, "pass_rate": 1.0,
                                             "avg_composite": 0.75, "composite_passed": 0}
    assert out["by_difficulty"]["challenge"]["composite_passed"] == 1
    assert out["by_tag"]["x"]["avg_composite"] == 0.6
    assert [w["case_id"] for w in out["worst_episodes"]] == ["b", "a"]
    assert breakdowns(eps, [Case(id="a", input="q"), Case(id="b", input="q")], []) == {}


import pytest as _pytest


@_pytest.mark.parametrize("text, field", [
    ("[metric_args.grounding]\nx = 1\n", "metric_args"),
    ('[metrics_args."mine:M"]\nx = 1\n', "metrics_args.mine:M"),
    ("metrics_args = 5\n", "metrics_args"),
])
def test_config_typos_are_bad_input(tmp_path, text, field):
    """Regression: a mistyped key used to mean "use the defaults" silently."""
    from evaltape.grader.io.config import load_config
    from evaltape.grader.errors import BadInputError
    p = tmp_path / "evaltape.toml"
    p.write_text(text)
    with _pytest.raises(BadInputError) as e:
        load_config(p)
    assert e.value.field == field


@_pytest.mark.parametrize("text, field, message", [
    ("[metrics_args.composite]\nweights = 5\n", "metrics_args.composite.weights",
     "must be a table, got a number"),
    ('[metrics_args.composite]\nweights = {tools = "x"}\n',
     "metrics_args.composite.weights.tools", "must be a number, got a string"),
    ("[metrics_args.compsite]\nweights = {}\n", "metrics_args.compsite",
     "no such metric; did you mean 'composite'?"),
])
def test_config_values_of_the_wrong_kind_are_refused(tmp_path, text, field, message):
    """Regression: such values used to turn every composite score into an error null."""
    from evaltape.grader.io.config import configure, load_config
    from evaltape.grader.errors import BadInputError
    from evaltape.grader.metrics import resolve
    p = tmp_path / "evaltape.toml"
    p.write_text(text)
    with _pytest.raises(BadInputError) as e:
        configure(resolve(["composite"]), load_config(p), str(p))
    assert (e.value.path, e.value.field, e.value.message) == (str(p), field, message)


def test_a_user_metric_is_configured_by_its_name(tmp_path, monkeypatch):
    """The README's example metric takes ``tool``; [metrics_args.states_server_status]
    sets it (it used to be refused as an unknown metric, and a module:Class key was
    accepted and ignored)."""
    import evaltape
    from conftest import ROOT
    monkeypatch.chdir(ROOT)
    p = tmp_path / "evaltape.toml"
    p.write_text('[metrics_args.states_server_status]\ntool = "nope"\n')
    report = evaltape.grade("cassettes/helpdesk-scripted-standin",
                            metrics=["examples.custom_metric:StatesServerStatus"], config=p)
    assert report.grader.metric_specs[0]["args"] == {"tool": "nope"}
    # no call of a tool named "nope": every episode is not applicable
    assert report.summary.metrics_skipped["states_server_status"] == 8


@_pytest.mark.parametrize("text,message", [
    ("[metrics_args.composite]\nthresholds = {basic = nan}\n",
     "thresholds.basic must be a finite number from 0 to 1.0"),
    ("[metrics_args.composite]\nweights = {tools = -5.0}\n",
     "weights.tools must be a finite number >= 0"),
    ("[metrics_args.composite]\nweights = {tools = 0.3, response = 0.25, hallucination = 0.2}\n",
     "weights: arguments missing"),
    ("[metrics_args.composite]\nweights = {tools = 0, arguments = 0, response = 0, "
     "hallucination = 0}\n",
     "tools \\+ arguments \\+ response must be above 0 and at most 1, got 0"),
    ("[metrics_args.composite]\nweights = {tools = 1e308, arguments = 0.25, response = 0.25, "
     "hallucination = 0.2}\n", "must be above 0 and at most 1, got 1e\\+308"),
    ('[metrics_args.efficiency]\nprices = {scripted = "free"}\n',
     "prices.scripted must be 2 or 4 finite numbers >= 0"),
    ("[metrics_args.efficiency]\nprices = {scripted = [nan, 1]}\n",
     "prices.scripted must be 2 or 4 finite numbers"),
    ("[metrics_args.efficiency]\nprices = {scripted = [1, 2, 3]}\n",
     "prices.scripted must be 2 or 4"),
    ("[metrics_args.no_extra_tool_calls]\nslack = -100\n", "slack must be a whole number"),
    ("[metrics_args.response_min_length]\nmin_chars = 20.5\n", "min_chars must be a whole number"),
    ("[metrics_args.response_min_length]\nmin_chars = 99999999999999999\n",
     "min_chars must be a whole number"),
    ('[metrics_args.trajectory_match]\noverrides = {search = "exactt"}\n',
     "unknown args mode for tool 'search'"),
])
def test_out_of_range_metric_arguments_are_refused(tmp_path, text, message):
    """Regression: a NaN threshold failed every episode, a negative weight floored every
    composite at 0, and a mistyped override turned the tool's scores into error nulls."""
    from evaltape.grader.io.config import configure, load_config
    from evaltape.grader.errors import EvaltapeError
    from evaltape.grader.metrics import resolve
    p = tmp_path / "evaltape.toml"
    p.write_text(text)
    name = text.split(".")[1].split("]")[0]
    with _pytest.raises(EvaltapeError, match=message):
        configure(resolve([name]), load_config(p), str(p))


def test_grade_finds_its_configuration_in_the_working_directory(tmp_path):
    from conftest import ROOT, run_cli
    run = ROOT / "cassettes" / "helpdesk-scripted-standin"
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.evaltape.metrics_args.composite]\n'
        'weights = {tools = 1.0, arguments = 0, response = 0, hallucination = 0}\n'
        '\n[tool.evaltape.metrics_args.my_metric]\nlimit = 3\n')
    p = run_cli("grade", str(run), "--metrics", "composite,tool_selection_accuracy", "--out",
                str(tmp_path / "o"), "--quiet", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "config: pyproject.toml (found in the working directory" in p.stderr
    assert "metrics_args for my_metric unused" in p.stderr  # another run's metric: a note
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    # weights 1, 0, 0, 0: composite is the tools score itself on every episode
    tools = [e["metrics"]["tool_selection_accuracy"]["score"] for e in report["episodes"]]
    assert [e["metrics"]["composite"]["score"] for e in report["episodes"]] == tools
    # an evaltape.toml is found first; a pyproject.toml without [tool.evaltape] is not used
    (tmp_path / "evaltape.toml").write_text("[metrics_args.compsite]\nweights = {}\n")
    p = run_cli("grade", str(run), "--out", str(tmp_path / "o2"), "--quiet", cwd=tmp_path)
    assert p.returncode == 3 and "did you mean 'composite'?" in p.stderr
