"""An agent program for tests, run by ``evaltape record --command``: a taped tool reads the
file the case's input names; the model's answer and the file's text are printed.

Usage: ``python taped_program.py INPUT_FILE``.
"""
import json
import os
import sys
import urllib.request

import evaltape


@evaltape.tape_tool
def read_file(path: str) -> str:
    """The file's text."""
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def main() -> None:
    path = open(sys.argv[1], encoding="utf-8").read().strip()
    text = read_file(path)
    body = {"model": "stand-in", "max_tokens": 64,
            "messages": [{"role": "user", "content": f"Summarise: {text}"}]}
    req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages",
                                 data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json",
                                          "anthropic-version": "2023-06-01"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        answer = json.loads(resp.read())["content"][0]["text"]
    print(f"{answer} {text.strip()}")


if __name__ == "__main__":
    main()
