"""scripts/bench_grounding_mutations.py: candidates, changes and specs (expected values by
hand)."""
from __future__ import annotations

import importlib.util
import json
import random
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from evaltape.grader.model import Case, EpisodeContext, ToolCall, Trace

ROOT = Path(__file__).resolve().parent.parent


def _script():
    sys.path.insert(0, str(ROOT / "scripts"))
    spec = importlib.util.spec_from_file_location("bench_grounding_mutations",
                                                  ROOT / "scripts" / "bench_grounding_mutations.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _episode(answer: str, result: dict):
    trace = Trace(case_id="c", trial=0, input="hi", final_response=answer, stop_reason="end_turn",
                  steps=2, tool_calls=(ToolCall("t1", "get", {}, json.dumps(result), False, 1),))
    return EpisodeContext(trace=trace, case=Case(id="c", input="hi"))


def test_candidates_are_facts_a_result_states():
    m = _script()
    ctx = _episode("Reservation ZFA04Y for Mia costs $250 on May 20th, 2 passengers.",
                   {"reservation_id": "ZFA04Y", "first_name": "Mia", "price": 250,
                    "date": "2024-05-20", "passengers": [{"a": 1}, {"b": 2}]})
    ep = m.Episode(ctx)
    text = ctx.trace.final_response
    # "$250": the digits at 34..37; ZFA04Y at 12..18; May 20th as a whole; "2" before
    # "passengers" (a list of two); Mia is a first_name of the result
    assert m.candidates("amount", text, ep) == [(34, 37, "250")]
    assert m.candidates("id", text, ep) == [(12, 18, "ZFA04Y")]
    assert m.candidates("date", text, ep) == [(41, 49, "May 20th")]
    assert m.candidates("count", text, ep) == [(51, 52, "2")]
    assert m.candidates("name", text, ep) == [(23, 26, "Mia")]


def test_a_change_is_a_value_no_message_states():
    m = _script()
    ctx = _episode("It costs $250 on May 20th.", {"price": 250, "date": "2024-05-20"})
    ep = m.Episode(ctx)
    rng = random.Random(1)
    new = m.mutate("amount", "250", ep, rng)
    assert Decimal(new) not in ep.numbers and new != "250"
    new = m.mutate("date", "May 20th", ep, rng)
    day = int(new.split()[1][:-2])
    assert new.startswith("May ") and day != 20 and new.endswith(m._ordinal(day))


def test_a_bad_spec_line_names_its_line_and_field(tmp_path):
    m = _script()
    p = tmp_path / "specs.jsonl"
    p.write_text('{"file": "f", "episode": "e", "turn": 0, "kind": "amount", "start": 1, '
                 '"end": 2, "sha": "x", "replacement": "3"}\n{"file": "f"}\n')
    with pytest.raises(ValueError, match=r"specs.jsonl:2: field 'episode' is missing"):
        m.load_specs(p)
