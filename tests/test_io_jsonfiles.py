"""Atomic writes of one file and of a set of files (grader/io/jsonfiles.py)."""
from __future__ import annotations

import pytest

from evaltape.grader.io.jsonfiles import atomic_write, atomic_write_all


def test_a_set_of_files_is_replaced_only_when_every_file_is_written(tmp_path):
    (tmp_path / "report.json").write_text("old json")
    (tmp_path / "report.md").write_text("old md")

    def md_pieces():
        yield b"new md, part 1"
        raise KeyboardInterrupt  # Ctrl-C while the second file is being written

    with pytest.raises(KeyboardInterrupt):
        atomic_write_all([(tmp_path / "report.json", b"new json"),
                          (tmp_path / "report.md", md_pieces())])
    # the old pair, whole; no temporary file left
    assert (tmp_path / "report.json").read_text() == "old json"
    assert (tmp_path / "report.md").read_text() == "old md"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "report.md"]
    atomic_write_all([(tmp_path / "report.json", "new json"),
                      (tmp_path / "report.md", iter([b"new ", b"md"]))])
    assert (tmp_path / "report.json").read_text() == "new json"
    assert (tmp_path / "report.md").read_text() == "new md"


def test_missing_folders_are_made_and_relative_paths_taken_under_root(tmp_path):
    # a page's chunk files go into a data folder that does not exist yet; text pieces are
    # written as UTF-8; the names come back as given
    names = atomic_write_all([("a.txt", ["é", b"!"]), ("data/c1.json", b"{}")], root=tmp_path)
    assert names == ["a.txt", "data/c1.json"]
    assert (tmp_path / "a.txt").read_bytes() == "é!".encode()
    assert (tmp_path / "data" / "c1.json").read_bytes() == b"{}"


def test_a_failed_write_names_its_file_and_leaves_no_temp(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "plain").write_text("a file where a folder would have to be")
    with pytest.raises(OSError) as e:
        atomic_write_all([(tmp_path / "ok.txt", b"x"), (tmp_path / "plain" / "b.txt", b"y")])
    assert e.value.filename == str(tmp_path / "plain" / "b.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain", "sub"]  # ok.txt not in
    atomic_write(tmp_path / "one.txt", "é")
    assert (tmp_path / "one.txt").read_bytes() == "é".encode()
