"""scripts/local_model.py's llama-server flags: two slots of 8,192 tokens, a cap on one answer.

The numbers are worked out by hand: a conversation sends the agent's requests and its
simulated user's one after the other, so two slots keep both prompts cached; the one slot
used before had 8,192 tokens of context, and llama-server splits ``-c`` evenly between
the slots (``-c 16384 -np 2``: 16384 / 2 = 8192 each); the agents ask for at most 1,024
tokens per answer (``AgentSpec.max_tokens``) and the simulated user for 512, so a cap of
1,024 cuts neither. Threads: one core is left free (2 cores: 1 thread, 8 cores: 7), since
one of llama.cpp's threads stalled by another process stalls the others.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("local_model_script",
                                                  ROOT / "scripts" / "local_model.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_two_slots_each_with_the_context_one_slot_had():
    args = _script().server_args("2", "qwen2.5-coder-1.5b-instruct-q4_k_m")
    slots, ctx = args[args.index("-np") + 1], args[args.index("-c") + 1]
    assert slots == "2"
    assert int(ctx) // int(slots) == 8192


def test_an_answer_is_capped_and_a_silent_client_dropped():
    args = _script().server_args("2", "qwen2.5-coder-1.5b-instruct-q4_k_m")
    assert args == ["-c", "16384", "-np", "2", "-n", "1024", "-to", "600", "-t", "2",
                    "--jinja", "--alias", "qwen2.5-coder-1.5b-instruct-q4_k_m"]


def test_the_manifest_records_the_flags_the_server_was_started_with(monkeypatch, tmp_path):
    mod = _script()
    monkeypatch.setattr(mod, "CACHE", tmp_path)
    monkeypatch.setattr(mod, "server_version", lambda binary: "version: test")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "serving.json").write_text('{"model": "qwen1.5b", "threads": "2"}')
    facts = mod.manifest_facts("qwen1.5b")
    assert facts["server_args"] == ("-c 16384 -np 2 -n 1024 -to 600 -t 2 --jinja "
                                    "--alias qwen2.5-coder-1.5b-instruct-q4_k_m")


def test_threads_leave_a_core_free_unless_set():
    threads = _script().default_threads
    assert [threads(2, None), threads(8, None), threads(1, None), threads(None, None)] == [
        "1", "7", "1", "1"]
    assert threads(2, "2") == "2"
