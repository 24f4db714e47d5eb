"""``tau2``: τ²-bench results files (full and compact leaderboard shapes) → traces + dataset.
Each simulation is an episode: case ``<domain>.<task_id>``, ``trial``, input the scenario's
instructions (compact: the first user message); the agent's calls are ``tool_calls``, the
user's own kept apart in ``user_tool_calls``; the policy is ``system``. Cases carry
``expected_actions``, ``expected_outputs`` and ``matching: "tau2"``. ``reference_label`` is
``1 - 1e-6 <= reward <= 1 + 1e-6`` (τ²-bench ``is_successful``); ``reference`` keeps the
reward, action checks and ``state_match``. Repeated call ids pair by position within their
turn (renamed ``<id>~2``...). Shapes: docs/importers.md.
"""
from __future__ import annotations

from typing import Any, Sequence

from evaltape.grader.importers.common import (NOT_READ, EpisodeError, EpisodeProblem, ImportResult,
                                              Note, list_field, read_json_source, system_messages,
                                              system_text, tool_schemas, trace_from_messages)
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


def _gold_action(a: dict) -> dict[str, Any]:
    """One τ² gold action ``{action_id, name, arguments, requestor, compare_args}`` (checked
    by the caller) as a case's expected action."""
    action = {"name": a["name"], "kwargs": a.get("arguments") or {},
              "requestor": a.get("requestor") or "assistant"}
    if a.get("action_id") is not None:
        action["action_id"] = str(a["action_id"])
    if a.get("compare_args") is not None:
        action["compare_args"] = a["compare_args"]
    return action


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
        actions.append(_gold_action(a))
    info = crit.get("communicate_info") or []
    if not (isinstance(info, list) and all(isinstance(s, str) for s in info)):
        raise EpisodeProblem("expected a list of strings",
                             place + ".evaluation_criteria.communicate_info")
    return {"id": case_id, "input": _instructions(task, place),
            "expected_tools": [a["name"] for a in actions if a["requestor"] == "assistant"],
            "expected_actions": actions, "expected_outputs": info, "matching": "tau2",
            "metadata": {"source": "tau2-bench", "task_id": str(task.get("id")),
                         "reward_basis": crit.get("reward_basis")}}


def _call_ok(c: Any) -> bool:
    """Whether ``c`` is a τ² tool call ``{id, name, arguments}`` of the right types."""
    return (isinstance(c, dict) and isinstance(c.get("id"), str)
            and isinstance(c.get("name"), str) and isinstance(c.get("arguments"), dict))


def repeated_call_ids(messages: Any) -> bool:
    """Whether the agent's tool call ids repeat within one conversation (open-model servers
    such as vLLM reuse ``chatcmpl-tool-…`` ids across turns)."""
    seen: set[str] = set()
    for m in messages if isinstance(messages, list) else []:
        if not (isinstance(m, dict) and m.get("role") == "assistant"
                and isinstance(m.get("tool_calls"), list)):
            continue
        for c in m["tool_calls"]:
            cid = c.get("id") if isinstance(c, dict) else None
            if isinstance(cid, str):
                if cid in seen:
                    return True
                seen.add(cid)
    return False


