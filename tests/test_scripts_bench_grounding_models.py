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
    rows = {line.split()[0]: line for line in out.splitlines()[2:]}
    for model in ("gpt-4o", "gpt-4.1", "gpt-5.4"):
        (_flag, _n), (caught, made) = re.findall(r"(\d+)/(\d+)\s+=\s+[\d.]+%", rows[model])
        assert int(caught) / int(made) >= 0.9, rows[model]
    # GPT-4o and GPT-4.1: no successful conversation flagged
    assert " 0/84 " in rows["gpt-4o"] and " 0/10 " in rows["gpt-4.1"]
