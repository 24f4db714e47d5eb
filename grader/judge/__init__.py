"""LLM-as-judge, offline: deterministic requests, lookup of recorded answers, verdict parsing.
The grader never calls a model: a judged metric builds its request (:func:`build_request`),
finds the answers ``evaltape judge`` recorded in ``judge/*.jsonl`` (:class:`JudgeStore`)
and parses each strictly, repairing only on failure. Null codes: ``judge_not_recorded``
(no answer for this exact request), ``judge_truncated`` (all stopped at ``max_tokens``),
``judge_parse_failure``, ``judge_ambiguous`` (both verdicts, no final marker).
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import orjson

from evaltape.grader.errors import BadInputError
from evaltape.grader.io.jsonfiles import iter_json_lines
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.results import JudgeSummary


#: The user's request and the agent's tool calls as the judge prompts lay them out
#: (``str.format`` fields ``user_request`` and ``tool_calls``), ending with a line break.
EPISODE_BLOCKS = """<user_request>
{user_request}
</user_request>

<tool_calls>
{tool_calls}
</tool_calls>
"""

JUDGE_DIR = "judge"
NOT_RECORDED = "judge_not_recorded"
TRUNCATED = "judge_truncated"
PARSE_FAILURE = "judge_parse_failure"
AMBIGUOUS = "judge_ambiguous"
#: Request fields left out of the canonical request: which model answered, and transport.
IGNORED_FIELDS = ("model", "stream", "metadata")
#: Model named in requests built by the grader; ``evaltape judge --model`` overrides it.
DEFAULT_JUDGE_MODEL = "claude-sonnet-4-6"
CASSETTE_FORMAT = "evaltape.cassette/1"

_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)


# --------------------------------------------------------------------------- requests
def build_request(prompt: str, *, system: str | None = None, max_tokens: int = 512,
                  model: str | None = None) -> dict[str, Any]:
    """A deterministic Messages-API request body for one judge call (one user turn), so its
    canonical key equals the recorded one; no sampling parameters are set.
    """
    body: dict[str, Any] = {"model": model or DEFAULT_JUDGE_MODEL, "max_tokens": max_tokens,
                            "messages": [{"role": "user", "content": prompt}]}
    if system:
        body["system"] = system
    return body


def _canon(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _canon(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canon(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    return value


def canonical_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request without :data:`IGNORED_FIELDS`; integral floats as ints; strings NFC."""
    return _canon({k: v for k, v in body.items() if k not in IGNORED_FIELDS})


def request_key(body: Mapping[str, Any]) -> str:
    """sha256 (hex) of the canonical request serialised with sorted keys (orjson)."""
    return hashlib.sha256(orjson.dumps(canonical_request(body),
                                       option=orjson.OPT_SORT_KEYS)).hexdigest()


# --------------------------------------------------------------------------- store
class JudgeStore:
    """Recorded judge answers of a run by canonical request key, in recording order (files by
    path, then line); only HTTP 200 JSON responses count. Metrics report through
    :meth:`observe`; :meth:`stability` summarises.
    """

    def __init__(self, answers: Mapping[str, Sequence[dict]] | None = None,
                 root: Path | None = None) -> None:
        self._answers = {k: list(v) for k, v in (answers or {}).items()}
        self.root = root
        self._labels: dict[tuple[str, str, int], tuple[str, ...]] = {}

    @classmethod
    def load(cls, run_dir: str | Path) -> "JudgeStore":
        """Read every ``<run_dir>/judge/**/*.jsonl`` cassette (empty store when absent).

        Raises:
            BadInputError: a line is not JSON or the header names another format.
        """
        root = Path(run_dir) / JUDGE_DIR
        answers: dict[str, list[dict]] = {}
        if root.is_dir():
            for path in sorted(p for p in root.rglob("*.jsonl") if p.is_file()):
                for key, answer in read_cassette(path):
                    answers.setdefault(key, []).append(answer)
        return cls(answers, root)

    def answers(self, body: Mapping[str, Any]) -> list[dict]:
        """Recorded answers for ``body`` (any model), oldest first; ``[]`` when none."""
        return list(self._answers.get(request_key(body), ()))

    def count(self, body: Mapping[str, Any]) -> int:
        """How many answers are recorded for ``body``."""
        return len(self._answers.get(request_key(body), ()))

    def observe(self, metric: str, case_id: str, trial: int, labels: Sequence[str]) -> None:
        """Note the per-sample verdict labels a metric parsed for one episode."""
        self._labels[(metric, case_id, trial)] = tuple(labels)

    def stability(self) -> dict[str, dict[str, Any]]:
        """Per metric, over episodes with two or more parsed samples: ``agreement`` (mean
        share of the most common label) and ``flip_rate`` (share with differing labels),
        4 places; ``None`` without such episodes.
        """
        out: dict[str, dict[str, Any]] = {}
        for (metric, _c, _t), labels in sorted(self._labels.items()):
            s = out.setdefault(metric, {"episodes": 0, "multi_sample": 0, "_agree": 0.0,
                                        "_flips": 0, "max_samples": 0})
            s["episodes"] += 1
            s["max_samples"] = max(s["max_samples"], len(labels))
            if len(labels) >= 2:
                s["multi_sample"] += 1
                top = max(labels.count(x) for x in set(labels))
                s["_agree"] += top / len(labels)
                s["_flips"] += len(set(labels)) > 1
        for s in out.values():
            n = s["multi_sample"]
            s["agreement"] = round(s.pop("_agree") / n, 4) if n else None
            s["flip_rate"] = round(s.pop("_flips") / n, 4) if n else None
        return out


