"""Recall of ``grounding`` on real answers with one supported fact changed, and its flag
rate on the same answers untouched.

Usage: ``python scripts/bench_grounding_mutations.py [--corpus DIR] [--write] [-v]``.

The answers are the agent replies of the successful episodes (the benchmark's own reward
is 1) of τ-bench's GPT-4o airline trajectories and τ²-bench's gpt-4.1 airline simulations
(the ``corpus`` folder named as in ``scripts/bench_grounding.py``), and the grounded
(``fabricated: false``) episodes of the hand-written set ``bench/grounding/episodes.jsonl``.
A *mutation* changes one fact of one answer that a tool result of the episode supports to
a value that no message of the episode states, of one of six kinds (:data:`KINDS`):

- ``amount``: a sum of money (``$250``, ``$1,024.50``, ``250 USD``) whose value a tool result
  states as a number; its value moves by a non-zero amount (cents kept as written);
- ``id``: a code or identifier (``ZFA04Y``, ``HAT136``, ``credit_card_4421486``,
  ``7504069``) that a tool result holds as a token or a ``_`` part; one character changes
  (a digit to another digit, a letter to another letter of the same case);
- ``count``: a whole number of things (``2 passengers``, ``three checked bags``, ``Total
  Baggages: 3``) that a tool result states as a JSON number or a list length; it becomes
  another whole number from 2 to 12, written the same way (digits or words), that no
  tool result states as a JSON number or list length and no message states before the
  same noun;
- ``date``: a calendar date (``May 20, 2024``, ``May 20th``, ``20 May``, ``2024-05-20``) a
  tool result states; the day moves within the month to one no message states in any
  of those forms (an ordinal suffix follows the new day: ``20th`` → ``13th``);
- ``quantity``: a number with a unit (``12.4 km``, ``30 km/h``, ``89%``, ``2 GB``,
  ``45 minutes``) whose number a tool result states; the number changes, the unit stays;
- ``name``: a proper name (``Mia``, ``Li``, ``Seattle``) a tool result holds as a word; it
  becomes a name from :data:`NAMES` that no message holds.

"A tool result supports" means a result that came back before the reply was written. "No
message states" is checked against every message of the episode (system prompt, user
turns, tool calls and results, every agent reply), the way a reader would search them: a
number against every number written in them (digits), a code or name against every token,
a date against every date in the forms above. The candidates are found by this script's
own patterns, not by the metric's extractors, so a fact the metric does not read is still
mutated (and counted as missed).

One mutation per answer and kind (the candidate and the new value drawn with
:data:`SEED`). ``bench/grounding/mutations.jsonl`` holds them as specs only: the corpus
file, the episode, the turn (the index of the agent reply among the episode's agent
replies with text; the final answer is the last), the kind, the offsets ``start``/``end``
of the changed text in that reply, the first 8 hex digits of the sha256 of the original
text and the replacement; no corpus text. ``--write`` rebuilds the file from the corpus (the
same seed gives the same file); without it the specs are read and applied.

A mutation is *caught* when grounding flags a claim that overlaps the changed text in the
changed reply (a flag elsewhere does not count). Recall = caught / mutations; the flag
rate = answers grounding flags untouched / answers (an answer is flagged when any claim of
it is). Reported per kind and per set: τ-bench (the rules were developed on it), τ² (held
out) and the hand-written set. Replies before the final one are checked only when the
metric checks every agent turn (a trace with several agent replies); a mutation of such a
reply is in the set either way.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import sys
import time
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable, Mapping

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import bench_grounding as bg  # noqa: E402

from evaltape.grader.metrics.grounding import Grounding  # noqa: E402
from evaltape.grader.model import EpisodeContext  # noqa: E402

#: the seed of the draws (candidate and new value); the committed specs were built with it
SEED = 20261201
KINDS = ("amount", "id", "count", "date", "quantity", "name")
SPECS = ROOT / "bench" / "grounding" / "mutations.jsonl"
HAND = ROOT / "bench" / "grounding" / "episodes.jsonl"
SPEC_KEYS = ("file", "episode", "turn", "kind", "start", "end", "sha", "replacement")
#: names a mutation puts in place of a stated one (none is a name in the corpus' airline
#: data; each is checked against the episode's messages anyway)
NAMES = ("Harriet", "Tobias", "Ingrid", "Osvaldo", "Priyanka", "Wendell", "Anneliese",
         "Bartholomew", "Cordelia", "Evander", "Florentyna", "Gunnar", "Marisol", "Thaddeus")
_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december"]
_MON = {m: i for i, m in enumerate(_MONTHS, 1)} | {m[:3]: i for i, m in enumerate(_MONTHS, 1)}
_MON_RE = "|".join(sorted(_MON, key=len, reverse=True))
_NUM_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
              "ten", "eleven", "twelve"]
_COUNT_NOUNS = (r"passengers?|travell?ers?|people|persons?|adults?|bags?|baggages?|"
                r"suitcases?|items?|flights?|segments?|reservations?|bookings?|orders?|"
                r"tickets?|seats?|nights?|certificates?|cards?|stops?|legs?|products?|"
                r"units?|tests?|servers?|instances?|replicas?|users?|accounts?|incidents?|"
                r"alerts?|errors?|events?|meetings?|rooms?|guests?|pieces?")
AMOUNT = re.compile(r"(?<![\w.])(?:\$\s?(?P<a>\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?|\d+(?:\.\d{1,2})?)"
                    r"|(?P<b>\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?|\d+(?:\.\d{1,2})?)\s?(?:USD|dollars)"
                    r")(?![\w]|[.,]\d)")
CODE = re.compile(r"(?<![\w#@/.-])#?(?P<c>[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*)(?![\w@/-]|\.\w)")
COUNT = re.compile(r"(?<![\w.,$#-])(?P<n>\d{1,2}|" + "|".join(_NUM_WORDS[2:]) + r")"
                   r"(?=\s+(?:(?:free|checked|non-free|extra|additional|total|new|"
                   r"separate|economy|business|basic)\s+){0,2}(?:" + _COUNT_NOUNS + r")\b)"
                   r"|(?i:total\s+(?:baggages?|bags?|passengers?)|number\s+of\s+\w+)"
                   r"\**:?\**\s*(?P<m>\d{1,2})(?![\w.,])", re.IGNORECASE)
DATE_MDY = re.compile(r"(?<!\w)(?P<mon>" + _MON_RE + r")\.?\s+(?P<d>\d{1,2})(?P<suf>st|nd|rd|th)?"
                      r"(?:,?\s+(?P<y>\d{4}))?(?![\w:]|[.,]\d)", re.IGNORECASE)
DATE_DMY = re.compile(r"(?<![\w.,])(?P<d>\d{1,2})(?P<suf>st|nd|rd|th)?\s+(?:of\s+)?"
                      r"(?P<mon>" + _MON_RE + r")\b\.?(?:,?\s+(?P<y>\d{4}))?", re.IGNORECASE)
DATE_ISO = re.compile(r"(?<![\w-])(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})(?=T\d|[^\w:-]|$)")
QUANTITY = re.compile(r"(?<![\w.,$-])(?P<n>\d+(?:\.\d+)?)\s?(?P<u>km/h|mph|m/s|°\s?[CF]|%|"
                      r"km|kg|lbs?|ml|mm|cm|GB|MB|TB|ms|GHz|miles|minutes|mins|hours|hrs|"
                      r"seconds|secs|degrees)(?![\w/])")
NAME = re.compile(r"(?<![\w'’.-])[A-Z][a-z]{2,}(?![\w'’-])")
_DIGITS = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
#: a number standing alone (not a part of a date, a time or a code: ``24`` of
#: ``2024-05-24`` or of ``HAT024`` is none)
_PLAIN = re.compile(r"(?<![\w.:/-])-?\d[\d,]*(?:\.\d+)?(?![\w:/-]|\.\d)")
_TOKEN = re.compile(r"[a-z0-9]+(?:[_-][a-z0-9]+)*")
#: words that are capitalised without being a name of this case
_NOT_NAMES = frozenset("""the you your thank thanks please here there this that these
those what when where which while would could should will shall have has had please
hello dear sorry sure great perfect unfortunately however also additionally certainly
okay yes let total payment flight flights reservation reservations booking cabin class
economy business basic details status trip type origin destination departure arrival
date dates time passenger passengers baggage bags certificate gift card credit visa
mastercard insurance travel refund cancellation seat seats new one way round first last
name user account please note confirmation summary option options information since
if for and but with from into would like just however before after during next
monday tuesday wednesday thursday friday saturday sunday january february march april
may june july august september october november december est pst utc""".split())


def sha8(text: str) -> str:
    """The first 8 hex digits of the sha256 of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") if b.get("type") == "text" else
                         _text_of(b.get("content")) if b.get("type") == "tool_result" else
                         orjson.dumps(b.get("input", {})).decode()
                         if b.get("type") == "tool_use" else ""
                         for b in content if isinstance(b, Mapping))
    return ""


