"""The Python API (evaltape.grade / evaltape.open_run) and the metric protocol."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import pytest

import evaltape
from conftest import ROOT, make_trace, run_cli, write_json, write_jsonl
from evaltape.grader.errors import BadInputError, UsageError
from evaltape.grader.metrics.registry import BUILTIN

RUNS = sorted(p for p in (ROOT / "cassettes").iterdir() if (p / "traces.jsonl").exists())
ALL = sorted(BUILTIN)


def _rel(run):
    return run.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_api_and_cli_write_byte_identical_reports(run, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    p = run_cli("grade", _rel(run), "--out", str(tmp_path), "--quiet")
    assert p.returncode in (0, 1), p.stderr
    assert evaltape.report_bytes(evaltape.grade(_rel(run))) == (tmp_path / "report.json").read_bytes()


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_selecting_more_metrics_never_changes_another_metrics_score(run, monkeypatch):
    """Every built-in alone gives the same per-episode scores as within the full set."""
    monkeypatch.chdir(ROOT)
    together = evaltape.grade(_rel(run), metrics=ALL)
    for name in ALL:
        alone = evaltape.grade(_rel(run), metrics=[name])
        got = [(e.label, e.metrics[name]) for e in alone.episodes]
        want = [(e.label, e.metrics[name]) for e in together.episodes]
        assert got == want, name
        assert alone.summary.metrics[name] == together.summary.metrics[name], name


def test_composite_is_judged_and_alone_equals_with_hallucination(monkeypatch):
    """The composite's hallucination penalty reads judge records whether or not the
    hallucination metric is selected: on the helpdesk run tc_005 scores 0.15 both ways:
    the agent called no tool (tools F1 0, the expected query argument never given: 0) but
    its answer holds the keyword (response 1), so 0.30·0 + 0.25·0 + 0.25·1 − 0.20·h with
    the judge's hallucination rate h = 0.5 is 0.15 (0.25 when the penalty was lost)."""
    monkeypatch.chdir(ROOT)
    assert BUILTIN["composite"].judged is True
    alone = evaltape.grade("cassettes/helpdesk-qwen1.5b", metrics=["composite"])
    both = evaltape.grade("cassettes/helpdesk-qwen1.5b", metrics=["composite", "hallucination"])
    assert alone.summary.metrics["composite"] == both.summary.metrics["composite"]
    assert alone.summary.judge is not None and alone.summary.judge.metrics == ("composite",)
    tc5 = [e.metrics["composite"] for e in alone.episodes if e.case_id == "tc_005"]
    hall = [e.metrics["hallucination"].score for e in both.episodes if e.case_id == "tc_005"]
    for m, h in zip(tc5, hall):
        assert "hallucination=null" not in m.message
        assert m.message.startswith("tools=0.000, arguments=0.000, response=1.000, "
                                    "hallucination=0.500")
        assert h == 0.5 and m.score == pytest.approx(0.25 - 0.20 * 0.5)


def test_custom_metric_object_and_module_path(monkeypatch):
    """The README's example metric, given as an object and as module:Class, scores the
    three check_server_status episodes of the stand-in run 1.0 (each answer repeats the
    status: healthy, degraded, down) and the other five null not_applicable."""
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))
    from examples.custom_metric import StatesServerStatus
    run = "cassettes/helpdesk-scripted-standin"
    by_object = evaltape.grade(run, metrics=["task_completion", StatesServerStatus()])
    by_path = evaltape.grade(run, metrics=["task_completion",
                                           "examples.custom_metric:StatesServerStatus"])
    assert evaltape.report_bytes(by_object) == evaltape.report_bytes(by_path)
    scores = {e.case_id: e.metrics["states_server_status"] for e in by_object.episodes}
    assert {c for c, m in scores.items() if m.score == 1.0} == {"tc_003", "tc_004", "tc_006"}
    assert {m.code for c, m in scores.items() if m.score is None} == {"not_applicable"}
    assert by_object.summary.metrics["states_server_status"] == 1.0
    assert by_object.summary.metrics_skipped["states_server_status"] == 5


