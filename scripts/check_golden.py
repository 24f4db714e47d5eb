"""Re-grade every committed run and compare with its golden report (no key, no network).

    python scripts/check_golden.py            # make check-golden: exit 1 on any change
    python scripts/check_golden.py --update   # make update-golden: rewrite the goldens

Each run ``cassettes/<run>/`` is graded with every built-in metric by the real
``evaltape grade`` (so judged metrics replay from ``judge/``), and its ``report.json`` is
compared with ``tests/golden/<run>/report.json``. A difference is listed per metric with
the episodes whose score moved (``case#tTRIAL before → after``), then summary numbers, then
any other changed key. Exit codes: 0 same, 1 changed or missing golden, 2 usage.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def all_metrics() -> str:
    """Every built-in metric name, sorted (a new metric changes the goldens on purpose)."""
    sys.path.insert(0, str(ROOT))
    from evaltape.grader.metrics.registry import BUILTIN
    return ",".join(sorted(BUILTIN))


def grade(run: Path, out: Path) -> dict[str, Any]:
    """Grade ``run`` with ``evaltape grade`` into ``out``; returns the parsed report.

    Raises:
        RuntimeError: the grader exited with an error (not 0 or 1), with its stderr.
    """
    p = subprocess.run([sys.executable, "-m", "evaltape.cli", "grade",
                        run.relative_to(ROOT).as_posix() if run.is_relative_to(ROOT)
                        else str(run), "--metrics", all_metrics(),
                        "--out", str(out), "--format", "json", "--quiet"],
                       cwd=ROOT, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"grading {run.name} failed ({p.returncode}): {p.stderr.strip()}")
    return json.loads((out / "report.json").read_text())


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def golden_diff(golden: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Human-readable differences between two reports; ``[]`` when they are equal.

    First one line per metric whose episode scores moved, naming each episode with its
    old and new score; then changed verdicts; then, per other episode key (``failure``,
    ``trace_digest``...), how many episodes changed it; then every other changed key path;
    then, per metric, the episodes whose ``evidence`` changed (``absent`` when the golden
    had none) and the entries whose text changed with equal scores.
    """
    lines: list[str] = []
    old = {(e["case_id"], e["trial"]): e for e in golden.get("episodes", [])}
    new = {(e["case_id"], e["trial"]): e for e in current.get("episodes", [])}
    moved: dict[str, list[str]] = {}
    other: dict[str, list[str]] = {}
    texts: list[str] = []
    evidence: dict[str, list[str]] = {}
    for key in sorted(old.keys() & new.keys(), key=lambda k: (str(k[0]), k[1])):
        om, nm = old[key]["metrics"], new[key]["metrics"]
        for name in sorted(om.keys() | nm.keys()):
            a = (om.get(name) or {}).get("score", "absent")
            b = (nm.get(name) or {}).get("score", "absent")
            if a != b:
                moved.setdefault(name, []).append(f"{key[0]}#t{key[1]} {a} → {b}")
            else:
                ot, nt = om.get(name) or {}, nm.get(name) or {}
                for field in ("code", "message"):
                    if ot.get(field) != nt.get(field):
                        texts.append(f"{key[0]}#t{key[1]} {name}.{field}: "
                                     f"{ot.get(field)!r} → {nt.get(field)!r}")
                if ot.get("evidence") != nt.get("evidence"):
                    evidence.setdefault(name, []).append(
                        f"{key[0]}#t{key[1]} {'absent' if 'evidence' not in ot else 'changed'}"
                        f"{' → absent' if 'evidence' not in nt else ''}")
        if old[key]["passed"] != new[key]["passed"]:
            lines.append(f"verdict {key[0]}#t{key[1]}: {old[key]['passed']} → "
                         f"{new[key]['passed']}")
        for field in sorted((old[key].keys() | new[key].keys()) - {"metrics", "passed"}):
            a, b = old[key].get(field, "absent"), new[key].get(field, "absent")
            if a != b:
                other.setdefault(field, []).append(f"{key[0]}#t{key[1]} {a!r} → {b!r}")
    for name, eps in sorted(moved.items()):
        lines.insert(0, f"metric {name}: {len(eps)} episode(s) moved: {'; '.join(eps)}")
    for field, eps in sorted(other.items()):
        lines.append(f"episode {field}: {len(eps)} episode(s) changed; first: {eps[0]}")
    for key in sorted(old.keys() ^ new.keys(), key=lambda k: (str(k[0]), k[1])):
        lines.append(f"episode {key[0]}#t{key[1]} only in the "
                     f"{'golden' if key in old else 'current'} report")
    fo = _flat({k: v for k, v in golden.items() if k != "episodes"})
    fn = _flat({k: v for k, v in current.items() if k != "episodes"})
    for path in sorted(fo.keys() | fn.keys()):
        if fo.get(path, "absent") != fn.get(path, "absent"):
            lines.append(f"{path}: {fo.get(path, 'absent')} → {fn.get(path, 'absent')}")
    for name, eps in sorted(evidence.items()):
        lines.append(f"metric {name}: evidence changed in {len(eps)} episode(s) with equal "
                     f"scores; first: {eps[0]}")
    if texts:
        lines.append(f"{len(texts)} metric entr{'y' if len(texts) == 1 else 'ies'} changed "
                     f"text with equal scores; first: {texts[0]}")
    if not lines and golden != current:
        lines.append("the reports differ in a key not listed above")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Check (default) or ``--update`` the golden reports; returns the exit code."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true", help="rewrite the golden reports")
    ap.add_argument("--runs", default=str(ROOT / "cassettes"), help="folder of runs")
    ap.add_argument("--golden", default=str(ROOT / "tests" / "golden"), help="golden folder")
    args = ap.parse_args(argv)
    runs = sorted(p for p in Path(args.runs).iterdir() if (p / "traces.jsonl").exists())
    if not runs:
        print(f"no runs under {args.runs}", file=sys.stderr)
        return 2
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for run in runs:
            report = grade(run.resolve(), Path(tmp) / run.name)
            target = Path(args.golden) / run.name / "report.json"
            text = (Path(tmp) / run.name / "report.json").read_text()
            if args.update:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
                print(f"updated {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")
                continue
            if not target.exists():
                print(f"{run.name}: no golden report at {target} (run make update-golden)",
                      file=sys.stderr)
                failed = True
                continue
            diffs = golden_diff(json.loads(target.read_text()), report)
            if diffs:
                failed = True
                print(f"{run.name}: differs from its golden report:", file=sys.stderr)
                for line in diffs:
                    print(f"  {line}", file=sys.stderr)
            else:
                print(f"{run.name}: matches its golden report")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