def agent_replies(trace) -> list[tuple[int, int, str]]:
    """``(message index, block index, text)`` of every agent reply with text, in order."""
    out = []
    for i, m in enumerate(trace.messages):
        if isinstance(m, Mapping) and m.get("role") == "assistant":
            c = m.get("content")
            if isinstance(c, str) and c.strip():
                out.append((i, -1, c))
            elif isinstance(c, list):
                for j, b in enumerate(c):
                    if isinstance(b, Mapping) and b.get("type") == "text" and b.get("text", "").strip():
                        out.append((i, j, b["text"]))
    return out


class Episode:
    """The texts of one episode a mutation is checked against (see the module docstring)."""

    def __init__(self, ctx: EpisodeContext, before: int | None = None) -> None:
        t = ctx.trace
        self.ctx = ctx
        # the tool results known when the reply at messages[before] was written (all of
        # them without messages or ``before``): a fact "a tool result supports" is one a
        # result had stated by then
        known = None
        if before is not None and before >= 0:
            known = {str(b.get("tool_use_id")) for m in t.messages[:before]
                     if isinstance(m, Mapping) and isinstance(m.get("content"), list)
                     for b in m["content"] if isinstance(b, Mapping)
                     and b.get("type") == "tool_result"}
        calls = [c for c in t.tool_calls if known is None or c.id in known]
        results = [c.result or "" for c in calls]
        self.results = "\n".join(results)
        system = t.raw.get("system") if isinstance(t.raw, Mapping) else ""
        everything = [self.results, t.input or "", system or "",
                      t.final_response or ""] + [_text_of(m.get("content"))
                                                 for m in t.messages if isinstance(m, Mapping)]
        everything += [orjson.dumps(dict(c.arguments)).decode() for c in t.tool_calls]
        self.all_text = "\n".join(everything)
        self.numbers = _numbers(self.all_text)
        self.result_numbers = {Decimal(m.group(0).replace(",", ""))
                               for m in _PLAIN.finditer(self.results)}
        self.result_tokens = _tokens(self.results)
        self.all_tokens = _tokens(self.all_text)
        self.json_numbers, self.list_lengths = _json_facts([c.result for c in calls])
        self.dates = _dates(self.all_text)
        self.result_dates = _dates(self.results)