def read_cassette(path: Path) -> Iterable[tuple[str, dict]]:
    """``(request key, answer)`` for each HTTP-200 JSON interaction of one JSONL cassette.

    Raises:
        BadInputError: invalid JSON or an unknown header format (file and line named).
    """
    for lineno, obj in iter_json_lines(path):
        if not isinstance(obj, dict):
            raise BadInputError("expected a JSON object", path=str(path), line=lineno)
        if "format" in obj:
            if obj["format"] != CASSETTE_FORMAT:
                raise BadInputError(f"unknown cassette format {obj['format']!r}",
                                    path=str(path), line=lineno, field="format")
            continue
        req, resp = obj.get("request") or {}, obj.get("response") or {}
        for name, part in (("request", req), ("response", resp)):
            if not isinstance(part, dict) or not isinstance(part.get("body") or {}, dict):
                raise BadInputError("expected an object with a 'body' object", path=str(path),
                                    line=lineno, field=name)
        status_obj = resp.get("status") or {}
        if not isinstance(status_obj, dict):
            raise BadInputError("expected {code, message}", path=str(path), line=lineno,
                                field="response.status")
        body = (req.get("body") or {}).get("json")
        answer = (resp.get("body") or {}).get("json")
        status = status_obj.get("code")
        if isinstance(body, dict) and isinstance(answer, dict) and status == 200:
            yield request_key(body), answer


# --------------------------------------------------------------------------- parsing
@dataclass(frozen=True)
class Verdict:
    """One parsed judge answer: ``value`` (``bool`` or the validated object; ``None`` when
    unparsed), ``reason`` (``None``, :data:`TRUNCATED`, :data:`PARSE_FAILURE`), ``repaired``
    (read from cleaned text) and ``text``.
    """

    value: Any
    reason: str | None = None
    repaired: bool = False
    text: str = ""


def answer_text(message: Mapping[str, Any]) -> str:
    """The answer's text blocks joined with ``\\n`` (non-text blocks skipped)."""
    blocks = message.get("content") or []
    if isinstance(blocks, str):
        return blocks
    return "\n".join(b.get("text", "") for b in blocks
                     if isinstance(b, Mapping) and b.get("type") == "text")


def _clean(text: str) -> str:
    return unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH).strip()


_PF_WORD = re.compile(r"\b(PASS|FAIL)(?:ED|ES|ING)?\b", re.IGNORECASE)
#: A labelled verdict: "Verdict: PASS", "Final verdict = FAIL", "PASS/FAIL: FAIL", with
#: optional markdown around the word.
_PF_LABEL = re.compile(r"(?:\b(?:final\s+)?(?:verdict|answer|result|decision|grade)|"
                       r"\bPASS\s*/\s*FAIL)\s*[:=]\s*[*_`\"']*(PASS|FAIL)(?![A-Za-z])",
                       re.IGNORECASE)
