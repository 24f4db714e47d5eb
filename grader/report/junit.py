"""``junit.xml``: one ``<testcase>`` per episode, failures with their reasons, for CI systems."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Iterator

#: What junit.xml spells out as ``\uXXXX``: the characters XML 1.0 forbids even when
#: escaped (C0 controls but tab, newline and CR; U+FFFE, U+FFFF, lone surrogates), and the
#: bidirectional overrides and isolates (U+202A-202E, U+2066-2069), which a CI page would
#: otherwise apply, reordering a test's name or message on screen ("Trojan Source").
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff"
                          "\u202a-\u202e\u2066-\u2069]")

from evaltape.grader.report.common import episode_label, gating, status, threshold_text
from evaltape.grader.results import Report


def render_junit(report: Report) -> str:
    """Deterministic JUnit XML of a :class:`Report`: a ``<testcase>`` per episode (failures name
    each metric's score and threshold), plus a ``baseline gate`` case with a baseline.
    """
    return "".join(iter_junit(report))


def iter_junit(report: Report) -> Iterator[str]:
    """:func:`render_junit` in pieces, one ``<testcase>`` at a time (flat memory).

    The head (suites, suite, properties) and each test case are laid out by ElementTree
    (``ET.indent`` at their depth), so the pieces join to the text ElementTree writes for
    the whole tree.
    """
    run, s = report.run, report.summary
    name = run.name or run.path or "run"
    multi = report.multi_trial
    total = failed = 0
    for ep in report.episodes:
        total += 1
        failed += not ep.passed
    cmp = report.baseline_comparison
    if cmp is not None:
        total += 1
        failed += cmp.gate_failed()
    suites = ET.Element("testsuites", name="evaltape", tests=str(total),
                        failures=str(failed))
    suite = ET.SubElement(suites, "testsuite", name=name, tests=str(total),
                          failures=str(failed), errors="0", skipped="0")
    props = ET.SubElement(suite, "properties")
    for key in ("pass_rate", "exact_tool_match_rate", "avg_steps"):
        ET.SubElement(props, "property", name=key, value=str(getattr(s, key)))
    for metric, value in s.metrics.items():
        ET.SubElement(props, "property", name=f"metric.{metric}",
                      value="null" if value is None else str(value))
    gates = gating(s)
    if s.verdict is not None:
        ET.SubElement(props, "property", name="verdict.gate", value=",".join(
            n for n in s.metrics if n in gates))
    ET.indent(suites)
    head = ET.tostring(suites, encoding="unicode")
    cut = head.index("</properties>") + len("</properties>")
    yield '<?xml version="1.0" encoding="utf-8"?>\n' + _spell(head[:cut])
    for ep in report.episodes:
        tc = ET.Element("testcase", classname=f"evaltape.{name}",
                        name=episode_label(ep, multi))
        lines = []
        lower = report.lower_is_better
        for metric, m in ep.metrics.items():
            score = "null" if m.score is None else f"{m.score:.3f}"
            thr = ("" if m.threshold is None else
                   f" (threshold {threshold_text(m.threshold, metric in lower)})")
            info = "" if metric in gates else " (info)"
            lines.append(f"{metric}: {score} {status(m)}{thr}{info} "
                         f"{m.message or m.code or ''}".rstrip())
        if not ep.passed:
            failure = str(ep.failure)
            kind = "gate" if " " in failure else failure  # outcome reasons have no space
            f = ET.SubElement(tc, "failure", type=kind, message=failure)
            f.text = "\n".join(lines)
        elif lines:
            ET.SubElement(tc, "system-out").text = "\n".join(lines)
        ET.indent(tc, level=2)
        # ElementTree escapes <, > and & but writes control characters as they are, which
        # makes the file unreadable by XML parsers: spell them out as \uXXXX (ids and
        # details come from traces), so distinct ids stay distinct test names.
        yield "\n    " + _spell(ET.tostring(tc, encoding="unicode"))
    if cmp is not None:
        yield "\n    " + _spell(ET.tostring(_gate_case(cmp, name), encoding="unicode"))
    yield _spell(head[cut:]) + "\n"


def _gate_case(cmp, name: str) -> ET.Element:
    """The ``baseline gate`` test case of a compared report (see :func:`render_junit`)."""
    from evaltape.grader.report.diff import gate_lines, gate_message
    tc = ET.Element("testcase", classname=f"evaltape.{name}", name="baseline gate")
    lines = "\n".join(gate_lines(cmp))
    if cmp.gate_failed():
        f = ET.SubElement(tc, "failure", type="baseline",
                          message=gate_message(cmp, cmp.baseline or "report"))
        f.text = lines
    else:
        ET.SubElement(tc, "system-out").text = lines
    ET.indent(tc, level=2)
    return tc


def _spell(text: str) -> str:
    return _XML_INVALID.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
