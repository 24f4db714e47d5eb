"""``report.md`` is pasted into pull-request comments and job summaries: a recorded string
(case id, answer, failure, details, model name) must stay text there, never an image, a
link, a code span that breaks out, or an ``@`` mention. Rendered with markdown-it
(CommonMark and GFM tables) to check no element is made; mentions and bare-URL autolinks
(GitHub extensions markdown-it does not do) are checked on the text: a word joiner
(U+2060) follows every ``@`` and breaks every ``://`` and ``www.``."""
from __future__ import annotations

import json
import re

from markdown_it import MarkdownIt

from conftest import run_cli

BADGE = "![gate: PASS](https://img.shields.io/badge/gate-PASS-green)"
LINK = "[click](http://evil.example/x)"
HOSTILE = [BADGE, LINK, "@org/team please approve", "see www.evil.example or "
           "https://evil.example", "`code` ``` fence", "<img src=x onerror=alert(1)>",
           "\\[escaped\\]", "x | y"]


def test_recorded_strings_render_as_text_in_report_md(tmp_path):
    case_id = BADGE + " " + LINK
    answer = " ".join(HOSTILE)
    (tmp_path / "d.json").write_text(json.dumps([
        {"id": case_id, "user_query": "hi", "expected_answer_contains": LINK},
        {"id": "@org/team", "user_query": "hi", "expected_answer_contains": BADGE}]))
    traces = [{"schema": "evaltape.trace/1", "case_id": cid, "trial": 0, "input": "hi",
               "tool_calls": [], "final_response": answer, "stop_reason": "end_turn",
               "steps": 1}
              for cid in (case_id, "@org/team")]
    traces[1]["final_response"] = "no"
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
    p = run_cli("grade", str(tmp_path / "t.jsonl"), "--dataset", str(tmp_path / "d.json"),
                "--out", str(tmp_path / "o"), "--format", "md", "--quiet")
    assert p.returncode in (0, 1), p.stderr
    md = (tmp_path / "o" / "report.md").read_text()
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert "<img" not in html and "<a " not in html
    # a code span is only what the report puts in one (the failure labels): no recorded
    # text breaks out of or into one
    spans = re.findall(r"<code>(.*?)</code>", html)
    assert spans and set(spans) <= {"wrong_answer", "plan", "step", "task_completion"}, spans
    # the strings are still there, as text: the case id in the episodes table
    text = re.sub(r"<[^>]+>", "", html)
    assert BADGE.replace("://", ":\u2060//") in text
    # no mention and no bare link survive: "@" is always followed by the word joiner, and
    # no "://" or "www." is whole
    assert re.search(r"@(?!\u2060)", md) is None
    assert "://" not in md and "www." not in md
