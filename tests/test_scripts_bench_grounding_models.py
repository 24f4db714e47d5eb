"""scripts/bench_grounding_models.py: grounding per model on the corpus's conversations.
The targets (at most 5% of successful conversations flagged, at least 90% of single
changed facts caught, per model) come from what a team needs to leave grounding on; the
conversation counts are read from the files with plain JSON here."""
from __future__ import annotations

import importlib.util
import json
import re
import sys

import pytest

from conftest import CORPUS, ROOT, corpus_mark

LEADERBOARD = CORPUS / "tau2-leaderboard"


def _script():
    sys.path.insert(0, str(ROOT / "scripts"))
    spec = importlib.util.spec_from_file_location(
        "bench_grounding_models", ROOT / "scripts" / "bench_grounding_models.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_missing_corpus_is_reported(tmp_path, capsys):
    assert _script().main(["--corpus", str(tmp_path / "none")]) == 0
    assert f"corpus not found: {tmp_path / 'none'}; nothing measured" in capsys.readouterr().out


@pytest.mark.slow
@corpus_mark(LEADERBOARD / "gpt-5.4_ironshell_airline.json",
             CORPUS / "tau-bench" / "historical_trajectories" / "gpt-4o-airline.json",
             what="τ-bench GPT-4o airline trajectories and τ²-bench leaderboard submissions")
def test_every_model_recall_and_successful_conversations(capsys):
    m = _script()
    sets, _missing = m.pool_sets(CORPUS)
    # successful conversations, counted from the files: reward 1
    taub = json.loads((CORPUS / "tau-bench/historical_trajectories/gpt-4o-airline.json")
                      .read_text())
    assert len(sets["gpt-4o"]) == sum(1 for t in taub if t["reward"] == 1) == 84
    g54 = json.loads((LEADERBOARD / "gpt-5.4_ironshell_airline.json").read_text())
    assert len(sets["gpt-5.4"]) == sum(
        1 for s in g54["simulations"] if s["reward_info"]["reward"] == 1) == 28
    assert m.main([]) == 0
    out = capsys.readouterr().out
    main_table, lomo = out.split("leave one model out")
    rows = {line.split()[0]: line for line in main_table.splitlines()[2:] if line.strip()}
    for model in ("gpt-4o", "gpt-4.1", "gpt-5.4"):
        (_flag, _n), (caught, made) = re.findall(r"(\d+)/(\d+)\s+=\s+[\d.]+%", rows[model])
        assert int(caught) / int(made) >= 0.9, rows[model]
    # GPT-4o and GPT-4.1: no successful conversation flagged
    assert " 0/84 " in rows["gpt-4o"] and " 0/10 " in rows["gpt-4.1"]
    # the kinds set aside for GPT-4o are those with a false claim in another model's row
    false_kinds = {k for model, row in rows.items() if model != "gpt-4o"
                   for k, n in re.findall(r"(\w+) (\d+)/\d+", row.split("%")[-1]) if int(n)}
    lomo_rows = {line.split()[0]: line for line in lomo.splitlines()[2:] if line.strip()}
    shown = lomo_rows["gpt-4o"].rsplit("  ", 1)[1]
    assert (set(shown.split(", ")) if shown != "none" else set()) == false_kinds


def test_leave_one_model_out_sets_aside_the_other_models_imprecise_kinds():
    from collections import Counter
    per_model = {
        # model a: a false number; conversations flagged on {number}, {name}, nothing
        "a": {"bad": Counter({"number": 1}), "convs": [{"number"}, {"name"}, set()],
              "changes": [frozenset({"number"}), frozenset({"date"}), frozenset()]},
        # model b: a false name; one conversation flagged on {number}
        "b": {"bad": Counter({"name": 2, "date": 0}), "convs": [{"number"}, set()],
              "changes": [frozenset({"name"}), frozenset({"number", "date"})]},
    }
    lines = _script().left_out(per_model)
    rows = {line.split()[0]: line for line in lines[2:]}
    # a, left out: b's false kind "name" set aside; flagged {number} and {name} - {name}:
    # 1 of 3; changes caught by number and date: 2 of 3
    assert "  1/3   = 33.3%" in rows["a"] and "2/3 = 66.7%" in rows["a"]
    assert rows["a"].endswith("name")
    # b, left out: a's "number" set aside: no conversation flagged; changes by name, and
    # by date beside number: 2 of 2
    assert "  0/2   =  0.0%" in rows["b"] and "2/2 = 100.0%" in rows["b"]
    assert rows["b"].endswith("number")
