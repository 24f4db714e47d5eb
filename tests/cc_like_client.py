"""A Messages API client shaped like the Claude Code CLI's requests, for tests: its system
prompt names the working directory, a memory folder under ``$HOME`` and the OS, its first
user message carries today's date, and ``metadata.user_id`` a device id derived from
``$HOME`` and a fresh session id, as the CLI's do. Standard library only.

Usage: ``python cc_like_client.py INPUT_FILE``; prints the answer's text. ``CC_TODAY``
(``YYYY-MM-DD``) stands for the clock's date, ``CC_OS`` for the OS version.
"""
import datetime
import hashlib
import json
import os
import sys
import urllib.request
import uuid


def main() -> None:
    question = open(sys.argv[1], encoding="utf-8").read()
    home, cwd = os.path.expanduser("~"), os.getcwd()
    today = os.environ.get("CC_TODAY") or datetime.date.today().isoformat()
    system = (f"You are a test agent.\n\n# Memory\nYou have a persistent file-based memory "
              f"at `{home}/.claude/projects/{cwd.replace('/', '-')}/memory/`.\n\n"
              f"# Environment\n - Primary working directory: {cwd}\n - Platform: linux\n"
              f" - OS Version: {os.environ.get('CC_OS', 'Linux 6.1.0')}\n")
    user_id = json.dumps({"device_id": hashlib.sha256(home.encode()).hexdigest(),
                          "account_uuid": "", "session_id": str(uuid.uuid4())},
                         separators=(",", ":"))
    body = {"model": "stand-in", "max_tokens": 256, "system": [{"type": "text", "text": system}],
            "metadata": {"user_id": user_id},
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": f"<system-reminder>\n# currentDate\nToday's date is "
                                         f"{today}.\n</system-reminder>\n"},
                {"type": "text", "text": question}]}]}
    req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages",
                                 data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json",
                                          "anthropic-version": "2023-06-01",
                                          "x-api-key": os.environ.get("ANTHROPIC_API_KEY", "")})
    with urllib.request.urlopen(req, timeout=60) as resp:
        answer = json.loads(resp.read())
    print("".join(b.get("text", "") for b in answer["content"] if b["type"] == "text"))


if __name__ == "__main__":
    main()
