"""Same inputs → byte-identical report.json, whatever PYTHONHASHSEED or trace order."""
from __future__ import annotations

import random
import shutil

from conftest import ROOT, run_cli_subprocess

RUN = ROOT / "cassettes" / "helpdesk-scripted-standin"


def test_report_bytes_stable_across_hash_seeds_and_line_order(tmp_path):
    lines = (RUN / "traces.jsonl").read_text().splitlines()
    shuffled = lines[:]
    random.Random(7).shuffle(shuffled)
    assert shuffled != lines
    outs = []
    for seed, rows in (("0", lines), ("12345", shuffled)):
        work = tmp_path / seed
        (work / RUN.name).mkdir(parents=True)
        shutil.copy(RUN / "manifest.json", work / RUN.name / "manifest.json")
        (work / RUN.name / "traces.jsonl").write_text("\n".join(rows) + "\n")
        # real processes: PYTHONHASHSEED only takes effect when an interpreter starts
        p = run_cli_subprocess("grade", RUN.name, "--dataset",
                               str(ROOT / "datasets" / "helpdesk_eval.json"), "--out", "out",
                               "--quiet", cwd=work, env={"PYTHONHASHSEED": seed})
        assert p.returncode == 0, p.stderr
        outs.append((work / "out" / "report.json").read_bytes())
    assert outs[0] == outs[1]
    assert b"latency" not in outs[0] and b"created_at" not in outs[0]