def test_a_metric_without_the_protocol_is_refused_naming_what_is_missing():
    class NoVersion:
        name = "x"

        def score(self, ctx):
            return evaltape.Score(1.0)

    with pytest.raises(UsageError, match=r"no 'version', no 'higher_is_better', no 'judged'"):
        evaltape.grade("cassettes/scripted-harness", metrics=[NoVersion()])


def test_a_user_metric_named_like_a_builtin_is_refused(monkeypatch):
    @dataclass(frozen=True)
    class Shadow(evaltape.Metric):
        name: ClassVar[str] = "task_completion"

        def score(self, ctx):
            return evaltape.Score(1.0)

    monkeypatch.chdir(ROOT)
    for selection in (["task_completion", Shadow()], [Shadow()]):  # with or without it
        with pytest.raises(UsageError, match="named 'task_completion', the name of a built-in"):
            evaltape.grade("cassettes/scripted-harness", metrics=selection)


def test_metrics_as_one_comma_separated_string(monkeypatch):
    monkeypatch.chdir(ROOT)
    report = evaltape.grade("cassettes/scripted-harness", metrics="task_completion, grounding")
    assert report.grader.metrics == ("task_completion", "grounding")


def test_a_metric_that_raises_is_counted_as_an_error_not_as_skipped(monkeypatch):
    @dataclass(frozen=True)
    class Boom(evaltape.Metric):
        name: ClassVar[str] = "boom"

        def score(self, ctx):
            if ctx.case.id == "sum":
                raise RuntimeError("bad day")
            return evaltape.Score(None, "nothing to check", code="not_applicable")

    monkeypatch.chdir(ROOT)
    report = evaltape.grade("cassettes/scripted-harness", metrics=[Boom()])
    s = report.summary
    assert (s.metrics_errors["boom"], s.metrics_skipped["boom"]) == (1, s.episodes - 1)
    sum_ep = next(e for e in report.episodes if e.case_id == "sum").metrics["boom"]
    assert (sum_ep.score, sum_ep.code, sum_ep.message) == (None, "error", "RuntimeError: bad day")
    doc = json.loads(evaltape.report_bytes(report))
    assert doc["summary"]["metrics_errors"] == {"boom": 1}
    assert doc["episodes"][[e["case_id"] for e in doc["episodes"]].index("sum")][
        "metrics"]["boom"]["code"] == "error"


def test_score_codes_are_machine_words():
    assert evaltape.Score(None, "why", code="not_applicable").code == "not_applicable"
    with pytest.raises(ValueError, match="needs a code"):
        evaltape.Score(None, "why")
    with pytest.raises(ValueError, match="lower-case word"):
        evaltape.Score(None, code="the case has no topics")
    with pytest.raises(ValueError, match="has no code"):
        evaltape.Score(0.5, code="not_applicable")
    with pytest.raises(TypeError, match="message must be a string"):
        evaltape.Score(0.5, {"why": 1})


def _mini_run(tmp_path, traces, cases, trials=None):
    write_json(tmp_path / "d.json", cases)
    write_jsonl(tmp_path / "run" / "traces.jsonl", traces)
    if trials:
        write_json(tmp_path / "run" / "manifest.json", {"trials": trials})
    return tmp_path / "run", tmp_path / "d.json"


def test_open_run_yields_checked_pairs_and_coverage(tmp_path):
    cases = [{"id": "a", "user_query": "q"}, {"id": "b", "user_query": "q"},
             {"id": "c", "user_query": "q"}]
    run, ds = _mini_run(tmp_path, [make_trace("a", trial=0), make_trace("a", trial=2),
                                   make_trace("b", trial=1)], cases, trials=3)
    opened = evaltape.open_run(run, ds)
    pairs = [(t.case_id, t.trial, c.id) for t, c in opened.episodes()]
    assert pairs == [("a", 0, "a"), ("a", 2, "a"), ("b", 1, "b")]
    cov = opened.coverage()
    assert cov.trials == 3
    assert cov.unrecorded_cases == ("c",)
    assert cov.missing_trials == ("a#t1", "b#t0", "b#t2")


