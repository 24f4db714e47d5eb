"""Small helpers shared by the report renderers."""
from __future__ import annotations

import re
from typing import Any, Iterator


BAR_WIDTH = 30


def bar(value: float | None, width: int = BAR_WIDTH) -> str:
    """A text bar: ``int(score * 30)`` '#' then '.' up to 30; ``None`` → blanks."""
    if value is None:
        return " " * width
    n = max(0, min(width, int(value * width)))
    return "#" * n + "." * (width - n)


def fmt(value: float | None, digits: int = 2) -> str:
    """A score with ``digits`` places, or ``n/a`` for a null score."""
    return "n/a" if value is None else f"{value:.{digits}f}"


#: Null-score reasons that mean "could not be computed" (shown as failing details), as
#: opposed to "not applicable" (``no_claims``, ``category_mismatch``...), which are not.
PROBLEM_REASONS = ("error", "judge_")


def status(m: Any) -> str:
    """``PASS``/``FAIL`` as the result's recorded ``passed`` says (the verdict applied the
    threshold and its direction), ``ERROR`` for a metric that raised, ``N/A`` for a
    skipped (null) score."""
    ok = m.passed
    if ok is None:
        return "N/A"
    if m.score is None:
        return "ERROR"
    return "PASS" if ok else "FAIL"


def threshold_text(threshold: Any, lower_is_better: bool = False) -> str:
    """A run-level threshold (``summary.thresholds``) in words: ``≥ 0.80``, ``≤ 0.00``
    for a lower-is-better rate, ``by difficulty: basic 0.80, ...`` for a tier table."""
    if isinstance(threshold, dict):
        return "by difficulty: " + ", ".join(f"{k} {v:.2f}" for k, v in threshold.items())
    if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
        return f"{'≤' if lower_is_better else '≥'} {threshold:.2f}"
    return "n/a"


def verdict_lines(summary: Any, lower: Any) -> list[str]:
    """What the verdict means for this report, in words (one line each): the gating
    metrics with their thresholds, the informational ones, the skipped gating checks and
    the cases with thresholds of their own. ``[]`` for a report without a verdict block."""
    v = summary.verdict
    if not isinstance(v, dict):
        return []
    if isinstance(v.get("groups"), list):
        return group_lines(summary, lower)
    thr = summary.thresholds or {}
    gates = [n for n in v.get("gate") or () if n in summary.metrics]
    gate_text = ("every gating metric passes its threshold: " + "; ".join(
        f"{n} {threshold_text(thr.get(n), n in lower)}" for n in gates)
        if gates else "no metric gates (every metric is informational)")
    out = ["verdict rule (how an episode passes, not this run's result): the outcome "
           "checks pass (an answer, the expected tools and text) and " + gate_text]
    info = [n for n in v.get("informational") or () if n in summary.metrics]
    skipped = {n: k for n, k in (v.get("skipped") or {}).items() if k}
    return out + _notes(v, info, skipped) + decided_lines(v)


def _notes(verdict: dict, info: list[str], skipped: dict[str, int]) -> list[str]:
    """The verdict's closing lines: the informational metrics, the gating checks skipped
    (``{metric: count}``) and the cases with thresholds of their own; each only when any."""
    out = []
    if info:
        out.append("informational (shown, never gate): " + ", ".join(info))
    if skipped:
        out.append("gating checks skipped (null score, not a failure): " + ", ".join(
            f"{n} {k}" for n, k in skipped.items()))
    if verdict.get("case_thresholds"):
        out.append(f"{verdict['case_thresholds']} case(s) set thresholds of their own (the "
                   "case's win)")
    return out


#: The outcome check each ``summary.verdict.decided`` entry replaces, in words.
_FIXED_RULE = {"tools": "the exact tool rule (wrong_tools)",
               "answer": "the exact answer rule (wrong_answer)"}


