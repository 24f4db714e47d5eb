"""Grading at scale: the on-disk sort, the streamed report, chunked and parallel grading
(process pool and a local Dask cluster) giving the same bytes as one process."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, run_cli
from evaltape.grader import executor as scale
from evaltape.grader.api import grade
from evaltape.grader.errors import BadInputError
from evaltape.grader.report_file import report_bytes
from evaltape.grader.results import read_report
from evaltape.grader.io.external_sort import (INDEX_EVERY, SpillSorter, merge_range,
                                          plan_ranges, write_run)

RUN = ROOT / "cassettes" / "helpdesk-qwen1.5b"  # 8 cases x 3 trials, no judged metric below
METRICS = ["tool_selection_accuracy", "argument_correctness", "task_completion", "grounding"]


def test_spill_sorter_sorts_across_runs_in_bounded_buffers():
    # buffer 3: the 8 records below make runs [5,1,7]->[1,5,7], [3,8,2]->[2,3,8], [6,4]
    sorter = SpillSorter(buffer=3)
    for k in (5, 1, 7, 3, 8, 2, 6, 4):
        sorter.add((k, 0), f"p{k}".encode())
    out = sorter.finish()
    assert len(out) == 8
    assert list(out.iter_payloads(block=4)) == [f"p{k}".encode() for k in range(1, 9)]
    assert out.payload(0) == b"p1" and out.payload(7) == b"p8"
    with pytest.raises(IndexError):
        out.payload(8)


def test_spill_sorter_keeps_sorted_input_and_small_input():
    sorter = SpillSorter(buffer=2)
    for k in range(5):
        sorter.add((0, k), bytes([65 + k]))
    assert b"".join(sorter.finish().iter_payloads()) == b"ABCDE"
    small = SpillSorter(buffer=100)
    small.add(("b",), b"2")
    small.add(("a",), b"1")
    assert b"".join(small.finish().iter_payloads()) == b"12"


def test_spill_sorter_merges_runs_written_elsewhere_and_deletes_them():
    # a worker's run (written sorted by write_run) merged with records added here
    path, n, index = write_run([((3, 0), b"c"), ((1, 0), b"a"), ((5, 0), b"e")])
    assert n == 3 and Path(path).exists() and index == (((1, 0), 0),)  # record 0 at byte 0
    sorter = SpillSorter(buffer=2)
    sorter.add((4, 0), b"d")
    sorter.add_run(path, n, index)
    for k, p in (((2, 0), b"b"), ((6, 0), b"f"), ((0, 0), b"_")):
        sorter.add(k, p)
    assert sorter.count == 7 and b"".join(sorter.finish().iter_payloads()) == b"_abcdef"
    assert not Path(path).exists()
    # a sorter dropped before it finishes deletes the run too
    path, n, index = write_run([((1, 0), b"a")])
    dropped = SpillSorter()
    dropped.add_run(path, n, index)
    del dropped
    assert not Path(path).exists()


def test_run_index_points_at_every_64th_record():
    import marshal
    import struct
    recs = [((k % 7, k), str(k).encode()) for k in range(150)]  # keys sort by (k % 7, k)
    path, n, index = write_run(recs)
    try:
        want = sorted(recs)
        assert n == 150 and INDEX_EVERY == 64
        assert [k for k, _off in index] == [want[0][0], want[64][0], want[128][0]]
        with open(path, "rb") as fh:
            for i, (key, off) in zip((0, 64, 128), index):
                fh.seek(off)  # a record: its length (4 bytes, little-endian), its marshal bytes
                (length,) = struct.unpack("<I", fh.read(4))
                assert marshal.loads(fh.read(length)) == want[i]
    finally:
        Path(path).unlink()


@pytest.mark.parametrize("block", [1, 5, 4096])
def test_a_run_reads_back_whatever_its_read_block(block):
    # records of 0 to 3,000 payload bytes: with blocks of 1 or 5 bytes every record and
    # most length prefixes straddle a block's end; a run starting mid-file is read from its
    # own byte offset
    import marshal

    from evaltape.grader.io.external_sort import _read_run
    recs = [((k, 0), bytes([97 + k % 26]) * (k * 37 % 3001)) for k in range(60)]
    path, n, index = write_run(recs)
    try:
        assert list(_read_run(path, 0, n, block)) == recs  # (keys already in order)
        assert index == (((0, 0), 0),)  # 60 records: one indexed key, record 0 at byte 0
        skip = 4 + len(marshal.dumps(recs[0]))  # record 1 starts here
        assert list(_read_run(path, skip, n - 1, block)) == recs[1:]
        with pytest.raises(EOFError):  # more records asked for than the file holds
            list(_read_run(path, 0, n + 1, block))
    finally:
        Path(path).unlink()


def test_runs_merged_a_key_range_at_a_time_give_the_one_merge(tmp_path, monkeypatch):
    import random
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    rng = random.Random(7)
    keys = [(pos, trial) for pos in range(100) for trial in range(50)]  # 5000 unique keys
    rng.shuffle(keys)
    # five runs of 1000 records, as five workers' ranges would give (16 indexed keys each)
    runs = [write_run([(k, repr(k).encode()) for k in keys[i:i + 1000]])
            for i in range(0, 5000, 1000)]
    plan = plan_ranges(runs, 4)
    assert len(plan) == 4 and plan[0][0] is None and plan[-1][1] is None
    merged = [merge_range(*task) for task in plan]
    sizes = [len(offsets) // 8 - 1 for _path, offsets in merged]
    assert sum(sizes) == 5000 and min(sizes) > 900  # quantiles of 80 keys: about 1250 each
    for (lo, hi, _segs), (path, _offsets) in zip(plan, merged):
        got = Path(path).read_bytes()
        want = b"".join(repr(k).encode() for k in sorted(keys)
                        if (lo is None or k >= lo) and (hi is None or k < hi))
        assert got == want
    # the sorter hands the same ranges out as merge tasks, and deletes every file
    sorter = SpillSorter()
    for path, n, index in runs:
        sorter.add_run(path, n, index)
    tasks = sorter.merge_tasks(3)
    assert len(tasks) == 3
    out = sorter.finish_merged([merge_range(*t) for t in tasks])
    assert len(out) == 5000
    assert list(out.iter_payloads(block=64)) == [repr(k).encode() for k in sorted(keys)]
    assert out.payload(0) == b"(0, 0)" and out.payload(4999) == b"(99, 49)"
    assert out.payload(2500) == b"(50, 0)"  # 50 keys per position
    for path, _offsets in merged:
        Path(path).unlink()
    assert not list(tmp_path.iterdir())  # run files deleted, merged files unnamed


def test_records_stored_with_their_separator_join_by_copying(tmp_path, monkeypatch):
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    keys = [(pos, trial) for trial in range(30) for pos in range(10)]  # trial-major: 300
    runs = [write_run([(k, repr(k).encode()) for k in keys[i:i + 100]])
            for i in range(0, 300, 100)]
    sorter = SpillSorter()
    for path, n, index in runs:
        sorter.add_run(path, n, index)
    out = sorter.finish_merged([merge_range(*t) for t in sorter.merge_tasks(2, sep=b",\n")],
                               sep=b",\n")
    want = [repr(k).encode() for k in sorted(keys)]
    assert out.sep == b",\n" and len(out) == 300
    assert list(out.iter_payloads()) == want and out.payload(299) == b"(9, 29)"
    pieces = list(out.iter_joined(b",\n", block=100))
    assert b"".join(pieces) == b",\n".join(want)
    # every piece is whole payloads: after its leading separator, it starts one
    assert len(pieces) > 10 and all(p.lstrip(b",\n").startswith(b"(") and p.endswith(b")")
                                    for p in pieces)
    assert b"".join(out.iter_joined(b" | ", block=100)) == b" | ".join(want)  # other sep
    # the one-process merge stores the separator the same way
    single = SpillSorter(buffer=7)
    for k in keys:
        single.add(k, repr(k).encode())
    alone = single.finish(sep=b",\n")
    assert b"".join(alone.iter_joined(b",\n", block=64)) == b",\n".join(want)
    assert alone.payload(0) == b"(0, 0)" and list(alone.iter_payloads()) == want


def test_stored_episodes_behave_as_a_tuple():
    from evaltape.grader.report_file import StoredEpisodes
    from evaltape.grader.results import EpisodeResult, MetricResult
    sorter = SpillSorter(buffer=2)
    eps = {k: EpisodeResult(f"c{k}", 0, True, None, 0, "",
                            {"b": MetricResult(0.5, "", None, None, None),
                             "a": MetricResult(None, "n/a", None, None, None)})
           for k in (2, 0, 1)}
    for k, e in eps.items():
        none = {"code": None, "threshold": None, "passed": None}
        sorter.add(k, json.dumps({"case_id": e.case_id, "trial": 0, "passed": True,
                                  "failure": None, "steps": 0, "stop_reason": "",
                                  "metrics": {"a": {"score": None, "message": "n/a", **none},
                                              "b": {"score": 0.5, "message": "", **none}}
                                  }).encode())
    seq = StoredEpisodes(sorter.finish(), ["b", "a"])
    assert len(seq) == 3
    assert list(seq) == [eps[0], eps[1], eps[2]]
    assert list(seq[0].metrics) == ["b", "a"]  # the run's column order, not the JSON's
    assert seq[-1] == eps[2] and seq[1:] == (eps[1], eps[2])
    assert seq == (eps[0], eps[1], eps[2]) and seq != (eps[0], eps[1])


def test_streamed_report_bytes_equal_the_committed_golden():
    # the piecewise writer must lay a whole report out exactly as orjson does
    for golden in sorted((ROOT / "tests" / "golden").glob("*/report.json")):
        assert report_bytes(read_report(golden)) == golden.read_bytes(), golden


def test_iter_chunks_cuts_after_newlines_and_counts_lines(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"aaaa\nbb\n\ncccccc\nd\n")  # lines 1..5 start at bytes 0, 5, 8, 9, 16
    chunks = list(scale.iter_chunks(p, chunk_bytes=4))
    # cut at byte 4 -> end of line 1 (5); 5+4=9 -> end of the line holding byte 9 (16);
    # 16+4 >= 18 -> the rest
    assert [(c.start, c.end, c.first_line) for c in chunks] == [(0, 5, 1), (5, 16, 2),
                                                                 (16, 18, 5)]
    # the pools' cut reads one line per cut: the same ranges, lines not counted
    assert [(c.start, c.end, c.first_line) for c in scale.iter_chunks(
        p, chunk_bytes=4, count_lines=False)] == [(0, 5, None), (5, 16, None), (16, 18, None)]


def test_line_numbers_of_late_ranges_count_every_earlier_line(monkeypatch, tmp_path):
    # workers number their range's lines from 1; the fold adds the lines of the ranges
    # before, blank ones included
    run = _copy_run(tmp_path)
    lines = (run / "traces.jsonl").read_bytes().splitlines(keepends=True)
    lines[21] = lines[1]  # file line 22 repeats line 2's episode
    lines[2:2] = [b"\n", b"  \n", b"\n"]  # three blank lines after line 2: it is now 25
    (run / "traces.jsonl").write_bytes(b"".join(lines))
    monkeypatch.setattr(scale, "CHUNK_BYTES", 3000)
    for workers in (1, 2):
        with pytest.raises(BadInputError) as e:
            grade(run, metrics=METRICS, workers=workers)
        assert (e.value.line, e.value.field) == (25, "trial"), workers
    lines[24] = b"[1, 2\n"  # now the first bad line is 25, not JSON
    (run / "traces.jsonl").write_bytes(b"".join(lines))
    for workers in (1, 2):
        with pytest.raises(BadInputError) as e:
            grade(run, metrics=METRICS, workers=workers)
        assert (e.value.line, e.value.field) == (25, None), workers


@pytest.mark.parametrize("workers", [2, 3])
def test_report_bytes_are_the_same_for_every_worker_count(monkeypatch, workers):
    one = grade(RUN, metrics=METRICS, workers=1)
    monkeypatch.setattr(scale, "CHUNK_BYTES", 5000)  # ~3 traces a chunk: 8+ chunks
    many = grade(RUN, metrics=METRICS, workers=workers)
    assert report_bytes(many) == report_bytes(one)
    assert many.summary.episodes == 24  # 24 lines in the traces file
    assert [(e.case_id, e.trial) for e in many.episodes][:4] == [
        ("tc_001", 0), ("tc_001", 1), ("tc_001", 2), ("tc_002", 0)]


def _copy_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    return run


def test_first_bad_line_in_file_order_is_reported_with_workers(monkeypatch, tmp_path):
    run = _copy_run(tmp_path)
    lines = (run / "traces.jsonl").read_bytes().splitlines(keepends=True)
    lines[20] = b"{not json\n"  # line 21: in a late chunk
    lines[3] = lines[0]  # line 4 repeats line 1's episode (tc_001 trial 0): an early chunk
    (run / "traces.jsonl").write_bytes(b"".join(lines))
    monkeypatch.setattr(scale, "CHUNK_BYTES", 3000)
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the workers inherit it
    for workers in (1, 2):
        with pytest.raises(BadInputError) as e:
            grade(run, metrics=METRICS, workers=workers)
        assert (e.value.line, e.value.field) == (4, "trial"), workers
        # the run files of the ranges graded but never folded are deleted too
        assert not list(tmp_path.glob("evaltape-*")), workers


def test_bad_json_line_number_is_absolute_in_a_worker(monkeypatch, tmp_path):
    run = _copy_run(tmp_path)
    lines = (run / "traces.jsonl").read_bytes().splitlines(keepends=True)
    lines[20] = b"{not json\n"
    (run / "traces.jsonl").write_bytes(b"".join(lines))
    monkeypatch.setattr(scale, "CHUNK_BYTES", 3000)
    with pytest.raises(BadInputError) as e:
        grade(run, metrics=METRICS, workers=2)
    assert e.value.line == 21 and e.value.path == str(run / "traces.jsonl")


def test_cli_workers_flag_and_engine_usage_errors(tmp_path):
    p = run_cli("grade", str(RUN), "--metrics", ",".join(METRICS), "--workers", "2",
                "--out", str(tmp_path / "w2"), "--quiet")
    assert p.returncode in (0, 1), p.stderr
    q = run_cli("grade", str(RUN), "--metrics", ",".join(METRICS), "--workers", "1",
                "--out", str(tmp_path / "w1"), "--quiet")
    assert (tmp_path / "w2" / "report.json").read_bytes() == \
        (tmp_path / "w1" / "report.json").read_bytes()
    assert q.returncode == p.returncode
    bad = run_cli("grade", str(RUN), "--engine", "dask", "--quiet", "--out", str(tmp_path))
    assert bad.returncode == 2 and "--address" in bad.stderr
    zero = run_cli("grade", str(RUN), "--workers", "0", "--out", str(tmp_path))
    assert zero.returncode == 2


@pytest.mark.slow
def test_dask_local_cluster_gives_the_local_bytes(monkeypatch, tmp_path):
    from distributed import LocalCluster

    monkeypatch.setattr(scale, "CHUNK_BYTES", 8000)
    local = grade(RUN, metrics=METRICS, workers=1)
    # (its scratch space in this test's folder: not one shared with other test processes)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                      dashboard_address=None, local_directory=str(tmp_path)) as cluster:
        remote = grade(RUN, metrics=METRICS, engine="dask", address=cluster.scheduler_address)
    assert report_bytes(remote) == report_bytes(local)


def test_html_page_of_a_graded_report_holds_every_episode_in_chunks(tmp_path, monkeypatch):
    """report.html (the view page) lists every episode, in chunks: with 10 episodes a
    detail chunk, the 24 episodes take chunks of 10, 10 and 4."""
    from evaltape.grader.report import view
    from conftest import read_page

    monkeypatch.setattr(view, "DETAIL_CHUNK", 10)
    p = run_cli("grade", str(RUN), "--metrics", ",".join(METRICS), "--workers", "1",
                "--out", str(tmp_path / "r"), "--format", "html", "--quiet")
    assert p.returncode == 0, p.stderr
    chunks = read_page(tmp_path / "r" / "report.html")["chunks"]
    assert [len(chunks[f"r0-ep-{k}"]) for k in range(3)] == [10, 10, 4]
    assert len(chunks["r0-index-0"]) == 24


def test_checked_trace_reading_gives_the_same_trace_on_both_paths():
    from evaltape.grader.io.traces import parse_trace

    obj = {"schema": "evaltape.trace/1", "case_id": "c1", "trial": 2, "input": "q",
           "tool_calls": [{"id": "t1", "name": "lookup", "arguments": {"a": 1},
                           "result": {"z": 1, "b": [2]}, "step": 1}],
           "final_response": None, "stop_reason": "max_steps", "steps": 3,
           "usage": {"input_tokens": 5}, "latency_s": 1}
    t = parse_trace(obj, path="x.jsonl", line=7)
    # a non-string result is stored as sorted-key JSON; latency as float; line kept
    assert (t.case_id, t.trial, t.steps, t.final_response, t.source_line) == ("c1", 2, 3,
                                                                              None, 7)
    assert t.tool_calls[0].result == '{"b":[2],"z":1}' and t.latency_s == 1.0
    bad = dict(obj, trial=True)  # a boolean is not a trial number: the checking path names it
    with pytest.raises(BadInputError) as e:
        parse_trace(bad, path="x.jsonl", line=7)
    assert (e.value.line, e.value.field) == (7, "trial")


@pytest.mark.parametrize("in_memory", [32_768, 0])  # sorted in memory, or on disk
def test_failure_log_keeps_file_order_and_sorts_for_the_report(in_memory, monkeypatch):
    from evaltape.grader.io import external_sort
    from evaltape.grader.io.external_sort import FailureLog

    monkeypatch.setattr(external_sort, "SORTED_IN_MEMORY", in_memory)

    log = FailureLog()
    for rec in (("c2", 0, "wrong_tools"), ("c10", 1, "wrong_answer"), ("c1", 3, "no_answer:x")):
        log.append(rec)
    log.close(multi_trial=True)
    assert list(log.items()) == [("c2#t0", "wrong_tools"), ("c10#t1", "wrong_answer"),
                                 ("c1#t3", "no_answer:x")]
    # code point order, as orjson's OPT_SORT_KEYS: "c1#" < "c10" < "c2#"
    assert list(log.sorted_texts(b"  ")) == [b'  "c1#t3": "no_answer:x"',
                                             b'  "c10#t1": "wrong_answer"',
                                             b'  "c2#t0": "wrong_tools"']
    assert len(log) == 3 and log["c10#t1"] == "wrong_answer" and dict(log)["c2#t0"] == "wrong_tools"
    with pytest.raises(KeyError):
        log["c3#t0"]


def test_checked_trace_reading_names_a_missing_key_and_call_key():
    from evaltape.grader.io.traces import parse_trace

    obj = {"schema": "evaltape.trace/1", "case_id": "c1", "trial": 0, "input": "q",
           "tool_calls": [{"id": "t1", "name": "lookup", "arguments": {}}],
           "final_response": "a", "stop_reason": "end_turn", "steps": 1}
    for key in ("stop_reason", "steps"):
        with pytest.raises(BadInputError) as e:
            parse_trace({k: v for k, v in obj.items() if k != key}, path="x", line=2)
        assert e.value.field == key
    no_args = dict(obj, tool_calls=[{"id": "t1", "name": "lookup"}])
    with pytest.raises(BadInputError) as e:
        parse_trace(no_args, path="x", line=2)
    assert e.value.field == "tool_calls[0].arguments"


@pytest.mark.parametrize("address", ["garbage", "tcp://", "tcp://127.0.0.1:abc",
                                     "http://127.0.0.1:8786", "tcp://[::1", "inproc://x"])
def test_a_malformed_dask_address_is_a_usage_error(address):
    from evaltape.grader.errors import UsageError
    from evaltape.grader.executor import check_address
    with pytest.raises(UsageError, match="expected tcp://HOST:PORT"):
        check_address(address)
    check_address("tcp://127.0.0.1:8786")  # well formed: no error


def test_the_last_ranges_are_cut_smaller(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"".join(b"%07d\n" % i for i in range(200_000)))  # 1.6 MB, 8-byte lines
    plain = list(scale.iter_chunks(p, 1 << 18, count_lines=False))
    tapered = list(scale.iter_chunks(p, 1 << 18, count_lines=False, taper=1 << 19))
    sizes = [c.end - c.start for c in tapered]
    # 256 KB ranges until the last 512 KB, then 64 KB ones (a quarter); a cut ends after
    # the line holding the cut byte: the 8-byte line that starts there (256 KB = 32768
    # lines exactly)
    # after 5 ranges 289,232 bytes are left (< 512 KB): four 64 KB ranges and the rest
    assert sizes == [(1 << 18) + 8] * 5 + [(1 << 16) + 8] * 4 + [27_064]
    assert (tapered[0].start, tapered[-1].end) == (plain[0].start, plain[-1].end) == (0, 1_600_000)
    assert all(a.end == b.start for a, b in zip(tapered, tapered[1:]))


def test_identical_trials_whatever_the_batches_and_workers(tmp_path, monkeypatch):
    # trial-major traces of 3 cases x 4 trials: a records the same answer in every trial,
    # b differs only in its last trial, c in its second. Only a's trials are identical,
    # however the episodes are cut into batches (answer digests of a case already seen to
    # differ are skipped) and on however many processes
    from conftest import make_trace, write_json, write_jsonl
    answers = {"a": ["x"] * 4, "b": ["x", "x", "x", "y"], "c": ["x", "y", "x", "x"]}
    traces = [make_trace(cid, trial=t, final=answers[cid][t]) for t in range(4)
              for cid in ("a", "b", "c")]
    write_json(tmp_path / "d.json", [{"id": c, "user_query": "q"} for c in "abc"])
    write_jsonl(tmp_path / "run" / "traces.jsonl", traces)
    want = {"cases": 1, "of": 3}
    got = []
    line = len((tmp_path / "run" / "traces.jsonl").read_bytes()) // len(traces)
    for size in (1, 2 * line, 5 * line, 1 << 20):  # ranges of 1, 2, 5 traces, all of them
        monkeypatch.setattr(scale, "CHUNK_BYTES", size)
        report = grade(tmp_path / "run", tmp_path / "d.json", metrics=["task_completion"])
        it = report.summary.identical_trials
        got.append({k: it[k] for k in want})
    for workers in (1, 2):
        report = grade(tmp_path / "run", tmp_path / "d.json", metrics=["task_completion"],
                       workers=workers)
        it = report.summary.identical_trials
        got.append({k: it[k] for k in want})
    assert got == [want] * 6
