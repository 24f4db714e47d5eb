"""report.html as a user sees it: rendered by headless Chromium (DOM dump and screenshot).

Grades the committed run cassettes/helpdesk-scripted-standin to HTML, then checks Chromium's
rendered DOM and a 1280x2000 screenshot. Values worked out by hand from its traces and
datasets/helpdesk_eval.json (see README "What make grade shows"):

- bars (240 px wide, 14 px high): pass_rate 5/8 = 62.5% (tc_004 fails its grounding
  gate, tc_005 its argument_correctness gate, tc_006 the outcome's wrong_tools),
  tool_accuracy 7/8 = 87.5%,
  tool_selection_accuracy (7 + 2/3)/8 = 0.9583 -> 95.8%, argument_correctness 7/8 = 87.5%
  (tc_005 0/1), task_completion (7 + 1/2)/8 = 0.9375 -> 93.8%, grounding (lower is better,
  red) 0.2/8 = 0.025 -> 2.5% (tc_005's one claim, the "VPN Setup Guide" its search result
  names, is supported: 0.0, so 8 episodes are scored).
- green bar pixels: 14 x (150 + 210 + 229.9 + 210 + 225.1) ~ 14 x 1025 = 14350.
- failing cells: tc_004 grounding 0.200, tc_005 argument_correctness 0.000, tc_006
  tool_selection_accuracy 0.667 and task_completion 0.500; verdicts: tc_004
  "grounding 0.20 > 0.00", tc_005 "argument_correctness 0.00 < 0.80", tc_006 wrong_tools.

Chromium is installed by .ci/run. Without it the test skips locally, with the reason, and
fails under CI=true, so CI never passes without having looked at the page.
"""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import ROOT, run_cli

RUN = ROOT / "cassettes" / "helpdesk-scripted-standin"
WIDTH, HEIGHT = 1280, 2000
GREEN, RED, WHITE = (0x2D, 0xA4, 0x4E), (0xCF, 0x22, 0x2E), (0xFF, 0xFF, 0xFF)
CASES = [f"tc_00{i}" for i in range(1, 9)]


def find_chromium() -> str:
    """The Chromium binary (``$EVALTAPE_CHROMIUM`` or on PATH); skip or fail without one."""
    for name in (os.environ.get("EVALTAPE_CHROMIUM"), "chromium", "chromium-browser",
                 "google-chrome", "google-chrome-stable"):
        if name and shutil.which(name):
            return shutil.which(name)
    msg = ("headless Chromium not found (install it: apt-get install -y chromium); "
           "report.html was not checked in a browser")
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(msg + " -- CI=true, so this is a failure, not a skip", pytrace=False)
    pytest.skip(msg)