def _numbers(text: str) -> set[Decimal]:
    return {Decimal(m.group(0).replace(",", "")) for m in _DIGITS.finditer(text)
            if m.group(0).replace(",", "").lstrip("-")} | {
        abs(Decimal(m.group(0).replace(",", ""))) for m in _DIGITS.finditer(text)}


def _tokens(text: str) -> set[str]:
    low = text.lower()
    out = set(_TOKEN.findall(low))
    out |= {p for t in list(out) for p in re.split(r"[_-]", t)}
    return out


def _json_facts(results: Iterable[str | None]) -> tuple[set[Decimal], set[int]]:
    nums: set[Decimal] = set()
    lengths: set[int] = set()
    for r in results:
        try:
            stack = [orjson.loads(r)] if r and r.lstrip()[:1] in "{[" else []
        except orjson.JSONDecodeError:
            stack = []
        while stack:
            v = stack.pop()
            if isinstance(v, dict):
                stack.extend(v.values())
            elif isinstance(v, list):
                lengths.add(len(v))
                stack.extend(v)
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                nums.add(Decimal(repr(v)) if isinstance(v, float) else Decimal(v))
    return nums, lengths


def _dates(text: str) -> set[tuple[int, int]]:
    """(month, day) of every date written in ``text`` (ISO, ``May 20``, ``20 May``)."""
    out = set()
    for m in DATE_ISO.finditer(text):
        out.add((int(m["m"]), int(m["d"])))
    for rx in (DATE_MDY, DATE_DMY):
        for m in rx.finditer(text):
            out.add((_MON[m["mon"].lower().rstrip(".")], int(m["d"])))
    return out


