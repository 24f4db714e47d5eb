"""``tau2``: τ²-bench results files → traces + dataset.

Source shape (sierra-research/tau2-bench ``Results``): one JSON object ``{timestamp, info,
tasks, simulations}``. ``tasks[]``: ``{id, user_scenario: {instructions}, evaluation_criteria:
{actions: [{action_id, requestor, name, arguments, compare_args}], communicate_info, ...}}``.
``simulations[]``: ``{id, task_id, trial, termination_reason, reward_info: {reward,
action_checks, ...}, messages}``; messages have ``role`` assistant/user/tool, assistant and
user messages may carry ``tool_calls`` ``[{id, name, arguments, requestor}]`` and tool
messages ``{id, content, requestor, error}``.

Each simulation becomes one episode: case id ``<domain>.<task_id>`` (the domain from
``info.environment_info.domain_name``; the bare task id when absent), trial = ``trial``,
input = the user scenario's instructions (the same for every trial). The agent's calls
(``requestor: assistant``) are the trace's ``tool_calls``, each paired with its tool
message by id; the simulated user's own calls (telecom) are kept apart in the trace key
``user_tool_calls`` (not agent calls, not errors) and their results with them. The stop
reason is ``termination_reason`` verbatim. The agent's policy
(``info.environment_info.policy``) is the trace's ``system``, and the tool definitions
(``tool_defs``, when the file has them) its ``tools``.

The case carries ``expected_actions`` (the gold actions with ``action_id``,
``compare_args`` and ``requestor``), ``expected_outputs`` (``communicate_info``) and
``matching: "tau2"`` so the grader uses τ²'s semantics. The trace keeps τ²'s verdict:
``reference_label`` = the reward within 1e-6 of 1 (τ²-bench ``metrics/agent_metrics.py``
``is_successful``: ``1 - 1e-6 <= reward <= 1 + 1e-6``) and ``reference`` = ``{"source",
"reward", "action_checks": [{action_id, name, matched}], "state_match"?: bool}`` (the
file's own checks; ``state_match`` is ``reward_info.db_check.db_match`` when the file has
it, τ²'s end-state check, which the ``state_match`` metric reports).
"""
from __future__ import annotations

from typing import Any, Sequence

from evaltape.grader.importers.common import (NOT_READ, EpisodeError, EpisodeProblem, ImportResult,
                                              read_json_source, system_messages, system_text,
                                              tool_schemas,
                                              trace_from_messages)
from evaltape.grader.io.traces import INT_MAX

FORMAT = "tau2"
#: τ²'s success tolerance around a reward of 1.
TOLERANCE = 1e-6


def is_success(reward: float) -> bool:
    """τ² ``is_successful``: ``1 - 1e-6 <= reward <= 1 + 1e-6``."""
    return 1 - TOLERANCE <= reward <= 1 + TOLERANCE


def _instructions(task: dict, place: str) -> str:
    scenario = task.get("user_scenario") or {}
    ins = scenario.get("instructions") if isinstance(scenario, dict) else None
    if isinstance(ins, str):
        return ins
    if isinstance(ins, dict):
        parts = [f"{k}: {ins[k]}" for k in ("domain", "reason_for_call", "known_info",
                                            "unknown_info", "task_instructions")
                 if isinstance(ins.get(k), str)]
        if parts:
            return "\n\n".join(parts)
    raise EpisodeProblem("expected the user scenario's instructions (string or object)",
                         place + ".user_scenario.instructions")


def _case(task: Any, case_id: str, place: str) -> dict[str, Any]:
    if not isinstance(task, dict):
        raise EpisodeProblem("expected an object", place)
    crit = task.get("evaluation_criteria") or {}
    if not isinstance(crit, dict):
        raise EpisodeProblem("expected an object", place + ".evaluation_criteria")
    actions = []
    for i, a in enumerate(crit.get("actions") or []):
        w = f"{place}.evaluation_criteria.actions[{i}]"
        if not (isinstance(a, dict) and isinstance(a.get("name"), str)
                and isinstance(a.get("arguments", {}), dict)):
            raise EpisodeProblem("expected {action_id, name, arguments}", w)
        action = {"name": a["name"], "kwargs": a.get("arguments") or {},
                  "requestor": a.get("requestor") or "assistant"}
        if a.get("action_id") is not None:
            action["action_id"] = str(a["action_id"])
        if a.get("compare_args") is not None:
            action["compare_args"] = a["compare_args"]
        actions.append(action)
    info = crit.get("communicate_info") or []
    if not (isinstance(info, list) and all(isinstance(s, str) for s in info)):
        raise EpisodeProblem("expected a list of strings",
                             place + ".evaluation_criteria.communicate_info")
    return {"id": case_id, "input": _instructions(task, place),
            "expected_tools": [a["name"] for a in actions if a["requestor"] == "assistant"],
            "expected_actions": actions, "expected_outputs": info, "matching": "tau2",
            "metadata": {"source": "tau2-bench", "task_id": str(task.get("id")),
                         "reward_basis": crit.get("reward_basis")}}


