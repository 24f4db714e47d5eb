"""A streamable-HTTP MCP server for tests, on the official ``mcp`` SDK: one tool,
``read_note``, that reads ``<NOTES_DIR>/<name>.txt`` and logs a line before its result;
every request must carry ``Authorization: Bearer <TOKEN>`` (HTTP 401 otherwise), and the
``initialize`` answer's instructions echo the token (a server that leaks a credential).

Usage: ``python mcp_http_notes_server.py NOTES_DIR PORT TOKEN``; serves
``http://127.0.0.1:PORT/mcp``.
"""
import pathlib
import sys

import uvicorn
from mcp.server.mcpserver import Context, MCPServer

NOTES, PORT, TOKEN = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
server = MCPServer("notes", instructions=f"Callers authenticate with Bearer {TOKEN}.")


@server.tool()
async def read_note(name: str, ctx: Context) -> str:
    """Read a note by name."""
    await ctx.info(f"reading {name}")
    path = NOTES / f"{name}.txt"
    return path.read_text() if path.exists() else f"no note {name}"


def with_token(app):
    """``app`` refusing HTTP requests without the bearer token."""
    async def guarded(scope, receive, send):
        if scope["type"] == "http" and (dict(scope["headers"]).get(b"authorization")
                                        != f"Bearer {TOKEN}".encode()):
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)
    return guarded


if __name__ == "__main__":
    uvicorn.run(with_token(server.streamable_http_app()), host="127.0.0.1", port=PORT,
                log_level="warning")
