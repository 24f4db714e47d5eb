"""Agreement of evaltape's ``passed`` with a reference verdict (``summary.reference_agreement``).

A reference label is a boolean pass/fail verdict from elsewhere: a peer benchmark's reward
(tau-bench's ``reward == 1``) or a human's judgement. It is read from the trace key
``reference_label`` and, when the trace has none, from the dataset case's
``reference_label``. Episodes without a label are counted as ``unlabelled``.

Cohen's kappa follows Cohen (1960), "A coefficient of agreement for nominal scales":
``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the observed agreement and
``p_e = p_ours_pass * p_ref_pass + p_ours_fail * p_ref_fail`` the agreement expected by
chance from the two marginals.
"""
from __future__ import annotations

from typing import Any

from evaltape.grader.errors import BadInputError
from evaltape.grader.model import Case, Trace

DIGITS = 4
LABEL_KEY = "reference_label"


def reference_label(trace: Trace, case: Case, path: str | None = None) -> bool | None:
    """The episode's reference verdict (``True``/``False``/``None``): the trace's
    ``reference_label``, else the case's.

    Raises:
        BadInputError: a label neither boolean nor null.
    """
    if trace.raw.get(LABEL_KEY) is not None:
        value = trace.raw[LABEL_KEY]
        if not isinstance(value, bool):
            raise BadInputError(f"expected true/false/null, got {value!r}", path=path,
                                line=trace.source_line or None, field=LABEL_KEY)
        return value
    return case.reference_label  # typed at dataset load


def cohen_kappa(both_pass: int, ours_only: int, ref_only: int, both_fail: int) -> float | None:
    """Cohen's kappa of a 2x2 table; ``None`` when chance agreement is 1 (undefined).

    Args are the cells: both pass, we pass / reference fails, we fail / reference passes,
    both fail.
    """
    n = both_pass + ours_only + ref_only + both_fail
    if n == 0:
        return None
    p_o = (both_pass + both_fail) / n
    ours_pass = (both_pass + ours_only) / n
    ref_pass = (both_pass + ref_only) / n
    p_e = ours_pass * ref_pass + (1 - ours_pass) * (1 - ref_pass)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1 - p_e)


class AgreementAccumulator:
    """Streaming 2x2 table of our ``passed`` against the reference label (O(1) memory)."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self.cells = {"ours_pass_ref_pass": 0, "ours_pass_ref_fail": 0,
                      "ours_fail_ref_pass": 0, "ours_fail_ref_fail": 0}
        self.unlabelled = 0

    @property
    def n(self) -> int:
        """Number of labelled episodes seen."""
        return sum(self.cells.values())

    def add(self, trace: Trace, case: Case, passed: bool) -> None:
        """Count one episode; unlabelled episodes only bump ``unlabelled``."""
        self.add_label(reference_label(trace, case, self.path), passed)

    def add_label(self, label: bool | None, passed: bool) -> None:
        """Count one episode from its already read reference label (``None``: unlabelled)."""
        if label is None:
            self.unlabelled += 1
            return
        key = f"ours_{'pass' if passed else 'fail'}_ref_{'pass' if label else 'fail'}"
        self.cells[key] += 1

    def add_cells(self, pass_pass: int, pass_fail: int, fail_pass: int, fail_fail: int, *,
                  unlabelled: int = 0) -> None:
        """Count episodes at once from their 2x2 cells (ours/reference) and unlabelled."""
        c = self.cells
        c["ours_pass_ref_pass"] += pass_pass
        c["ours_pass_ref_fail"] += pass_fail
        c["ours_fail_ref_pass"] += fail_pass
        c["ours_fail_ref_fail"] += fail_fail
        self.unlabelled += unlabelled

    def summary(self) -> dict[str, Any]:
        """The ``summary.reference_agreement`` block.

        Shape: ``{"n", "agree", "agreement", "confusion": {ours_pass_ref_pass, ...},
        "kappa", "kappa_reason", "unlabelled"}``; rates rounded to 4 places. ``kappa`` is
        null with ``kappa_reason`` when undefined (both verdicts constant and equal).
        """
        c = self.cells
        n = self.n
        agree = c["ours_pass_ref_pass"] + c["ours_fail_ref_fail"]
        kappa = cohen_kappa(c["ours_pass_ref_pass"], c["ours_pass_ref_fail"],
                            c["ours_fail_ref_pass"], c["ours_fail_ref_fail"])
        return {
            "n": n, "agree": agree,
            "agreement": round(agree / n, DIGITS) if n else None,
            "confusion": dict(c),
            "kappa": None if kappa is None else round(kappa, DIGITS),
            "kappa_reason": None if kappa is not None else (
                "no labelled episodes" if n == 0 else
                "undefined: chance agreement is 1 (both verdicts constant)"),
            "unlabelled": self.unlabelled,
        }


def format_agreement(block: dict[str, Any]) -> str:
    """One line for the terminal, e.g. ``reference agreement: 154/200 = 0.770, kappa 0.522``."""
    c = block["confusion"]
    kappa = "n/a" if block["kappa"] is None else f"{block['kappa']:.3f}"
    return (f"reference agreement: {block['agree']}/{block['n']} = "
            f"{(block['agreement'] or 0):.3f}, Cohen's kappa {kappa} "
            f"(pass/pass {c['ours_pass_ref_pass']}, pass/fail {c['ours_pass_ref_fail']}, "
            f"fail/pass {c['ours_fail_ref_pass']}, fail/fail {c['ours_fail_ref_fail']}; "
            f"ours/reference)")
