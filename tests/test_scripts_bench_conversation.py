"""The conversation benchmark script: labeller agreement (Cohen's kappa by hand), label
files read strictly, and the real-set verdict rule."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _bench():
    spec = importlib.util.spec_from_file_location("bench_conversation",
                                                  ROOT / "scripts" / "bench_conversation.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_cohen_kappa_worked_by_hand():
    kappa = _bench().cohen_kappa
    # 10 items: 6 both 1, 2 both 0, 1 (1, 0), 1 (0, None)
    pairs = [(1, 1)] * 6 + [(0, 0)] * 2 + [(1, 0), (0, None)]
    # p_o = 8/10; rater A: 1 x7, 0 x3; rater B: 1 x6, 0 x3, None x1
    # p_e = 0.7*0.6 + 0.3*0.3 + 0*0.1 = 0.51; kappa = (0.8 - 0.51) / 0.49
    assert kappa(pairs) == pytest.approx(0.29 / 0.49)
    assert kappa([(1, 1), (1, 1)]) is None          # chance agreement is 1
    assert kappa([]) is None
    assert kappa([(1, 0), (0, 1)]) == pytest.approx(-1.0)


def test_real_verdicts_are_all_or_nothing():
    v = _bench().real_verdict
    assert (v(1.0), v(0.99), v(0.0), v(None)) == (1, 0, 0, None)


def test_label_lines_are_read_strictly(tmp_path):
    b = _bench()
    f = tmp_path / "l.jsonl"
    f.write_text(json.dumps({"key": "tau2/1/0", "context_retention": 1, "error_recovery": None,
                             "plan_adherence": 0, "why": {}}) + "\n")
    assert b.load_labels(f) == {"tau2/1/0": {"context_retention": 1, "error_recovery": None,
                                             "plan_adherence": 0}}
    f.write_text(f.read_text() + json.dumps({"key": "tau2/2/0", "context_retention": 2}) + "\n")
    with pytest.raises(b.LabelError, match=r"l.jsonl:2: context_retention: expected 0, 1 or "
                                           r"null, got 2"):
        b.load_labels(f)
    f.write_text("{not json\n")
    with pytest.raises(b.LabelError, match=r"l.jsonl:1: not JSON"):
        b.load_labels(f)


def test_committed_label_files_hold_labels_and_short_reasons_only():
    b = _bench()
    for path in b.LABELS:
        if not path.exists():
            pytest.skip(f"{path.name} not committed")
        for line in path.read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            assert set(obj) <= {"key", "context_retention", "error_recovery",
                                "plan_adherence", "why"}
            for why in (obj.get("why") or {}).values():
                assert len(str(why)) <= 300   # a short sentence, no transcript text


def test_per_model_pools_every_set_and_counts_only_agreed_labels(capsys):
    b = _bench()
    full = {"context_retention": 1, "error_recovery": None, "plan_adherence": 0}
    a1, b1 = {"k1": full, "k2": dict(full, plan_adherence=1)}, {"k1": full, "k2": full}
    a2 = b2 = {"k3": dict(full, context_retention=0)}
    scores = {"k1": {"context_retention": (1.0, ""), "error_recovery": (None, ""),
                     "plan_adherence": (0.5, ""), "model": "m"},
              "k2": {"context_retention": (0.0, ""), "error_recovery": (None, ""),
                     "plan_adherence": (1.0, ""), "model": "m"},
              "k3": {"context_retention": (1.0, ""), "error_recovery": (None, ""),
                     "plan_adherence": (None, ""), "model": "m"}}
    b.per_model([(a1, b1, ["k1", "k2"]), (a2, b2, ["k3"])], scores)
    line = capsys.readouterr().out.splitlines()[1]
    # context_retention: k1 1=1 hit, k2 label 1 score 0 miss, k3 label 0 score 1 miss: 1/3;
    # error_recovery: null = null on all three: 3/3; plan_adherence: k2 disputed (1 vs 0),
    # k1 label 0 score 0.5 hit, k3 label 0 score null miss: 1/2
    assert line == ("  m: context_retention 1/3 (0.333), error_recovery 3/3 (1.000), "
                    "plan_adherence 1/2 (0.500)")