def _convert(messages: Any, place: str) -> tuple[list[dict], list[dict]]:
    """τ² messages → (Anthropic-format agent conversation, the user's own tool calls)."""
    if not isinstance(messages, list):
        raise EpisodeProblem("expected a list of messages", place)
    out: list[dict] = []
    user_calls: dict[str, dict] = {}
    agent_ids: set[str] = set()
    for i, m in enumerate(messages):
        w = f"{place}[{i}]"
        if not isinstance(m, dict):
            raise EpisodeProblem("expected a message object", w)
        role, text = m.get("role"), m.get("content")
        if text is not None and not isinstance(text, str):
            raise EpisodeProblem("expected a string or null", w + ".content")
        calls = m.get("tool_calls") or []
        if not isinstance(calls, list):
            raise EpisodeProblem("expected a list", w + ".tool_calls")
        if role == "assistant":
            blocks: list[dict] = [{"type": "text", "text": text}] if text else []
            for j, c in enumerate(calls):
                if not (isinstance(c, dict) and isinstance(c.get("id"), str)
                        and isinstance(c.get("name"), str)
                        and isinstance(c.get("arguments"), dict)):
                    raise EpisodeProblem("expected {id, name, arguments}", f"{w}.tool_calls[{j}]")
                blocks.append({"type": "tool_use", "id": c["id"], "name": c["name"],
                               "input": c["arguments"]})
                agent_ids.add(c["id"])
            out.append({"role": "assistant", "content": blocks})
        elif role == "user":
            for j, c in enumerate(calls):
                if not (isinstance(c, dict) and isinstance(c.get("id"), str)
                        and isinstance(c.get("name"), str)
                        and isinstance(c.get("arguments"), dict)):
                    raise EpisodeProblem("expected {id, name, arguments}", f"{w}.tool_calls[{j}]")
                user_calls[c["id"]] = {"id": c["id"], "name": c["name"],
                                       "arguments": c["arguments"], "result": None,
                                       "is_error": False, "message": i}
            if text:
                out.append({"role": "user", "content": text})
        elif role == "tool":
            cid = m.get("id")
            if not isinstance(cid, str):
                raise EpisodeProblem("expected the id (a string) of the call answered", w + ".id")
            if m.get("requestor") == "user" or cid in user_calls:
                if cid not in user_calls:
                    raise EpisodeProblem(f"user tool result {cid!r} matches no user call",
                                         w + ".id")
                user_calls[cid].update(result=text or "", is_error=bool(m.get("error")))
                continue
            if cid not in agent_ids:
                raise EpisodeProblem(f"tool result {cid!r} matches no agent call", w + ".id")
            block = {"type": "tool_result", "tool_use_id": cid, "content": text or "",
                     "is_error": bool(m.get("error"))}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif role == "system":
            continue
        else:
            raise EpisodeProblem(f"unsupported role {role!r} (assistant, user, tool, system)",
                                 w + ".role")
    return out, list(user_calls.values())


