"""Where evaltape's ``trajectory_match`` differs from agentevals' and openevals' trajectory match,
measured by running the peers themselves.

Usage, in a virtual environment of its own (the peers are not evaltape dependencies)::

    python -m venv /tmp/peers && /tmp/peers/bin/pip install . agentevals==0.0.9 \\
        openevals==0.2.2 pytest
    /tmp/peers/bin/python scripts/peer_trajectory.py examples
    /tmp/peers/bin/pip download agentevals==0.0.9 --no-binary :all: --no-deps -d /tmp/sd
    tar xzf /tmp/sd/agentevals-0.0.9.tar.gz -C /tmp/sd
    /tmp/peers/bin/python scripts/peer_trajectory.py suite \\
        /tmp/sd/agentevals-0.0.9/tests/test_trajectory.py

``examples`` scores each example of docs/metrics.md ("Where trajectory matching differs from
openevals and agentevals") with agentevals, openevals and evaltape and prints the three
scores. ``suite`` runs a peer's own test file under pytest with every evaluator it builds
(``create_trajectory_match_evaluator``) wrapped: each evaluation is also scored by openevals
and by evaltape on the same calls (the same trajectory mode, argument mode and per-tool
overrides; and evaltape's own default argument mode when the test leaves it at the peer's
default), and the agreement counts are printed. The peer's test keeps asserting the peer's
own result, so a run whose tests pass measures the peers as their authors intended.

The messages are read with agentevals' own normaliser (OpenAI or LangChain messages), each
assistant message with tool calls is one evaltape step (its calls one parallel step), and
each reference call is an expected call with literal arguments.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

#: evaltape's default argument mode (the peers' default is ``exact``)
EVALTAPE_DEFAULT_ARGS = "superset"


def _calls(messages: Any) -> list[tuple[str, dict, int]]:
    """``(name, arguments, step)`` of every tool call in a peer's messages."""
    from agentevals.trajectory.utils import _normalize_to_openai_messages_list
    out, step = [], 0
    for m in _normalize_to_openai_messages_list(messages):
        if m.get("tool_calls"):
            step += 1
            for tc in m["tool_calls"]:
                f = tc["function"]
                out.append((f["name"], json.loads(f["arguments"]), step))
    return out


def evaltape_score(outputs: Any, reference: Any, mode: str, args_mode: str,
                   overrides: Any) -> Any:
    """evaltape's ``trajectory_match`` score of a peer's ``(outputs, reference_outputs)``."""
    from evaltape.grader.metrics.trajectory_match import TrajectoryMatch
    from evaltape.grader.model import Case, EpisodeContext, ExpectedCall, ToolCall, Trace
    actual = tuple(ToolCall(f"c{i}", n, a, step=s)
                   for i, (n, a, s) in enumerate(_calls(outputs)))
    expected = tuple(ExpectedCall(n, {k: (v,) for k, v in a.items()})
                     for n, a, _ in _calls(reference))
    trace = Trace("x", 0, "q", actual, "ok", "end_turn", 1)
    metric = TrajectoryMatch(mode=mode, args_mode=args_mode, overrides=overrides or {})
    return metric.score(EpisodeContext(trace, Case(id="x", input="q", expected_calls=expected)))


