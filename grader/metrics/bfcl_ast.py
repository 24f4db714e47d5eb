"""``bfcl_ast``: the Berkeley Function-Calling Leaderboard's AST checker verdict."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evaltape.grader.matching import bfcl
from evaltape.grader.model import EpisodeContext, Score
from evaltape.grader.metrics.base import Metric


@dataclass(frozen=True)
class BfclAst(Metric):
    """1.0 when BFCL's AST checker accepts the episode's calls, else 0.0.

    Formula: :func:`evaltape.grader.matching.bfcl.check_calls` with the case's function
    schemas (``tools``) and ground truth (``expected_tool_calls`` in BFCL's form), under the
    category the importer stored (``simple``/``multiple``: exactly one call;
    ``parallel``/``parallel_multiple``: as many calls as answers, any order, one to one).
    ``message`` names BFCL's failing rule (``value_error:string``...) and the parameter;
    ``evidence`` holds each ground-truth call's own result, which call it paired with and
    BFCL's error for it (:func:`evaltape.grader.matching.bfcl.verdict_evidence`).
    A case whose ``matching`` is not ``bfcl`` → null (``not_applicable``).
    """

    name: ClassVar[str] = "bfcl_ast"

    def score(self, ctx: EpisodeContext) -> Score:
        case = ctx.case
        if case.matching != "bfcl" or case.expected_calls is None:
            return Score(None, "the case is not a BFCL item (matching: bfcl)",
                         code="not_applicable")
        cat = bfcl.case_category(case.extra)
        calls = ctx.trace.tool_calls
        v = bfcl.check_calls(calls, case.expected_calls, case.tools, cat)
        evidence = bfcl.verdict_evidence(v, cat, calls)
        if v.valid:
            return Score(1.0, f"{cat}: {len(calls)} call(s) accepted", evidence=evidence)
        return Score(0.0, f"{cat}: {v.error_type}: {v.message}", evidence=evidence)
