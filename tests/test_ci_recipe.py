"""examples/ci/: the shell recipe replays a committed run and re-grades it against its golden
(green, saying why), fails when the golden says the run was better (red), when a cassette
no longer replays, and, strict by default, on a warning; the GitHub Actions workflow is
well-formed.

The red case's number, worked out from tests/golden/helpdesk-qwen1.5b/report.json: 19 of the
24 episodes pick the right tools, so tool_selection_accuracy's mean is 19/24 = 0.7917; a
golden claiming 0.95 makes the re-grade 0.158 worse, past evaltape's 0.10 "critical" level.
The warning case: argument_correctness is 16.5/24 = 0.6875; a golden claiming 0.75 makes
it 0.0625 worse: past 0.05 (a warning), not 0.10.

The install case runs the workflow's own EVALTAPE_INSTALL line as a user's repository runs
it: into a fresh virtual environment, from a git repository (this checkout, committed and
tagged as the line's ref, in place of the hosted clone the line names), with no network
but the package index for evaltape's dependencies.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

SCRIPT = ROOT / "examples" / "ci" / "evaltape-ci.sh"
WORKFLOW = ROOT / "examples" / "ci" / "evaltape.yml"
RUN = "helpdesk-qwen1.5b"


def recipe(tmp_path: Path, baselines: Path, *args: str, **env: str):
    """Run the recipe from the repo root (the committed run names its dataset relative to
    it) over a folder holding a copy of one committed run."""
    runs = tmp_path / "runs"
    if not runs.exists():
        shutil.copytree(ROOT / "cassettes" / RUN, runs / RUN)
    full = {k: v for k, v in os.environ.items() if not k.startswith(("EVALTAPE_", "GITHUB_"))}
    full.update({"PATH": f"{Path(sys.executable).parent}{os.pathsep}{full.get('PATH', '')}",
                 "EVALTAPE_PYTHON": sys.executable, "EVALTAPE_RUNS": str(runs),
                 "EVALTAPE_BASELINES": str(baselines), "EVALTAPE_OUT": str(tmp_path / "out"),
                 "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), **env})
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, env=full,
                          capture_output=True, text=True, timeout=300)


#: For the tests of the gate alone: the replay of the same committed run is what
#: test_green_against_the_committed_golden and the stale-cassette test check.
GATE_ONLY = {"EVALTAPE_REPLAY": "0"}


def golden_copy(tmp_path: Path) -> Path:
    gold = tmp_path / "gold"
    shutil.copytree(ROOT / "tests" / "golden" / RUN, gold / RUN)
    return gold


def edit(gold: Path, change) -> None:
    path = gold / RUN / "report.json"
    report = json.loads(path.read_text())
    change(report)
    path.write_text(json.dumps(report))


@pytest.mark.slow
def test_green_against_the_committed_golden(tmp_path):
    # (the committed golden of this one run: the golden folder holds other runs' too, and
    # a baseline without its run fails the job)
    res = recipe(tmp_path, golden_copy(tmp_path))
    assert res.returncode == 0, res.stderr
    # why it passed: the replay reproduced every episode, the gate compared them all
    why = (f"{RUN}: pass: replay ok: 24 episode(s) reproduced exactly from "
           f"{tmp_path / 'runs' / RUN}; gate: pass (24 shared episode(s): 24 re-graded "
           "from the same recordings (0 pass → fail), 0 from new or unknown recordings (0 "
           "case(s) fell significantly at alpha 0.05); no episode of the baseline missing; "
           "no mean worse by more than 0.1; no warning (strict))")
    assert why in res.stderr
    summary = (tmp_path / "summary.md").read_text()
    assert f"# evaltape: `{RUN}` — pass: replay ok" in summary
    assert "## Baseline comparison: OK" in summary and "No metric mean moved." in summary
    for name in ("report.json", "report.md", "report.html", "junit.xml"):
        assert (tmp_path / "out" / RUN / name).is_file()


@pytest.mark.slow
def test_red_when_the_golden_is_changed(tmp_path):
    gold = golden_copy(tmp_path)
    edit(gold, lambda r: r["summary"]["metrics"].__setitem__("tool_selection_accuracy", 0.95))
    res = recipe(tmp_path, gold, **GATE_ONLY)
    assert res.returncode == 1
    assert "FAIL: regression against the baseline" in res.stderr
    assert "tool_selection_accuracy 0.950 → 0.792 (-0.158: worse by more than 0.1)" in res.stderr
    summary = (tmp_path / "summary.md").read_text()
    assert "## Baseline comparison: CRITICAL" in summary
    assert "| tool_selection_accuracy | 0.950 | 0.792 | -0.158 | critical |" in summary


@pytest.mark.slow
def test_a_flipped_episode_of_the_same_recording_fails(tmp_path):
    gold = golden_copy(tmp_path)

    def flip(report):  # the golden says tc_001#t0 passed; the re-grade fails it
        ep = next(e for e in report["episodes"] if e["case_id"] == "tc_001" and e["trial"] == 0)
        assert ep["passed"] is False
        ep["passed"] = True
    edit(gold, flip)
    # the committed run is the golden's recording (same trace digest): re-grading is
    # deterministic, so one pass → fail fails the gate by itself
    res = recipe(tmp_path, gold, **GATE_ONLY)
    assert res.returncode == 1
    assert "tc_001#t0: pass → fail on the same recording (no_answer:loop_detected)" in res.stderr


@pytest.mark.slow
def test_a_cassette_that_no_longer_replays_fails_the_job(tmp_path):
    """The last answer of tc_007#t1 edited in its cassette: the agent replayed against it
    answers otherwise than the stored trace, so the committed run is stale."""
    runs = tmp_path / "runs"
    shutil.copytree(ROOT / "cassettes" / RUN, runs / RUN)
    cassette = runs / RUN / "http" / "tc_007__t1.jsonl"
    lines = cassette.read_text().splitlines()
    last = json.loads(lines[-1])
    last["response"]["body"]["json"]["content"][0]["text"] = "Something else entirely."
    cassette.write_text("\n".join(lines[:-1] + [json.dumps(last)]) + "\n")
    res = recipe(tmp_path, golden_copy(tmp_path))
    assert res.returncode == 1
    assert f"{RUN}: FAIL: replay FAILED: 1 of 24 episode(s) did not reproduce" in res.stderr
    assert "DIVERGED case 'tc_007' trial 1" in res.stderr
    # no pass line anywhere after the failure: the gate is not applied to the stale
    # recording, and neither the job's output nor its summary or report says "pass"
    assert "gate: not applied (the replay failed" in res.stderr
    summary = (tmp_path / "summary.md").read_text()
    for text in (res.stderr, summary, (tmp_path / "out" / RUN / "report.md").read_text()):
        assert "gate: pass" not in text and "Baseline comparison: OK" not in text


def test_strict_reports_state_the_strict_gate(tmp_path):
    """The warning of the strict test below fails the strict job; its report.md (and the
    job summary that holds it) and junit.xml say the same gate, FAIL, strict."""
    gold = golden_copy(tmp_path)
    edit(gold, lambda r: r["summary"]["metrics"].__setitem__("argument_correctness", 0.75))
    res = recipe(tmp_path, gold, EVALTAPE_STRICT="1", **GATE_ONLY)
    assert res.returncode == 1
    assert "gate: FAIL (1 finding(s), strict)" in res.stderr
    md = (tmp_path / "out" / RUN / "report.md").read_text()
    assert "gate: FAIL (1 finding(s), strict)" in md and "gate: pass" not in md
    assert "gate: pass" not in (tmp_path / "summary.md").read_text()
    junit = (tmp_path / "out" / RUN / "junit.xml").read_text()
    assert 'name="baseline gate"' in junit and 'type="baseline"' in junit


@pytest.mark.slow
def test_strict_by_default_fails_on_a_warning(tmp_path):
    gold = golden_copy(tmp_path)
    edit(gold, lambda r: r["summary"]["metrics"].__setitem__("argument_correctness", 0.75))
    res = recipe(tmp_path, gold, **GATE_ONLY)
    assert res.returncode == 1
    assert "argument_correctness 0.750 → 0.688 (-0.062: worse by more than 0.05)" in res.stderr
    res = recipe(tmp_path, gold, EVALTAPE_STRICT="0", **GATE_ONLY)
    assert res.returncode == 0, res.stderr
    assert "1 warning(s), not failing without strict mode" in res.stderr


def test_an_imported_run_is_graded_without_replay(tmp_path):
    src = tmp_path / "conv.jsonl"
    src.write_text(json.dumps([{"role": "user", "content": "Where is order 42?"},
                               {"role": "assistant", "content": "It has shipped."}]) + "\n")
    runs = tmp_path / "runs"
    p = subprocess.run([sys.executable, "-m", "evaltape.cli", "import", "openai-messages",
                        str(src), "--out", str(runs / "imported")], capture_output=True,
                       text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    gold = tmp_path / "gold"
    assert recipe(tmp_path, gold, "--update").returncode == 0
    res = recipe(tmp_path, gold)
    assert res.returncode == 0, res.stderr
    assert ("imported: pass: replay skipped (imported from openai-messages: no agent to "
            "re-run); gate: pass (") in res.stderr


@pytest.mark.slow
def test_missing_baseline_fails_and_update_writes_it(tmp_path):
    gold = tmp_path / "empty-gold"
    res = recipe(tmp_path, gold, **GATE_ONLY)
    assert res.returncode == 1 and "no baseline" in res.stderr
    assert recipe(tmp_path, gold, "--update", **GATE_ONLY).returncode == 0
    assert (gold / RUN / "report.json").is_file()
    assert recipe(tmp_path, gold, **GATE_ONLY).returncode == 0


@pytest.mark.slow
def test_a_baseline_whose_run_was_deleted_fails_naming_it(tmp_path):
    """A baseline committed for a run that is gone: the run's gate would be off. Two runs'
    baselines (the same golden under a second name, ``retired``), one run: the run passes,
    the job fails (exit 1) naming ``retired``, in --update mode too."""
    gold = golden_copy(tmp_path)
    shutil.copytree(gold / RUN, gold / "retired")
    runs = tmp_path / "runs"
    res = recipe(tmp_path, gold, EVALTAPE_REPLAY="0")
    assert res.returncode == 1, res.stderr
    assert f"{RUN}: pass: replay skipped (EVALTAPE_REPLAY=0); gate: pass (" in res.stderr
    named = (f"retired: FAIL: baseline {gold / 'retired' / 'report.json'} has no run "
             f"{runs / 'retired'} (deleted or renamed")
    assert named in res.stderr
    assert "# evaltape: `retired` — FAIL: baseline" in (tmp_path / "summary.md").read_text()
    res = recipe(tmp_path, gold, "--update", EVALTAPE_REPLAY="0")
    assert res.returncode == 1 and named in res.stderr
    # every run gone: no run to grade (usage, exit 2), and both baselines named
    shutil.rmtree(runs / RUN)
    res = recipe(tmp_path, gold, EVALTAPE_REPLAY="0")
    assert res.returncode == 2 and "no run (a folder with traces.jsonl)" in res.stderr
    assert named in res.stderr and f"{RUN}: FAIL: baseline " in res.stderr
    # the baseline folder deleted on purpose: the run is retired, the job passes
    shutil.rmtree(gold / "retired")
    shutil.copytree(ROOT / "cassettes" / RUN, runs / RUN)
    assert recipe(tmp_path, gold, EVALTAPE_REPLAY="0").returncode == 0


def test_a_renamed_run_fails_under_both_names(tmp_path):
    """The run's folder renamed: the new name has no baseline, the baseline no run; both
    are failures (exit 1), each named."""
    gold = golden_copy(tmp_path)
    runs = tmp_path / "runs"
    shutil.copytree(ROOT / "cassettes" / RUN, runs / "renamed")
    res = recipe(tmp_path, gold, EVALTAPE_REPLAY="0")
    assert res.returncode == 1, res.stderr
    assert f"renamed: FAIL: no baseline {gold / 'renamed' / 'report.json'}" in res.stderr
    assert (f"{RUN}: FAIL: baseline {gold / RUN / 'report.json'} has no run {runs / RUN} "
            "(deleted or renamed") in res.stderr


def test_a_run_folder_without_traces_is_bad_input(tmp_path):
    """A run folder whose traces.jsonl is missing cannot be graded: exit 3 (bad input),
    naming the run, beside a second run that passes (the old recipe skipped the folder
    and passed the job)."""
    gold = golden_copy(tmp_path)
    shutil.copytree(gold / RUN, gold / "broken")
    runs = tmp_path / "runs"
    shutil.copytree(ROOT / "cassettes" / RUN, runs / RUN)
    shutil.copytree(ROOT / "cassettes" / RUN, runs / "broken")
    (runs / "broken" / "traces.jsonl").unlink()
    res = recipe(tmp_path, gold, EVALTAPE_REPLAY="0")
    assert res.returncode == 3, res.stderr
    assert f"{RUN}: pass: replay skipped" in res.stderr
    assert f"broken: error (exit 3): no traces.jsonl in {runs / 'broken'}" in res.stderr
    assert "has no run" not in res.stderr  # its folder is there: named once, as bad input
    assert "# evaltape: `broken` — error (exit 3): no traces.jsonl" in \
        (tmp_path / "summary.md").read_text()
    # the only run: still bad input (3), not "no run" (2)
    shutil.rmtree(runs / RUN)
    res = recipe(tmp_path, gold, EVALTAPE_REPLAY="0")
    assert res.returncode == 3 and "broken: error (exit 3)" in res.stderr


def test_usage_errors_exit_2(tmp_path):
    res = recipe(tmp_path, tmp_path, "--bogus")
    assert res.returncode == 2 and "usage" in res.stderr
    res = recipe(tmp_path, tmp_path, EVALTAPE_RUNS=str(tmp_path / "nowhere"))
    assert res.returncode == 2 and "no runs folder" in res.stderr
    # a switch is 0 or 1: "true" once turned replay off and passed the job
    for name, value in (("EVALTAPE_REPLAY", "true"), ("EVALTAPE_STRICT", "yes")):
        res = recipe(tmp_path, tmp_path, **{name: value})
        assert res.returncode == 2, (name, res.stderr)
        assert f"{name} must be 0 or 1, not '{value}'" in res.stderr


def test_workflow_yaml_is_a_valid_github_actions_workflow():
    """Shape per GitHub's "Workflow syntax for GitHub Actions": ``on`` (PyYAML reads the bare
    key as the boolean True), ``jobs.<id>.runs-on`` and ``steps``, each step exactly one of
    ``uses``/``run``; plus what the recipe needs: checkout, the script, an artifact upload
    that runs even when the gate failed."""
    doc = yaml.safe_load(WORKFLOW.read_text())
    on = doc.get("on", doc.get(True))
    assert isinstance(on, dict) and {"push", "pull_request"} <= set(on)
    assert doc["permissions"] == {"contents": "read"}
    [(job_id, job)] = doc["jobs"].items()
    assert isinstance(job["runs-on"], str) and isinstance(job["steps"], list)
    for step in job["steps"]:
        assert isinstance(step, dict) and (("uses" in step) != ("run" in step)), step
        assert set(step) <= {"name", "uses", "run", "with", "env", "if", "id", "shell",
                             "continue-on-error", "timeout-minutes", "working-directory"}
    uses = [s["uses"].split("@")[0] for s in job["steps"] if "uses" in s]
    assert uses == ["actions/checkout", "actions/setup-python", "actions/upload-artifact"]
    runs = [s["run"] for s in job["steps"] if "run" in s]
    assert any("evaltape-ci.sh" in r for r in runs)
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith(
        "actions/upload-artifact"))
    assert upload["if"] == "always()" and upload["with"]["path"].rstrip("/") == \
        job["env"]["EVALTAPE_OUT"]
    assert set(job["env"]) >= {"EVALTAPE_INSTALL", "EVALTAPE_RUNS", "EVALTAPE_BASELINES",
                               "EVALTAPE_OUT"}
    # replay needs the recorder; the workflow is strict and replays, as the recipe's defaults
    assert job["env"]["EVALTAPE_INSTALL"].startswith("evaltape[record]")
    assert (job["env"]["EVALTAPE_STRICT"], job["env"]["EVALTAPE_REPLAY"]) == ("1", "1")
    # every variable the workflow sets is one the recipe reads
    script = SCRIPT.read_text()
    for name in job["env"]:
        assert name in script, name


def _as_released(tmp_path: Path, ref: str) -> Path:
    """This checkout's files as a git repository whose tag ``ref`` is the release the
    workflow pins (what its URL names once ``<owner>`` is filled in)."""
    ignore = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", "build",
                                    "reports", "runs", ".pytest_cache", ".hypothesis",
                                    "node_modules", "*.tmp", ".lock")
    src = tmp_path / "evaltape"
    shutil.copytree(ROOT, src, ignore=ignore)
    git = ["git", "-c", "user.name=evaltape test", "-c", "user.email=test@example.invalid",
           "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", "-c",
           "tag.gpgsign=false"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "release"],
                 ["tag", ref]):
        subprocess.run(git + args, cwd=src, check=True, capture_output=True)
    return src


@pytest.mark.slow
def test_the_workflow_install_line_installs_evaltape_from_git_into_a_fresh_venv(tmp_path):
    """The line names a git repository and the tag of this version (pyproject.toml's), with
    the recorder extra. Installed by the recipe into a new venv, it gives an evaltape that
    replays and re-grades a committed run copied into a user's repository layout
    (evals/runs/, evals/baselines/, ci/evaltape-ci.sh, the run's dataset) and passes against
    its golden, as in test_green_against_the_committed_golden."""
    import re
    job = next(iter(yaml.safe_load(WORKFLOW.read_text())["jobs"].values()))
    line = job["env"]["EVALTAPE_INSTALL"]
    version = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(),
                        re.M).group(1)
    hosted = "https://github.com/<owner>/evaltape"
    assert line == f"evaltape[record] @ git+{hosted}@v{version}"
    # the recipe refuses the line as copied, naming what to change
    user = tmp_path / "user-repo"
    (user / "ci").mkdir(parents=True)
    shutil.copy(SCRIPT, user / "ci" / "evaltape-ci.sh")
    shutil.copytree(ROOT / "cassettes" / RUN, user / "evals" / "runs" / RUN)
    shutil.copytree(ROOT / "datasets", user / "datasets")
    shutil.copytree(ROOT / "tests" / "golden" / RUN, user / "evals" / "baselines" / RUN)
    # the workflow's agent install step: the built-in agent needs nothing more
    (user / "requirements.txt").write_text("# the agent needs nothing beyond evaltape\n")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("EVALTAPE_", "GITHUB_", "VIRTUAL_ENV", "PYTHON"))}
    env = {**base, **{k: str(v) for k, v in job["env"].items()},
           "PATH": f"{venv / 'bin'}{os.pathsep}{base.get('PATH', '')}",
           "EVALTAPE_PYTHON": str(venv / "bin" / "python"),
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    res = subprocess.run(["bash", "ci/evaltape-ci.sh"], cwd=user, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "EVALTAPE_INSTALL still says <owner>" in res.stderr
    assert not (venv / "bin" / "evaltape").exists()
    # with <owner>'s repository here: a git URL pip clones, at the tag the line pins
    src = _as_released(tmp_path, f"v{version}")
    # (file://localhost/...: the pip a new venv starts with refuses git+file:/// without a
    # host in a name @ URL requirement; git reads both)
    env["EVALTAPE_INSTALL"] = line.replace(hosted, f"file://localhost{src.as_posix()}")
    res = subprocess.run(["bash", "ci/evaltape-ci.sh"], cwd=user, env=env,
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"{RUN}: pass: replay ok: 24 episode(s) reproduced exactly from evals/runs/{RUN}" \
        in res.stderr
    # the evaltape that ran is the one the line installed, with the recorder's packages
    probe = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import evaltape, anthropic, vcr; print(evaltape.__file__)"],
                           capture_output=True, text=True, check=True)
    assert probe.stdout.startswith(str(venv)), probe.stdout


SHOP_AGENT = """\
from evaltape.recorder.loop import AgentSpec, run_tool_loop
from shopdata import STATUS  # the team's own dependency, installed by requirements.txt

TOOLS = [{"name": "lookup_order", "description": "Find an order by id.",
          "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}},
                           "required": ["order_id"]}}]


def execute(name, args):
    return {"order_id": args["order_id"], "status": STATUS.get(args["order_id"], "unknown")}


SPEC = AgentSpec(system="You are a shop assistant. Use tools.", tools=TOOLS, execute=execute)


def run(case, client, *, model, stream=False):
    return run_tool_loop(client, SPEC, case.input, model=model, stream=stream, max_steps=4)


run.spec = SPEC
"""


def _wheel(folder: Path) -> Path:
    """``shopdata``, a one-module package, as a wheel pip installs offline (the format of
    PEP 427: the module, and a .dist-info folder with METADATA, WHEEL and RECORD)."""
    import zipfile
    path = folder / "shopdata-1.0-py3-none-any.whl"
    files = {"shopdata/__init__.py": 'STATUS = {"42": "shipped"}\n',
             "shopdata-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: shopdata\n"
                                                "Version: 1.0\n",
             "shopdata-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
                                             "Root-Is-Purelib: true\nTag: py3-none-any\n"}
    files["shopdata-1.0.dist-info/RECORD"] = "".join(f"{n},,\n" for n in files) + \
        "shopdata-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def _git(cwd: Path, *args: str) -> str:
    git = ["git", "-c", "user.name=evaltape test", "-c", "user.email=test@example.invalid",
           "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"]
    return subprocess.run(git + list(args), cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


@pytest.mark.slow
def test_the_recipe_runs_on_a_fresh_clone_of_a_team_repository(tmp_path):
    """A team's repository in the recipe's layout: its own agent (shopagent:run, which
    imports the team's package shopdata, listed in requirements.txt), one run recorded with
    it into evals/runs/, its baseline in evals/baselines/, evals/.gitignore from
    examples/ci/evals/, ci/evaltape-ci.sh. Cloned afresh and run as the workflow runs it
    (EVALTAPE_AGENT_INSTALL="-r requirements.txt" into a Python that has evaltape but not
    shopdata): the agent's dependency is installed, the run replays and passes, the
    reports land in evals/reports/ and the clone stays clean (git status prints nothing).
    Without the agent install step the replay cannot import the agent: the job fails."""
    job = next(iter(yaml.safe_load(WORKFLOW.read_text())["jobs"].values()))
    assert job["env"]["EVALTAPE_AGENT_INSTALL"] == "-r requirements.txt"
    team = tmp_path / "team"
    (team / "ci").mkdir(parents=True)
    (team / "evals").mkdir()
    (team / "vendor").mkdir()
    shutil.copy(SCRIPT, team / "ci" / "evaltape-ci.sh")
    shutil.copy(ROOT / "examples" / "ci" / "evals" / ".gitignore", team / "evals" / ".gitignore")
    wheel = _wheel(team / "vendor")
    (team / "requirements.txt").write_text(f"./vendor/{wheel.name}\n")
    (team / "shopagent.py").write_text(SHOP_AGENT)
    (team / "evals" / "cases.json").write_text(json.dumps([
        {"id": "o1", "user_query": "Where is order 42?", "expected_tools": ["lookup_order"],
         "expected_args": {"lookup_order": {"order_id": "42"}},
         "expected_outcome_keywords": ["shipped"]}]))
    (tmp_path / "script.json").write_text(json.dumps({"o1": [
        json.dumps({"tool": "lookup_order", "arguments": {"order_id": "42"}}),
        "Order 42 has shipped."]}))
    # record and grade the baseline with the team's package importable (PYTHONPATH)
    pkg = tmp_path / "pkg"
    (pkg / "shopdata").mkdir(parents=True)
    (pkg / "shopdata" / "__init__.py").write_text('STATUS = {"42": "shipped"}\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALTAPE_", "GITHUB_"))}
    env["PYTHONPATH"] = str(pkg)
    cli = [sys.executable, "-m", "evaltape.cli"]
    for args in (["record", "evals/cases.json", "--agent", "shopagent:run", "--standin-script",
                  str(tmp_path / "script.json"), "--out", "evals/runs/shop"],
                 ["grade", "evals/runs/shop", "--out", str(tmp_path / "base"), "--quiet"]):
        p = subprocess.run(cli + args, cwd=team, env=env, capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr
    (team / "evals" / "baselines" / "shop").mkdir(parents=True)
    shutil.copy(tmp_path / "base" / "report.json",
                team / "evals" / "baselines" / "shop" / "report.json")
    _git(team, "init", "-q")
    _git(team, "add", "-A")
    _git(team, "commit", "-q", "-m", "evals")
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(team), str(clone))
    # a Python with evaltape (this one's packages, through a .pth) and without shopdata
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    vpy = venv / "bin" / "python"
    site = subprocess.run([str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    ours = subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig."
                           "get_paths()['purelib'])"], capture_output=True, text=True,
                          check=True).stdout.strip()
    # (addsitedir: the .pth files there, an editable evaltape's, are read too)
    Path(site.stdout.strip(), "parent_env.pth").write_text(
        f"import site; site.addsitedir({ours!r})\n")
    run_env = {k: v for k, v in os.environ.items()
               if not k.startswith(("EVALTAPE_", "GITHUB_", "VIRTUAL_ENV", "PYTHON"))}
    run_env.update({k: str(v) for k, v in job["env"].items()})
    run_env.update({"EVALTAPE_INSTALL": "", "EVALTAPE_PYTHON": str(vpy),
                    "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")})
    no_agent = {**run_env, "EVALTAPE_AGENT_INSTALL": ""}
    res = subprocess.run(["bash", "ci/evaltape-ci.sh"], cwd=clone, env=no_agent,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode != 0
    assert "shopdata" in res.stderr  # the agent's import fails, named
    res = subprocess.run(["bash", "ci/evaltape-ci.sh"], cwd=clone, env=run_env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert ("shop: pass: replay ok: 1 episode(s) reproduced exactly from evals/runs/shop; "
            "gate: pass (") in res.stderr
    assert "is not ignored by git" not in res.stderr
    for name in ("report.json", "report.md", "report.html", "junit.xml"):
        assert (clone / "evals" / "reports" / "shop" / name).is_file()
    assert _git(clone, "status", "--porcelain") == ""
    # a clone whose evals/.gitignore is missing is warned about
    (clone / "evals" / ".gitignore").unlink()
    _git(clone, "commit", "-q", "-am", "no ignore file")
    res = subprocess.run(["bash", "ci/evaltape-ci.sh"], cwd=clone, env={**run_env, **GATE_ONLY},
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "warning: evals/reports is not ignored by git" in res.stderr
