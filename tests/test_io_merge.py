"""Recording across machines: ``record --shard i/N`` jobs joined by ``evaltape merge``."""
from __future__ import annotations

import json

import pytest

from conftest import ROOT, run_cli
from evaltape.grader.api import grade
from evaltape.grader.errors import UsageError
from evaltape.recorder.runfolder.options import in_shard, parse_shard

DATASET = "datasets/helpdesk_eval.json"  # 8 cases, tc_001 .. tc_008
SCRIPTS = "datasets/helpdesk_standin_scripts.json"
METRICS = ["tool_selection_accuracy", "argument_correctness", "task_completion"]


def test_shards_deal_episodes_round_robin():
    # 2 cases x 3 trials numbered k = position * 3 + trial: 0..5; shard 1/2 takes even k
    mine = [(p, t) for p in range(2) for t in range(3) if in_shard(p, t, 3, (1, 2))]
    assert mine == [(0, 0), (0, 2), (1, 1)]
    theirs = [(p, t) for p in range(2) for t in range(3) if in_shard(p, t, 3, (2, 2))]
    assert theirs == [(0, 1), (1, 0), (1, 2)]
    assert parse_shard("3/4") == (3, 4)
    for bad in ("0/4", "5/4", "1", "a/b", "1/0"):
        with pytest.raises(UsageError):
            parse_shard(bad)


def _record(out, shard):
    return run_cli("record", DATASET, "--agent", "helpdesk", "--standin-script", SCRIPTS,
                   "--out", str(out), "--shard", shard)


def test_sharded_recording_merges_into_the_single_job_run(tmp_path):
    for i in (1, 2):
        p = _record(tmp_path / f"s{i}", f"{i}/2")
        assert p.returncode == 0, p.stderr
    s1 = [json.loads(line)["case_id"] for line in (tmp_path / "s1" / "traces.jsonl").open()]
    assert sorted(s1) == ["tc_001", "tc_003", "tc_005", "tc_007"]  # positions 0, 2, 4, 6
    m = run_cli("merge", str(tmp_path / "s2"), str(tmp_path / "s1"), "--out",
                str(tmp_path / "all"))
    assert m.returncode == 0, m.stderr
    lines = (tmp_path / "all" / "traces.jsonl").read_text().splitlines()
    assert [json.loads(x)["case_id"] for x in lines] == [f"tc_00{i}" for i in range(1, 9)]
    assert len(list((tmp_path / "all" / "http").iterdir())) == 8
    manifest = json.loads((tmp_path / "all" / "manifest.json").read_text())
    assert "shard" not in manifest and len(manifest["merged_from"]) == 2
    # the scripted stand-in is deterministic: the merged run grades as the committed run
    # recorded in one job
    merged = grade(tmp_path / "all", metrics=METRICS)
    single = grade(ROOT / "cassettes" / "helpdesk-scripted-standin", metrics=METRICS)
    # (but it is a new recording: every trace line differs, in latency_s at least, and its
    # episodes carry the times it measured, which the committed run predates)
    same = lambda e: {k: v for k, v in e.to_json().items()  # noqa: E731
                      if k not in ("trace_digest", "timing")}
    assert [same(e) for e in merged.episodes] == [same(e) for e in single.episodes]
    assert not {e.trace_digest for e in merged.episodes} & {e.trace_digest
                                                            for e in single.episodes}
    assert run_cli("replay", str(tmp_path / "all")).returncode == 0
    # resuming a shard with another shard is refused
    again = _record(tmp_path / "s1", "2/2")
    assert again.returncode == 2 and "shard 1/2" in again.stderr


def test_merge_refuses_overlaps_and_other_setups(tmp_path):
    for i in (1, 2):
        assert _record(tmp_path / f"s{i}", f"{i}/2").returncode == 0
    overlap = run_cli("merge", str(tmp_path / "s1"),
                      str(ROOT / "cassettes" / "helpdesk-scripted-standin"),
                      "--out", str(tmp_path / "x"))
    assert overlap.returncode == 3 and "in two runs" in overlap.stderr
    man = tmp_path / "s2" / "manifest.json"
    doc = json.loads(man.read_text())
    doc["model"] = "another-model"
    man.write_text(json.dumps(doc))
    other = run_cli("merge", str(tmp_path / "s1"), str(tmp_path / "s2"),
                    "--out", str(tmp_path / "y"))
    assert other.returncode == 3 and "'model'" in other.stderr
    doc["model"] = "scripted"
    doc["dataset"]["inputs_sha256"] = "0" * 64
    man.write_text(json.dumps(doc))
    ds = run_cli("merge", str(tmp_path / "s1"), str(tmp_path / "s2"),
                 "--out", str(tmp_path / "z"))
    assert ds.returncode == 3 and "another dataset" in ds.stderr
    assert not (tmp_path / "x").exists() or not any((tmp_path / "x").iterdir())


def test_merge_refuses_a_shard_without_its_cassettes_or_with_a_stray_one(tmp_path):
    import shutil
    for i in (1, 2):
        assert _record(tmp_path / f"s{i}", f"{i}/2").returncode == 0
    # tc_002 (shard 2) lost its cassette: the merged run could not replay
    shutil.move(str(tmp_path / "s2" / "http" / "tc_002__t0.jsonl"), str(tmp_path / "kept"))
    m = run_cli("merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out",
                str(tmp_path / "all"))
    assert m.returncode == 3
    assert "s2/http/tc_002__t0.jsonl: no cassette for episode tc_002#t0 (its trace is at " \
           "traces.jsonl:1)" in m.stderr
    # put in shard 1 instead: a stray cassette there, still missing in shard 2
    shutil.move(str(tmp_path / "kept"), str(tmp_path / "s1" / "http" / "tc_002__t0.jsonl"))
    m = run_cli("merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out",
                str(tmp_path / "all2"))
    assert m.returncode == 3 and "s1/http/tc_002__t0.jsonl: a cassette for no episode" \
        in m.stderr
    assert not (tmp_path / "all").exists() and not (tmp_path / "all2").exists()
