"""Packaging: grader/ and recorder/ install inside the ``evaltape`` namespace only."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

#: Install-time mapping of pyproject.toml: top-level folder → package name.
FOLDERS = {"src/evaltape": "evaltape", "grader": "evaltape.grader",
           "recorder": "evaltape.recorder"}


def test_every_package_folder_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = set()
    for folder, package in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            on_disk.add(".".join((package, *rel)))
    assert set(config["packages"]) == on_disk
    assert config["package-dir"] == {v: k for k, v in FOLDERS.items()}


def _build_wheel(tmp_path: Path) -> Path:
    out = tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps",
                    "--no-build-isolation", "-q", "-w", str(out)], check=True,
                   capture_output=True, text=True, cwd=tmp_path)
    wheels = list(out.glob("evaltape-*.whl"))
    assert len(wheels) == 1
    return wheels[0]


@pytest.mark.slow
def test_wheel_installs_only_the_evaltape_namespace(tmp_path):
    wheel = _build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"evaltape", "evaltape-0.1.0.dist-info"}
    assert "evaltape/grader/engine.py" in names
    assert "evaltape/recorder/record.py" in names
    assert "evaltape/grader/metrics/tool_selection.py" in names
    # unpacked as site-packages would hold it: evaltape.grader imports, grader does not
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    ok = subprocess.run([sys.executable, "-c", "import evaltape.grader.engine as e; "
                         "print(e.__file__)"], cwd=tmp_path, env=env, capture_output=True,
                        text=True)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == str(site / "evaltape" / "grader" / "engine.py")
    for top in ("grader", "recorder"):
        bad = subprocess.run([sys.executable, "-c", f"import {top}"], cwd=tmp_path, env=env,
                             capture_output=True, text=True)
        assert bad.returncode == 1
        assert f"No module named '{top}'" in bad.stderr


def test_top_level_folder_on_sys_path_refuses_the_bare_name():
    """Run from the repository root, ``import grader`` finds the folder: it says what to use."""
    p = subprocess.run([sys.executable, "-c", "import grader"], cwd=ROOT, capture_output=True,
                       text=True)
    assert p.returncode == 1
    assert "import evaltape.grader instead" in p.stderr
