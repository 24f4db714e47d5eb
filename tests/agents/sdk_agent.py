"""An external agent for the proxy tests: the anthropic SDK in its own process.

Usage: ``python sdk_agent.py INPUT_FILE [--stream]``. It knows nothing of evaltape: it reads
the task from INPUT_FILE, talks to ``ANTHROPIC_BASE_URL`` with ``ANTHROPIC_API_KEY`` (both
read by the SDK itself), runs a tool loop (every tool answers
``{"success": true, "tool": NAME, ...arguments}``) and prints the final text on stdout.

Test knobs: ``AGENT_MAX_TOKENS`` (default 512) changes the request; when ``AGENT_FAIL_CASE``
equals ``EVALTAPE_CASE_ID`` and the file ``AGENT_FAIL_UNLESS`` does not exist, the agent
exits with status 3 after its first request ("planned failure" on stderr, after
``AGENT_STDERR_LINES`` lines ``log line 0``, ``log line 1``, ... when that is set).
"""
import json
import os
import sys

import anthropic

TOOLS = [{"name": n, "description": f"The help desk's {n} tool.",
          "input_schema": {"type": "object", "additionalProperties": True}}
         for n in ("reset_password", "unlock_account", "check_server_status",
                   "search_knowledge_base", "create_ticket")]


def main() -> int:
    task = open(sys.argv[1], encoding="utf-8").read()
    stream = "--stream" in sys.argv[2:]
    client = anthropic.Anthropic(max_retries=2)
    messages = [{"role": "user", "content": task}]
    for _ in range(8):
        kwargs = dict(model="stand-in", max_tokens=int(os.environ.get("AGENT_MAX_TOKENS", 512)),
                      tools=TOOLS, messages=messages)
        if stream:
            with client.messages.stream(**kwargs) as s:
                reply = s.get_final_message()
        else:
            reply = client.messages.create(**kwargs)
        fail = os.environ.get("AGENT_FAIL_CASE")
        if fail and fail == os.environ.get("EVALTAPE_CASE_ID") and \
                not os.path.exists(os.environ.get("AGENT_FAIL_UNLESS", "")):
            for i in range(int(os.environ.get("AGENT_STDERR_LINES", 0))):
                print(f"log line {i}", file=sys.stderr)
            print("planned failure", file=sys.stderr)
            return 3
        messages.append({"role": "assistant",
                         "content": [b.model_dump(exclude_none=True) for b in reply.content]})
        calls = [b for b in reply.content if b.type == "tool_use"]
        if not calls:
            print("\n".join(b.text for b in reply.content if b.type == "text"))
            return 0
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": c.id,
             "content": json.dumps({"success": True, "tool": c.name, **c.input})}
            for c in calls]})
    print("gave up after 8 turns", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
