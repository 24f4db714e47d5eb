"""The IT Help Desk agent of the help-desk example suite: 5 tools over simulated users, servers and
docs."""
from __future__ import annotations

import json
from typing import Any

from evaltape.grader.model import Case

from ..conversation import User, run_case
from ..loop import AgentSpec

SYSTEM_PROMPT = (
    "You are an IT Help Desk agent. You help employees with technical issues "
    "by using the available tools. Always use tools to look up information or "
    "take actions rather than guessing. If you cannot resolve an issue with "
    "the available tools, create a support ticket for escalation. "
    "Be concise and professional in your responses."
)


def _tool(name: str, description: str, props: dict, required: list[str]) -> dict:
    return {"name": name, "description": description,
            "input_schema": {"type": "object", "properties": props, "required": required}}


TOOLS = [
    _tool("reset_password", "Reset a user's password and send them a temporary password via "
          "email. Requires the username of the account to reset.",
          {"username": {"type": "string",
                        "description": "The username of the account to reset the password for"}},
          ["username"]),
    _tool("unlock_account", "Unlock a user account that has been locked due to too many failed "
          "login attempts. Requires the username.",
          {"username": {"type": "string", "description": "The username of the account to unlock"}},
          ["username"]),
    _tool("check_server_status", "Check the current status of a server including uptime, CPU "
          "usage, and whether it is responding to requests. Requires the server name.",
          {"server_name": {"type": "string", "description": "The name of the server to check "
                           "(e.g., 'prod-api-01', 'staging-db-02')"}},
          ["server_name"]),
    _tool("search_documentation", "Search the internal IT documentation knowledge base for "
          "articles matching a query. Returns relevant article titles and summaries.",
          {"query": {"type": "string",
                     "description": "The search query to find relevant documentation"}},
          ["query"]),
    _tool("create_ticket", "Create a new support ticket in the ticketing system for issues that "
          "require further investigation or escalation.",
          {"title": {"type": "string", "description": "Brief title describing the issue"},
           "description": {"type": "string", "description": "Detailed description of the issue "
                           "and steps already taken"},
           "priority": {"type": "string", "enum": ["low", "medium", "high", "critical"],
                        "description": "Priority level of the ticket"}},
          ["title", "description", "priority"]),
]

SIMULATED_DATA: dict[str, dict[str, Any]] = {
    "users": {
        "jsmith": {"name": "John Smith", "email": "jsmith@company.com", "locked": True},
        "adoe": {"name": "Alice Doe", "email": "adoe@company.com", "locked": False},
        "bwilson": {"name": "Bob Wilson", "email": "bwilson@company.com", "locked": True},
    },
    "servers": {
        "prod-api-01": {"status": "healthy", "uptime": "45 days", "cpu": "23%"},
        "staging-db-02": {"status": "degraded", "uptime": "2 days", "cpu": "89%"},
        "prod-web-03": {"status": "down", "uptime": "0 days", "cpu": "0%"},
    },
    "docs": {
        "vpn": {"title": "VPN Setup Guide", "summary": "Steps to configure VPN access for remote "
                "workers. Requires submitting a VPN access request form to IT."},
        "password": {"title": "Password Policy", "summary": "Passwords must be 12+ characters "
                     "with uppercase, lowercase, number, and special character. Expires every "
                     "90 days."},
        "mfa": {"title": "MFA Enrollment", "summary": "Multi-factor authentication setup using "
                "the company authenticator app. Required for all employees."},
    },
}


def execute_tool(name: str, args: dict[str, Any]) -> str:
    """The help-desk example suite's ``execute_tool``: deterministic JSON answers from
    :data:`SIMULATED_DATA`.

    The data is read, never mutated, so every episode starts from the same state.
    """
    users, servers = SIMULATED_DATA["users"], SIMULATED_DATA["servers"]
    if name == "reset_password":
        username = args.get("username", "")
        user = users.get(username)
        if user is None:
            return json.dumps({"success": False, "error": f"User '{username}' not found in the system"})
        return json.dumps({"success": True, "message": f"Password reset for {user['name']}. "
                           f"Temporary password sent to {user['email']}"})
    if name == "unlock_account":
        username = args.get("username", "")
        user = users.get(username)
        if user is None:
            return json.dumps({"success": False, "error": f"User '{username}' not found in the system"})
        if not user["locked"]:
            return json.dumps({"success": True, "message": f"Account '{username}' is not locked. "
                               "No action needed."})
        return json.dumps({"success": True,
                           "message": f"Account '{username}' has been unlocked successfully"})
    if name == "check_server_status":
        server_name = args.get("server_name", "")
        server = servers.get(server_name)
        if server is None:
            return json.dumps({"success": False,
                               "error": f"Server '{server_name}' not found in inventory"})
        return json.dumps({"success": True, "server": server_name, "status": server["status"],
                           "uptime": server["uptime"], "cpu_usage": server["cpu"]})
    if name == "search_documentation":
        query = str(args.get("query", "")).lower()
        results = [doc for key, doc in SIMULATED_DATA["docs"].items()
                   if key in query or any(w in query for w in doc["title"].lower().split())]
        if not results:
            return json.dumps({"success": True, "results": [],
                               "message": "No documentation found matching your query"})
        return json.dumps({"success": True, "results": results})
    if name == "create_ticket":
        return json.dumps({"success": True, "ticket_id": "TKT-2024-0891",
                           "title": args.get("title", "Untitled"),
                           "priority": args.get("priority", "medium"),
                           "message": "Ticket created and assigned to IT support queue"})
    return json.dumps({"success": False, "error": f"Unknown tool: {name}"})


SPEC = AgentSpec(system=SYSTEM_PROMPT, tools=TOOLS, execute=execute_tool)


def run(case: Case, client: Any, *, model: str, stream: bool = False,
        user: User | None = None) -> dict:
    """Run the help-desk agent on one case (a conversation when the case has a ``user``);
    returns the loop's trace fields."""
    return run_case(client, SPEC, case, model=model, stream=stream, user=user)


run.spec = SPEC  # type: ignore[attr-defined]