def decided_lines(verdict: Any) -> list[str]:
    """One line per metric whose threshold decides an outcome check in place of its fixed
    rule (``summary.verdict.decided``): ``tool_selection_accuracy's threshold decides the
    tool check in place of the exact tool rule (wrong_tools) on 3 case(s)``."""
    decided = verdict.get("decided") if isinstance(verdict, dict) else None
    if not isinstance(decided, dict):
        return []
    out = []
    for name, d in decided.items():
        if not isinstance(d, dict):
            continue
        check_name = d.get("check")
        what = "tool" if check_name == "tools" else "answer"
        out.append(f"{name}'s threshold decides the {what} check in place of "
                   f"{_FIXED_RULE.get(check_name, 'its fixed rule')} on {d.get('cases')} "
                   "case(s)")
    return out


def gating(summary: Any) -> frozenset[str]:
    """The metrics that gate the verdict (``summary.verdict.gate``; none for an older
    report without the block: its verdict was the outcome checks alone). With
    ``summary.verdict.groups`` (a run with cases decided by their end state): the metrics
    that gate some group's cases, and ``state_match`` when some case is decided by its
    end state (its score is that check), so a metric that decides no case is never
    labelled as gating."""
    v = summary.verdict
    if isinstance(v, dict) and isinstance(v.get("groups"), list):
        out = {n for g in v["groups"] if isinstance(g, dict) for n in g.get("gate") or ()}
        if any(isinstance(g, dict) and g.get("group") == "end state" for g in v["groups"]):
            out.add("state_match")  # its score is the end-state check that decides them
        return frozenset(out)
    if isinstance(v, dict) and isinstance(v.get("gate"), list):
        return frozenset(v["gate"])
    return frozenset()


def gate_failures(summary: Any) -> dict[str, int]:
    """Failed checks per metric as the reports' "failed" column shows them: the gating
    metrics' counts (``summary.verdict.failed``), with ``summary.verdict.groups``: each
    group's failed gating metrics summed, and ``state_match`` the end-state cases'
    ``wrong_state`` episodes."""
    v = summary.verdict if isinstance(summary.verdict, dict) else {}
    if not isinstance(v.get("groups"), list):
        return dict(v.get("failed") or {})
    out: dict[str, int] = {}
    for g in v["groups"]:
        if not isinstance(g, dict):
            continue
        failed = g.get("failed") or {}
        for n in g.get("gate") or ():
            out[n] = out.get(n, 0) + int(failed.get(n, 0))
        if g.get("group") == "end state":
            out["state_match"] = out.get("state_match", 0) + int(failed.get("wrong_state", 0))
    return out


def group_lines(summary: Any, lower: Any) -> list[str]:
    """The verdict in words per group of cases (``summary.verdict.groups``,
    :mod:`evaltape.grader.stats.verdict_groups`): one line per group saying which checks
    decided and how many episodes failed each of exactly those, then the metrics that
    gate no case (informational: shown, never deciding)."""
    v = summary.verdict
    thr = summary.thresholds or {}
    out = []
    for g in v["groups"]:
        if not isinstance(g, dict):
            continue
        gate = [n for n in g.get("gate") or () if n in summary.metrics]
        checks = ("the end state (state_match, the whole state), a gold action that "
                  "changes no state called, and expected_tools and answer keywords when "
                  "the case gives them" if g.get("group") == "end state" else
                  "the outcome checks (an answer, the expected tools and text)")
        gates = ("; and every gating metric passes its threshold: " + "; ".join(
            f"{n} {threshold_text(thr.get(n), n in lower)}" for n in gate)) if gate \
            else "; no metric gates"
        failed = ", ".join(f"{k} {n}" for k, n in (g.get("failed") or {}).items())
        who = ("case(s) decided by their end state" if g.get("group") == "end state"
               else "other case(s)")
        out.append(f"verdict of the {g.get('cases')} {who} "
                   f"({g.get('passed')}/{g.get('episodes')} episode(s) passed): PASS when "
                   f"{checks}{gates}; failed: {failed or 'none'}")
    gating_any = gating(summary)
    info = [n for n in summary.metrics if n not in gating_any]
    skipped = {n: k for n, k in (v.get("skipped") or {}).items() if k and n in gating_any}
    return out + _notes(v, info, skipped)


