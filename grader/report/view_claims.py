"""Where grounding's unsupported claims, and the claims it lists to review, stand in an
answer: offsets read back from the report's ``grounding`` details, for the page of
``evaltape view`` to mark."""
from __future__ import annotations

import re
from typing import Any

from evaltape.grader.matching.claims import KINDS as CLAIM_KINDS
from evaltape.grader.report.view_text import text

#: One unsupported claim as grounding's ``message`` quote it: ``kind 'text' (why) in
#: "sentence"``, items joined by ``; `` (:class:`evaltape.grader.metrics.grounding.Grounding`).
_CLAIM = re.compile(r"(?:^|; |: )(?P<kind>" + "|".join(CLAIM_KINDS) + r") '(?P<text>.+?)' "
                    r"\((?P<why>.+?)\) in \"(?P<sentence>.*?)\"(?=; (?:"
                    + "|".join(CLAIM_KINDS) + r") '|; \d+ to review, not counted: |$)", re.S)


def claim_marks(answer: str, metric: Any) -> list[list[Any]]:
    """Grounding's unsupported claims as ``[[start, end, kind, why], ...]`` offsets in ``answer``,
    from the report's ``grounding`` details. Claims of earlier replies ("in reply N of M"),
    claims not found and overlapping ones are not marked.
    """
    if metric is None or not metric.score or not metric.message:
        return []
    marks: list[list[Any]] = []
    taken: list[tuple[int, int]] = []
    for m in _CLAIM.finditer(metric.message):
        claim, sentence = m.group("text"), m.group("sentence")
        if m.group("why").startswith("in reply "):
            continue  # a claim of an earlier agent reply, not of this answer
        at = answer.find(sentence[:200]) if sentence else -1
        start = answer.find(claim, at) if at >= 0 else -1
        if start < 0:
            start = answer.find(claim)
        if start < 0:
            continue
        end = start + len(claim)
        if any(a < end and start < b for a, b in taken):
            continue
        taken.append((start, end))
        marks.append([start, end, m.group("kind"), text(m.group("why"), 2000)])
    return sorted(marks)


#: One claim grounding lists to review: ``'text' (kind: why) in "sentence"``, after ``N to
#: review, not counted: `` in its ``message``, items joined by ``; ``.
_REVIEW = re.compile(r"'(?P<text>.+?)' \((?P<kind>" + "|".join(CLAIM_KINDS) + r"): "
                     r"(?P<why>.+?)\) in \"(?P<sentence>.*?)\"(?=; '|$)", re.S)


def review_marks(answer: str, metric: Any) -> list[list[Any]]:
    """The claims grounding lists to review, not counted, as ``[[start, end, kind, why],
    ...]`` offsets in ``answer``, read from the report's ``grounding`` details. A claim is
    marked only where its sentence is found in the answer (a claim of an earlier reply is
    not marked); ``[]`` when none is listed."""
    details = getattr(metric, "message", None) or ""
    at = details.find(" to review, not counted: ")
    if at < 0:
        return []
    marks: list[list[Any]] = []
    for m in _REVIEW.finditer(details, at + len(" to review, not counted: ")):
        where = answer.find(m.group("sentence")[:200]) if m.group("sentence") else -1
        start = answer.find(m.group("text"), where) if where >= 0 else -1
        if start < 0:
            continue
        end = start + len(m.group("text"))
        if any(a < end and start < b for a, b, _k, _w in marks):
            continue
        marks.append([start, end, m.group("kind"), text(m.group("why"), 2000)])
    return sorted(marks)