def _msgs(*calls: tuple[str, dict]) -> dict:
    return {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": n, "arguments": json.dumps(a)}} for n, a in calls]}


_U = {"role": "user", "content": "q"}
_T = {"role": "tool", "content": "ok"}
#: The documented examples: ``(name, trajectory mode, argument mode or None for each
#: tool's default, overrides, outputs, reference outputs)``.
EXAMPLES = [
    ("strict: the calls in two turns, expected in one", "strict", None, None,
     [_U, _msgs(("lookup", {"id": 1})), _T, _msgs(("notify", {"to": "a"})), _T],
     [_U, _msgs(("lookup", {"id": 1}), ("notify", {"to": "a"})), _T, _T]),
    ("strict: an extra text-only turn", "strict", None, None,
     [_U, {"role": "assistant", "content": "Let me check."}, _msgs(("lookup", {"id": 1})), _T],
     [_U, _msgs(("lookup", {"id": 1})), _T]),
    ("subset mode, superset arguments", "subset", "superset", None,
     [_U, _msgs(("search", {"q": "vpn", "limit": 5})), _T],
     [_U, _msgs(("search", {"q": "vpn"})), _T]),
    ("unordered mode, superset arguments", "unordered", "superset", None,
     [_U, _msgs(("search", {"q": "vpn", "limit": 5})), _T],
     [_U, _msgs(("search", {"q": "vpn"})), _T]),
    ("superset mode, superset arguments: pairing", "superset", "superset", None,
     [_U, _msgs(("get", {"id": 1, "full": True}), ("get", {"id": 1})), _T, _T],
     [_U, _msgs(("get", {"id": 1}), ("get", {"id": 1, "full": True})), _T, _T]),
    ("typed equality: 1 for true", "strict", "exact", None,
     [_U, _msgs(("set_flag", {"on": 1})), _T],
     [_U, _msgs(("set_flag", {"on": True})), _T]),
    ("default argument mode: an extra argument", "strict", None, None,
     [_U, _msgs(("search", {"q": "vpn", "limit": 5})), _T],
     [_U, _msgs(("search", {"q": "vpn"})), _T]),
    ("key path override, the key absent on both sides", "strict", "exact",
     {"lookup_policy": ["time.start"]},
     [_U, _msgs(("lookup_policy", {"time": {"end": "x"}})), _T],
     [_U, _msgs(("lookup_policy", {"time": {"end": "x"}})), _T]),
]


def examples() -> int:
    """Print each example's score by agentevals, openevals and evaltape."""
    import agentevals.trajectory.match as am
    import openevals.trajectory.match as om
    for name, mode, args, overrides, out, ref in EXAMPLES:
        kw: dict[str, Any] = {"trajectory_match_mode": mode}
        if args:
            kw["tool_args_match_mode"] = args
        if overrides:
            kw["tool_args_match_overrides"] = overrides
        ae = am.create_trajectory_match_evaluator(**kw)(outputs=out, reference_outputs=ref)
        oe = om.create_trajectory_match_evaluator(**kw)(outputs=out, reference_outputs=ref)
        et = evaltape_score(out, ref, mode, args or EVALTAPE_DEFAULT_ARGS, overrides)
        print(f"{name}: agentevals {int(ae['score'])}, openevals {int(oe['score'])}, "
              f"evaltape {et.value:g}")
    return 0


_PLUGIN = '''
import json, os, sys
sys.path.insert(0, {here!r})
import agentevals.trajectory.match as am
import openevals.trajectory.match as om
from peer_trajectory import EVALTAPE_DEFAULT_ARGS, evaltape_score
_real = am.create_trajectory_match_evaluator

def wrapped(*, trajectory_match_mode="strict", tool_args_match_mode=None,
            tool_args_match_overrides=None, **kw):
    given = tool_args_match_mode is not None
    args = tool_args_match_mode or "exact"
    spec = dict(trajectory_match_mode=trajectory_match_mode, tool_args_match_mode=args,
                tool_args_match_overrides=tool_args_match_overrides)
    theirs, openev = _real(**spec, **kw), om.create_trajectory_match_evaluator(**spec)

    def evaluator(*, outputs, reference_outputs, **kw2):
        r = theirs(outputs=outputs, reference_outputs=reference_outputs, **kw2)
        o = openev(outputs=outputs, reference_outputs=reference_outputs)
        row = {{"test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0],
               "args_given": given, "agentevals": float(r["score"]),
               "openevals": float(o["score"]),
               "evaltape": evaltape_score(outputs, reference_outputs, trajectory_match_mode,
                                          args, tool_args_match_overrides).value}}
        if not given:
            row["evaltape_default"] = evaltape_score(
                outputs, reference_outputs, trajectory_match_mode, EVALTAPE_DEFAULT_ARGS,
                tool_args_match_overrides).value
        with open({log!r}, "a") as f:
            f.write(json.dumps(row) + "\\n")
        return r
    return evaluator

am.create_trajectory_match_evaluator = wrapped
'''


def suite(test_file: str) -> int:
    """Run a peer's trajectory test file with every evaluator wrapped; print agreement."""
    import pytest
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.jsonl"
        plugin = Path(tmp) / "peer_shim.py"
        plugin.write_text(_PLUGIN.format(here=str(Path(__file__).parent), log=str(log)))
        sys.path.insert(0, tmp)
        os.environ.setdefault("LANGSMITH_TEST_TRACKING", "false")
        code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "peer_shim", test_file])
        rows = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    tests = len({r["test"] for r in rows})
    same = sum(r["agentevals"] == r["evaltape"] for r in rows)
    oe = sum(r["openevals"] == r["agentevals"] for r in rows)
    default = [r for r in rows if not r["args_given"]]
    same_default = sum(r["agentevals"] == r["evaltape_default"] for r in default)
    print(f"{len(rows)} evaluations in {tests} tests (pytest exit {code}): evaltape with the "
          f"same modes agrees on {same}; openevals agrees with agentevals on {oe}; of the "
          f"{len(default)} that leave the argument mode at its default, evaltape's own "
          f"default ({EVALTAPE_DEFAULT_ARGS}) agrees on {same_default}")
    for r in rows:
        if r["agentevals"] != r["evaltape"]:
            print(f"  differs: {r['test']}: agentevals {r['agentevals']}, evaltape "
                  f"{r['evaltape']}")
    return int(code)


def main(argv: list[str]) -> int:
    """``examples`` or ``suite TEST_FILE``; exit 2 on a usage error."""
    if argv[:1] == ["examples"]:
        return examples()
    if argv[:1] == ["suite"] and len(argv) == 2:
        return suite(argv[1])
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