def _ordinal(n: int) -> str:
    return "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _fmt_like(value: Decimal, written: str) -> str:
    """``value`` written like ``written`` (thousands separators, cents)."""
    places = len(written.split(".")[1]) if "." in written else 0
    q = value.quantize(Decimal(1).scaleb(-places))
    return f"{q:,.{places}f}" if "," in written else f"{q:.{places}f}"


def candidates(kind: str, text: str, ep: Episode) -> list[tuple[int, int, str]]:
    """``(start, end, original)`` of every fact of ``kind`` in ``text`` that a tool result
    of the episode supports (the rules of the module docstring)."""
    out = []
    if kind == "amount":
        for m in AMOUNT.finditer(text):
            g = "a" if m.group("a") else "b"
            v = Decimal(m.group(g).replace(",", ""))
            if v > 1 and v in ep.result_numbers:
                out.append((m.start(g), m.end(g), m.group(g)))
    elif kind == "id":
        for m in CODE.finditer(text):
            c = m.group("c")
            digits = sum(ch.isdigit() for ch in c)
            shaped = (digits and (digits < len(c) and len(c) >= 4 or digits >= 5)) or \
                (len(c) == 6 and c.isupper() and c.isalpha())
            if shaped and c.lower() in ep.result_tokens and \
                    not AMOUNT.fullmatch(c) and not re.fullmatch(r"\d+(?:st|nd|rd|th)", c):
                out.append((m.start("c"), m.end("c"), c))
    elif kind == "count":
        for m in COUNT.finditer(text):
            g = "n" if m.group("n") else "m"
            w = m.group(g)
            n = int(w) if w.isdigit() else _NUM_WORDS.index(w.lower())
            if 1 <= n <= 12 and (Decimal(n) in ep.json_numbers or n in ep.list_lengths):
                out.append((m.start(g), m.end(g), w))
    elif kind == "date":
        spans = []
        for rx in (DATE_ISO, DATE_MDY, DATE_DMY):
            for m in rx.finditer(text):
                month = int(m["m"]) if rx is DATE_ISO else _MON[m["mon"].lower().rstrip(".")]
                if (month, int(m["d"])) in ep.result_dates and \
                        not any(a < m.end() and m.start() < b for a, b, _ in spans):
                    spans.append((m.start(), m.end(), m.group(0)))
        out = sorted(spans)
    elif kind == "quantity":
        for m in QUANTITY.finditer(text):
            if Decimal(m["n"]) in ep.result_numbers and Decimal(m["n"]) != 0:
                out.append((m.start(), m.end(), m.group(0)))
    elif kind == "name":
        for m in NAME.finditer(text):
            w = m.group(0)
            start_of_sentence = re.search(r"(?:^|[.!?:\n*#-]\s*|\n\s*)$", text[:m.start()])
            if w.lower() in _NOT_NAMES or start_of_sentence:
                continue
            if re.search(r'"[a-z_]*name"\s*:\s*"' + re.escape(w) + r'\b', ep.results) or \
                    re.search(r'"(?:city|state|country)"\s*:\s*"' + re.escape(w) + r'\b',
                              ep.results):
                out.append((m.start(), m.end(), w))
    return out


