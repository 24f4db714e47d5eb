"""Human review marks of a run (``RUN/reviews.jsonl``), read and measured. A reviewer marks an
episode ``pass``/``fail`` or a metric, judge or grounding claim ``right``/``wrong``, one JSON
line per mark (``episode``, ``trace_digest``, ``reviewer``, ``at``, ``target``, ``mark``,
``note``). The file only grows; per item the latest mark wins. A mark whose ``trace_digest``
is not the episode's current one is stale: listed, not counted. :func:`confusion_stats`
takes the reviewer's mark as the truth (``wrong`` means the opposite pass/fail is true).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from evaltape.grader.errors import BadInputError

#: The review file's name inside a run folder.
REVIEWS_FILE = "reviews.jsonl"
#: The fields of one mark, in the order they are written.
FIELDS = ("episode", "trace_digest", "reviewer", "at", "target", "mark", "note")
#: Longest note kept (characters); a longer one is refused.
NOTE_LIMIT = 20_000
#: Longest reviewer name (characters).
REVIEWER_LIMIT = 200
#: z of a two-sided 95% normal interval.
Z95 = 1.959963984540054
_TARGET = re.compile(r"^(episode|(metric|judge):(?P<name>[A-Za-z0-9_.\-]{1,200})|"
                     r"claim:(?P<start>[0-9]{1,9})-(?P<end>[0-9]{1,9}))$")
_EPISODE = re.compile(r"^(?P<case>.+)#t(?P<trial>[0-9]{1,9})$", re.S)
_DIGEST = re.compile(r"^[0-9a-f]{8,64}$")


@dataclass(frozen=True)
class Mark:
    """One review mark (one line of ``reviews.jsonl``; the fields as in the module
    docstring). ``line`` is its 1-based line in the file (0 for a mark not read from one)."""

    episode: str
    trace_digest: str | None
    reviewer: str
    at: str
    target: str
    mark: str
    note: str = ""
    line: int = 0

    @property
    def item(self) -> tuple[str, str]:
        """The item the mark is about: ``(episode, target)``; the latest mark of an item
        wins."""
        return self.episode, self.target

    def to_json(self) -> dict[str, Any]:
        """The mark as its JSON object (the fields of :data:`FIELDS`, in that order)."""
        return {k: getattr(self, k) for k in FIELDS}


def episode_key(case_id: str, trial: int) -> str:
    """The key a mark names an episode by: ``<case_id>#t<trial>``."""
    return f"{case_id}#t{trial}"


def split_episode(key: str) -> tuple[str, int] | None:
    """``(case_id, trial)`` of an episode key, or ``None`` when it is not one."""
    m = _EPISODE.match(key)
    return None if m is None else (m.group("case"), int(m.group("trial")))


def target_kind(target: str) -> str | None:
    """``"episode"``, ``"metric"``, ``"judge"`` or ``"claim"`` for a valid target, else
    ``None``. A claim's end must lie after its start."""
    m = _TARGET.match(target)
    if m is None:
        return None
    if target.startswith("claim:") and int(m.group("end")) <= int(m.group("start")):
        return None
    return target.partition(":")[0]


