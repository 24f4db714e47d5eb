"""Judged metrics users write ([judges.NAME] and a case's judges): G-Eval's form.

End to end: a configuration and a dataset → ``evaltape judge`` against a stand-in judge on
127.0.0.1 (anthropic SDK → httpx → vcrpy → loopback) → ``evaltape grade`` with every
socket refused → the scores worked out by hand from the scripted judge answers.
"""
from __future__ import annotations

import json
import socket
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

import evaltape
from evaltape.cli import cli
from evaltape.grader.errors import BadInputError, UsageError
from evaltape.grader.io.config import check_table
from evaltape.grader.io.datasets import parse_case
from evaltape.grader.judge import JudgeStore, request_key
from evaltape.grader.metrics.base import metric_spec
from evaltape.grader.metrics.criteria_judge import CriteriaJudge, OWN_STEPS
from evaltape.grader.model import EpisodeContext, Trace
from evaltape.recorder.script_server import ScriptServer

CONFIG = """
[judges.next_step]
criteria = "The answer tells the user what happens next."
evaluation_steps = ["Find the next step the answer states.", "Check that it is concrete."]
scale = "1-5"
threshold = 0.6
include = ["input", "answer"]

[judges.matches_reference]
criteria = "The answer says what the reference answer says."
scale = "0-10"
include = ["expected_output", "answer"]
model = "claude-haiku-4-5"
"""

CASES = [
    {"id": "c1", "user_query": "Please reset my password.",
     "expected_output": "Your password is reset; a link is on its way to your e-mail."},
    {"id": "c2", "user_query": "The printer on floor 3 is broken.",
     "judges": {"next_step": {"criteria": "The answer gives a ticket number to follow up."}}},
    {"id": "c3", "user_query": "Is the VPN down?",
     "judges": {"cites_ticket": {"criteria": "The answer cites an incident id.",
                                 "scale": "pass/fail"}}},
]
ANSWERS = {"c1": "Done: check your e-mail for the reset link.",
           "c2": "I have asked facilities to look at it.",
           "c3": "Yes, it is down: see incident INC-42."}

#: The stand-in judge's answers, chosen by what the request holds: (criteria, case input).
SCRIPT = [
    # next_step on c1: 4 on 1-5 → (4 − 1) / 4 = 0.75, PASS at 0.6
    (("what happens next", "reset my password"),
     'The next step is to check the e-mail.\n{"score": 4, "reason": "Says to check e-mail."}'),
    # next_step on c2, the case's own criteria: 2 → (2 − 1) / 4 = 0.25, FAIL at 0.6
    (("ticket number", "printer"), '{"score": 2, "reason": "No ticket number."}'),
    # next_step on c3: 5 → (5 − 1) / 4 = 1.0
    (("what happens next", "VPN"), '{"score": 5, "reason": "Points to the incident."}'),
    # matches_reference on c1: a draft, then a corrected object: the last one counts,
    # 7 on 0-10 → 0.7
    (("reference answer says", "reset link"),
     'Draft: {"score": 9, "reason": "x"}\nOn reflection the answer omits that the password '
     'is reset.\n{"score": 7, "reason": "Leaves out that it is reset."}'),
    # cites_ticket on c3 (pass/fail): a verdict after the reasoning → 1.0
    (("incident id", "VPN"), "It names INC-42.\nVerdict: PASS"),
]


