"""``error_recovery``: what the agent does after a tool call fails."""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.matching.conversation import Event, call_failed, events, sentences
from evaltape.grader.envs.documents import typed_key
from evaltape.grader.matching.state_diff import same_value
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric

#: Words that report a failure to the user.
FAILURE_WORDS = re.compile(
    r"\b(?:could(?:n't| not)|can(?:'t|not)|unable|failed|fails?|error|not found|"
    r"(?:was|is|were|are)(?:n't| not)|did(?:n't| not)|does(?:n't| not)|do(?:n't| not) see|"
    r"no (?:record|patient|account|booking|order|appointment|match|such)|"
    r"unavailable|not available|already (?:booked|taken|cancell?ed)|taken|invalid|"
    r"problem|issue|went wrong|no longer|not possible|denied|rejected|refused|"
    r"couldn't|wasn't able)\b", re.I)
#: Apologies: a report only when no success is claimed in the same reply.
SOFT_FAILURE = re.compile(r"\b(?:sorry|unfortunately|apologi[sz]e)\b", re.I)
#: Words that claim the action was done.
SUCCESS = re.compile(
    r"\b(?:done|successfully|all set|completed|went through|is now|are now|confirmed|"
    r"(?:has|have) been \w+ed|(?:is|are) (?:booked|cancell?ed|updated|changed|moved|"
    r"scheduled|rescheduled|reset|unlocked)|i(?:'ve| have) (?:\w+ed|made|sent|set))\b", re.I)
#: A question that checks the failed input with the user ("could you double-check...").
CHECK_WORDS = re.compile(r"\b(?:double[- ]check|check|again|correct|right|sure|verify|"
                         r"confirm|spell|typo|another|different|other)\b", re.I)


#: Words of a tool name that say nothing about which action it is.
GENERIC = frozenset({"get", "set", "add", "do", "make", "run", "create", "update", "check",
                     "find", "list", "new", "the", "for", "by", "tool", "api"})


def _about(text: str, call) -> str:
    """The sentences of ``text`` about ``call``'s action (they name a word of its tool's
    name: ``bag`` for ``add_bag``, ``upgrade`` for ``upgrade_seat``), else all of it: in
    a reply about two failed calls, each is judged on what is said about it."""
    words = [w for w in call.name.lower().replace("-", "_").split("_")
             if len(w) >= 3 and w not in GENERIC]
    if not words:
        return text
    mine = [s for s in sentences(text)
            if any(re.search(r"\b" + re.escape(w), s.lower()) for w in words)]
    return " ".join(mine) if mine else text


def _error_values(call) -> set[str]:
    """The numbers and ids (three characters or more, with a digit) a failed call's error
    message gives that its arguments do not hold ("total price is 375, but paid 299":
    375)."""
    held = " ".join(str(v) for v in call.arguments.values()).lower()
    return {t for t in re.findall(r"[a-z0-9_.-]*\d[a-z0-9_.-]*", (call.result or "").lower())
            if len(t.strip(".-_")) >= 3 and t.strip(".-_") not in held}


def _told(text: str, call) -> str | None:
    """A value of the error message (:func:`_error_values`) that the reply ``text`` states
    with no success claimed ("The total fare is $375"), or ``None``."""
    if SUCCESS.search(_about(text, call)):
        return None
    low = text.lower().replace(",", "")
    return next((v.strip(".-_") for v in sorted(_error_values(call))
                 if re.search(r"(?<![\w.])" + re.escape(v.strip(".-_")) + r"(?!\w)", low)),
                None)


def _reply_verdict(text: str, call) -> tuple[bool, str] | None:
    """Whether a reply after ``call`` failed recovers from it, and why; ``None`` when it neither
    reports, asks nor claims. Sentences naming the tool's action decide, else the whole reply.
    """
    about = _about(text, call)
    verdict = _text_verdict(about, call)
    return verdict if verdict is not None or about == text else _text_verdict(text, call)


def _text_verdict(text: str, call) -> tuple[bool, str] | None:
    claims = any(SUCCESS.search(s) and not FAILURE_WORDS.search(s) for s in sentences(text))
    if FAILURE_WORDS.search(text):
        return True, "reported the failure to the user"
    if claims:
        return False, "claimed success after the failed call"
    if SOFT_FAILURE.search(text):
        return True, "reported the failure to the user"
    values = [str(v).lower() for v in call.arguments.values() if isinstance(v, (str, int))]
    for s in sentences(text):
        if s.rstrip().endswith("?") and (CHECK_WORDS.search(s) or
                                         any(v and v in s.lower() for v in values)):
            return True, "asked the user to check the failed input"
    return None