def _convert(messages: Any, place: str,
             by_position: bool = False) -> tuple[list[dict], list[dict]]:
    """τ² messages → (Anthropic-format agent conversation, the user's own tool calls). With
    ``by_position``, a result pairs with the earliest unanswered call of its id in its own turn
    (repeats renamed ``<id>~2``...); otherwise with the agent call of its id.
    """
    if not isinstance(messages, list):
        raise EpisodeProblem("expected a list of messages", place)
    out: list[dict] = []
    user_calls: dict[str, dict] = {}
    agent_ids: set[str] = set()
    taken = {c["id"] for m in messages if isinstance(m, dict) and m.get("role") == "assistant"
             and isinstance(m.get("tool_calls"), list)
             for c in m["tool_calls"] if _call_ok(c)} if by_position else set()
    turn: list[list] = []  # by_position: [source id, unique id, answered] of the turn's calls
    turn_at = ""  # the place of the assistant message that opened the turn
    for i, m in enumerate(messages):
        w = f"{place}[{i}]"
        if not isinstance(m, dict):
            raise EpisodeProblem("expected a message object", w)
        role, text = m.get("role"), m.get("content")
        if text is not None and not isinstance(text, str):
            raise EpisodeProblem("expected a string or null", w + ".content")
        calls = list_field(m, "tool_calls", w)
        if role == "assistant":
            blocks: list[dict] = [{"type": "text", "text": text}] if text else []
            turn, turn_at = [], w
            for j, c in enumerate(calls):
                if not _call_ok(c):
                    raise EpisodeProblem("expected {id, name, arguments}", f"{w}.tool_calls[{j}]")
                cid = c["id"]
                if by_position and cid in agent_ids:
                    n = 2
                    while f"{cid}~{n}" in taken:
                        n += 1
                    cid = f"{cid}~{n}"
                    taken.add(cid)
                turn.append([c["id"], cid, False])
                blocks.append({"type": "tool_use", "id": cid, "name": c["name"],
                               "input": c["arguments"]})
                agent_ids.add(c["id"])
            out.append({"role": "assistant", "content": blocks})
        elif role == "user":
            for j, c in enumerate(calls):
                if not _call_ok(c):
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
            if by_position:
                call = next((c for c in turn if c[0] == cid and not c[2]), None)
                if call is None:
                    where = (f"the calls of {turn_at}" if turn_at
                             else "no earlier assistant message")
                    raise EpisodeProblem(
                        f"tool result {cid!r} matches no unanswered agent call of its turn "
                        f"({where}); this conversation repeats tool call ids, so a result "
                        "pairs with the calls of the assistant message before it", w + ".id")
                call[2] = True
                answered = call[1]
            elif cid not in agent_ids:
                raise EpisodeProblem(f"tool result {cid!r} matches no agent call", w + ".id")
            else:
                answered = cid
            block = {"type": "tool_result", "tool_use_id": answered, "content": text or "",
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


def _first_user_text(messages: Any) -> str:
    """The text of the conversation's first user message that has text ("" when none)."""
    for m in messages if isinstance(messages, list) else []:
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str) \
                and m["content"]:
            return m["content"]
    return ""


def _known_actions(reward_info: dict, place: str) -> list[dict] | None:
    """The gold actions a compact file's simulation reveals through its own
    ``reward_info.action_checks`` (each check's ``action``), or ``None`` when it has none
    (``action_checks`` null or empty): then nothing is known about them."""
    raw = list_field(reward_info, "action_checks", place + ".reward_info")
    actions = []
    for j, c in enumerate(raw):
        a = c.get("action") if isinstance(c, dict) else None
        if not (isinstance(a, dict) and isinstance(a.get("name"), str)
                and isinstance(a.get("arguments", {}), dict)):
            raise EpisodeProblem("expected {action: {action_id, name, arguments}}",
                                 f"{place}.reward_info.action_checks[{j}]")
        actions.append(_gold_action(a))
    return actions or None


def _compact_case(sim: dict, case_id: str, reward_info: dict, meta: dict,
                  place: str) -> dict[str, Any]:
    """The case of one simulation of a compact file: what the simulation holds (the task
    id, its first user message as input) and, only when its own checks reveal them, the
    gold actions (``matching: tau2`` then) and the facts to communicate."""
    case: dict[str, Any] = {"id": case_id, "input": _first_user_text(sim.get("messages"))}
    actions = _known_actions(reward_info, place)
    if actions is not None:
        case.update(expected_tools=[a["name"] for a in actions if a["requestor"] == "assistant"],
                    expected_actions=actions, matching="tau2")
    info = [c["info"] for c in reward_info.get("communicate_checks") or []
            if isinstance(c, dict) and isinstance(c.get("info"), str)]
    if info:
        case["expected_outputs"] = info
    case["metadata"] = {"source": "tau2-bench", "task_id": str(sim.get("task_id")),
                        "reward_basis": reward_info.get("reward_basis"), **meta}
    return case


