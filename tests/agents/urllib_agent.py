"""An external agent for the proxy tests that uses no SDK: the standard library's urllib,
streaming (``"stream": true``) and reading the server-sent events itself.

Usage: ``python urllib_agent.py INPUT_FILE``. Base URL from ``ANTHROPIC_BASE_URL``. The key
is read from the file named by ``AGENT_KEY_FILE`` (so the recorder's own environment never
holds it) and sent as ``x-api-key``, or as ``Authorization: Bearer`` when ``AGENT_BEARER=1``.
Extra headers come from ``ANTHROPIC_CUSTOM_HEADERS`` (``Name: value`` lines), as Claude Code
reads them. Prints the final text on stdout.
"""
import json
import os
import sys
import urllib.request

TOOLS = [{"name": n, "description": f"The help desk's {n} tool.",
          "input_schema": {"type": "object", "additionalProperties": True}}
         for n in ("reset_password", "unlock_account", "check_server_status",
                   "search_knowledge_base", "create_ticket")]


def call(base, headers, body):
    req = urllib.request.Request(base.rstrip("/") + "/v1/messages", method="POST",
                                 data=json.dumps(body).encode(), headers=headers)
    content, stop, partial = [], None, {}
    with urllib.request.urlopen(req, timeout=30) as resp:
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data:"):
                continue
            ev = json.loads(line[5:])
            if ev["type"] == "content_block_start":
                content.append(dict(ev["content_block"]))
            elif ev["type"] == "content_block_delta":
                d = ev["delta"]
                if d["type"] == "text_delta":
                    content[ev["index"]]["text"] += d["text"]
                else:
                    partial[ev["index"]] = partial.get(ev["index"], "") + d["partial_json"]
            elif ev["type"] == "content_block_stop" and ev["index"] in partial:
                content[ev["index"]]["input"] = json.loads(partial.pop(ev["index"]) or "{}")
            elif ev["type"] == "message_delta":
                stop = ev["delta"]["stop_reason"]
            elif ev["type"] == "error":
                raise RuntimeError(ev["error"]["message"])
    return content, stop


def main() -> int:
    task = open(sys.argv[1], encoding="utf-8").read()
    key = open(os.environ["AGENT_KEY_FILE"]).read().strip()
    headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    if os.environ.get("AGENT_BEARER") == "1":
        headers["authorization"] = f"Bearer {key}"
    else:
        headers["x-api-key"] = key
    for line in os.environ.get("ANTHROPIC_CUSTOM_HEADERS", "").splitlines():
        name, _, value = line.partition(":")
        if name.strip():
            headers[name.strip()] = value.strip()
    base = os.environ["ANTHROPIC_BASE_URL"]
    messages = [{"role": "user", "content": task}]
    for _ in range(8):
        content, stop = call(base, headers, {"model": "stand-in", "max_tokens": 512,
                                             "stream": True, "tools": TOOLS,
                                             "messages": messages})
        messages.append({"role": "assistant", "content": content})
        calls = [b for b in content if b["type"] == "tool_use"]
        if not calls:
            print("\n".join(b["text"] for b in content if b["type"] == "text"))
            return 0
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": c["id"],
             "content": json.dumps({"success": True, "tool": c["name"], **c["input"]})}
            for c in calls]})
    return 2


if __name__ == "__main__":
    sys.exit(main())