def trial_lines(summary: Any) -> list[str]:
    """One-line texts for pass@k, pass^k and the interval on pass_rate, when the summary
    (:class:`evaltape.grader.results.Summary`) has them, and the note on trials that
    recorded the same answer (``summary.identical_trials``, ``trials: ...``)."""
    out = []
    ci = summary.pass_rate_ci95
    if ci and ci.get("low") is not None:
        out.append(f"pass_rate {ci['level']:.0%} interval: [{ci['low']:.3f}, {ci['high']:.3f}] "
                   f"({ci['method']} = {ci.get('n')})")
    for key, label in (("pass_at_k", "pass@k"), ("pass_hat_k", "pass^k")):
        if getattr(summary, key):
            out.append(f"{label}: " + "  ".join(
                f"k={k} {v:.3f} ({k_coverage(summary, k)})" for k, v in
                sorted(getattr(summary, key).items(), key=lambda kv: int(kv[0]))))
    same = getattr(summary, "identical_trials", None)
    if isinstance(same, dict) and same.get("note"):
        out.append(f"trials: {same['note']}")
    return out


def k_coverage(summary: Any, k: str) -> str:
    """``"3/4 cases"``: how many cases had at least k trials and so entered pass@k and
    pass^k at this k (the others are left out of that mean)."""
    n = (summary.k_cases or {}).get(k)
    return f"{n}/{summary.cases} cases" if n is not None else f"?/{summary.cases} cases"


def episode_label(ep: Any, multi_trial: bool) -> str:
    """``case`` or ``case#t<trial>`` when the run has several trials (``ep``: an
    :class:`evaltape.grader.results.EpisodeResult`)."""
    return f"{ep.case_id}#t{ep.trial}" if multi_trial else ep.case_id


#: C0/C1 control characters (ESC starts terminal escape sequences), except tab and newline,
#: and the bidirectional overrides and isolates (U+202A-202E, U+2066-2069), which reorder
#: the rest of a line on screen (Boucher and Anderson 2021, "Trojan Source").
_CONTROL = dict.fromkeys([*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f, *range(0x80, 0xa0),
                          *range(0x202a, 0x202f), *range(0x2066, 0x206a)], "\ufffd")
_ONE_LINE = {**_CONTROL, 0x0a: "\u21b5"}  # a line break shown as ↵
#: Any character of those tables (a search in C is faster than translating every text)
_UNSAFE = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(_CONTROL)) + "]")
_UNSAFE_LINE = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(_ONE_LINE)) + "]")


def plain(text: str, one_line: bool = False) -> str:
    """``text`` safe for a terminal: control characters (ESC, BEL, CR...) and bidirectional
    overrides become U+FFFD, so an answer recorded from a model cannot move the cursor,
    recolour the screen or reverse a line; key-shaped strings are redacted
    (:mod:`evaltape.grader.io.secrets`). ``one_line``: a line break becomes ``↵`` too (an
    id in a table cell or a label)."""
    from evaltape.grader.io.secrets import redact
    text = str(text)
    if (_UNSAFE_LINE if one_line else _UNSAFE).search(text):
        text = text.translate(_ONE_LINE if one_line else _CONTROL)
    return redact(text)


