"""The labelled grounding set: size, balance, and grounding's precision and recall on it."""
from __future__ import annotations

import hashlib
import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "grounding" / "episodes.jsonl"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_grounding",
                                                  ROOT / "scripts" / "bench_grounding.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_labelled_set_size_and_balance():
    data = _bench().load(DATA)
    scored = [(c, f) for c, f, _n, scope in data if scope == "grounding"]
    assert len(scored) >= 100
    assert sum(f for _c, f in scored) * 2 == len(scored)     # half fabricated
    ids = Counter(c.trace.case_id for c, _f, _n, _s in data)
    assert max(ids.values()) == 1                              # ids are unique
    # the judge-only lines are fabrications (nothing checkable), not grounded answers
    assert all(f for _c, f, _n, scope in data if scope == "judge")


@pytest.mark.slow
def test_grounding_precision_and_recall_at_least_095(capsys):
    bench = _bench()
    assert bench.main([]) == 0
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.startswith("grounding "))
    n, tp, fp, fn, tn = (int(x) for x in row[1:6])
    assert n == tp + fp + fn + tn
    assert tp / (tp + fp) >= 0.95 and tp / (tp + fn) >= 0.95, row


def test_bad_data_line_is_named(tmp_path, capsys):
    bad = tmp_path / "e.jsonl"
    bad.write_text('{"id": "a"}\n')
    assert _bench().main(["--data", str(bad)]) == 3
    assert f"{bad}:1: bad episode" in capsys.readouterr().err


def test_prf_by_hand():
    bench = _bench()
    r = bench.prf([(True, True), (True, False), (False, True), (False, False)])
    assert (r["tp"], r["fp"], r["fn"], r["tn"], r["precision"], r["recall"]) == \
        (1, 1, 1, 1, 0.5, 0.5)
    assert bench.prf([(False, False)])["precision"] is None


def test_details_do_not_depend_on_hash_order():
    # every score and details string of the labelled set, under two hash seeds
    import os
    import subprocess
    import sys
    code = ("import sys; sys.path.insert(0, 'scripts'); from pathlib import Path; "
            "import bench_grounding as b; "
            "from evaltape.grader.metrics.grounding import Grounding; "
            "[print(c.trace.case_id, Grounding().score(c)) for c, _f, _n, _s in "
            "b.load(Path('bench/grounding/episodes.jsonl'))]")
    outs = [subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                           text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout
            for seed in ("1", "2")]
    assert outs[0] == outs[1] and outs[0].count("\n") == len(_bench().load(DATA))


CORPUS = ROOT.parent / "shared" / "corpus"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus absent: {CORPUS}")


def test_a_missing_corpus_is_reported_and_the_rest_still_runs(tmp_path, capsys):
    assert _bench().main(["--corpus", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].startswith("metric ")           # the hand-written table ran
    assert (f"corpus not found: {tmp_path / 'none'} (set EVALTAPE_CORPUS or pass --corpus); "
            "real conversations not measured") in out


@pytest.mark.parametrize("line,words", [
    ('{"file": "f", "episode": "e", "split": "dev", "kind": "name", "start": 3, '
     '"claim_sha": "00000000", "label": "invention"}', "field 'note' is missing"),
    ('{"file": "f", "episode": "e", "split": "test", "kind": "name", "start": 3, '
     '"claim_sha": "00000000", "label": "invention", "note": "x"}', "field 'split'"),
    ('{"file": "f", "episode": "e", "split": "dev", "kind": "name", "start": 3, '
     '"claim_sha": "00000000", "label": "maybe", "note": "x"}', "field 'label'"),
])
def test_a_bad_label_line_is_named(tmp_path, capsys, line, words):
    (tmp_path / "corpus").mkdir()
    labels = tmp_path / "labels.jsonl"
    labels.write_text(line + "\n")
    assert _bench().main(["--corpus", str(tmp_path / "corpus"), "--labels", str(labels)]) == 3
    err = capsys.readouterr().err
    assert f"{labels}:1: {words}" in err


def test_the_labels_hold_no_conversation_text():
    # each line names a claim by file, episode, offset and a hash of its text, never the
    # text: the corpus stays out of the repository
    bench = _bench()
    for line in (ROOT / "bench" / "grounding" / "corpus_labels.jsonl").read_text().splitlines():
        o = json.loads(line)
        assert tuple(o) == bench.LABEL_KEYS and len(o["claim_sha"]) == 8
    assert bench.claim_sha("Las Vegas") == hashlib.sha256(b"Las Vegas").hexdigest()[:8]


def test_held_out_episodes_by_hand():
    bench = _bench()
    # τ-bench tasks 3, 7, ... 47 (3 modulo 4), τ² tasks with an odd id
    assert [n for n in range(12) if bench.held_out("taubench", f"task_{n:03d}")] == [3, 7, 11]
    assert bench.held_out("tau2", "airline.29") and not bench.held_out("tau2", "airline.30")


@pytest.mark.slow
@needs_corpus
def test_real_conversations_precision_recall_and_false_alarms(capsys):
    # worked out from the labels: dev: one invention flagged (a refund called a charge);
    # the correct bag count ("4 free checked bags", labelled a false alarm) is no longer
    # flagged: the reply before it derived 4 from "2 per passenger" and the reservation's
    # two passengers, and no tool result came back in between; the 3 false alarms of a
    # failed episode (task_008#t1: a total of two subtotals the answer states in earlier
    # list items separated by blank lines, 327 + 1000 = 1327 twice, and a difference of
    # it, 1625 − 1327 = 298) are gone: both operands of each are the answer's own sums of
    # money, stated before the claim; held out: τ-bench 2
    # inventions flagged (a waiver that was a refund, a charge of the wrong amount), one
    # missed (a cost said to be charged where money went back), one false alarm (a city an
    # airport code stands for); τ²: no false alarm left (its last one, "your travel
    # insurance remains active" of a reservation whose "insurance" is "yes", is a status
    # of a subject the record sets to yes; its other two, the field word "Arrives" read as
    # a name, are no claims). Successful episodes: τ-bench 84 (69 dev, 15 held out), τ² 10
    # (5 and 5).
    assert _bench().main([]) == 0
    out = capsys.readouterr().out
    rows = {line[:28].strip(): line[28:].split() for line in out.splitlines()
            if line.startswith(("τ-bench", "τ²", "both files"))}
    assert rows["τ-bench airline, dev"] == ["1", "0", "0", "1.000", "1.000", "0/69", "=",
                                            "0.0%"]
    assert rows["τ-bench airline, held-out"][:5] == ["2", "1", "1", "0.667", "0.667"]
    assert rows["τ-bench airline, held-out"][5] == "0/15"
    assert rows["τ² airline, held-out"][:3] == ["0", "0", "0"]
    assert rows["τ² airline, held-out"][5:] == ["0/5", "=", "0.0%"]
    assert rows["τ-bench airline, both splits"][5:] == ["0/84", "=", "0.0%"]
    assert rows["τ² airline, both splits"][5:] == ["0/10", "=", "0.0%"]
    assert "unlabelled" not in out
