"""Appending review marks: locked, synced, no line lost between writers, no secret written."""
from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys

import pytest

from evaltape.grader.errors import BadInputError
from evaltape.grader.reviews import Mark, latest, read_reviews
from evaltape.reviewlog import SecretInMark, append_mark

AT = "2026-12-07T13:00:00+00:00"


def mark(ep: str, **kw) -> Mark:
    base = dict(episode=ep, trace_digest="abcdef0123456789", reviewer="ana", at=AT,
                target="episode", mark="pass", note="")
    base.update(kw)
    return Mark(**base)


def test_append_then_read_back(tmp_path):
    p = tmp_path / "reviews.jsonl"
    append_mark(p, mark("tc_001#t1"))
    append_mark(p, {"episode": "tc_001#t1", "trace_digest": None, "reviewer": "bo",
                    "at": AT, "target": "metric:grounding", "mark": "wrong",
                    "note": "<script>alert(1)</script>"})
    marks = read_reviews(p)
    assert [(m.line, m.reviewer, m.target) for m in marks] == [
        (1, "ana", "episode"), (2, "bo", "metric:grounding")]
    assert marks[1].note == "<script>alert(1)</script>"
    assert p.read_bytes().count(b"\n") == 2


def test_an_invalid_mark_is_refused(tmp_path):
    p = tmp_path / "reviews.jsonl"
    with pytest.raises(BadInputError, match="field 'mark'"):
        append_mark(p, mark("tc_001#t1", mark="right"))
    assert not p.exists()


@pytest.mark.parametrize("where", ["note", "reviewer"])
def test_a_secret_is_never_written(tmp_path, where):
    p = tmp_path / "reviews.jsonl"
    key = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8J9k0" * 2
    with pytest.raises(SecretInMark) as e:
        append_mark(p, mark("tc_001#t1", **{where: "the key was " + key}))
    assert e.value.field == where and key not in str(e.value)
    assert not p.exists()


def test_the_live_key_is_never_written(tmp_path, monkeypatch):
    # the environment's key, whatever its shape, is a secret too
    live = "live-key-ZZ9plural-Z-alpha-0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", live)
    p = tmp_path / "reviews.jsonl"
    with pytest.raises(SecretInMark):
        append_mark(p, mark("tc_001#t1", note="pasted " + live))
    assert not p.exists()


def test_a_torn_last_line_is_cut_before_appending(tmp_path):
    p = tmp_path / "reviews.jsonl"
    append_mark(p, mark("tc_001#t1"))
    with open(p, "ab") as fh:                 # a writer killed in the middle of its line
        fh.write(b'{"episode": "tc_002#t1", "trace_dig')
    append_mark(p, mark("tc_003#t1"))
    assert [m.episode for m in read_reviews(p)] == ["tc_001#t1", "tc_003#t1"]


def _writer(path: str, who: str, n: int) -> None:
    for i in range(n):
        append_mark(path, mark(f"case_{i}#t1", reviewer=who, note="x" * 3000))


def test_two_writers_at_once_lose_no_line(tmp_path):
    p = tmp_path / "reviews.jsonl"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(p), who, 60)) for who in ("ana", "bo", "cy")]
    for pr in procs:
        pr.start()
    for pr in procs:
        pr.join(60)
        assert pr.exitcode == 0
    marks = read_reviews(p)
    assert len(marks) == 180
    assert sorted({(m.reviewer, m.episode) for m in marks}) == sorted(
        (who, f"case_{i}#t1") for who in ("ana", "bo", "cy") for i in range(60))
    assert len(latest(marks)) == 60          # one item per episode; the latest wins


KILLED = r"""
import sys
from evaltape.grader.reviews import Mark
from evaltape.reviewlog import append_mark
for i in range(100000):
    append_mark(sys.argv[1], Mark(f"case_{i}#t1", None, "ana", "2026-12-07T13:00:00", "episode",
                                  "fail", "n" * 500))
    print(i, flush=True)
"""


def test_a_killed_writer_loses_no_acknowledged_mark(tmp_path):
    p = tmp_path / "reviews.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(p)], stdout=subprocess.PIPE,
                            text=True)
    acked = []
    for out in proc.stdout:
        acked.append(int(out))
        if len(acked) == 40:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    episodes = {m.episode for m in read_reviews(p)}
    assert {f"case_{i}#t1" for i in acked} <= episodes
    append_mark(p, mark("after#t1"))          # and the file takes more marks
    assert "after#t1" in {m.episode for m in read_reviews(p)}


def test_a_whole_last_mark_without_its_line_end_is_kept(tmp_path):
    # a file edited by hand, saved without a final line break
    import json
    p = tmp_path / "reviews.jsonl"
    p.write_text(json.dumps(mark("tc_001#t1", note="by hand").to_json()))
    append_mark(p, mark("tc_002#t1"))
    assert [(m.episode, m.note) for m in read_reviews(p)] == [("tc_001#t1", "by hand"),
                                                              ("tc_002#t1", "")]