def check_mark(obj: Any, *, path: str | None = None, line: int | None = None) -> Mark:
    """A :class:`Mark` from one decoded JSON line, checked.

    Raises:
        BadInputError: not an object, a missing, unknown or ill-typed field (file, line named).
    """
    def bad(msg: str, key: str | None = None) -> BadInputError:
        return BadInputError(msg, path=path, line=line, field=key)

    if not isinstance(obj, Mapping):
        raise bad(f"expected a JSON object, got {type(obj).__name__}")
    for k in obj:
        if k not in FIELDS:
            raise bad(f"unknown field (a mark has {', '.join(FIELDS)})", str(k))
    for k in FIELDS:
        if k not in obj and k != "note":
            raise bad("missing", k)
    ep = obj["episode"]
    if not isinstance(ep, str) or split_episode(ep) is None:
        raise bad(f"expected '<case_id>#t<trial>', got {ep!r}", "episode")
    dg = obj["trace_digest"]
    if dg is not None and (not isinstance(dg, str) or not _DIGEST.match(dg)):
        raise bad(f"expected a hex digest or null, got {dg!r}", "trace_digest")
    who = obj["reviewer"]
    if not isinstance(who, str) or not who.strip() or len(who) > REVIEWER_LIMIT:
        raise bad(f"expected a name of 1 to {REVIEWER_LIMIT} characters, got {who!r}",
                  "reviewer")
    at = obj["at"]
    try:
        if not isinstance(at, str):
            raise ValueError
        datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        raise bad(f"expected an ISO 8601 time, got {at!r}", "at") from None
    target = obj["target"]
    kind = target_kind(target) if isinstance(target, str) else None
    if kind is None:
        raise bad("expected 'episode', 'metric:<name>', 'judge:<name>' or "
                  f"'claim:<start>-<end>', got {target!r}", "target")
    mark = obj["mark"]
    allowed = ("pass", "fail") if kind == "episode" else ("right", "wrong")
    if mark not in allowed:
        raise bad(f"expected {' or '.join(repr(a) for a in allowed)} for target "
                  f"{target!r}, got {mark!r}", "mark")
    note = obj.get("note", "")
    if not isinstance(note, str) or len(note) > NOTE_LIMIT:
        raise bad(f"expected text of at most {NOTE_LIMIT} characters", "note")
    return Mark(ep, dg, who, at, target, mark, note, line or 0)


def read_reviews(path: str | Path) -> list[Mark]:
    """Every mark of a review file in file order (``[]`` when absent); a cut-short last line
    (no line end, not JSON) is left out.

    Raises:
        BadInputError: the file cannot be read, or a line is not a valid mark.
    """
    import orjson
    p = Path(path)
    if not p.exists():
        return []
    try:
        data = p.read_bytes()
    except OSError as e:
        raise BadInputError(f"cannot read ({e.strerror})", path=str(p)) from None
    lines = data.split(b"\n")
    out: list[Mark] = []
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            if n == len(lines):  # the last piece, without a line end: a torn write
                break
            raise BadInputError("not JSON", path=str(p), line=n) from None
        out.append(check_mark(obj, path=str(p), line=n))
    return out


def latest(marks: Iterable[Mark],
           digests: Mapping[str, str | None] | None = None) -> dict[tuple[str, str], Mark]:
    """``{(episode, target): the mark that counts}``: the last in file order; with ``digests``
    (current trace digests) a current mark wins over any later stale one.
    """
    out: dict[tuple[str, str], Mark] = {}
    current: dict[tuple[str, str], Mark] = {}
    for m in marks:
        out.pop(m.item, None)
        out[m.item] = m
        if digests is not None and not stale_marks([m], digests):
            current[m.item] = m
    for item, m in current.items():
        out[item] = m
    return out


#: The ``grading_strategy`` of a case whose verdict is its reviewer's mark.
HUMAN = "human"
#: An episode's ``human_review`` while its human-graded case has no current mark.
PENDING = "pending"


def is_human(case: Any) -> bool:
    """Whether a dataset case's ``grading_strategy`` is ``"human"``: its episodes' verdicts
    are their reviewers' marks."""
    return (getattr(case, "extra", None) or {}).get("grading_strategy") == HUMAN


def human_marks(marks: Iterable[Mark], cases: Iterable[Any]
                ) -> dict[str, tuple[tuple[str | None, str], ...]]:
    """The episode marks of the human-graded cases: ``{episode key: ((trace_digest, "pass"
    | "fail"), ...)}`` in file order (:func:`human_verdict` picks the one that counts)."""
    human = {c.id for c in cases if is_human(c)}
    out: dict[str, list[tuple[str | None, str]]] = {}
    for m in marks:
        if m.target == "episode" and m.episode.rpartition("#t")[0] in human:
            out.setdefault(m.episode, []).append((m.trace_digest, m.mark))
    return {k: tuple(v) for k, v in out.items()}


