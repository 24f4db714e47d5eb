"""An agent program for tests on the official ``mcp`` SDK's streamable-HTTP client: it
starts ``evaltape mcp-tape --url SERVER_URL``, connects to the local endpoint it prints with
the bearer token of ``$NOTES_TOKEN``, reads the note the case's input names, asks the model
and prints the answer with the note and the server's log lines.

Usage: ``NOTES_TOKEN=... python mcp_http_sdk_agent.py INPUT_FILE SERVER_URL``.
"""
import asyncio
import os
import subprocess
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from model_request import ask_model


async def read_note(url: str, token: str, name: str) -> tuple[str, list[str]]:
    logs: list[str] = []

    async def on_log(params):
        logs.append(str(params.data))

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                  timeout=60) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write, logging_callback=on_log) as session:
                await session.initialize()
                tools = await session.list_tools()
                result = await session.call_tool("read_note", {"name": name})
                return f"{tools.tools[0].name}: {result.content[0].text}", logs


def main() -> None:
    name = open(sys.argv[1], encoding="utf-8").read().strip()
    tape = subprocess.Popen([sys.executable, "-m", "evaltape.cli", "mcp-tape", "--name",
                             "notes", "--url", sys.argv[2]], stdout=subprocess.PIPE, text=True)
    try:
        local = tape.stdout.readline().strip()
        text, logs = asyncio.run(read_note(local, os.environ["NOTES_TOKEN"], name))
    finally:
        tape.terminate()
        tape.wait(timeout=30)
    answer = ask_model(f"Note {name}: {text}")
    print(f"{answer} [{text.strip()}] ({'; '.join(logs)})")


if __name__ == "__main__":
    main()