def mutate(kind: str, original: str, ep: Episode, rng: random.Random,
           reply: str = "") -> str | None:
    """A replacement for ``original`` (in the agent reply ``reply``) that no message of the
    episode states, or ``None``."""
    for _ in range(60):
        if kind == "amount":
            v = Decimal(original.replace(",", ""))
            step = Decimal(rng.choice([rng.randint(1, 9), rng.randint(10, 99),
                                       rng.randint(100, 400)]))
            new = v + step if rng.random() < 0.6 or v - step <= 1 else v - step
            if new not in ep.numbers:
                return _fmt_like(new, original)
        elif kind == "id":
            i = rng.randrange(len(original))
            ch = original[i]
            if ch.isdigit():
                pool = "0123456789"
            elif ch.isupper():
                pool = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
            elif ch.islower():
                pool = "abcdefghijklmnopqrstuvwxyz"
            else:
                continue
            new = original[:i] + rng.choice(pool.replace(ch, "")) + original[i + 1:]
            if new.lower() not in ep.all_tokens:
                return new
        elif kind == "count":
            n = int(original) if original.isdigit() else _NUM_WORDS.index(original.lower())
            new_n = rng.randint(2, 12)
            if new_n == n or Decimal(new_n) in ep.json_numbers or new_n in ep.list_lengths:
                continue
            word = _NUM_WORDS[new_n]
            if re.search(rf"(?<![\w.,]){new_n}\s+(?:{_COUNT_NOUNS})|\b{word}\s+(?:{_COUNT_NOUNS})",
                         ep.all_text, re.IGNORECASE) or \
                    re.search(rf"(?<![\w.,:-]){new_n}(?![\w:]|[.,]\d)|\b{word}\b", reply,
                              re.IGNORECASE):
                continue  # the reply itself states the new number: no change of fact
            if original.isdigit():
                return str(new_n)
            return word.capitalize() if original[0].isupper() else word
        elif kind == "date":
            m = DATE_ISO.fullmatch(original) or DATE_MDY.fullmatch(original) or \
                DATE_DMY.fullmatch(original)
            month = int(m["m"]) if m.re is DATE_ISO else _MON[m["mon"].lower().rstrip(".")]
            day = rng.randint(1, 28)
            if day == int(m["d"]) or (month, day) in ep.dates:
                continue
            a, b = m.span("d")
            width = len(m["d"])
            new_day = f"{day:0{width}d}" if m.re is DATE_ISO else str(day)
            out = original[:a] + new_day + original[b:]
            if m.re is not DATE_ISO and m["suf"]:
                sa, sb = m.span("suf")
                out = original[:a] + new_day + _ordinal(day) + original[sb:]
            return out
        elif kind == "quantity":
            m = QUANTITY.fullmatch(original)
            v = Decimal(m["n"])
            places = len(m["n"].split(".")[1]) if "." in m["n"] else 0
            step = Decimal(rng.randint(1, 9) * rng.choice([1, 10])).scaleb(-places) \
                if places else Decimal(rng.choice([rng.randint(1, 9), rng.randint(10, 40)]))
            new = v + step if rng.random() < 0.6 or v - step <= 0 else v - step
            if new not in ep.numbers:
                return f"{new:.{places}f}" + original[len(m["n"]):]
        elif kind == "name":
            new = rng.choice(NAMES)
            if new.lower() not in ep.all_tokens:
                return new
    return None


def corpus_sets(corpus: Path) -> list[tuple[str, str, str, EpisodeContext]]:
    """``(set name, file, episode, context)`` of the successful corpus episodes and the
    grounded hand-written ones."""
    out = []
    for rel, name, episode, _split, ctx, ok in bg.corpus_episodes(corpus) if corpus.is_dir() \
            else []:
        if ok:
            out.append((name, rel, episode, ctx))
    for ctx, fab, _note, scope in bg.load(HAND):
        if not fab and scope == "grounding":
            out.append(("hand-written", "episodes.jsonl", ctx.trace.case_id, ctx))
    return out


