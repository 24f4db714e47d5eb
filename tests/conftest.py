"""Shared test helpers: run the real CLI in a subprocess, write small fixture files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


def run_cli(*args: str, cwd: Path | str = ROOT, env: dict | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``evaltape ARGS`` as a real subprocess; returns the completed process (text)."""
    full_env = dict(os.environ)
    full_env.pop("ANTHROPIC_API_KEY", None)
    full_env.pop("ANTHROPIC_BASE_URL", None)
    full_env["COLUMNS"] = "200"
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-m", "evaltape.cli", *args], cwd=str(cwd),
                          env=full_env, capture_output=True, text=True, timeout=timeout)


def write_json(path: Path, obj) -> Path:
    """Write ``obj`` as JSON to ``path`` (parents created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=1))
    return path


def write_jsonl(path: Path, rows) -> Path:
    """Write one JSON object per line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def make_trace(case_id: str, *, tools=(), final="ok", trial: int = 0, input: str = "q",
               stop_reason: str = "end_turn", steps: int | None = None) -> dict:
    """A minimal valid ``evaltape.trace/1`` object; ``tools`` is [(name, args)] or names."""
    calls = []
    for i, t in enumerate(tools):
        name, args = (t, {}) if isinstance(t, str) else t
        calls.append({"id": f"toolu_{i}", "name": name, "arguments": args, "result": "{}",
                      "is_error": False, "step": 1})
    return {"schema": "evaltape.trace/1", "case_id": case_id, "trial": trial, "input": input,
            "tool_calls": calls, "final_response": final, "stop_reason": stop_reason,
            "steps": steps if steps is not None else (2 if calls else 1), "messages": [],
            "usage": {"input_tokens": 1, "output_tokens": 1}, "latency_s": 0.1,
            "model": "m", "error": None}


def load_case(obj: dict):
    """A :class:`Case` read by the dataset loader from one case object (as in a file)."""
    from evaltape.grader.io.datasets import parse_case
    return parse_case(obj, path="<test>", line=1, position=0)


@pytest.fixture
def shared_dir() -> Path:
    """``../shared`` beside the repo; skips when absent (a user's fresh clone)."""
    if not SHARED.exists():
        pytest.skip("../shared is absent (only CI and developer machines have it)")
    return SHARED
