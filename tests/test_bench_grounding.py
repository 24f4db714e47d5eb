"""The labelled grounding set: size, balance, and the measured confusion counts."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bench():
    spec = importlib.util.spec_from_file_location("bench_grounding",
                                                  ROOT / "scripts" / "bench_grounding.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_labelled_set_and_grounding_numbers(capsys):
    bench = _bench()
    data = bench.load(ROOT / "datasets" / "grounding_labelled.jsonl")
    assert len(data) >= 40
    assert sum(f for _c, f, _n in data) * 2 == len(data)      # half fabricated
    assert bench.main([]) == 0
    out = capsys.readouterr().out
    # 19 of 22 fabrications flagged; 1 of 22 grounded answers flagged (a derived number):
    # precision 19/20 = 0.950, recall 19/22 = 0.864
    row = next(line.split() for line in out.splitlines() if line.startswith("grounding "))
    assert row == ["grounding", "44", "19", "1", "3", "21", "0.950", "0.864"]


def test_prf_by_hand():
    bench = _bench()
    r = bench.prf([(True, True), (True, False), (False, True), (False, False)])
    assert (r["tp"], r["fp"], r["fn"], r["tn"], r["precision"], r["recall"]) == \
        (1, 1, 1, 1, 0.5, 0.5)
    assert bench.prf([(False, False)])["precision"] is None
