"""One Messages-API request with the standard library, for the test programs that run behind
the recording proxy (``ANTHROPIC_BASE_URL`` points at it): the answer's text."""
from __future__ import annotations

import json
import os
import urllib.request


def ask_model(prompt: str) -> str:
    """Send ``prompt`` as one user message to ``$ANTHROPIC_BASE_URL/v1/messages``; the
    first content block's text of the answer."""
    body = {"model": "stand-in", "max_tokens": 64,
            "messages": [{"role": "user", "content": prompt}]}
    req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages",
                                 data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json",
                                          "anthropic-version": "2023-06-01"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())["content"][0]["text"]
