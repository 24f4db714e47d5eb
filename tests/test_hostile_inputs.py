"""Every hostile input of ``tests/hostile_corpus.py`` through the real command line: no
traceback ever; exit 3 naming file (line, field) for bad input, 2 for usage, 1 only for a
failed gate, 0 for odd but valid input (DESIGN.md §6)."""
from __future__ import annotations

import os

import pytest

from conftest import run_cli
from hostile_corpus import argv, corpus, write_case

CASES = corpus()


@pytest.mark.parametrize("h", CASES, ids=[h.name for h in CASES])
def test_hostile_input(tmp_path, h):
    if h.setup is not None and "mode_000" in h.name and os.geteuid() == 0:
        pytest.skip("root reads folders of mode 000")
    d = write_case(tmp_path, h)
    try:
        p = run_cli(*argv(h, d), cwd=d)
    finally:
        if h.teardown:
            h.teardown(d)
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode == h.code, (p.returncode, p.stderr)
    for needle in h.names:
        assert needle.replace("{d}", str(d)) in p.stderr, (needle, p.stderr)