def human_verdict(marks: Sequence[tuple[str | None, str]], recording: str | None) -> str:
    """A human-graded episode's verdict: ``"pass"`` or ``"fail"`` as the latest of its
    episode marks made on the current recording says (a mark without a digest, or an
    episode of unknown digest, counts as current), else :data:`PENDING`."""
    for digest, mark in reversed(marks):
        if digest is None or recording is None or digest == recording:
            return mark
    return PENDING


@dataclass(frozen=True)
class EpisodeFacts:
    """What the review figures need of one graded episode: ``key`` (``case_id#tN``), ``passed``,
    ``metrics`` (``{name: passed or None}``), ``digest`` (current trace digest or ``None``),
    ``human`` (human-graded case), ``to_review`` (grounding claims to review).
    """

    key: str
    passed: bool
    metrics: Mapping[str, bool | None] = field(default_factory=dict)
    digest: str | None = None
    human: bool = False
    to_review: int = 0


def stale_marks(marks: Mapping[tuple[str, str], Mark] | Iterable[Mark],
                digests: Mapping[str, str | None]) -> list[Mark]:
    """The marks made on another recording: the episode's current digest
    (``digests[episode]``) differs from the mark's ``trace_digest``. A mark of an episode
    not in ``digests``, or made without a digest, is not stale (nothing to compare)."""
    items = marks.values() if isinstance(marks, Mapping) else marks
    return [m for m in items if m.episode in digests and m.trace_digest is not None
            and digests[m.episode] is not None and digests[m.episode] != m.trace_digest]


def confusion_stats(tp: int, fn: int, fp: int, tn: int) -> dict[str, Any]:
    """Agreement of a grader's pass/fail with the reviewer's (the truth) from the 2x2 table
    (``tp``, ``fn``, ``fp``, ``tn``; first letter: grader pass/fail against truth): agreement,
    Cohen's (1960) kappa with its large-sample SE and normal 95% interval clipped to [−1, 1],
    TPR and TNR; a figure with a zero denominator is ``None``. Formulas: docs/metrics.md.
    """
    n = tp + fn + fp + tn
    out: dict[str, Any] = {"n": n, "tp": tp, "fn": fn, "fp": fp, "tn": tn, "agreement": None,
                           "kappa": None, "kappa_se": None, "kappa_ci95": None,
                           "tpr": tp / (tp + fn) if tp + fn else None,
                           "tnr": tn / (tn + fp) if tn + fp else None}
    if n == 0:
        return out
    p_o = (tp + tn) / n
    out["agreement"] = p_o
    g_pass, t_pass = (tp + fp) / n, (tp + fn) / n
    p_e = g_pass * t_pass + (1 - g_pass) * (1 - t_pass)
    if p_e >= 1.0:
        return out
    kappa = (p_o - p_e) / (1 - p_e)
    se = math.sqrt(p_o * (1 - p_o) / (n * (1 - p_e) ** 2))
    out.update(kappa=kappa, kappa_se=se,
               kappa_ci95=[max(-1.0, kappa - Z95 * se), min(1.0, kappa + Z95 * se)])
    return out


def _truth(mark: Mark, predicted: bool) -> bool:
    """The true pass/fail a mark says: the reviewer's own for the episode; the grader's
    (``right``) or its opposite (``wrong``) for a metric or judge."""
    if mark.target == "episode":
        return mark.mark == "pass"
    return predicted if mark.mark == "right" else not predicted


