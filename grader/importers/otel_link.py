"""One span file's spans grouped into traces (by trace id, else as far as the parent links
allow), and the spans of a trace that stand for model calls."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from evaltape.grader.importers.otel_semconv import llm_strength
from evaltape.grader.importers.otel_spans import Span


def _ancestors(s: Span, by_id: dict[str, Span]) -> Iterable[Span]:
    seen = set()
    p = by_id.get(s.parent_id or "")
    while p is not None and p.span_id not in seen:
        seen.add(p.span_id)
        yield p
        p = by_id.get(p.parent_id or "")


def model_call_spans(spans: list[Span]) -> tuple[list[Span], list[str]]:
    """The spans that stand for model calls in one trace, in start order, and why look-alikes
    were left out: marked spans (strength 2) containing no other marked span; a wrapper
    (strength 1) only with no marked ancestor or descendant.
    """
    by_id = {s.span_id: s for s in spans}
    strength = {s.span_id: llm_strength(s) for s in spans}
    marked = [s for s in spans if strength[s.span_id] == 2]
    has_marked_below: set[str] = set()
    for s in marked:
        for p in _ancestors(s, by_id):
            has_marked_below.add(p.span_id)
    keep, notes = [], []
    for s in spans:
        st = strength[s.span_id]
        if st == 0:
            continue
        if s.span_id in has_marked_below:
            notes.append(f"span {s.span_id} ({s.name}) wraps model-call spans; the inner "
                         "spans are used")
            continue
        if st == 1 and any(strength[p.span_id] == 2 for p in _ancestors(s, by_id)):
            notes.append(f"span {s.span_id} ({s.name}) sits inside a model-call span that "
                         "carries the attributes; that span is used")
            continue
        keep.append(s)
    keep.sort(key=lambda s: (s.start, s.span_id))
    return keep, notes


@dataclass
class TraceGroup:
    """The spans of one episode (:func:`link_traces`): ``spans`` in file order; ``place``
    (``trace <id>``, ``spans under parent <id>``, ``span <id>``/``#<n>``); ``case_part`` (the
    case id after ``<file stem>:``); ``trace_id`` or ``None``; ``dedupe``, the key that
    recognises another file's copy (``None``: none can); ``note``, why it may be incomplete.
    """

    spans: list[Span]
    place: str
    case_part: str
    trace_id: str | None
    dedupe: str | None
    note: str | None = None


def link_traces(spans: list[Span]) -> tuple[list[TraceGroup], list[tuple[Span, str]]]:
    """Group one file's spans into traces as far as ids and parent links allow: by trace id;
    a span without one joins its parent's group, or its siblings' under a parent missing from
    the file; else it starts its own. A span without a span id is named ``#<n>``; one that may
    be a missing parent but cannot be linked is returned in ``unlinked`` with the reason.

    Returns:
        ``(groups in order of their first span, [(unlinked span, reason)])``.
    """
    n = len(spans)
    for i, sp in enumerate(spans):
        if not sp.span_id:
            sp.span_id = f"#{i + 1}"
    by_id: dict[str, int] = {}
    for i, sp in enumerate(spans):
        if not sp.span_id.startswith("#"):
            by_id.setdefault(sp.span_id, i)
    up = list(range(n))

    def find(i: int) -> int:
        while up[i] != i:
            up[i] = up[up[i]]
            i = up[i]
        return i

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            up[max(ra, rb)] = min(ra, rb)

    first_of: dict[tuple[str, str], int] = {}
    for i, sp in enumerate(spans):
        if sp.trace_id:
            union(i, first_of.setdefault(("trace", sp.trace_id), i))
    for i, sp in enumerate(spans):
        if sp.trace_id or not sp.parent_id:
            continue
        j = by_id.get(sp.parent_id)
        union(i, j if j is not None else first_of.setdefault(("parent", sp.parent_id), i))
    members: dict[int, list[int]] = {}
    for i in range(n):
        members.setdefault(find(i), []).append(i)
    groups: list[TraceGroup] = []
    lone: list[tuple[int, list[int]]] = []  # groups of a root without any id
    fragments = 0
    for top, ms in members.items():
        ss = [spans[i] for i in ms]
        tid = next((sp.trace_id for sp in ss if sp.trace_id), None)
        missing = [sp.parent_id for sp in ss if sp.parent_id and sp.parent_id not in by_id]
        if tid:
            groups.append(TraceGroup(ss, f"trace {tid}", tid[:16], tid, f"trace {tid}"))
        elif missing:
            pid = missing[0]
            fragments += any(llm_strength(sp) for sp in ss)
            groups.append(TraceGroup(
                ss, f"spans under parent {pid}", f"parent-{pid[:16]}", None,
                f"spans under parent {pid}",
                note=f"{len(ss)} span(s) without a trace id whose parent {pid} is not in the "
                     "file: imported as one episode without that parent"))
        else:
            head = next(sp for sp in ss if not sp.parent_id)
            if head.span_id.startswith("#"):
                lone.append((len(groups), ms))
                groups.append(TraceGroup(ss, f"span {head.span_id}",
                                         f"span-{head.span_id[1:]}", None, None))
            else:
                groups.append(TraceGroup(ss, f"span {head.span_id}",
                                         f"span-{head.span_id[:16]}", None,
                                         f"span {head.span_id}"))
    unlinked: list[tuple[Span, str]] = []
    if fragments and lone:
        drop = set()
        for k, ms in lone:
            drop.add(k)
            for i in ms:
                unlinked.append((spans[i], (
                    f"span {spans[i].span_id} ({spans[i].name}) carries no span id, and "
                    f"{fragments} group(s) of spans with a model call name a parent that is "
                    "not in the file: it may be their parent but cannot be linked to them; "
                    "left out (the spans under that parent are imported on their own)")))
        groups = [g for k, g in enumerate(groups) if k not in drop]
    return groups, unlinked