@pytest.mark.parametrize("traces,field,message", [
    ([make_trace("zzz")], "case_id", "trace names case 'zzz', which the dataset"),
    ([make_trace("a"), make_trace("a")], "trial",
     r"duplicate episode: case 'a' trial 0 \(first at line 1\)"),
    ([make_trace("a", input="other")], "input", "the recorded input differs"),
])
def test_open_run_rules(tmp_path, traces, field, message):
    run, ds = _mini_run(tmp_path, traces, [{"id": "a", "user_query": "q"}])
    with pytest.raises(BadInputError, match=message) as e:
        list(evaltape.open_run(run, ds).episodes())
    assert e.value.field == field and e.value.path == str(run / "traces.jsonl")


def test_require_complete_fails_on_missing_trials(tmp_path):
    run, ds = _mini_run(tmp_path, [make_trace("a", trial=0), make_trace("a", trial=1),
                                   make_trace("b", trial=0)],
                        [{"id": "a", "user_query": "q"}, {"id": "b", "user_query": "q"}],
                        trials=2)
    p = run_cli("grade", str(run), "--dataset", str(ds), "--out", str(tmp_path / "r"),
                "--quiet", "--require-complete")
    assert p.returncode == 1
    assert "1 episode(s) missing from cases with 2 trials: b#t1" in p.stderr
    assert "0 dataset case(s) have no recorded episode, 1 trial(s) are missing" in p.stderr


def test_judge_command_refuses_a_trace_of_an_unknown_case(tmp_path):
    """`evaltape judge` opens the run like grade does (it used to skip such traces)."""
    run, ds = _mini_run(tmp_path, [make_trace("zzz")], [{"id": "a", "user_query": "q"}])
    p = run_cli("judge", str(run), "--dataset", str(ds), "--base-url", "http://127.0.0.1:9")
    assert p.returncode == 3
    assert "trace names case 'zzz'" in p.stderr


@pytest.mark.parametrize("kwargs,message", [
    (dict(run=5), "run must be a run directory"),
    (dict(config=[1]), "config must be a TOML file path or a table"),
    (dict(workers="2"), "workers must be a whole number"),
    (dict(workers=0), "workers must be a whole number"),
    (dict(metrics=b"composite"), "metrics must be a list"),
    (dict(metrics={"composite": 1}), "metrics must be a list"),
])
def test_api_arguments_of_the_wrong_kind_are_usage_errors(kwargs, message, monkeypatch):
    monkeypatch.chdir(ROOT)
    kwargs.setdefault("run", "cassettes/scripted-harness")
    with pytest.raises(UsageError, match=message):
        evaltape.grade(**kwargs)


