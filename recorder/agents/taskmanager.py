"""The task-manager agent of the task-manager example suite: tasks in an in-memory store plus a
knowledge base.

Every episode gets a fresh copy of :data:`INITIAL_TASKS`, so episodes are independent and
replay deterministically.
"""
from __future__ import annotations

import copy
import json
from typing import Any

from evaltape.grader.model import Case

from ..loop import DEFAULT_MAX_STEPS, AgentSpec, run_tool_loop

SYSTEM_PROMPT = (
    "You are a task management assistant. Use the tools to create, list and update tasks "
    "and to answer policy questions from the knowledge base. Report what the tools "
    "returned; if a tool reports an error, say so plainly."
)
STATUSES = ("todo", "in_progress", "done")
PRIORITIES = ("low", "medium", "high")
INITIAL_TASKS = [
    {"id": "task-001", "title": "Set up CI pipeline", "priority": "high", "status": "in_progress"},
    {"id": "task-002", "title": "Write onboarding docs", "priority": "medium", "status": "todo"},
    {"id": "task-003", "title": "Fix login redirect bug", "priority": "high", "status": "done"},
    {"id": "task-004", "title": "Migrate billing database", "priority": "medium",
     "status": "in_progress"},
]
KNOWLEDGE_BASE = [
    {"id": "kb-expense", "title": "Expense policy",
     "text": "Expense reports must be submitted within 30 days of the expense date, with a "
             "receipt attached for every item."},
    {"id": "kb-pto", "title": "Time off policy",
     "text": "Paid time off requests need manager approval at least 2 weeks in advance."},
    {"id": "kb-security", "title": "Laptop security",
     "text": "Laptops must use full-disk encryption and lock after 5 minutes idle."},
]
TOOLS = [
    {"name": "create_task", "description": "Create a task.",
     "input_schema": {"type": "object", "properties": {
         "title": {"type": "string"},
         "priority": {"type": "string", "enum": list(PRIORITIES)}},
         "required": ["title"]}},
    {"name": "list_tasks", "description": "List tasks, optionally filtered by status.",
     "input_schema": {"type": "object", "properties": {
         "status": {"type": "string", "enum": list(STATUSES)}}}},
    {"name": "update_task_status", "description": "Change a task's status.",
     "input_schema": {"type": "object", "properties": {
         "task_id": {"type": "string"}, "status": {"type": "string", "enum": list(STATUSES)}},
         "required": ["task_id", "status"]}},
    {"name": "search_knowledge_base", "description": "Search company policy articles.",
     "input_schema": {"type": "object", "properties": {"query": {"type": "string"}},
                      "required": ["query"]}},
]


class TaskStore:
    """In-memory tasks for one episode; ``execute`` is the agent's tool executor."""

    def __init__(self) -> None:
        self.tasks = copy.deepcopy(INITIAL_TASKS)

    def execute(self, name: str, args: dict[str, Any]) -> str:
        """Run one tool; errors come back as ``{"success": false, "error": ...}`` JSON."""
        if name == "create_task":
            task = {"id": f"task-{len(self.tasks) + 1:03d}", "title": str(args.get("title", "")),
                    "priority": args.get("priority", "medium"), "status": "todo"}
            self.tasks.append(task)
            return json.dumps({"success": True, "created": task})
        if name == "list_tasks":
            status = args.get("status")
            tasks = [t for t in self.tasks if status in (None, t["status"])]
            return json.dumps({"success": True, "tasks": tasks})
        if name == "update_task_status":
            for t in self.tasks:
                if t["id"] == args.get("task_id"):
                    if args.get("status") not in STATUSES:
                        return json.dumps({"success": False,
                                           "error": f"invalid status {args.get('status')!r}"})
                    t["status"] = args["status"]
                    return json.dumps({"success": True, "updated": t})
            return json.dumps({"success": False,
                               "error": f"Task '{args.get('task_id')}' not found"})
        if name == "search_knowledge_base":
            words = [w for w in str(args.get("query", "")).lower().split() if len(w) > 2]
            hits = [a for a in KNOWLEDGE_BASE
                    if any(w.rstrip("s") in (a["title"] + " " + a["text"]).lower() for w in words)]
            return json.dumps({"success": True, "results": hits})
        return json.dumps({"success": False, "error": f"Unknown tool: {name}"})


SPEC = AgentSpec(system=SYSTEM_PROMPT, tools=TOOLS, execute=TaskStore().execute)


def run(case: Case, client: Any, *, model: str, stream: bool = False) -> dict:
    """Run the task-manager agent on one case with a fresh task store."""
    spec = AgentSpec(system=SYSTEM_PROMPT, tools=TOOLS, execute=TaskStore().execute)
    return run_tool_loop(client, spec, case.input, model=model,
                         max_steps=case.max_steps or DEFAULT_MAX_STEPS, stream=stream)


run.spec = SPEC  # type: ignore[attr-defined]
