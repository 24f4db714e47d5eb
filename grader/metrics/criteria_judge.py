"""Judged metrics users write: criteria, evaluation steps and a score on a scale, in G-Eval's
form (Liu et al. 2023). Scores are normalised to [0, 1]: (s − LO) / (HI − LO) on a
``"LO-HI"`` scale, 1.0 / 0.0 for PASS / FAIL; several samples are averaged. Each
``[judges.NAME]`` table, or judge name in a case's ``judges``, is one metric NAME
(:func:`judge_metrics`), recorded by ``evaltape judge`` and read back offline.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping, Sequence

import orjson

from evaltape.grader.errors import BadInputError
from evaltape.grader.io.expectations import FieldError
from evaltape.grader.io.judges import (DEFAULT_INCLUDE, DEFAULT_SCALE, DEFAULT_THRESHOLD, INCLUDE,
                                       NAME, parse_scale, scale_bounds)
from evaltape.grader.judge import build_request, judged_score, parse_json_verdict, parse_pass_fail
from evaltape.grader.model import Case, EpisodeContext, JudgeCriteria, Score, summary_name_problem
from evaltape.grader.metrics.hallucination import render_tool_calls
from evaltape.grader.metrics.pass_fail_judge import OneRequestJudge

SYSTEM = ("You are a careful evaluation judge. Follow the evaluation steps, judge only the "
          "stated criteria, and end with the answer in the form asked for.")
#: What each shown part is called in the prompt's first sentence and its tag.
PARTS = {"input": ("the user's request", "user_request"),
         "tool_calls": ("the agent's tool calls with their results", "tool_calls"),
         "expected_output": ("a reference answer", "expected_output"),
         "answer": ("the agent's final answer", "agent_answer")}
#: Asked for when the judge has no evaluation steps of its own (G-Eval's automatic chain
#: of thought, here inside the same call).
OWN_STEPS = ("Before scoring, write the evaluation steps you will follow for these "
             "criteria, then follow them.")
MAX_TOKENS = 1024
#: ``message`` quote at most this many characters of the judge's reason.
REASON_CHARS = 300


def _listing(parts: Sequence[str]) -> str:
    names = [PARTS[p][0] for p in parts]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _answer_form(scale: str) -> str:
    bounds = scale_bounds(scale)
    if bounds is None:
        return ('Think step by step, then end your reply with a last line that is exactly '
                '"Verdict: PASS" or "Verdict: FAIL".')
    lo, hi = bounds
    return (f"Score the criteria from {lo} (the lowest) to {hi} (the highest). Think step by "
            "step, then end your reply with one JSON object:\n"
            f'{{"score": <a number from {lo} to {hi}>, "reason": "<one sentence>"}}')


@dataclass(frozen=True)
class Resolved:
    """The settings a judge uses for one case (the configuration's, overridden by the case's
    ``judges.NAME`` entry). ``own`` tells whether the case's criteria replaced the
    configuration's."""

    criteria: str
    steps: tuple[str, ...]
    scale: str
    threshold: float
    include: tuple[str, ...]
    own: bool


