"""Every hostile input of ``tests/hostile_corpus.py`` through the real command line: no
traceback ever; exit 3 naming file (line, field) for bad input, 2 for usage, 1 only for a
failed gate, 0 for odd but valid input (DESIGN.md §6)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CLI_ENV, run_cli
from hostile_corpus import argv, corpus, write_case

CASES = corpus()
#: Capabilities that let root read and write whatever the mode bits say (capabilities(7)).
DAC_CAPS = "-dac_override,-dac_read_search"


def _without_dac_override(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run the CLI as root without the capabilities that bypass file modes (util-linux
    ``setpriv``): root reads folders of mode 000, so permission cases need the mode bits to
    count. Staying root keeps the checkout (and its venv) readable wherever CI clones it."""
    env = {k: v for k, v in os.environ.items() if k not in CLI_ENV or CLI_ENV[k] is not None}
    env["COLUMNS"] = "200"
    return subprocess.run(["setpriv", f"--bounding-set={DAC_CAPS}", f"--inh-caps={DAC_CAPS}",
                           sys.executable, "-m", "evaltape.cli", *args],
                          cwd=str(cwd), env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("h", CASES, ids=[h.name for h in CASES])
def test_hostile_input(tmp_path, h):
    restricted = "mode_000" in h.name and os.geteuid() == 0
    if restricted and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: mode 000 cannot be tested")
    d = write_case(tmp_path, h)
    try:
        p = _without_dac_override(argv(h, d), d) if restricted else run_cli(*argv(h, d), cwd=d)
    finally:
        if h.teardown:
            h.teardown(d)
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode == h.code, (p.returncode, p.stderr)
    for needle in h.names:
        assert needle.replace("{d}", str(d)) in p.stderr, (needle, p.stderr)


@pytest.mark.slow
def test_concurrent_grades_into_one_out_all_succeed(tmp_path):
    """Eight ``grade`` processes writing one ``--out`` at once: each writes through its own
    pid-named temp file and an atomic rename, so all exit 0 and the report is whole."""
    import json
    from conftest import ROOT
    run = ROOT / "cassettes" / "scripted-harness"
    cmd = [sys.executable, "-m", "evaltape.cli", "grade", str(run), "--out",
           str(tmp_path / "out"), "--quiet", "--format", "json,md,junit,html"]
    procs = [subprocess.Popen(cmd, cwd=str(ROOT), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(8)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert [code for code, _ in results] == [0] * 8, results
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["summary"]["episodes"] == 5
    assert not list((tmp_path / "out").glob(".*.tmp"))


def _run_case(tmp_path, name: str):
    (h,) = [c for c in CASES if c.name == name]
    d = write_case(tmp_path, h)
    p = run_cli(*argv(h, d), cwd=d)
    assert p.returncode == h.code, p.stderr
    return d, p


def test_dict_details_become_an_error_null_score_in_every_format(tmp_path):
    import json
    d, _p = _run_case(tmp_path, "metric_dict_details")
    report = json.loads((d / "out" / "report.json").read_text())
    score = report["episodes"][0]["metrics"]["dict_details"]
    assert score["score"] is None and score["code"] == "error"
    for name in ("report.md", "junit.xml", "report.html"):
        assert (d / "out" / name).stat().st_size > 0


def test_escape_sequences_and_markup_reach_no_terminal_or_markdown(tmp_path):
    d, p = _run_case(tmp_path, "escape_in_answer")
    for text in (p.stdout, p.stderr, (d / "out" / "report.md").read_text()):
        assert "\x1b" not in text and "\x07" not in text
    d, p = _run_case(tmp_path, "markup_in_run_folder")
    assert "exp[/v2]" in p.stdout  # shown literally, not parsed as markup
    d, p = _run_case(tmp_path, "markup_in_model_name")
    assert "llama[/q4]" in p.stdout


def test_bidi_overrides_and_line_breaks_of_ids_reach_no_terminal():
    from evaltape.grader.report.common import plain
    assert plain("\u202eRTL \u2066x\u2069 ok") == "\ufffdRTL \ufffdx\ufffd ok"
    assert plain("new\nline") == "new\nline"  # details keep their lines ...
    assert plain("new\nline", one_line=True) == "new\u21b5line"  # ... a label does not
    assert plain("nul\x00id\x1b[2J", one_line=True) == "nul\ufffdid\ufffd[2J"


@pytest.mark.parametrize("workers", ["1", "2", None])
def test_a_trace_nested_too_deep_is_bad_input_on_every_worker_count(tmp_path, monkeypatch,
                                                                     workers):
    """A trace nested 300 levels deep in the middle of a file graded in many ranges: exit 3
    naming its line and JSON path on one process, on two, and on the default pool (every
    core), never the internal error of the duplicate-key screen's re-serialisation."""
    import json
    from conftest import make_trace, write_json
    from evaltape.grader import executor as scale
    monkeypatch.setattr(scale, "CHUNK_BYTES", 2000)  # ~5 traces a range: many ranges
    write_json(tmp_path / "d.json", [{"id": f"c{i}", "user_query": "q"} for i in range(60)])
    lines = [json.dumps(make_trace(f"c{i}")) for i in range(60)]
    lines[41] = lines[41].replace('"messages": []', '"messages": [' + "[" * 300 + "]" * 300
                                  + "]")
    (tmp_path / "traces.jsonl").write_text("\n".join(lines) + "\n")
    p = run_cli("grade", "traces.jsonl", "--dataset", "d.json", "--quiet", "--out", "out",
                *(["--workers", workers] if workers else []), cwd=tmp_path)
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode == 3, p.stderr
    assert p.stderr.strip().splitlines()[-1] == (
        "Error: traces.jsonl:42: field 'messages[0][0][0][0][0][0][0]…': nested deeper than "
        "254 levels of arrays and objects (the most evaltape reads)")
    assert not (tmp_path / "out").exists()


def _grade_with_a_refused_tmpdir(tmp_path, limit: str, workers: str):
    """Grade a 10 MB run (3 ranges: the pool is used for ``--workers 2``) with ``TMPDIR`` at
    a folder whose writes the OS refuses past a point: a file size limit of 60 KB
    (``RLIMIT_FSIZE``, as any user can set), or a full 64 KB tmpfs (root only)."""
    import json
    import resource
    import signal
    from conftest import make_trace, write_json
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    if limit == "full_disk":
        if os.geteuid() != 0:
            pytest.skip("mounting a small tmpfs needs root; the file-size-limit case covers it")
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(tmp)],
                          capture_output=True).returncode != 0:
            pytest.skip("cannot mount a tmpfs here")
    write_json(tmp_path / "d.json", [{"id": f"c{i}", "user_query": "q"} for i in range(3000)])
    (tmp_path / "traces.jsonl").write_text("".join(
        json.dumps(make_trace(f"c{i}", final="x" * 3000)) + "\n" for i in range(3000)))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.json").write_text("the previous report\n")

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))
    env = {k: v for k, v in os.environ.items() if k not in CLI_ENV}
    env["TMPDIR"] = str(tmp)
    try:
        p = subprocess.run([sys.executable, "-m", "evaltape.cli", "grade", "traces.jsonl",
                            "--dataset", "d.json", "--quiet", "--out", "out", "--workers",
                            workers], cwd=str(tmp_path), env=env, capture_output=True,
                           text=True, timeout=300,
                           preexec_fn=small_files if limit == "file_size" else None)
        left = sorted(f.name for f in tmp.iterdir())
    finally:
        if limit == "full_disk":
            subprocess.run(["umount", str(tmp)], capture_output=True)
    return p, tmp, left


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("limit", ["file_size", "full_disk"])
def test_a_full_tmpdir_while_grading_exits_2_naming_it(tmp_path, limit, workers):
    p, tmp, left = _grade_with_a_refused_tmpdir(tmp_path, limit, workers)
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr
    assert p.returncode == 2, p.stderr
    cause = "File too large" if limit == "file_size" else "No space left on device"
    assert p.stderr.strip().splitlines()[-1] == (
        f"Error: cannot write a temporary file in {tmp} ({cause}): grading keeps the graded "
        f"episodes there until the report is written; free space in {tmp} or point TMPDIR "
        "at a folder with room, and rerun (no report was written)")
    assert left == []  # every temporary file deleted
    assert (tmp_path / "out" / "report.json").read_text() == "the previous report\n"
    assert sorted(f.name for f in (tmp_path / "out").iterdir()) == ["report.json"]


