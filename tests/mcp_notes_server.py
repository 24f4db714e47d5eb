"""A tiny MCP stdio server for tests (standard library only): one tool, ``read_note``,
that reads ``<NOTES_DIR>/<name>.txt``; it logs a notification before each tool result
and refuses every request but ``initialize`` until it has been initialised.

Usage: ``python mcp_notes_server.py NOTES_DIR``; JSON-RPC 2.0, one message a line.
"""
import json
import pathlib
import sys

NOTES = pathlib.Path(sys.argv[1])
TOOL = {"name": "read_note", "description": "Read a note by name.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                        "required": ["name"]}}


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


initialized = False
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue  # notifications/initialized
    method, mid = msg["method"], msg["id"]
    if method != "initialize" and not initialized:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32002,
                                                     "message": "not initialized"}})
    elif method == "initialize":
        initialized = True
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "notes", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [TOOL]}})
    elif method == "tools/call":
        name = msg["params"]["arguments"]["name"]
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "data": f"reading {name}"}})
        path = NOTES / f"{name}.txt"
        if path.exists():
            result = {"content": [{"type": "text", "text": path.read_text()}]}
        else:
            result = {"content": [{"type": "text", "text": f"no note {name}"}], "isError": True}
        send({"jsonrpc": "2.0", "id": mid, "result": result})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": method}})