def chromium(binary: str, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """Run headless Chromium offline with a throwaway profile."""
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--force-device-scale-factor=1", f"--user-data-dir={tmp / 'profile'}",
           f"--window-size={WIDTH},{HEIGHT}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=str(tmp))


def read_png(path: Path) -> tuple[int, int, list[bytes], int]:
    """Decode an 8-bit RGB/RGBA, non-interlaced PNG: ``(width, height, rows, bytes/pixel)``."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    w, h, depth, ctype, _comp, _filt, interlace = ihdr
    assert depth == 8 and ctype in (2, 6) and interlace == 0, f"unsupported PNG {ihdr}"
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(b"".join(idat)), w * bpp
    prev, rows = bytearray(stride), []
    for y in range(h):
        off = y * (stride + 1)
        f, line = raw[off], bytearray(raw[off + 1:off + 1 + stride])
        if f == 1:  # Sub
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:  # Up
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f in (3, 4):  # Average, Paeth
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                if f == 3:
                    line[i] = (line[i] + ((a + b) >> 1)) & 255
                    continue
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) \
                    & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows, bpp


class Node:
    """A minimal DOM element: tag, attributes, children (nodes and text)."""

    def __init__(self, tag: str, attrs: dict) -> None:
        self.tag, self.attrs, self.children = tag, attrs, []

    @property
    def classes(self) -> list[str]:
        """The element's class names."""
        return (self.attrs.get("class") or "").split()

    def text(self) -> str:
        """All text below the element, whitespace collapsed."""
        parts = [c if isinstance(c, str) else c.text() for c in self.children]
        return " ".join("".join(parts).split())

    def find(self, tag: str, cls: str | None = None) -> list["Node"]:
        """Every descendant with ``tag`` (and class ``cls``), in document order."""
        out = []
        for c in self.children:
            if isinstance(c, Node):
                if c.tag == tag and (cls is None or cls in c.classes):
                    out.append(c)
                out += c.find(tag, cls)
        return out


class TreeBuilder(HTMLParser):
    """Builds :class:`Node` trees from Chromium's serialised DOM."""

    VOID = {"meta", "br", "img", "hr", "input", "link", "col", "wbr"}

    def __init__(self) -> None:
        super().__init__()
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in self.VOID:
            self.stack.append(node)

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def table(dom: Node, first_header: str) -> Node:
    """The one table whose first header cell reads ``first_header``."""
    found = [t for t in dom.find("table") if t.find("th")[0].text() == first_header]
    assert len(found) == 1, f"{len(found)} tables headed {first_header!r}"
    return found[0]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """Grade the committed run to HTML; Chromium's DOM dump and screenshot of it."""
    binary = find_chromium()
    tmp = tmp_path_factory.mktemp("html")
    proc = run_cli("grade", str(RUN), "--out", str(tmp / "report"), "--quiet",
                   "--format", "json,md,junit,html")
    assert proc.returncode == 0, proc.stderr
    page = tmp / "report" / "report.html"
    url = page.resolve().as_uri()
    dom = chromium(binary, tmp, "--dump-dom", url)
    assert dom.returncode == 0 and "<html" in dom.stdout, dom.stderr[-2000:]
    png = tmp / "shot.png"
    shot = chromium(binary, tmp, f"--screenshot={png}", url)
    assert shot.returncode == 0 and png.exists(), shot.stderr[-2000:]
    builder = TreeBuilder()
    builder.feed(dom.stdout)
    return {"html": page.read_text(), "dom": builder.root, "png": png}


def test_page_is_self_contained(rendered):
    html = rendered["html"]
    assert "<script" not in html and "http://" not in html and "https://" not in html
    assert "<link" not in html and "@import" not in html


def test_dom_has_metric_bars(rendered):
    dom = rendered["dom"]
    bars = [(b.classes, b.find("span")[0].attrs["style"]) for b in dom.find("span", "bar")]
    assert bars == [(["bar"], "width:62.5%"), (["bar"], "width:87.5%"),      # pass, tools
                    (["bar"], "width:95.8%"), (["bar"], "width:87.5%"),      # tsa, args
                    (["bar"], "width:93.8%"), (["bar", "low"], "width:2.5%")]  # task, grounding
    metric_rows = [r.find("td")[0].text() for r in table(dom, "metric").find("tr")[1:]]
    assert metric_rows == ["tool_selection_accuracy", "argument_correctness",
                           "task_completion", "grounding (lower is better)"]


def test_dom_has_case_table_with_expandable_trajectories(rendered):
    dom = rendered["dom"]
    details = dom.find("details")
    assert [d.find("summary")[0].text() for d in details] == CASES
    by_case = {d.find("summary")[0].text(): d.text() for d in details}
    assert "unlock_account" in by_case["tc_001"] and '"username": "jsmith"' in by_case["tc_001"]
    assert "unlock_account" in by_case["tc_002"] and "reset_password" in by_case["tc_002"]
    assert '"query": "VPN setup"' in by_case["tc_005"]
    assert "check_server_status" in by_case["tc_006"] and "create_ticket" not in by_case["tc_006"]
    assert '"status": "degraded"' in by_case["tc_004"]          # the tool result is shown
    assert "memory usage is at 94%" in by_case["tc_004"]        # and the answer
    episodes = table(dom, "episode")
    outcomes = [row.find("td")[1].text() for row in episodes.find("tr")[1:]]
    # each failure with its class: all three followed the plan and got one step wrong
    # (tc_006 called one of its two expected tools: not more than half missing)
    assert outcomes == ["pass"] * 3 + ["step: grounding 0.20 > 0.00",
                                       "step: argument_correctness 0.00 < 0.80",
                                       "step: wrong_tools"] + ["pass"] * 2


def test_dom_shows_failure_reasons(rendered):
    dom = rendered["dom"]
    failing = [td.text() for td in dom.find("td", "fail")]
    assert failing == ["0.200", "0.000", "0.667", "0.500"]   # tc_004, tc_005, tc_006 x2
    reasons = [li.text() for li in dom.find("ul", "reasons")[0].find("li")]
    assert [" ".join(r.split()[:2]) for r in reasons] == [
        "tc_004 grounding", "tc_005 argument_correctness",
        "tc_006 tool_selection_accuracy", "tc_006 task_completion"]
    # tc_005's grounding is null with reason no_claims: not applicable, so not listed
    assert "'94%'" in reasons[0]
    assert "expected 'vpn', got 'VPN setup'" in reasons[1]
    assert "Missing: ['create_ticket']" in reasons[2]
    assert "Missing: ['ticket']" in reasons[3]


def test_screenshot_is_the_rendered_report(rendered):
    png = rendered["png"]
    assert png.stat().st_size > 20_000
    w, h, rows, bpp = read_png(png)
    assert (w, h) == (WIDTH, HEIGHT)
    colours = Counter()
    for row in rows:
        for i in range(0, len(row), bpp):
            colours[tuple(row[i:i + 3])] += 1
    assert len(colours) > 100                       # text antialiasing, not one flat colour
    assert colours[WHITE] < 0.99 * w * h            # the page is not blank
    # the five green bars, 14 px high: 150 + 210 + 229.9 + 210 + 225.1 px wide (see top);
    # the fractional edges are antialiased, so 1024 to 1026 full-colour columns
    assert 1024 * 14 <= colours[GREEN] <= 1026 * 14, colours[GREEN]
    # grounding's red bar: 2.5% of 240 px = 6 px -> at least 5 full columns x 14 px (an
    # edge may fall between pixels)
    assert colours[RED] >= 5 * 14


def test_parallel_steps_are_marked_in_the_trajectory():
    """Calls of one model turn share a step: report.html says so beside each of them."""
    from evaltape.grader.model import ToolCall, Trace
    from evaltape.grader.report.html import _trajectory
    calls = (ToolCall("a", "get_weather", {"city": "Paris"}, "{}", False, 1),
             ToolCall("b", "get_weather", {"city": "Rome"}, "{}", False, 1),
             ToolCall("c", "send", {}, "{}", False, 2))
    html = _trajectory(Trace(case_id="c", trial=0, input="q", tool_calls=calls,
                             final_response="ok", stop_reason="end_turn", steps=3))
    assert html.count("(parallel: 2 calls in this step, any order)") == 2
    assert "3. step 2: <code>send</code>" in html
