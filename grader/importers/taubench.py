"""``taubench``: tau-bench trajectory files (a JSON list of ``{task_id, trial, reward, info,
traj}``) → traces + dataset. Each entry is an episode: case ``task_NNN`` (file-stem prefixed
when several files), input the task ``instruction``, ``system`` the policy message; the case
carries ``expected_actions``, ``expected_tools``, ``expected_args`` and ``expected_outputs``.
``reference_label`` is ``1 - 1e-6 <= reward <= 1 + 1e-6`` (tau-bench ``is_successful``).
"""
from __future__ import annotations

from typing import Any

from evaltape.grader.importers.common import (NOT_READ, EpisodeError, EpisodeProblem, ImportResult,
                                              list_field, read_json_source, system_messages,
                                              trace_from_messages)
from evaltape.grader.io.traces import INT_MAX
from evaltape.grader.importers.openai_chat import openai_to_anthropic

FORMAT = "taubench"
#: tau-bench's success tolerance around a reward of 1.
TOLERANCE = 1e-6


def is_success(reward: float) -> bool:
    """tau-bench ``is_successful``: ``1 - 1e-6 <= reward <= 1 + 1e-6``."""
    return 1 - TOLERANCE <= reward <= 1 + TOLERANCE


def _case(task: Any, case_id: str, place: str) -> dict[str, Any]:
    if not isinstance(task, dict):
        raise EpisodeProblem("expected an object", place + ".info.task")
    instruction = task.get("instruction")
    if not isinstance(instruction, str):
        raise EpisodeProblem("expected a string", place + ".info.task.instruction")
    actions = list_field(task, "actions", place + ".info.task")
    norm = []
    for i, a in enumerate(actions):
        if not (isinstance(a, dict) and isinstance(a.get("name"), str)
                and isinstance(a.get("kwargs", {}), dict)):
            raise EpisodeProblem("expected {name, kwargs}", f"{place}.info.task.actions[{i}]")
        norm.append({"name": a["name"], "kwargs": a.get("kwargs", {})})
    first_args: dict[str, Any] = {}
    for a in norm:
        first_args.setdefault(a["name"], a["kwargs"])
    outputs = task.get("outputs") or []
    if not (isinstance(outputs, list) and all(isinstance(o, str) for o in outputs)):
        raise EpisodeProblem("expected a list of strings", place + ".info.task.outputs")
    return {"id": case_id, "input": instruction,
            "expected_tools": [a["name"] for a in norm], "expected_args": first_args,
            "expected_actions": norm, "expected_outputs": outputs,
            "metadata": {"source": "tau-bench", "user_id": task.get("user_id")}}


def import_file(path: str, result: ImportResult, *, prefix: str = "",
                model: str | None = None) -> None:
    """Import one tau-bench trajectory file into ``result``: a non-JSON or non-list file is one
    error, an unconvertible entry one error (entry and JSON path); the others still import.
    """
    doc = read_json_source(path, result)
    if doc is NOT_READ:
        return
    if not isinstance(doc, list):
        result.errors.append(EpisodeError(path, "", "expected a JSON list of trajectories"))
        return
    seen: set[tuple[str, int]] = set()
    for idx, entry in enumerate(doc):
        place = f"[{idx}]"
        try:
            if not isinstance(entry, dict):
                raise EpisodeProblem("expected an object", place)
            task_id, trial = entry.get("task_id"), entry.get("trial", 0)
            if not isinstance(task_id, int) or not isinstance(trial, int):
                raise EpisodeProblem("task_id and trial must be integers", place)
            if type(trial) is not int or not 0 <= trial <= INT_MAX:  # as traces are read
                raise EpisodeProblem(f"expected a whole number >= 0, got {trial!r}"[:80],
                                     place + ".trial")
            place = f"[{idx}] (task {task_id} trial {trial})"
            reward = entry.get("reward")
            if not isinstance(reward, (int, float)) or isinstance(reward, bool):
                raise EpisodeProblem("expected a number", place + ".reward")
            case_id = f"{prefix}task_{task_id:03d}"
            case = _case((entry.get("info") or {}).get("task"), case_id, place)
            if (case_id, trial) in seen:
                raise EpisodeProblem(f"duplicate episode: task {task_id} trial {trial}", place)
            old = result.cases.get(case_id)
            if old is not None and (old["input"], old["expected_actions"]) != (
                    case["input"], case["expected_actions"]):
                raise EpisodeProblem("info.task differs from an earlier trial of this task",
                                     place)
            messages = openai_to_anthropic(entry.get("traj"), place + ".traj")
            trace = trace_from_messages(
                messages, case_id=case_id, trial=trial, input_text=case["input"],
                final="last_text", model=model, system=system_messages(entry.get("traj")),
                extra={"reference_label": is_success(reward),
                       "reference": {"source": "tau-bench reward", "reward": reward},
                       "source": {"format": FORMAT, "path": path, "place": f"[{idx}]"}})
        except EpisodeProblem as p:
            result.errors.append(EpisodeError(path, p.place, p.message))
            continue
        seen.add((case_id, trial))
        result.add_episode(case, trace)