def review_summary(marks: Mapping[tuple[str, str], Mark] | Iterable[Mark],
                   episodes: Sequence[EpisodeFacts]) -> dict[str, Any]:
    """What the reviews say of a run: pending items, disagreements, stale and unknown marks, and
    :func:`confusion_stats` per grader (``verdict``, ``metric:<name>``, ``judge:<name>``), from
    the latest mark per item (:func:`latest`). Stale marks and unknown episodes are not counted;
    a human-graded episode's mark is its verdict and enters no verdict figure.

    Returns:
        ``{"episodes", "reviewed", "reviewers", "pending", "human_pending",
        "to_review_pending", "disagreements", "stale", "unknown", "figures", "claims"}``.
    """
    if not isinstance(marks, Mapping):
        marks = latest(marks, {e.key: e.digest for e in episodes})
    by_key = {e.key: e for e in episodes}
    stale = {m.item for m in stale_marks(marks, {e.key: e.digest for e in episodes})}
    cells: dict[str, list[int]] = {}
    disagree: list[dict[str, Any]] = []
    claims = {"right": 0, "wrong": 0}
    unknown: list[dict[str, Any]] = []
    reviewed: set[str] = set()

    def count(name: str, predicted: bool, truth: bool) -> None:
        c = cells.setdefault(name, [0, 0, 0, 0])  # tp, fn, fp, tn
        c[(0 if predicted else 1) if truth else (2 if predicted else 3)] += 1

    for item, m in marks.items():
        ep = by_key.get(m.episode)
        if ep is None:
            unknown.append(m.to_json())
            continue
        if item in stale:
            continue
        kind = target_kind(m.target)
        if kind == "claim":
            claims[m.mark] += 1
            continue
        if kind == "episode":
            reviewed.add(m.episode)
            if ep.human:  # its verdict is this mark: nothing to measure
                continue
            predicted: bool | None = ep.passed
            name = "verdict"
        else:
            name = m.target
            predicted = ep.metrics.get(m.target.partition(":")[2])
        if predicted is None:
            continue
        truth = _truth(m, predicted)
        count(name, predicted, truth)
        if truth != predicted:
            disagree.append({"episode": m.episode, "target": m.target, "mark": m.mark,
                             "graded": predicted, "reviewer": m.reviewer, "note": m.note})
    return {
        "episodes": len(episodes), "reviewed": len(reviewed),
        "reviewers": sorted({m.reviewer for m in marks.values()}),
        "pending": [e.key for e in episodes if e.key not in reviewed],
        "human_pending": [e.key for e in episodes if e.human and e.key not in reviewed],
        "to_review_pending": [e.key for e in episodes if e.to_review and e.key not in reviewed],
        "disagreements": disagree,
        "stale": [marks[i].to_json() for i in marks if i in stale],
        "unknown": unknown,
        "figures": {k: confusion_stats(*v) for k, v in sorted(
            cells.items(), key=lambda kv: (kv[0] != "verdict", kv[0]))},
        "claims": claims}


def episode_facts(report: Any, run: Any = None, index: Any = None) -> list[EpisodeFacts]:
    """:class:`EpisodeFacts` of every episode of a graded ``report``, in order; ``run`` gives the
    cases' ``grading_strategy``, ``index`` (a ``TraceIndex``) the current trace digests (else the
    report's).

    Raises:
        BadInputError: the traces file cannot be read (file named).
    """
    digests: dict[tuple[str, int], str] = {}
    if index is not None:
        from evaltape.grader.io.traces import line_digest
        try:
            with open(index.path, "rb") as fh:
                for key, line in index.lines.items():
                    fh.seek(index.starts[line - 1])
                    digests[key] = line_digest(fh.readline())
        except OSError as e:
            raise BadInputError(f"cannot read ({e.strerror})", path=str(index.path)) from None
    cases = {} if run is None else run.case_by_id
    out = []
    for ep in report.episodes:
        case = cases.get(ep.case_id)
        strategy = None if case is None else (case.extra or {}).get("grading_strategy")
        ground = ep.metrics.get("grounding")
        ev = getattr(ground, "evidence", None)
        to_review = len(ev.get("to_review") or []) if isinstance(ev, Mapping) and isinstance(
            ev.get("to_review"), list) else int(" to review, not counted: " in (
                getattr(ground, "message", "") or ""))
        out.append(EpisodeFacts(
            episode_key(ep.case_id, ep.trial), bool(ep.passed),
            {n: m.passed for n, m in ep.metrics.items()},
            digests.get((ep.case_id, ep.trial), ep.trace_digest) if index is not None
            else ep.trace_digest,
            strategy == "human", to_review))
    return out


