"""An agent program for tests that uses an MCP stdio server through ``evaltape mcp-tape``:
it reads the note the case's input names, asks the model, and prints the model's answer
with the note and the server's log line.

Usage: ``python mcp_client_agent.py INPUT_FILE SERVER_SCRIPT NOTES_DIR``.
"""
import json
import subprocess
import sys

from model_request import ask_model


def main() -> None:
    name = open(sys.argv[1], encoding="utf-8").read().strip()
    server = subprocess.Popen(
        [sys.executable, "-m", "evaltape.cli", "mcp-tape", "--name", "notes", "--",
         sys.executable, sys.argv[2], sys.argv[3]],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(mid, method, params):
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": mid, "method": method,
                                       "params": params}) + "\n")
        server.stdin.flush()
        seen = []
        while True:
            msg = json.loads(server.stdout.readline())
            if msg.get("id") == mid:
                return msg, seen
            seen.append(msg)

    ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "test-client", "version": "1"}})
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
                       + "\n")
    tools, _ = ask(2, "tools/list", {})
    called, notes = ask(3, "tools/call", {"name": "read_note", "arguments": {"name": name}})
    server.stdin.close()
    server.wait()
    if "error" in called:
        print(f"MCP error: {called['error']['message']}")
        sys.exit(1)
    text = called["result"]["content"][0]["text"]
    answer = ask_model(f"Note {name}: {text}")
    log = "; ".join(n["params"]["data"] for n in notes)
    print(f"{answer} [{tools['result']['tools'][0]['name']}: {text.strip()}] ({log})")


if __name__ == "__main__":
    main()