@dataclass(frozen=True)
class CriteriaJudge(OneRequestJudge):
    """A judged metric from user-written criteria (G-Eval's form).

    The request states the criteria, the evaluation steps (or :data:`OWN_STEPS`), the parts
    ``include`` names and the answer form of ``scale``. A case's ``judges.NAME`` overrides the
    settings it gives. Null: ``not_applicable`` (no criteria, or ``expected_output`` shown and
    absent), ``no_answer``, and the judge codes of :mod:`evaltape.grader.judge`.

    Fields: ``name``, ``criteria``, ``evaluation_steps``, ``scale`` (default ``"1-5"``),
    ``threshold`` (default 0.5), ``include`` (default input, tool_calls, answer), ``model``,
    ``case_criteria_sha256``; the spec shows ``criteria_sha256`` in place of the texts.
    """

    name: str = field(default="", metadata={"spec": False})  # the spec's own "name"
    criteria: str | None = field(default=None, metadata={"spec": False})
    evaluation_steps: tuple[str, ...] = field(default=(), metadata={"spec": False})
    scale: str = DEFAULT_SCALE
    threshold: float = DEFAULT_THRESHOLD
    include: tuple[str, ...] = DEFAULT_INCLUDE
    model: str | None = None
    case_criteria_sha256: str | None = field(default=None, metadata={"spec": False})
    criteria_sha256: str = field(default="", init=False)


    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not NAME.fullmatch(self.name):
            raise ValueError(f"a judge's name must be a lower-case word, got {self.name!r}")
        try:
            object.__setattr__(self, "scale", parse_scale(self.scale))
        except FieldError as e:
            raise ValueError(f"scale: {e.message}") from None
        if self.criteria is not None and (not isinstance(self.criteria, str)
                                          or not self.criteria.strip()):
            raise ValueError("criteria must be a non-empty string (or None: the cases give them)")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)) \
                or not 0 <= self.threshold <= 1:
            raise ValueError(f"threshold must be a number from 0 to 1, got {self.threshold!r}")
        unknown = [x for x in self.include if x not in INCLUDE]
        if unknown or not self.include or isinstance(self.include, str):
            raise ValueError(f"include must list some of {', '.join(INCLUDE)}, got "
                             f"{self.include!r}")
        object.__setattr__(self, "evaluation_steps", tuple(self.evaluation_steps))
        object.__setattr__(self, "include", tuple(x for x in INCLUDE if x in self.include))
        blob = orjson.dumps({"criteria": self.criteria, "steps": list(self.evaluation_steps),
                             "cases": self.case_criteria_sha256}, option=orjson.OPT_SORT_KEYS)
        object.__setattr__(self, "criteria_sha256", hashlib.sha256(blob).hexdigest())

    def case_threshold(self, case: Case | None) -> float:
        """The verdict's pass threshold of this judge on ``case``: the case's own
        ``judges.NAME.threshold`` when it sets one, else the judge's ``threshold``, the
        same number its details and sample labels say PASS/FAIL at (a ``[thresholds]``
        entry for the judge still wins, as for every metric)."""
        own = ((case.judges or {}).get(self.name) if case is not None else None)
        if own is not None and own.threshold is not None:
            return float(own.threshold)
        return float(self.threshold)

    def settings(self, case: Case) -> Resolved | None:
        """The settings for ``case``, or ``None`` when no criteria apply to it."""
        own = (case.judges or {}).get(self.name) or JudgeCriteria()
        criteria = own.criteria if own.criteria is not None else self.criteria
        if criteria is None:
            return None
        if own.evaluation_steps is not None:
            steps = own.evaluation_steps
        else:
            steps = () if own.criteria is not None else self.evaluation_steps
        return Resolved(criteria, tuple(steps), own.scale or self.scale,
                        self.threshold if own.threshold is None else own.threshold,
                        own.include or self.include, own.criteria is not None)

    def _request(self, ctx: EpisodeContext, model: str | None = None) -> dict | Score:
        s = self.settings(ctx.case)
        if s is None:
            return Score(None, f"no criteria for judge {self.name!r} (neither the "
                               "configuration nor the case gives them)", code="not_applicable")
        if "expected_output" in s.include and ctx.case.expected_output is None:
            return Score(None, f"judge {self.name!r} is shown expected_output and the case "
                               "has none", code="not_applicable")
        if "answer" in s.include and ctx.trace.final_response is None:
            return Score(None, "the agent gave no final answer", code="no_answer")
        texts = {"input": ctx.trace.input, "tool_calls": render_tool_calls(ctx),
                 "expected_output": ctx.case.expected_output,
                 "answer": ctx.trace.final_response}
        steps = ("\n".join(f"{i}. {step}" for i, step in enumerate(s.steps, start=1))
                 if s.steps else OWN_STEPS)
        shown = "\n\n".join(f"<{PARTS[p][1]}>\n{texts[p]}\n</{PARTS[p][1]}>" for p in s.include)
        prompt = (f"You will be given {_listing(s.include)} from one episode of a "
                  "tool-using AI agent. Your task is to rate it on one metric.\n\n"
                  f"Evaluation Criteria:\n{s.criteria}\n\nEvaluation Steps:\n{steps}\n\n"
                  f"{shown}\n\n{_answer_form(s.scale)}")
        return build_request(prompt, system=SYSTEM, max_tokens=MAX_TOKENS,
                             model=self.model or model)

    def _judged(self, ctx: EpisodeContext, req: dict) -> Score:
        s = self.settings(ctx.case)
        assert s is not None  # _request returned a request
        bounds = scale_bounds(s.scale)
        # said when the case's criteria replace the configuration's
        mark = " (the case's criteria)" if s.own and self.criteria is not None else ""

        def verdict(v: Any) -> str:
            return "PASS" if normalised(v) >= s.threshold else "FAIL"

        if bounds is None:
            def normalised(ok: Any) -> float:
                return 1.0 if ok else 0.0

            def describe(ok: Any) -> str:
                return f"judge: {'PASS' if ok else 'FAIL'}{mark}"

            return judged_score(ctx, self.name, req, parse_pass_fail, normalised,
                                lambda ok: verdict(ok).lower(), describe)
        lo, hi = bounds

        def validate(obj: dict) -> tuple[float, str]:
            v = obj["score"]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
                raise ValueError(f"score must be a number from {lo} to {hi}, got {v!r}")
            reason = obj.get("reason")
            return float(v), reason if isinstance(reason, str) else ""

        def normalised(v: Any) -> float:
            return (v[0] - lo) / (hi - lo)

        def describe(v: Any) -> str:
            # (no PASS/FAIL here: the verdict's threshold may be another, [thresholds] or
            # the case's; the report shows the one it used beside the score)
            text = f"score {v[0]:g} on {s.scale} = {normalised(v):.3f}{mark}"
            if v[1]:
                reason = v[1] if len(v[1]) <= REASON_CHARS else v[1][:REASON_CHARS] + "…"
                text += f"; reason: {reason}"
            return text

        return judged_score(ctx, self.name, req, lambda m: parse_json_verdict(m, validate),
                            normalised, lambda v: verdict(v).lower(), describe)