class CriteriaServer(ScriptServer):
    """A Messages-API stand-in judge answering by what the request's prompt contains."""

    def __init__(self) -> None:
        super().__init__({})
        self.bodies: list[dict] = []

    def respond(self, handler, body):
        self.bodies.append(body)
        prompt = body["messages"][0]["content"]
        texts = [a for keys, a in SCRIPT if all(k in prompt for k in keys)]
        text = texts[0] if len(texts) == 1 else "no script for this request"
        handler._send(200, json.dumps({
            "id": f"msg_{len(self.bodies):02d}", "type": "message", "role": "assistant",
            "model": body["model"], "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 50, "output_tokens": 20}}).encode())


def _write_run(tmp_path: Path, cases=CASES, answers=ANSWERS) -> tuple[Path, Path, Path]:
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps(cases))
    cfg = tmp_path / "judges.toml"
    cfg.write_text(CONFIG)
    run = tmp_path / "run"
    run.mkdir()
    lines = [json.dumps({"schema": "evaltape.trace/1", "case_id": c["id"], "trial": 0,
                         "input": c["user_query"], "tool_calls": [],
                         "final_response": answers[c["id"]], "stop_reason": "end_turn",
                         "steps": 1}) for c in cases]
    (run / "traces.jsonl").write_text("\n".join(lines) + "\n")
    return run, ds, cfg


def _no_network(monkeypatch):
    def refuse(*a, **k):
        raise OSError("network disabled in this test")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


METRICS = "next_step,matches_reference,cites_ticket"


def test_config_and_case_judges_recorded_then_graded_offline(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)  # no evaltape.toml here: --config is the only configuration
    run, ds, cfg = _write_run(tmp_path)
    with CriteriaServer() as server:
        r = CliRunner().invoke(cli, ["judge", str(run), "--dataset", str(ds), "--config",
                                     str(cfg), "--base-url", server.base_url, "--model",
                                     "judge-from-cli", "--metrics", METRICS])
        assert r.exit_code == 0, r.output
        # next_step on c1, c2, c3; matches_reference on c1 only (c2, c3 have no
        # expected_output); cites_ticket on c3 only: 5 requests
        assert len(server.bodies) == 5
        again = CliRunner().invoke(cli, ["judge", str(run), "--dataset", str(ds), "--config",
                                         str(cfg), "--base-url", server.base_url,
                                         "--metrics", METRICS])
        assert again.exit_code == 0 and len(server.bodies) == 5  # all recorded: none sent
    prompts = {(b["model"], b["messages"][0]["content"]) for b in server.bodies}
    # a judge's own model wins over --model; the others get --model
    assert sorted(m for m, _p in prompts) == ["claude-haiku-4-5"] + ["judge-from-cli"] * 4
    c1_next = next(p for _m, p in prompts if "what happens next" in p and "reset my" in p)
    assert ("Evaluation Steps:\n1. Find the next step the answer states.\n"
            "2. Check that it is concrete.") in c1_next
    assert "<user_request>\nPlease reset my password.\n</user_request>" in c1_next
    assert "<agent_answer>\nDone: check your e-mail for the reset link.\n</agent_answer>" \
        in c1_next
    assert "<tool_calls>" not in c1_next and "<expected_output>" not in c1_next
    # c2's own criteria replace the configuration's, and its steps too
    c2_next = next(p for _m, p in prompts if "ticket number" in p)
    assert "what happens next" not in c2_next and "Find the next step" not in c2_next
    assert OWN_STEPS in c2_next
    reference = next(p for m, p in prompts if m == "claude-haiku-4-5")
    assert "<expected_output>\nYour password is reset; a link is on its way to your e-mail." \
           "\n</expected_output>" in reference
    assert '{"score": <a number from 0 to 10>' in reference

    _no_network(monkeypatch)
    out = tmp_path / "r"
    g = CliRunner().invoke(cli, ["grade", str(run), "--dataset", str(ds), "--config", str(cfg),
                                 "--metrics", METRICS, "--out", str(out), "--quiet"])
    assert g.exit_code == 0, g.output
    rep = orjson.loads((out / "report.json").read_bytes())
    twice = CliRunner().invoke(cli, ["grade", str(run), "--dataset", str(ds), "--config",
                                     str(cfg), "--metrics", METRICS, "--out",
                                     str(tmp_path / "r1"), "--quiet"])
    assert twice.exit_code == 0
    assert (tmp_path / "r1" / "report.json").read_bytes() == (out / "report.json").read_bytes()
    m = {e["case_id"]: e["metrics"] for e in rep["episodes"]}
    assert m["c1"]["next_step"]["score"] == 0.75
    assert (m["c1"]["next_step"]["threshold"], m["c1"]["next_step"]["passed"]) == (0.6, True)
    assert (m["c2"]["next_step"]["threshold"], m["c2"]["next_step"]["passed"]) == (0.6, False)
    assert m["c1"]["next_step"]["message"] == ("score 4 on 1-5 = 0.750; reason: "
                                               "Says to check e-mail.")  # an object after prose: read, not repaired
    assert m["c2"]["next_step"]["score"] == 0.25
    assert m["c2"]["next_step"]["message"] == ("score 2 on 1-5 = 0.250 (the "
                                               "case's criteria); reason: No ticket number.")
    assert m["c3"]["next_step"]["score"] == 1.0
    assert m["c1"]["matches_reference"]["score"] == pytest.approx(0.7)
    assert m["c1"]["matches_reference"]["message"].startswith("score 7 on 0-10 = 0.700")
    for cid in ("c2", "c3"):
        assert (m[cid]["matches_reference"]["score"], m[cid]["matches_reference"]["code"]) \
            == (None, "not_applicable")
    assert (m["c3"]["cites_ticket"]["score"], m["c3"]["cites_ticket"]["message"]) == \
        (1.0, "judge: PASS")
    for cid in ("c1", "c2"):
        assert m[cid]["cites_ticket"]["code"] == "not_applicable"
    # means over the scored episodes: next_step (0.75 + 0.25 + 1.0) / 3 = 0.6667
    assert rep["summary"]["metrics"] == {"next_step": 0.6667, "matches_reference": 0.7,
                                         "cites_ticket": 1.0}
    assert rep["summary"]["judge"]["not_recorded"] == 0
    specs = {s["name"]: s["args"] for s in rep["grader"]["metric_specs"]}
    assert set(specs["next_step"]) == {"criteria_sha256", "include", "threshold"}
    assert specs["matches_reference"]["scale"] == "0-10"

    # a changed criterion is a changed metric: a new hash, and the configuration's
    # requests no longer find their answers (c2 keeps its own criteria and its answer)
    cfg.write_text(CONFIG.replace("what happens next.", "what happens next, and when."))
    out2 = tmp_path / "r2"
    g2 = CliRunner().invoke(cli, ["grade", str(run), "--dataset", str(ds), "--config", str(cfg),
                                  "--metrics", METRICS, "--out", str(out2), "--quiet"])
    assert g2.exit_code == 0, g2.output
    rep2 = orjson.loads((out2 / "report.json").read_bytes())
    m2 = {e["case_id"]: e["metrics"]["next_step"] for e in rep2["episodes"]}
    assert [m2[c]["code"] for c in ("c1", "c2", "c3")] == ["judge_not_recorded", None,
                                                            "judge_not_recorded"]
    specs2 = {s["name"]: s["args"] for s in rep2["grader"]["metric_specs"]}
    assert specs2["next_step"]["criteria_sha256"] != specs["next_step"]["criteria_sha256"]
    assert rep2["grader"]["config_sha256"] != rep["grader"]["config_sha256"]
    # the note names the configuration the judge command needs
    assert f"--metrics {METRICS} --config {cfg}" in g2.output


def test_judge_without_metrics_records_the_users_judges_too(tmp_path):
    from evaltape.recorder.judge import judged_metrics
    from evaltape.grader.io.datasets import load_dataset
    _run, ds, cfg = _write_run(tmp_path)
    names = [m.name for m in judged_metrics(None, load_dataset(ds), str(cfg), ds)]
    # the built-in judged metrics, then the configuration's judges, then the cases'
    assert names == ["composite", "explanation_judge", "factual_claims", "hallucination",
                     "plan_adherence_judge", "rubric_judge", "next_step", "matches_reference",
                     "cites_ticket"]


def ctx(scale="1-5", *, answer="ok", expected=None, case_judges=None):
    obj = {"id": "c", "user_query": "q"}
    if expected is not None:
        obj["expected_output"] = expected
    if case_judges is not None:
        obj["judges"] = case_judges
    case = parse_case(obj, path="<test>", line=1, position=0)
    trace = Trace(case_id="c", trial=0, input="q", tool_calls=(), final_response=answer,
                  stop_reason="end_turn", steps=1)
    return EpisodeContext(trace=trace, case=case)


def _answered(metric: CriteriaJudge, c: EpisodeContext, *texts: str) -> EpisodeContext:
    [req] = metric.requests(c)
    store = JudgeStore({request_key(req): [
        {"content": [{"type": "text", "text": t}], "stop_reason": "end_turn"} for t in texts]})
    return EpisodeContext(trace=c.trace, case=c.case, judge=store)


@pytest.mark.parametrize("scale,answer,value", [
    ("1-5", '{"score": 1}', 0.0),          # (1 − 1) / 4
    ("1-5", '{"score": 3}', 0.5),          # (3 − 1) / 4
    ("1-5", '{"score": 3.5}', 0.625),      # (3.5 − 1) / 4
    ("0-10", '{"score": 8}', 0.8),         # 8 / 10
    ("0-1", '{"score": 0.3}', 0.3),
    ("pass/fail", "PASS", 1.0),
    ("pass/fail", "Reasoning...\nVerdict: FAIL", 0.0),
])
def test_scales_are_normalised(scale, answer, value):
    m = CriteriaJudge(name="j", criteria="c", scale=scale)
    assert m.score(_answered(m, ctx(), answer)).value == pytest.approx(value)


def test_samples_are_averaged_and_out_of_range_is_a_parse_failure():
    m = CriteriaJudge(name="j", criteria="c")
    # three samples 5, 3, 4 → (1.0 + 0.5 + 0.75) / 3 = 0.75 (G-Eval's mean over samples)
    c = _answered(m, ctx(), '{"score": 5}', '{"score": 3}', '{"score": 4}')
    s = m.score(c)
    assert s.value == pytest.approx(0.75)
    assert "[3/3 samples parsed; labels pass, pass, pass]" in s.message
    # 6 is off the 1-5 scale, a boolean is no score
    for bad in ('{"score": 6}', '{"score": true}', '{"score": "4"}'):
        s = m.score(_answered(m, ctx(), bad))
        assert (s.value, s.code) == (None, "judge_parse_failure"), bad


def test_null_cases():
    m = CriteriaJudge(name="j", criteria="c", include=("expected_output", "answer"))
    assert m.score(ctx()).code == "not_applicable"               # no expected_output
    assert m.score(ctx(expected="x", answer=None)).code == "no_answer"
    assert m.score(ctx(expected="x")).code == "judge_not_recorded"
    # a judge defined only by other cases: no criteria here
    only_cases = CriteriaJudge(name="j")
    assert only_cases.score(ctx()).code == "not_applicable"
    assert only_cases.score(ctx(case_judges={"j": {"criteria": "x"}})).code == \
        "judge_not_recorded"
    # without the answer among what it sees, no answer is no obstacle
    calls_only = CriteriaJudge(name="j", criteria="c", include=("tool_calls",))
    assert calls_only.requests(ctx(answer=None)) != []


def test_case_override_keeps_what_it_does_not_set():
    base = CriteriaJudge(name="j", criteria="c", evaluation_steps=("s1",), scale="0-10",
                         threshold=0.9)
    s = base.settings(ctx(case_judges={"j": {"threshold": 0.2}}).case)
    assert (s.criteria, s.steps, s.scale, s.threshold, s.own) == ("c", ("s1",), "0-10", 0.2,
                                                                   False)
    s = base.settings(ctx(case_judges={"j": {"criteria": "own"}}).case)
    assert (s.criteria, s.steps, s.own) == ("own", (), True)  # the steps were for "c"


def test_spec_hashes_the_criteria_not_the_text():
    a = CriteriaJudge(name="j", criteria="Be brief.")
    b = CriteriaJudge(name="j", criteria="Be brief!")
    spec = metric_spec(a)
    assert spec["name"] == "j" and set(spec["args"]) == {"criteria_sha256"}
    assert "Be brief." not in json.dumps(spec)
    assert spec["args"]["criteria_sha256"] != metric_spec(b)["args"]["criteria_sha256"]
    steps = CriteriaJudge(name="j", criteria="Be brief.", evaluation_steps=("Count words.",))
    assert metric_spec(steps)["args"]["criteria_sha256"] != spec["args"]["criteria_sha256"]


@pytest.mark.parametrize("kw,fragment", [
    ({"include": ("answer", "output")}, "include must list"),
    ({"include": ()}, "include must list"),
    ({"threshold": 1.5}, "threshold must be"),
    ({"scale": "5"}, "scale: expected"),
    ({"name": "Tone"}, "lower-case word"),
])
def test_a_judge_built_in_code_checks_its_fields(kw, fragment):
    with pytest.raises(ValueError, match=fragment):
        CriteriaJudge(**{"name": "j", "criteria": "c", **kw})


@pytest.mark.parametrize("table,field,fragment", [
    ({"judges": {"j": {"scale": "1-5"}}}, "judges.j.criteria", "needs its criteria"),
    ({"judges": {"j": {"criteria": "c", "scale": "5-1"}}}, "judges.j.scale", "LO-HI"),
    ({"judges": {"j": {"criteria": "c", "threshold": 3}}}, "judges.j.threshold", "0 to 1"),
    ({"judges": {"j": {"criteria": "c", "include": ["answer", "output"]}}},
     "judges.j.include[1]", "unknown item 'output'"),
    ({"judges": {"j": {"criterion": "c"}}}, "judges.j.criterion", "did you mean 'criteria'?"),
    ({"judges": {"Tone": {"criteria": "c"}}}, "judges.Tone", "lower-case word"),
    ({"judges": {"j": {"criteria": "c", "evaluation_steps": "one"}}},
     "judges.j.evaluation_steps", "list of strings"),
    ({"judges": {"j": {"criteria": "c"}}, "metrics_args": {"j": {}}}, "metrics_args.j",
     "[judges.j]"),
])
def test_bad_judge_tables_name_the_field(table, field, fragment):
    with pytest.raises(BadInputError) as e:
        check_table(table, "evaltape.toml")
    assert (e.value.path, e.value.field) == ("evaltape.toml", field)
    assert fragment in e.value.message


def test_a_judge_named_like_a_built_in_is_refused(tmp_path):
    run, ds, cfg = _write_run(tmp_path)
    cfg.write_text('[judges.grounding]\ncriteria = "c"\n')
    with pytest.raises(BadInputError) as e:
        evaltape.grade(run, ds, metrics=["task_completion"], config=cfg)
    assert (e.value.path, e.value.field) == (str(cfg), "judges.grounding")
    assert "name of a built-in metric" in e.value.message
    cases = [dict(CASES[0], judges={"hallucination": {"criteria": "c"}}), *CASES[1:]]
    other = tmp_path / "other"
    other.mkdir()
    run2, ds2, _cfg = _write_run(other, cases)
    with pytest.raises(BadInputError) as e:
        evaltape.grade(run2, ds2, metrics=["task_completion"])
    assert (e.value.path, e.value.line, e.value.field) == (str(ds2), 1, "judges.hallucination")
    # through the command line: exit 3 with the file and field
    p = CliRunner().invoke(cli, ["grade", str(run2), "--dataset", str(ds2), "--metrics",
                                 "task_completion", "--out", str(tmp_path / "o"), "--quiet"])
    assert p.exit_code == 3 and "judges.hallucination" in p.output


def test_a_case_judge_without_criteria_anywhere_is_refused(tmp_path):
    cases = [dict(CASES[0], judges={"tone": {"scale": "pass/fail"}})]
    run, ds, _cfg = _write_run(tmp_path, cases)
    with pytest.raises(BadInputError) as e:
        evaltape.grade(run, ds, metrics=["tone"])
    assert (e.value.line, e.value.field) == (1, "judges.tone.criteria")


def test_unknown_name_suggests_a_judge(tmp_path):
    run, ds, cfg = _write_run(tmp_path)
    with pytest.raises(UsageError, match="did you mean 'next_step'"):
        evaltape.grade(run, ds, metrics=["next_stp"], config=cfg)


def test_a_judges_threshold_is_its_pass_threshold_in_the_verdict():
    """``[judges.NAME] threshold = 0.6`` is the verdict's threshold too (a 4 on 1-5 is
    0.75: PASS at 0.6, where the default 0.8 of a score would fail it); a case's own
    judge threshold wins for that case, a ``[thresholds]`` entry wins over both."""
    from evaltape.grader.stats.verdict import VerdictPolicy
    judge = CriteriaJudge(name="next_step", criteria="Says what happens next.", threshold=0.6)
    plain = parse_case({"id": "a", "user_query": "hi"}, path="<test>", line=1, position=0)
    own = parse_case({"id": "b", "user_query": "hi",
                      "judges": {"next_step": {"threshold": 0.9}}},
                     path="<test>", line=2, position=1)
    policy = VerdictPolicy(thresholds={}, gate=None, informational=())
    assert (policy.threshold(judge, plain), policy.threshold(judge, own)) == (0.6, 0.9)
    configured = VerdictPolicy(thresholds={"next_step": 0.7}, gate=None, informational=())
    assert (configured.threshold(judge, plain), configured.threshold(judge, own)) == (0.7, 0.7)
    assert policy.run_thresholds([judge]) == {"next_step": 0.6}
