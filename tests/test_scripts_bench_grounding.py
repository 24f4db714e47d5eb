"""The labelled grounding set: size, balance, and grounding's precision and recall on it."""
from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

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