def import_file(path: str, result: ImportResult, *, model: str | None = None) -> None:
    """Import one τ²-bench results file into ``result``.

    A file that is not JSON, or lacks ``tasks``/``simulations`` lists, is one error; a
    simulation that cannot be converted is one error naming its index and JSON path, and
    the others still import.
    """
    doc = read_json_source(path, result)
    if doc is NOT_READ:
        return
    if not (isinstance(doc, dict) and isinstance(doc.get("tasks"), list)
            and isinstance(doc.get("simulations"), list)):
        result.errors.append(EpisodeError(path, "", "expected a τ²-bench results object "
                                          "{info, tasks: [...], simulations: [...]}"))
        return
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    env = info.get("environment_info") if isinstance(info.get("environment_info"), dict) else {}
    domain = env.get("domain_name")
    agent = info.get("agent_info") if isinstance(info.get("agent_info"), dict) else {}
    llm = agent.get("llm")
    if model is None and llm is not None and not isinstance(llm, str):
        result.errors.append(EpisodeError(path, "info.agent_info.llm", "expected the model's "
                                          "name (a string); pass --model to name it"))
        return
    model = model or llm
    policy = system_text(env.get("policy"))
    tools = tool_schemas(env.get("tool_defs"))
    tasks = {str(t.get("id")): (i, t) for i, t in enumerate(doc["tasks"]) if isinstance(t, dict)}
    seen = {(t["case_id"], t["trial"]) for t in result.traces}
    for idx, sim in enumerate(doc["simulations"]):
        place = f"simulations[{idx}]"
        try:
            if not isinstance(sim, dict):
                raise EpisodeProblem("expected an object", place)
            task_id, trial = str(sim.get("task_id")), sim.get("trial", 0)
            if type(trial) is not int or not 0 <= trial <= INT_MAX:  # as traces are read
                raise EpisodeProblem(f"expected a whole number >= 0, got {trial!r}"[:80],
                                     place + ".trial")
            if task_id not in tasks:
                raise EpisodeProblem(f"task_id {task_id!r} names no task in tasks[]",
                                     place + ".task_id")
            case_id = f"{domain}.{task_id}" if isinstance(domain, str) and domain else task_id
            t_idx, task = tasks[task_id]
            case = _case(task, case_id, f"tasks[{t_idx}]")
            old = result.cases.get(case_id)
            if old is not None and (old["input"], old["expected_actions"]) != (
                    case["input"], case["expected_actions"]):
                raise EpisodeProblem("task differs from an earlier file's task of this id", place)
            if (case_id, trial) in seen:
                raise EpisodeProblem(f"duplicate episode: task {task_id} trial {trial}", place)
            reward_info = sim.get("reward_info")
            reward = reward_info.get("reward") if isinstance(reward_info, dict) else None
            if not isinstance(reward, (int, float)) or isinstance(reward, bool):
                raise EpisodeProblem("expected a number", place + ".reward_info.reward")
            raw_checks = reward_info.get("action_checks") or []
            if not isinstance(raw_checks, list):
                raise EpisodeProblem("expected a list", place + ".reward_info.action_checks")
            checks = []
            for j, c in enumerate(raw_checks):
                if not isinstance(c, dict):
                    continue
                action = c.get("action") or {}
                if not isinstance(action, dict) or not isinstance(action.get("name"), (str,
                                                                                     type(None))):
                    raise EpisodeProblem("expected an action object {action_id, name, ...}",
                                         f"{place}.reward_info.action_checks[{j}].action")
                checks.append({"action_id": str(action.get("action_id")),
                               "name": action.get("name"),
                               "matched": bool(c.get("action_match"))})
            messages, user_calls = _convert(sim.get("messages"), place + ".messages")
            stop = sim.get("termination_reason")
            reference = {"source": "tau2-bench reward", "reward": reward,
                         "action_checks": checks}
            db = reward_info.get("db_check")
            if isinstance(db, dict) and isinstance(db.get("db_match"), bool):
                # τ²'s own end-state check: the environment's database after the episode
                # against the one after the gold actions (state_match reads it)
                reference["state_match"] = db["db_match"]
            trace = trace_from_messages(
                messages, case_id=case_id, trial=trial, input_text=case["input"],
                stop_reason=stop if isinstance(stop, str) and stop else None,
                final="last_text", model=model, tools=tools,
                system=system_text([policy or "", system_messages(sim.get("messages")) or ""]),
                extra={"reference_label": is_success(float(reward)),
                       "reference": reference,
                       "user_tool_calls": user_calls,
                       "source": {"format": FORMAT, "path": path, "place": place}})
        except EpisodeProblem as p:
            result.errors.append(EpisodeError(path, p.place, p.message))
            continue
        seen.add((case_id, trial))
        result.add_case(case)
        result.traces.append(trace)


def import_tau2(paths: Sequence[str], model: str | None = None) -> ImportResult:
    """Import τ²-bench results files (see the module doc)."""
    result = ImportResult(sources=list(paths))
    for p in paths:
        import_file(p, result, model=model)
    return result