def test_an_import_the_os_refuses_to_write_exits_2_naming_the_file(tmp_path):
    import json
    import resource
    import signal
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x" * 5000}]
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.jsonl").write_text("".join(json.dumps(chat) + "\n"
                                                      for _ in range(20)))

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))  # traces: ~100 KB
    env = {k: v for k, v in os.environ.items() if k not in CLI_ENV}
    p = subprocess.run([sys.executable, "-m", "evaltape.cli", "import", "openai-messages",
                        "src", "--out", "imp"], cwd=str(tmp_path), env=env,
                       capture_output=True, text=True, timeout=120, preexec_fn=small_files)
    assert "internal error" not in p.stderr, p.stderr
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines()[-1] == (
        "Error: imp/traces.jsonl: cannot write the imported run (File too large); its "
        "manifest.json is written last, so a folder without one holds an import that did "
        "not finish: fix the cause and rerun")
    assert list((tmp_path / "imp").iterdir()) == []  # no temp file, no half-written file


@pytest.mark.parametrize("args", [["schema", "report"],
                                  ["grade", "cassettes/scripted-harness", "--out", "{tmp}/o"]])
def test_a_full_standard_output_is_a_clear_message_and_exit_1(tmp_path, args):
    """``> /dev/full``: writing stdout fails with ENOSPC; one line says so, exit 1 (the
    output is incomplete), no traceback and no 'internal error' (exit 70)."""
    from conftest import ROOT
    env = {k: v for k, v in os.environ.items() if k not in CLI_ENV or CLI_ENV[k] is not None}
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "evaltape.cli",
                            *[a.replace("{tmp}", str(tmp_path)) for a in args]],
                           cwd=str(ROOT), env=env, stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    assert p.stderr.strip().splitlines()[-1] == ("evaltape: cannot write to standard output: "
                                                 "No space left on device; the output is "
                                                 "incomplete")
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr
