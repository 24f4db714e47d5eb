"""``error_recovery``: what the agent does after a tool call fails."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.matching.conversation import Event, call_failed, events, sentences
from evaltape.grader.matching.state import same_value
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


def _reply_verdict(text: str, call) -> tuple[bool, str]:
    """Whether the agent's first reply after the failure of ``call`` is good, and why."""
    text = _about(text, call)
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
    return False, "went on as if the call had succeeded"


@dataclass(frozen=True)
class ErrorRecovery(Metric):
    """The share of failed tool calls the agent recovered from well: good recoveries ÷
    failed calls.

    A call failed by grounding's rule (flagged ``is_error``, a JSON result with
    ``success``/``ok`` false or an ``error``, a text starting with "error"). After each
    failure, the agent's next action decides, looking past calls of other tools:

    - a call of the same tool with **changed arguments**: good (a retry; if it fails too, it
      is judged as a failure of its own);
    - the same tool with **identical arguments**: bad (repeating the failing call);
    - its next reply to the user (the sentences naming the tool's action when some do: a
      reply about two failures judges each on its own sentences): good when it **reports
      the failure** (could not, unable,
      not found, failed, already booked, a problem, sorry ... with no success claimed) or
      asks the user to check the failed input (a question naming the argument or "double-
      check", "again", "correct"); bad when it **claims success** (done, successfully, has
      been booked, I've updated ...) or says neither (**goes on as if the call had
      succeeded**);
    - nothing after it (the episode ended): bad (the failure was never reported).

    The categories are the issue's (good: a retry with changed arguments, an honest report;
    bad: the identical call again, going on as if it succeeded, claiming success), in the
    spirit of τ-bench's observation that agents act on failed calls as if they had worked;
    the word lists were written for this project. Null (``no_tool_errors``): no tool call
    failed. What it cannot catch: a retry with changed but still wrong arguments counts as
    good, a report in words it does not read counts as going on, and a claim of success
    about a different action than the failed one counts against the agent.
    """

    name: ClassVar[str] = "error_recovery"
    version: ClassVar[int] = 1

    def score(self, ctx: EpisodeContext) -> Score:
        """Score one episode; the formula, source and null cases are in the class docstring."""
        evs = events(ctx.trace)
        verdicts: list[tuple[bool, str]] = []
        for i, ev in enumerate(evs):
            if ev.kind != "call" or not call_failed(ev.call):
                continue
            verdicts.append(_after(ev, evs[i + 1:]))
        if not verdicts:
            return Score(None, "no tool call failed", code="no_tool_errors")
        good = sum(ok for ok, _why in verdicts)
        return Score(good / len(verdicts), f"{good}/{len(verdicts)} failed call(s) recovered: "
                     + "; ".join(why for _ok, why in verdicts[:8])
                     + ("; ..." if len(verdicts) > 8 else ""))


def _after(failed: Event, rest: list[Event]) -> tuple[bool, str]:
    call = failed.call
    label = f"{call.name}#{call.id}"
    for j, ev in enumerate(rest):
        if ev.kind == "call" and ev.call.name == call.name:
            if same_value(dict(ev.call.arguments), dict(call.arguments)):
                return False, f"{label}: repeated the identical failing call"
            return True, f"{label}: retried with changed arguments"
        if ev.kind == "agent":
            working = ev.message >= 0 and any(
                e.kind == "call" and e.message == ev.message for e in rest[j + 1:])
            if working:
                # text beside the agent's next calls ("let me try another way"): a report
                # when it says what failed, else the calls decide
                if FAILURE_WORDS.search(ev.text):
                    return True, f"{label}: reported the failure to the user"
                continue
            ok, why = _reply_verdict(ev.text, call)
            return ok, f"{label}: {why}"
        if ev.kind == "user":
            break
    return False, f"{label}: the failure was never reported"