def review_block(marks: Iterable[Mark], episodes: Sequence[EpisodeFacts]) -> dict[str, Any]:
    """The report's ``summary.review`` block: :func:`review_summary` with its lists of
    episode keys (pending, human_pending, to_review_pending, stale, unknown) given as counts,
    ``human_pending_episodes`` the keys of the human-graded episodes awaiting a review, the
    figures and the disagreements as they are."""
    got = review_summary(marks, episodes)
    got["human_pending_episodes"] = list(got["human_pending"])
    for key in ("pending", "human_pending", "to_review_pending", "stale", "unknown"):
        got[key] = len(got[key])
    return got


def review_lines(block: Mapping[str, Any] | None) -> list[str]:
    """The review block in words, one line each, for the terminal and report.md: who
    reviewed how many episodes, what is pending or stale, then per grader n, agreement,
    Cohen's kappa with its 95% interval, TPR and TNR. ``[]`` without a block."""
    if not block:
        return []
    head = review_headline(block)
    out = [head["line"]]
    if head["waiting"]:
        out.append(f"  human-graded, pending review (not passed): {head['waiting']}")
    for r in review_rows(block):
        kappa = r["kappa"] + (f" {r['ci']}" if r["ci"] else "")
        out.append(f"  {r['grader']}: n {r['n']}, agreement {r['agreement']}, kappa {kappa}, "
                   f"TPR {r['tpr']}, TNR {r['tnr']} (tp {r['tp']}, fn {r['fn']}, "
                   f"fp {r['fp']}, tn {r['tn']})")
    return out


def review_headline(block: Mapping[str, Any]) -> dict[str, str]:
    """The review block's first line (``line``: who reviewed how many episodes, what is
    pending or stale, how many disagreements) and the human-graded episodes pending review
    (``waiting``: up to ten keys, ``""`` when none)."""
    who = ", ".join(block["reviewers"]) or "no one"
    line = (f"review: {block['reviewed']} of {block['episodes']} episode(s) reviewed by "
            f"{who}; {block['pending']} pending ({block['human_pending']} of human-graded "
            f"cases), {block['stale']} stale mark(s) not counted, "
            f"{len(block['disagreements'])} disagreement(s)")
    waiting = block.get("human_pending_episodes") or []
    shown = ", ".join(waiting[:10]) + (f" and {len(waiting) - 10} more"
                                       if len(waiting) > 10 else "")
    return {"line": line, "waiting": shown}


def review_rows(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per grader of the review block, its figures as the terminal prints them:
    ``grader``, ``n``, ``agreement``, ``kappa``, ``ci`` (``"[low, high]"`` or ``""``),
    ``tpr``, ``tnr`` (3 places, ``n/a`` when undefined) and the counts ``tp fn fp tn``."""
    def num(x: Any) -> str:
        return "n/a" if x is None else f"{x:.3f}"
    rows = []
    for name, f in block["figures"].items():
        ci = f.get("kappa_ci95")
        rows.append({"grader": name, "n": f["n"], "agreement": num(f["agreement"]),
                     "kappa": num(f["kappa"]),
                     "ci": f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "",
                     "tpr": num(f["tpr"]), "tnr": num(f["tnr"]),
                     "tp": f["tp"], "fn": f["fn"], "fp": f["fp"], "tn": f["tn"]})
    return rows