def build(sets, seed: int = SEED) -> list[dict[str, Any]]:
    """The mutation specs of every answer and kind (:data:`SPEC_KEYS`), drawn with ``seed``."""
    rng = random.Random(seed)
    specs = []
    for _name, rel, episode, ctx in sets:
        replies = agent_replies(ctx.trace) or [(-1, -1, ctx.trace.final_response or "")]
        for turn, (i, _j, text) in enumerate(replies):
            ep = Episode(ctx, before=i)
            for kind in KINDS:
                cands = candidates(kind, text, ep)
                if not cands:
                    continue
                start, end, original = rng.choice(cands)
                new = mutate(kind, original, ep, rng, text)
                if new is None or new == original:
                    continue
                specs.append({"file": rel, "episode": episode, "turn": turn, "kind": kind,
                              "start": start, "end": end, "sha": sha8(original),
                              "replacement": new})
    return specs


def load_specs(path: Path) -> list[dict[str, Any]]:
    """The specs of ``path``.

    Raises:
        ValueError: a line that is not a JSON object with :data:`SPEC_KEYS` (file, line and
            field named).
    """
    out = []
    for n, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            o = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            raise ValueError(f"{path}:{n}: not JSON ({e})") from None
        if not isinstance(o, dict):
            raise ValueError(f"{path}:{n}: expected an object")
        for k in SPEC_KEYS:
            if k not in o:
                raise ValueError(f"{path}:{n}: field '{k}' is missing")
        if o["kind"] not in KINDS:
            raise ValueError(f"{path}:{n}: field 'kind': unknown kind {o['kind']!r}")
        out.append(o)
    return out


def with_reply(ctx: EpisodeContext, turn: int, text: str) -> EpisodeContext:
    """``ctx`` with agent reply ``turn`` (:func:`agent_replies`) replaced by ``text`` (the
    final answer too when it is that reply)."""
    t = ctx.trace
    replies = agent_replies(t)
    if not replies:
        return EpisodeContext(trace=replace(t, final_response=text), case=ctx.case)
    i, j, old = replies[turn]
    msgs = list(t.messages)
    m = dict(msgs[i])
    if j < 0:
        m["content"] = text
    else:
        blocks = list(m["content"])
        blocks[j] = dict(blocks[j], text=text)
        m["content"] = blocks
    msgs[i] = m
    final = text if turn == len(replies) - 1 and t.final_response == old else t.final_response
    return EpisodeContext(trace=replace(t, messages=tuple(msgs), final_response=final),
                          case=ctx.case)


def flagged_spans(metric: Grounding, ctx: EpisodeContext) -> list[tuple[int, int, int]]:
    """``(turn, start, end)`` of every claim grounding flags (``turn`` as in
    :func:`agent_replies`; the final answer's when the metric reads no turns)."""
    got = metric.verdicts(ctx)
    if not isinstance(got, tuple):
        return []
    last = max(len(agent_replies(ctx.trace)) - 1, 0)
    return [(getattr(v, "turn", None) if getattr(v, "turn", None) is not None else last,
             v.claim.start, v.claim.start + len(v.claim.text)) for v in got[1] if v.reason]


