#!/usr/bin/env python3
"""``make bench`` (run by scripts/bench.py): time to first token added by the recording proxy.

A loopback SSE server (its own process) answers every request with a ``message_start``
event at once, then the rest of a streamed message 20 ms later. The client (this process,
httpx with keep-alive, as the SDKs use) measures the time from sending a streaming
request to the first body byte: directly, and through ``evaltape proxy`` (its own process,
recording into a temporary run). Pairs are interleaved so drift hits both sides; the
figure is the 50th percentile of direct and proxied times and their difference.
Target (the proxy's "done when"): ≤ 5 ms added at the 50th percentile. Exit 1 if missed.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
N = int(os.environ.get("BENCH_PROXY_N", "200"))
WARMUP = 20
TARGET_MS = 5.0

UPSTREAM = r"""
import json, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
FIRST = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":'
         b'"message","role":"assistant","model":"b","content":[],"stop_reason":null,'
         b'"usage":{"input_tokens":5,"output_tokens":1}}}\n\n')
REST = (b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"hello"}}\n\n'
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":'
        b'"end_turn"},"usage":{"output_tokens":2}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    def log_message(self, *a): pass
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(FIRST), FIRST))
        time.sleep(0.02)
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(REST), REST))
class S(ThreadingHTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""


def ttft_ms(client, url: str, body: bytes) -> float:
    """Milliseconds from sending a streaming request to its first body bytes."""
    t0 = time.perf_counter()
    with client.stream("POST", url, content=body,
                       headers={"content-type": "application/json",
                                "x-api-key": "bench-key-000000"}) as resp:
        it = resp.iter_raw()
        next(it)
        first = (time.perf_counter() - t0) * 1000
        for _ in it:
            pass
    return first


def main() -> int:
    try:
        import httpx2 as httpx
    except ImportError:  # pragma: no cover
        import httpx
    up = subprocess.Popen([sys.executable, "-c", UPSTREAM], stdout=subprocess.PIPE, text=True)
    port = int(up.stdout.readline())
    upstream = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as d:
        px = subprocess.Popen([sys.executable, "-m", "evaltape.cli", "proxy", "--out",
                               str(Path(d) / "run"), "--upstream", upstream, "--quiet"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              cwd=ROOT)
        try:
            proxy = px.stdout.readline().strip()
            body = (b'{"model":"b","max_tokens":16,"stream":true,'
                    b'"messages":[{"role":"user","content":"hi"}]}')
            direct, proxied = [], []
            with httpx.Client(timeout=10) as c1, httpx.Client(timeout=10) as c2:
                for i in range(WARMUP + N):
                    a = ttft_ms(c1, upstream + "/v1/messages", body)
                    b = ttft_ms(c2, proxy + "/evaltape/bench/0/v1/messages", body)
                    if i >= WARMUP:
                        direct.append(a)
                        proxied.append(b)
        finally:
            px.terminate()
            px.wait(timeout=30)
            up.terminate()
            up.wait(timeout=10)
    p50d, p50p = statistics.median(direct), statistics.median(proxied)
    added = p50p - p50d
    verdict = "ok" if added <= TARGET_MS else f"MISSED (target ≤ {TARGET_MS:g} ms)"
    print(f"proxy: time to first SSE byte over {N} streamed requests, p50 direct "
          f"{p50d:.2f} ms, through the recording proxy {p50p:.2f} ms: +{added:.2f} ms "
          f"({verdict}); p90 added {statistics.quantiles(proxied, n=10)[-1] - statistics.quantiles(direct, n=10)[-1]:+.2f} ms")
    return 0 if added <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