def _header(doc: Any, model: str | None) -> dict[str, Any]:
    """What the file says of all its simulations: ``compact``, ``domain``, ``model``, ``policy``,
    ``tools``, ``tasks`` and, for a compact file, ``agent`` and its ``passed`` count.

    Raises:
        EpisodeProblem: neither results shape, or a header field of the wrong type.
    """
    if not (isinstance(doc, dict) and isinstance(doc.get("simulations"), list)
            and isinstance(doc.get("tasks", []), list)):
        raise EpisodeProblem("expected a τ²-bench results object: {info, tasks: [...], "
                             "simulations: [...]}, or the leaderboard's compact {domain, "
                             "agent, model, ..., simulations: [...]}")
    if "tasks" not in doc:
        for key in ("domain", "agent", "model"):
            if doc.get(key) is not None and not isinstance(doc[key], str):
                raise EpisodeProblem("expected a string" + (
                    " (the model's name); pass --model to name it" if key == "model" else ""),
                                     key)
        return {"compact": True, "domain": doc.get("domain"), "agent": doc.get("agent"),
                "model": model or doc.get("model"), "file_model": doc.get("model"),
                "passed": doc.get("passed"), "policy": None, "tools": None, "tasks": {}}
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    env = info.get("environment_info") if isinstance(info.get("environment_info"), dict) else {}
    agent = info.get("agent_info") if isinstance(info.get("agent_info"), dict) else {}
    llm = agent.get("llm")
    if model is None and llm is not None and not isinstance(llm, str):
        raise EpisodeProblem("expected the model's name (a string); pass --model to name it",
                             "info.agent_info.llm")
    return {"compact": False, "domain": env.get("domain_name"), "model": model or llm,
            "policy": system_text(env.get("policy")), "tools": tool_schemas(env.get("tool_defs")),
            "tasks": {str(t.get("id")): (i, t) for i, t in enumerate(doc["tasks"])
                      if isinstance(t, dict)}}


def _compact_notes(path: str, head: dict, result: ImportResult, labels: list[bool]) -> None:
    """The manifest's record of a compact file: what it lacked, what it says of itself."""
    said = ", ".join(f"{k} {head[k]}" for k in ("domain", "agent") if head[k])
    if head["file_model"]:
        said += (", " if said else "") + f"model {head['file_model']}"
    result.notes.append(Note(path, (
        "τ²-bench leaderboard compact results {domain, agent, model, total_tasks, passed, "
        f"pass_rate, simulations}}{' (' + said + ')' if said else ''}: no info and no tasks, "
        "so no task criteria; each case is built from its simulation (input: the first user "
        "message), with expected actions only where the simulation's own action_checks "
        "name them; reference labels from reward_info.reward")))
    facts: dict[str, Any] = {"shape": "tau2-compact", "lacks": ["info", "tasks"]}
    facts.update({k: head[k] for k in ("domain", "agent") if isinstance(head[k], str)})
    if head["file_model"]:
        facts["model"] = head["file_model"]
    result.source_facts[path] = facts
    passed = head["passed"]
    if isinstance(passed, int) and not isinstance(passed, bool) and passed != sum(labels):
        result.notes.append(Note(path, f"the file says passed {passed}; {sum(labels)} of the "
                                 f"{len(labels)} simulations imported have a reward within "
                                 "1e-6 of 1"))