@dataclass(frozen=True)
class ErrorRecovery(Metric):
    """Share of failed tool calls the agent recovered from (identical repeats of a failed call
    belong to the failure they repeat).

    A failure whose identical call (same tool, same arguments) fails two or more further
    times, whatever was said between → not recovered. Else, after the failure the first of
    these decides: the same call repeated two or more times → not recovered; a retry with
    changed arguments, another tool toward the same goal, or a
    transfer → recovered; a reply that states the failure or asks about the failed input →
    recovered, one that claims the action happened → not; at the end, not recovered unless a
    reply stated a value the error gave. Rules: docs/metrics.md, "error_recovery". Null
    ``no_tool_errors``.
    """

    name: ClassVar[str] = "error_recovery"
    version: ClassVar[int] = 5

    def score(self, ctx: EpisodeContext) -> Score:
        evs = events(ctx.trace)
        verdicts: list[tuple[bool, str]] = []
        evidence: list[dict] = []
        repeats: set[int] = set()
        same_calls: dict[tuple, list[int]] = {}  # (tool, arguments) → positions, in order
        for i, ev in enumerate(evs):
            if ev.kind == "call":
                same_calls.setdefault(_call_key(ev.call), []).append(i)
        for i, ev in enumerate(evs):
            if ev.kind != "call" or not call_failed(ev.call) or i in repeats:
                continue
            again = _failed_again(evs, i, same_calls[_call_key(ev.call)])
            if len(again) >= 2:
                ok, same = False, again
                why = (f"{ev.call.name}#{ev.call.id}: repeated the identical failing call "
                       f"{len(again)} more times")
            else:
                ok, why, same = _after(ev, evs[i + 1:])
            repeats.update(i + 1 + j for j in same)
            verdicts.append((ok, why))
            evidence.append({"call": f"{ev.call.name}#{ev.call.id}", "turn": ev.message,
                             "recovered": ok, "why": why.split(": ", 1)[-1]})
        if not verdicts:
            return Score(None, "no tool call failed", code="no_tool_errors",
                         evidence={"failures": []})
        good = sum(ok for ok, _why in verdicts)
        return Score(good / len(verdicts), f"{good}/{len(verdicts)} failed call(s) recovered: "
                     + "; ".join(why for _ok, why in verdicts[:8])
                     + ("; ..." if len(verdicts) > 8 else ""),
                     evidence={"failures": evidence})


def _words(name: str) -> set[str]:
    return {w for w in name.lower().replace("-", "_").split("_")
            if len(w) >= 3 and w not in GENERIC}


def _failed_again(evs: list[Event], i: int, same: list[int]) -> list[int]:
    """Positions, counted from ``evs[i + 1]``, of the later calls identical to the failed call
    ``evs[i]`` (``same``: the positions of every call with its :func:`_call_key`) that fail
    again, up to the first one that succeeds: repeats of the failure, whatever the agent said
    between them."""
    out = []
    for j in same[bisect.bisect_right(same, i):]:
        if not call_failed(evs[j].call):
            break
        out.append(j - i - 1)
    return out


def _call_key(call) -> tuple:
    """A call's tool and arguments as one hashable value, equal exactly when the tools are
    the same and the arguments are :func:`~evaltape.grader.envs.documents.same_value`."""
    return call.name, typed_key(dict(call.arguments))


def _after(failed: Event, rest: list[Event]) -> tuple[bool, str, list[int]]:
    """The verdict on one failure: (recovered, why, positions in ``rest`` of the identical
    repeats that belong to it)."""
    call = failed.call
    label = f"{call.name}#{call.id}"
    same: list[int] = []
    told: str | None = None
    for j, ev in enumerate(rest):
        if ev.kind == "call" and ev.call.name == call.name:
            if same_value(dict(ev.call.arguments), dict(call.arguments)):
                same.append(j)
                if len(same) >= 2:
                    return False, (f"{label}: repeated the identical failing call "
                                   f"{len(same)} more times"), same
                if not call_failed(ev.call):
                    return True, f"{label}: the identical call again succeeded", same
                continue
            return True, f"{label}: retried with changed arguments", same
        if ev.kind == "call":
            if _words(ev.call.name) & _words(call.name):
                return True, f"{label}: tried another tool ({ev.call.name})", same
            if "transfer" in _words(ev.call.name) and not call_failed(ev.call):
                # handing the user to a person is another way to get it done
                return True, f"{label}: transferred the user ({ev.call.name})", same
            continue
        if ev.kind == "agent":
            working = ev.message >= 0 and any(
                e.kind == "call" and e.message == ev.message for e in rest[j + 1:])
            if working:
                # text beside the agent's next calls ("let me try another way"): a report
                # when it says what failed, else the calls decide
                if FAILURE_WORDS.search(_about(ev.text, call)):
                    return True, f"{label}: reported the failure to the user", same
                continue
            verdict = _reply_verdict(ev.text, call)
            if verdict is not None:
                ok, why = verdict
                return ok, f"{label}: {why}", same
            told = told or _told(ev.text, call)
    if told:
        # a reply gave the user what the error said and the conversation ended before
        # the agent acted again: it told the user (and asked how to go on)
        return True, f"{label}: told the user what the error said ({told})", same
    said = any(ev.kind == "agent" for ev in rest)
    return False, (f"{label}: went on as if the call had succeeded" if said
                   else f"{label}: the failure was never reported"), same
