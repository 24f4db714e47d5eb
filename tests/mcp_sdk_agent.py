"""An agent program for tests on the official ``mcp`` Python SDK's stdio client: it starts
the notes server through ``evaltape mcp-tape``, reads the note the case's input names,
asks the model and prints the answer with the note.

Usage: ``python mcp_sdk_agent.py INPUT_FILE SERVER_SCRIPT NOTES_DIR``. The SDK starts a
server with a reduced environment, so the episode's three variables are passed on.
"""
import asyncio
import os
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from model_request import ask_model

EPISODE_VARS = ("EVALTAPE_PROXY_URL", "EVALTAPE_CASE_ID", "EVALTAPE_TRIAL")


async def read_note(name: str) -> str:
    env = {k: os.environ[k] for k in EPISODE_VARS + ("PATH",) if k in os.environ}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "evaltape.cli", "mcp-tape", "--name", "notes", "--", sys.executable,
              sys.argv[2], sys.argv[3]], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("read_note", {"name": name})
            return result.content[0].text


def main() -> None:
    name = open(sys.argv[1], encoding="utf-8").read().strip()
    text = asyncio.run(read_note(name))
    answer = ask_model(f"Note {name}: {text}")
    print(f"{answer} {text.strip()}")


if __name__ == "__main__":
    main()