def test_a_config_table_in_code_is_checked_like_a_file(monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(BadInputError, match="did you mean 'metrics_args'"):
        evaltape.grade("cassettes/scripted-harness", config={"metrics_arg": {}})


@pytest.mark.parametrize("name", ["Grounding", "gr\u043eunding", "grounding ", ""])
def test_metric_names_are_lower_case_words(name, monkeypatch):
    """Look-alikes of a built-in's name (capitals, a Cyrillic o, a trailing blank) are no
    names: a name is a report column, [a-z][a-z0-9_]*."""
    monkeypatch.chdir(ROOT)

    class LookAlike(evaltape.Metric):
        def score(self, ctx):
            return evaltape.Score(1.0)
    LookAlike.name = name
    with pytest.raises(UsageError, match="not a lower-case word|no 'name'"):
        evaltape.grade("cassettes/scripted-harness", metrics=[LookAlike()])


def test_a_lone_surrogate_in_details_is_an_error_score_not_a_crash(monkeypatch):
    monkeypatch.chdir(ROOT)

    class Bad(evaltape.Metric):
        name = "bad_text"

        def score(self, ctx):
            return evaltape.Score(0.5, "bad \ud800")
    report = evaltape.grade("cassettes/scripted-harness", metrics=[Bad()])
    assert report.summary.metrics_errors["bad_text"] == report.summary.episodes
    evaltape.report_bytes(report)  # serialises


def test_key_shaped_strings_never_reach_report_files(tmp_path):
    key = "sk-ant-api03-" + "A1b2C3d4" * 11 + "AA"
    cases = [{"id": "c", "user_query": "q"}]
    write_json(tmp_path / "d.json", cases)
    write_jsonl(tmp_path / "run" / "traces.jsonl", [make_trace("c", final=f"Your key: {key}")])
    p = run_cli("grade", str(tmp_path / "run"), "--dataset", str(tmp_path / "d.json"), "--out",
                str(tmp_path / "r"), "--format", "json,md,html,junit")
    assert p.returncode == 0, p.stderr
    assert key not in p.stdout + p.stderr
    for f in ("report.json", "report.md", "report.html", "junit.xml"):
        assert key not in (tmp_path / "r" / f).read_text(), f
    # report.html shows the final answer: with the key written as [REDACTED]
    assert "Your key: [REDACTED]" in (tmp_path / "r" / "report.html").read_text()


@pytest.mark.parametrize("before", ["\n", "\t", "\x01"])
def test_a_key_after_a_line_break_or_control_character_never_reaches_report_files(
        tmp_path, before):
    # in JSON the character before the key is written \n, \t or \u0001: the key is
    # then glued to a letter or digit of the escape, and must still be found
    key = "sk-ant-api03-" + "Zq9" * 12 + "AA"
    cases = [{"id": "c", "user_query": "q", "expected_tools": ["lookup"],
              "expected_args": {"lookup": {"username": "jsmith"}}}]
    write_json(tmp_path / "d.json", cases)
    write_jsonl(tmp_path / "run" / "traces.jsonl", [make_trace(
        "c", tools=[("lookup", {"username": "jsmith" + before + key})], final="done")])
    p = run_cli("grade", str(tmp_path / "run"), "--dataset", str(tmp_path / "d.json"), "--out",
                str(tmp_path / "r"), "--format", "json,md,html,junit")
    assert p.returncode in (0, 1), p.stderr  # (the argument is wrong: the episode fails)
    for f in ("report.json", "report.md", "report.html", "junit.xml"):
        assert "sk-ant-api03-Zq9" not in (tmp_path / "r" / f).read_text(), f
    # the failing argument_correctness result keeps its details, key redacted
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    details = report["episodes"][0]["metrics"]["argument_correctness"]["message"]
    assert details.startswith("Correct: 0/1") and "[REDACTED]" in details
    # and audit finds such a key in a report.json that was written without redaction
    leaked = tmp_path / "leaked" / "report.json"
    leaked.parent.mkdir()
    leaked.write_text('{\n  "episodes": [\n    ' + json.dumps(
        {"details": "got 'jsmith" + before + key + "'"}, separators=(",", ":")) + ",\n"
        '    {"details": "x"}\n  ]\n}\n')
    p = run_cli("audit", str(leaked.parent))
    assert p.returncode == 3 and f"{leaked}:3: key-shaped string" in p.stderr, p.stderr


def test_a_user_metric_that_edits_the_episode_changes_no_other_score(monkeypatch):
    """Regression: a user metric that cleared ``case.expected_args`` turned the built-in
    argument_correctness 0.875 into 1.0 on the stand-in run."""
    monkeypatch.chdir(ROOT)

    class Mutate(evaltape.Metric):
        name = "mutate"

        def score(self, ctx):
            if ctx.case.expected_args:
                ctx.case.expected_args.clear()
            for call in ctx.trace.tool_calls:
                call.arguments.clear()
            return evaltape.Score(1.0)
    run = "cassettes/helpdesk-scripted-standin"
    alone = evaltape.grade(run, metrics=["argument_correctness", "tool_call_f1"])
    mixed = evaltape.grade(run, metrics=[Mutate(), "argument_correctness", "tool_call_f1"])
    assert alone.summary.metrics["argument_correctness"] == 0.875
    for name in ("argument_correctness", "tool_call_f1"):
        assert mixed.summary.metrics[name] == alone.summary.metrics[name]


def test_api_and_cli_find_the_configuration_the_same_way(tmp_path, monkeypatch):
    """A folder holding evaltape.toml with [thresholds] grounding = 0.3: both the command
    and evaltape.grade(), run there without naming a configuration, grade with it
    (tc_004's grounding 0.20 <= 0.3 passes: 6 of 8, where the default 0 gives 5 of 8) and
    write the same bytes; config={} grades with none."""
    (tmp_path / "evaltape.toml").write_text("[thresholds]\ngrounding = 0.3\n")
    run = (ROOT / "cassettes" / "helpdesk-scripted-standin").as_posix()
    p = run_cli("grade", run, "--out", str(tmp_path / "out"), "--quiet", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    monkeypatch.chdir(tmp_path)
    report = evaltape.grade(run)
    assert evaltape.report_bytes(report) == (tmp_path / "out" / "report.json").read_bytes()
    assert report.summary.thresholds["grounding"] == 0.3
    assert report.summary.pass_rate == 6 / 8
    assert evaltape.grade(run, config={}).summary.pass_rate == 5 / 8


def test_every_registered_metric_is_the_class_of_its_name():
    """The registry names each built-in's module without importing it: every entry, once
    imported, is a class whose ``name`` is the entry's (30 built-ins)."""
    assert len(BUILTIN) == 30
    for name in ALL:
        assert BUILTIN[name].name == name
    assert BUILTIN.get("no_such_metric") is None and "no_such_metric" not in BUILTIN


def test_grading_the_help_desk_metrics_does_not_import_grounding(tmp_path):
    """A metric's module is imported when the metric is selected: grading the help-desk
    example suite's three metrics leaves grounding's patterns uncompiled."""
    import subprocess
    import sys
    code = ("import sys, evaltape\n"
            "evaltape.grade('cassettes/helpdesk-scripted-standin', metrics=['tool_selection_accuracy',"
            " 'argument_correctness', 'task_completion'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('evaltape.grader.metrics.')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         check=True).stdout
    assert "evaltape.grader.metrics.grounding" not in out
    assert "evaltape.grader.metrics.task_completion" in out


def test_a_run_graded_from_inside_its_folder_keeps_its_name(tmp_path):
    # "evaltape grade ." in the run's folder: the run is named after the folder (report
    # run.name, the default reports/<name>/), not "" (the name of the path ".")
    import shutil
    run = tmp_path / "my-run"
    shutil.copytree(ROOT / "cassettes" / "helpdesk-scripted-standin", run)
    dataset = str(ROOT / "datasets" / "helpdesk_eval.json")
    p = run_cli("grade", ".", "--dataset", dataset, "--format", "json", "--quiet", cwd=run)
    assert p.returncode in (0, 1), p.stderr
    report = json.loads((run / "reports" / "my-run" / "report.json").read_text())
    assert report["run"]["name"] == "my-run" and report["run"]["path"] == "."
    assert evaltape.open_run(run / ".." / "my-run", dataset).name == "my-run"


def test_a_manifest_that_repeats_a_key_is_refused(tmp_path):
    # {"agent": "helpdesk", "agent": "other"} reads as agent "other" in every JSON reader:
    # the file is ambiguous, as a trace line or a dataset repeating a key is
    import shutil
    run = tmp_path / "run"
    shutil.copytree(ROOT / "cassettes" / "helpdesk-scripted-standin", run)
    text = (run / "manifest.json").read_text()
    assert text.count('"agent": "helpdesk"') == 1
    (run / "manifest.json").write_text(
        text.replace('"agent": "helpdesk"', '"agent": "helpdesk", "agent": "other"'))
    p = run_cli("grade", str(run), "--dataset", str(ROOT / "datasets" / "helpdesk_eval.json"),
                "--out", str(tmp_path / "out"), "--quiet")
    assert p.returncode == 3
    assert f"{run / 'manifest.json'}: field 'agent': a key appears twice" in p.stderr
    assert not (tmp_path / "out").exists()