#: A line that is only a verdict word (markdown allowed): "**FAIL**", "> PASS".
_PF_LINE = re.compile(r"^[\s*_`#>\"'(\[-]*(PASS|FAIL)[\s*_`\"').\]!]*$",
                      re.IGNORECASE | re.MULTILINE)
_PF_LEAD = re.compile(r"^[\s*_`#>\"'(\[]*(PASS|FAIL)(?![A-Za-z/])", re.IGNORECASE)


def parse_pass_fail(message: Mapping[str, Any]) -> Verdict:
    """Parse a PASS/FAIL answer; the verdict is the *last* marker. ``max_tokens`` →
    :data:`TRUNCATED`; exactly ``PASS``/``FAIL`` → that; else on the cleaned text (NFKC,
    zero-width removed, case folded) the last labelled verdict, verdict-only line, leading or
    single verdict word; both undecided → :data:`AMBIGUOUS`, none → :data:`PARSE_FAILURE`.
    """
    text = answer_text(message)
    if message.get("stop_reason") == "max_tokens":
        return Verdict(None, TRUNCATED, text=text)
    if text.strip() in ("PASS", "FAIL"):
        return Verdict(text.strip() == "PASS", text=text)
    clean = _clean(text)
    value = _pass_fail_rules(clean)
    if isinstance(value, bool):
        # repaired only when the text had to change (NFKC, zero-width characters) for the
        # rules to read this verdict; reading a marked verdict as the prompt asks is not
        return Verdict(value, repaired=_pass_fail_rules(text) is not value, text=text)
    return Verdict(None, value, text=text)


def _pass_fail_rules(text: str) -> bool | str:
    """:func:`parse_pass_fail`'s rules 1-4 on ``text``: the verdict, else
    :data:`AMBIGUOUS` or :data:`PARSE_FAILURE`."""
    marks = _PF_LABEL.findall(text) or _PF_LINE.findall(text)
    if marks:
        return marks[-1].upper() == "PASS"
    lead = _PF_LEAD.match(text)
    if lead:
        return lead.group(1).upper() == "PASS"
    words = {w.upper() for w in _PF_WORD.findall(text)}
    if len(words) == 1:
        return words.pop() == "PASS"
    return AMBIGUOUS if words else PARSE_FAILURE


def _string_mask(text: str) -> list[bool]:
    """For each character of ``text``: is it part of a JSON string literal (its quotes
    included)? Backslash escapes inside strings are honoured, so ``"a\\"b"`` is one
    string."""
    mask, in_str, esc = [], False, False
    for ch in text:
        if in_str:
            mask.append(True)
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        else:
            in_str = ch == '"'
            mask.append(in_str)
    return mask


def json_objects(text: str) -> list[str]:
    """Every top-level balanced ``{...}`` of ``text`` in order, braces in JSON strings ignored;
    an unclosed object is not returned.
    """
    mask = _string_mask(text)
    out, depth, start = [], 0, -1
    for i, ch in enumerate(text):
        if mask[i]:
            continue
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                out.append(text[start:i + 1])
    return out


def _drop_trailing_commas(src: str) -> str:
    """Remove commas directly before ``}`` or ``]``, outside strings only."""
    mask = _string_mask(src)
    out, following = [], ""  # the next non-blank character, scanning from the right
    for i in range(len(src) - 1, -1, -1):
        ch = src[i]
        if not (ch == "," and not mask[i] and following in ("}", "]")):
            out.append(ch)
        if ch not in " \t\r\n":
            following = ch
    return "".join(reversed(out))


def parse_json_verdict(message: Mapping[str, Any],
                       validate: Callable[[dict], Any]) -> Verdict:
    """Parse a JSON verdict validated by ``validate`` (raises ``ValueError``): ``max_tokens`` →
    :data:`TRUNCATED`; the whole text as one object; else, cleaned, the *last* balanced object
    that validates, trailing commas dropped; else :data:`PARSE_FAILURE`.
    """
    text = answer_text(message)
    if message.get("stop_reason") == "max_tokens":
        return Verdict(None, TRUNCATED, text=text)
    try:
        obj = orjson.loads(text.strip())
        if isinstance(obj, dict):
            return Verdict(validate(obj), text=text)
    except (orjson.JSONDecodeError, ValueError, TypeError, KeyError):
        pass
    for candidate in reversed(json_objects(_clean(text))):  # the last valid one wins
        for src in (candidate, _drop_trailing_commas(candidate)):
            try:
                obj = orjson.loads(src)
                if isinstance(obj, dict):
                    # repaired only when the object's text changed (NFKC, zero-width
                    # characters, trailing commas); one read out of prose is not
                    changed = src != candidate or candidate not in text
                    return Verdict(validate(obj), repaired=changed, text=text)
            except (orjson.JSONDecodeError, ValueError, TypeError, KeyError):
                continue
    return Verdict(None, PARSE_FAILURE, text=text)