def import_file(path: str, result: ImportResult, *, model: str | None = None) -> None:
    """Import one τ²-bench results file into ``result``: an unreadable or unknown file is one
    error, a bad simulation one error (index and path); compact-shape gaps, position-paired
    results and unscored simulations are noted in the manifest.
    """
    doc = read_json_source(path, result)
    if doc is NOT_READ:
        return
    try:
        head = _header(doc, model)
    except EpisodeProblem as p:
        result.errors.append(EpisodeError(path, p.place, p.message))
        return
    domain, tasks, compact = head["domain"], head["tasks"], head["compact"]
    meta = {"shape": "compact", **{k: head[k] for k in ("domain", "agent")
                                    if isinstance(head[k], str)}} if compact else {}
    seen = {(t["case_id"], t["trial"]) for t in result.traces}
    by_position: list[str] = []
    no_reward: list[str] = []
    labels: list[bool] = []
    for idx, sim in enumerate(doc["simulations"]):
        place = f"simulations[{idx}]"
        try:
            if not isinstance(sim, dict):
                raise EpisodeProblem("expected an object", place)
            task_id, trial = str(sim.get("task_id")), sim.get("trial", 0)
            if type(trial) is not int or not 0 <= trial <= INT_MAX:  # as traces are read
                raise EpisodeProblem(f"expected a whole number >= 0, got {trial!r}"[:80],
                                     place + ".trial")
            if not compact and task_id not in tasks:
                raise EpisodeProblem(f"task_id {task_id!r} names no task in tasks[]",
                                     place + ".task_id")
            if compact and sim.get("task_id") is None:
                raise EpisodeProblem("expected the simulation's task id", place + ".task_id")
            case_id = f"{domain}.{task_id}" if isinstance(domain, str) and domain else task_id
            reward_info = sim.get("reward_info")
            if reward_info is not None and not isinstance(reward_info, dict):
                raise EpisodeProblem("expected an object or null", place + ".reward_info")
            if compact:
                case = _compact_case(sim, case_id, reward_info or {}, meta, place)
            else:
                t_idx, task = tasks[task_id]
                case = _case(task, case_id, f"tasks[{t_idx}]")
            old = result.cases.get(case_id)
            if old is not None and not compact and (old["input"], old["expected_actions"]) != (
                    case["input"], case["expected_actions"]):
                raise EpisodeProblem("task differs from an earlier file's task of this id", place)
            if (case_id, trial) in seen:
                raise EpisodeProblem(f"duplicate episode: task {task_id} trial {trial}", place)
            if reward_info is None:
                # the run failed before τ² scored it (e.g. termination_reason
                # infrastructure_error): a failure, as τ²'s pass rate counts it
                reward, reward_info = None, {}
            else:
                reward = reward_info.get("reward")
                if not isinstance(reward, (int, float)) or isinstance(reward, bool):
                    raise EpisodeProblem("expected a number", place + ".reward_info.reward")
            raw_checks = list_field(reward_info, "action_checks", place + ".reward_info")
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
            repeated = repeated_call_ids(sim.get("messages"))
            messages, user_calls = _convert(sim.get("messages"), place + ".messages",
                                            by_position=repeated)
            stop = sim.get("termination_reason")
            reference = {"source": "tau2-bench reward", "reward": reward,
                         "action_checks": checks}
            db = reward_info.get("db_check")
            if isinstance(db, dict) and isinstance(db.get("db_match"), bool):
                # τ²'s own end-state check: the environment's database after the episode
                # against the one after the gold actions (state_match reads it)
                reference["state_match"] = db["db_match"]
            policy = head["policy"] or (system_text(sim.get("policy")) if compact else None)
            label = reward is not None and is_success(float(reward))
            trace = trace_from_messages(
                messages, case_id=case_id, trial=trial,
                input_text=_first_user_text(sim.get("messages")) if compact else case["input"],
                stop_reason=stop if isinstance(stop, str) and stop else None,
                final="last_text", model=head["model"], tools=head["tools"],
                system=system_text([policy or "", system_messages(sim.get("messages")) or ""]),
                extra={"reference_label": label,
                       "reference": reference,
                       "user_tool_calls": user_calls,
                       "source": {"format": FORMAT, "path": path, "place": place}})
        except EpisodeProblem as p:
            result.errors.append(EpisodeError(path, p.place, p.message))
            continue
        seen.add((case_id, trial))
        result.add_episode(case, trace)
        labels.append(label)
        if repeated:
            by_position.append(place)
        if reward is None:
            no_reward.append(f"{place} (task {task_id}, trial {trial}, termination_reason "
                             f"{stop!r})")
    if compact:
        _compact_notes(path, head, result, labels)
    if by_position:
        result.notes.append(Note(path, (
            f"{len(by_position)} of {len(doc['simulations'])} conversation(s) repeat tool "
            "call ids across turns; their tool results were paired with calls by position "
            "(each result with the calls of the assistant message before it, in order), "
            "and a repeated id is written <id>~2, <id>~3...")))
    if no_reward:
        result.notes.append(Note(path, (
            f"{len(no_reward)} simulation(s) have no reward_info (not scored by τ²-bench): "
            f"{'; '.join(no_reward)}; imported with reference_label false and reference "
            "reward null, as τ²'s pass rate counts them")))


def import_tau2(paths: Sequence[str], model: str | None = None) -> ImportResult:
    """Import τ²-bench results files (see the module doc)."""
    result = ImportResult(sources=list(paths))
    for p in paths:
        import_file(p, result, model=model)
    return result