def skip_reasons(summary: Any, name: str) -> str:
    """Why metric ``name``'s null scores were skipped (``"19 no_answer, 3 not_applicable"``,
    most frequent first); ``""`` when none.
    """
    codes = (getattr(summary, "metrics_skipped_codes", None) or {}).get(name) or {}
    ordered = sorted(codes.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{k} {code}" for code, k in ordered)


def skipped_text(summary: Any, name: str) -> str:
    """How many of metric ``name``'s scores were skipped (null) and why: ``"22 skipped: 19
    no_answer, 3 not_applicable"`` (:func:`skip_reasons`); ``""`` when none was skipped."""
    n = (summary.metrics_skipped or {}).get(name, 0)
    if not n:
        return ""
    why = skip_reasons(summary, name)
    return f"{n} skipped: {why}" if why else f"{n} skipped"


def cell_text(m: Any) -> str:
    """A metric cell of the per-episode tables: the score and its status (``0.00 FAIL``,
    ``1.00 PASS``); a null score reads ``n/a`` alone (its reason is in the summary's
    skipped counts and, when it could not be computed, in the failing details), a metric
    that raised ``ERROR``."""
    st = status(m)
    if m.score is None:
        return "ERROR" if st == "ERROR" or m.code == "error" else "n/a"
    return f"{fmt(m.score)} {st}"


def trials_text(trials: list[int]) -> str:
    """Trial numbers as an episode label's suffix: ``t0,t2``; a run of three or more
    consecutive trials is written as a range, ``t0-t2`` (``[0, 1, 2, 5]`` → ``t0-t2,t5``)."""
    parts: list[str] = []
    i = 0
    ts = sorted(trials)
    while i < len(ts):
        j = i
        while j + 1 < len(ts) and ts[j + 1] == ts[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"t{ts[i]}-t{ts[j]}")
        else:
            parts.extend(f"t{t}" for t in ts[i:j + 1])
        i = j + 1
    return ",".join(parts)


def failing_details(episodes: Any, names: Any, multi_trial: bool
                    ) -> Iterator[tuple[str, str | None, Any]]:
    """The failing metric results of ``episodes`` as ``(label, metric name, result)``, and
    for a failed episode none of whose metric results fails (it failed on an outcome
    check alone: ``wrong_answer``, ``no_answer:...``, ``wrong_state``) one line
    ``(label, None, its failure)``, so every failing episode has a line.

    Failing means the recorded ``passed`` is false: below its threshold, or a
    metric that raised. A skipped (null) score, a judge answer not recorded among them, is
    not a failure and has no line (the judge block and its note count those).

    The identical lines of one case's trials are given once: results of one metric whose
    score, threshold, reason code and details are all equal (or equal failures) share one
    line labelled with every trial they hold, ``tc_001#t0-t2`` (see :func:`trials_text`);
    a single-trial run's label is the case id.

    ``episodes`` is iterated once, in report order (dataset order, then trial, so a case's
    episodes are consecutive); only one case's lines are held at a time. Lines come in the
    order of their first trial, then the metric order of ``names``.
    """
    def flush(case_id: str, groups: dict) -> Iterator[tuple[str, str | None, Any]]:
        for (name, *_), (m, trials) in groups.items():
            label = f"{case_id}#{trials_text(trials)}" if multi_trial else case_id
            yield label, name, m

    case_id: str | None = None
    groups: dict[tuple, tuple[Any, list[int]]] = {}
    for ep in episodes:
        if ep.case_id != case_id:
            if case_id is not None:
                yield from flush(case_id, groups)
            case_id, groups = ep.case_id, {}
        lines = 0
        for n in names:
            m = ep.metrics[n]
            if m.passed is not False:
                continue
            lines += 1
            key = (n, m.score, m.threshold if not isinstance(m.threshold, dict) else
                   tuple(sorted(m.threshold.items())), m.code, m.message)
            if key in groups:
                groups[key][1].append(ep.trial)
            else:
                groups[key] = (m, [ep.trial])
        if not lines and getattr(ep, "passed", True) is False:
            key = (None, ep.failure)
            if key in groups:
                groups[key][1].append(ep.trial)
            else:
                groups[key] = (ep.failure, [ep.trial])
    if case_id is not None:
        yield from flush(case_id, groups)