def unit_float(obj: Mapping[str, Any], key: str) -> float:
    """``obj[key]`` as a float in [0, 1]; bools and out-of-range values raise ``ValueError``."""
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
        raise ValueError(f"{key} must be a number in [0, 1], got {v!r}")
    return float(v)


def str_list(obj: Mapping[str, Any], key: str) -> list[str]:
    """``obj[key]`` as a list of strings (missing → ``[]``); other shapes raise ``ValueError``."""
    v = obj.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValueError(f"{key} must be a list of strings")
    return v


# --------------------------------------------------------------------------- scoring
def judged_score(ctx: EpisodeContext, metric: str, body: Mapping[str, Any],
                 parse: Callable[[Mapping[str, Any]], Verdict],
                 value: Callable[[Any], float], label: Callable[[Any], str],
                 describe: Callable[[Any], str]) -> Score:
    """Score one episode: the mean of ``value(verdict)`` over parsed samples (unparsed named in
    ``message``); none parsed → null :data:`TRUNCATED` or :data:`PARSE_FAILURE`; no answer →
    null :data:`NOT_RECORDED`. ``label(verdict)`` goes to :meth:`JudgeStore.observe`.
    """
    store = ctx.judge if isinstance(ctx.judge, JudgeStore) else None
    answers = store.answers(body) if store is not None else []
    if not answers:
        return Score(None, "no recorded judge answer for this request; record it with "
                     "`evaltape judge RUN`", code=NOT_RECORDED)
    verdicts = [parse(a) for a in answers]
    good = [v for v in verdicts if v.value is not None]
    bad = [v.reason for v in verdicts if v.value is None]
    if not good:
        reason = (TRUNCATED if TRUNCATED in bad else AMBIGUOUS if AMBIGUOUS in bad
                  else PARSE_FAILURE)
        return Score(None, f"{len(bad)} judge sample(s), none parsed ({', '.join(bad)})",
                     code=reason)
    vals = [value(v.value) for v in good]
    store.observe(metric, ctx.trace.case_id, ctx.trace.trial, [label(v.value) for v in good])
    mean = sum(vals) / len(vals)
    details = describe(good[0].value)
    if len(answers) > 1:
        details += (f" [{len(good)}/{len(answers)} samples parsed; labels "
                    f"{', '.join(label(v.value) for v in good)}]")
    if bad:
        details += f" [skipped: {', '.join(bad)}]"
    if any(v.repaired for v in good):
        details += " [repaired]"
    return Score(min(1.0, max(0.0, mean)), details)


def judge_summary(results: Sequence[Any], store: "JudgeStore | None", metrics: Sequence[Any],
                  run: str) -> JudgeSummary:
    """The report's ``summary.judge`` block for the judged ``metrics``: counts of judge null
    codes, the episodes not recorded (``case#tN:metric``), the command that records them, and
    :meth:`JudgeStore.stability`.
    """
    judged = [m.name for m in metrics]
    counts = {NOT_RECORDED: 0, TRUNCATED: 0, PARSE_FAILURE: 0, AMBIGUOUS: 0}
    missing: list[str] = []
    for ep in results:
        for name in judged:
            result = ep.metrics.get(name)
            code = result.code if result is not None else None
            if code in counts:
                counts[code] += 1
                if code == NOT_RECORDED:
                    missing.append(f"{ep.case_id}#t{ep.trial}:{name}")
    stability = store.stability() if store is not None else {}
    return JudgeSummary(tuple(judged), counts[NOT_RECORDED], counts[TRUNCATED],
                        counts[PARSE_FAILURE], counts[AMBIGUOUS], tuple(missing),
                        f"evaltape judge {run} --metrics {','.join(judged)}",
                        {k: v for k, v in stability.items() if k in judged})