def evaluate(sets, specs, verbose: bool) -> dict[str, Any]:
    """Apply the specs, grade each mutated and untouched episode and print the table."""
    metric = Grounding()
    by_key = {(rel, episode): (name, ctx) for name, rel, episode, ctx in sets}
    rows: dict[tuple[str, str], dict[str, int]] = {}
    untouched: dict[tuple[str, str], list[tuple[int, int, int]]] = {}
    misses, stale = [], 0
    cpu = time.process_time()
    graded = 0
    for name, rel, episode, ctx in sets:
        untouched[(rel, episode)] = flagged_spans(metric, ctx)
        graded += 1
    untouched_cpu = time.process_time() - cpu
    for s in specs:
        got = by_key.get((s["file"], s["episode"]))
        if got is None:
            continue
        name, ctx = got
        replies = agent_replies(ctx.trace) or [(-1, -1, ctx.trace.final_response or "")]
        if s["turn"] >= len(replies):
            stale += 1
            continue
        text = replies[s["turn"]][2]
        if sha8(text[s["start"]:s["end"]]) != s["sha"]:
            stale += 1
            continue
        new_text = text[:s["start"]] + s["replacement"] + text[s["end"]:]
        flags = flagged_spans(metric, with_reply(ctx, s["turn"], new_text))
        a, b = s["start"], s["start"] + len(s["replacement"])
        caught = any(t == s["turn"] and x < b and a < y for t, x, y in flags)
        final = s["turn"] == len(replies) - 1
        row = rows.setdefault((name, s["kind"]), dict.fromkeys(
            ("n", "caught", "final_n", "final_caught", "answers_flagged"), 0))
        row["n"] += 1
        row["caught"] += caught
        row["final_n"] += final
        row["final_caught"] += caught and final
        row["answers_flagged"] += any(t == s["turn"] for t, _x, _y in
                                      untouched[(s["file"], s["episode"])])
        if not caught:
            misses.append(f"  missed {name} {s['episode']} turn {s['turn']} {s['kind']}: "
                          f"{text[s['start']:s['end']]!r} -> {s['replacement']!r} in "
                          f"{new_text[max(0, a - 60):b + 40]!r}")
    print(f"grounding on real answers with one supported fact changed (specs "
          f"{SPECS.name}, seed {SEED}); caught = a flagged claim overlaps the change")
    print(f"{'set':<16} {'kind':<9} {'mutated':>7} {'recall':>8} {'final answers':>14} "
          f"{'untouched flagged':>18}")
    out = {}
    for (name, kind), r in sorted(rows.items(), key=lambda x: (x[0][0], KINDS.index(x[0][1]))):
        rec = r["caught"] / r["n"]
        fin = f"{r['final_caught']}/{r['final_n']}"
        print(f"{name:<16} {kind:<9} {r['n']:>7} {rec:>8.1%} {fin:>14} "
              f"{r['answers_flagged']:>8}/{r['n']} = {r['answers_flagged'] / r['n']:.1%}")
        out[(name, kind)] = r
    print("untouched answers flagged (every agent reply with text; the final answers alone):")
    for name in dict.fromkeys(n for n, *_ in sets):
        eps = [(rel, ep, ctx) for n, rel, ep, ctx in sets if n == name]
        replies = sum(max(len(agent_replies(c.trace)), 1) for _r, _e, c in eps)
        flagged = sum(len({t for t, _x, _y in untouched[(r, e)]}) for r, e, _c in eps)
        finals = sum(bool(untouched[(r, e)]) and any(
            t == max(len(agent_replies(c.trace)) - 1, 0) for t, _x, _y in untouched[(r, e)])
            for r, e, c in eps)
        print(f"  {name:<16} replies {flagged}/{replies} = {flagged / max(replies, 1):.1%}; "
              f"episodes with a flag {sum(bool(untouched[(r, e)]) for r, e, _c in eps)}"
              f"/{len(eps)}; final answers {finals}/{len(eps)} = {finals / len(eps):.1%}")
    print(f"grounding CPU time on the untouched episodes: {untouched_cpu / max(graded, 1) * 1e3:.2f}"
          f" ms per episode ({graded} episodes)")
    if stale:
        print(f"stale specs (the corpus text differs at their offsets): {stale}")
    if verbose and misses:
        print("misses:")
        print("\n".join(misses))
    elif misses:
        print(f"misses: {len(misses)} (-v lists them)")
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the table (``--write``: rebuild the specs first); 0, or 3 on a bad file."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--write", action="store_true", help="rebuild the specs from the corpus")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every miss")
    args = ap.parse_args(argv)
    corpus = Path(args.corpus) if args.corpus else bg.default_corpus()
    try:
        sets = corpus_sets(corpus)
        if not corpus.is_dir():
            print(f"corpus not found: {corpus}; only the hand-written set is measured")
        if args.write:
            specs = build(sets)
            tmp = SPECS.with_suffix(".jsonl.tmp")
            tmp.write_bytes(b"".join(orjson.dumps(s) + b"\n" for s in specs))
            os.replace(tmp, SPECS)  # atomic: a reader sees the old file or the new one
            print(f"wrote {len(specs)} specs to {SPECS}")
        specs = load_specs(SPECS)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    evaluate(sets, specs, args.verbose)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
