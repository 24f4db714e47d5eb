"""An agent whose tools come from an MCP server (standard library only): it starts
``server.py`` through ``evaltape mcp-tape``, gives the model the tools ``tools/list``
names, runs each ``tool_use`` as ``tools/call``, and prints the model's final answer.

Usage: ``python agent.py INPUT_FILE [MODEL]`` (default ``claude-sonnet-4-5``) behind the recording proxy (``evaltape record
--command``: ``ANTHROPIC_BASE_URL`` and the episode's variables are set), so the model
traffic and the MCP exchanges go into the episode's cassette; at replay the server is not
started.
"""
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

SERVER = Path(__file__).resolve().parent / "server.py"
SYSTEM = "You are a shop's order desk. Use the tools to answer; say only what they return."
MAX_TURNS = 6


class MCP:
    """A stdio MCP client: JSON-RPC requests, one a line, answered in order."""

    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "evaltape.cli", "mcp-tape", "--name", "orders", "--",
             sys.executable, str(SERVER)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.next_id = 0

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            msg = json.loads(self.proc.stdout.readline())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"MCP {method}: {msg['error']['message']}")
                return msg["result"]

    def send(self, msg):
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def ask_model(model, messages, tools):
    """One Messages API request; the answer as JSON."""
    body = {"model": model, "max_tokens": 512,
            "system": SYSTEM, "tools": tools, "messages": messages}
    req = urllib.request.Request(
        os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages",
        data=json.dumps(body).encode("utf-8"), method="POST",
        headers={"content-type": "application/json", "anthropic-version": "2023-06-01",
                 "x-api-key": os.environ.get("ANTHROPIC_API_KEY", "")})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


def main():
    question = Path(sys.argv[1]).read_text(encoding="utf-8").strip()
    model = sys.argv[2] if len(sys.argv) > 2 else "claude-sonnet-4-5"
    mcp = MCP()
    try:
        mcp.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                   "clientInfo": {"name": "orders-agent", "version": "1"}})
        mcp.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools = [{"name": t["name"], "description": t.get("description", ""),
                  "input_schema": t["inputSchema"]}
                 for t in mcp.request("tools/list", {})["tools"]]
        messages = [{"role": "user", "content": question}]
        for _ in range(MAX_TURNS):
            answer = ask_model(model, messages, tools)
            messages.append({"role": "assistant", "content": answer["content"]})
            uses = [b for b in answer["content"] if b.get("type") == "tool_use"]
            if answer.get("stop_reason") != "tool_use" or not uses:
                print("".join(b.get("text", "") for b in answer["content"]).strip())
                return
            results = []
            for use in uses:
                got = mcp.request("tools/call", {"name": use["name"], "arguments": use["input"]})
                results.append({"type": "tool_result", "tool_use_id": use["id"],
                                "content": "".join(c.get("text", "") for c in got["content"]),
                                "is_error": bool(got.get("isError"))})
            messages.append({"role": "user", "content": results})
        print("(no answer: too many tool turns)")
    finally:
        mcp.close()


if __name__ == "__main__":
    main()