def case_entries_sha256(name: str, cases: Sequence[Case]) -> str | None:
    """sha256 (hex) over the cases' ``judges[name]`` entries (case id and every setting),
    in case-id order; ``None`` when no case has one."""
    entries = sorted((c.id, c.judges[name]) for c in cases if c.judges and name in c.judges)
    if not entries:
        return None
    blob = orjson.dumps([[cid, {"criteria": e.criteria, "steps": e.evaluation_steps,
                                "scale": e.scale, "threshold": e.threshold,
                                "include": e.include}] for cid, e in entries],
                        option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(blob).hexdigest()


def judge_metrics(configured: Mapping[str, JudgeCriteria], cases: Sequence[Case], *,
                  builtin: Collection[str], config_path: str | None = None,
                  dataset_path: str | None = None) -> dict[str, CriteriaJudge]:
    """One :class:`CriteriaJudge` per judge name of ``configured`` and of the cases' ``judges``
    (configuration first, then cases in dataset order).

    Args:
        builtin: the built-in metric names, which no judge may take.
        config_path, dataset_path: named in errors.

    Raises:
        BadInputError: a judge named like a built-in metric or a summary figure, or a case's
            judge no configuration defines that gives no ``criteria``.
    """
    for name in configured:
        if name in builtin:
            raise BadInputError(f"{name!r} is the name of a built-in metric; give the judge "
                                "a name of its own", path=config_path, field=f"judges.{name}")
    names = list(configured)
    for case in cases:
        for name, entry in (case.judges or {}).items():
            if name in builtin:
                raise BadInputError(f"case {case.id!r}: {name!r} is the name of a built-in "
                                    "metric; give the judge a name of its own",
                                    path=dataset_path, line=case.line, field=f"judges.{name}")
            problem = summary_name_problem(name)
            if problem is not None:
                raise BadInputError(f"case {case.id!r}: {problem}", path=dataset_path,
                                    line=case.line, field=f"judges.{name}")
            if name not in configured and entry.criteria is None:
                raise BadInputError(f"case {case.id!r}: judge {name!r} has no criteria, and "
                                    "the configuration defines no [judges." + name + "] to "
                                    "take them from", path=dataset_path, line=case.line,
                                    field=f"judges.{name}.criteria")
            if name not in names:
                names.append(name)
    out = {}
    for name in names:
        base = configured.get(name) or JudgeCriteria()
        kw: dict[str, Any] = {"name": name, "criteria": base.criteria,
                              "case_criteria_sha256": case_entries_sha256(name, cases)}
        if base.evaluation_steps is not None:
            kw["evaluation_steps"] = base.evaluation_steps
        for key in ("scale", "threshold", "include", "model"):
            if getattr(base, key) is not None:
                kw[key] = getattr(base, key)
        out[name] = CriteriaJudge(**kw)
    return out
