"""The installed package's import graph: no cycle, layers that import one way, no private
name imported across modules.

Every ``import`` and ``from ... import`` of every module of the installed ``evaltape``
package is read with :mod:`ast`, including imports inside functions (a lazy import is still
a dependency), relative imports resolved. The graph is then checked three ways:

- no cycle anywhere (Tarjan's strongly connected components: every one has one module);
- in ``evaltape.grader`` and ``evaltape.recorder``, a module imports only from its own
  layer or a lower one (:data:`GRADER_LAYERS`, :data:`RECORDER_LAYERS`); what a lower layer
  needs from a higher one is passed in;
- no ``from X import _name`` of another evaltape module's private name.
"""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

#: The grader's layers, lowest first. A module belongs to the longest prefix that names it.
GRADER_LAYERS = (
    ("evaltape.grader", "evaltape.grader.errors", "evaltape.grader.schemas",
     "evaltape.grader.user_code"),
    ("evaltape.grader.model", "evaltape.grader.envs"),
    ("evaltape.grader.io",),
    ("evaltape.grader.results", "evaltape.grader.report_file", "evaltape.grader.formats"),
    ("evaltape.grader.matching",),
    ("evaltape.grader.metrics", "evaltape.grader.judge", "evaltape.grader.stats",
     "evaltape.grader.reviews"),
    ("evaltape.grader.engine", "evaltape.grader.executor"),
    ("evaltape.grader.aggregate",),
    ("evaltape.grader.report",),
    ("evaltape.grader.importers",),
    ("evaltape.grader.api",),
)

#: The recorder's layers, lowest first: wire format and scrubbing (with the scripted
#: Messages-API server and the episode deadline, which import nothing of the recorder), the
#: cassette store and the run fingerprint (stale.py), the run folder, the episode runners
#: (the tool loop and the agents), the drivers (an agent in process; a command behind the
#: recording proxy), replay, then the commands built on them.
RECORDER_LAYERS = (
    ("evaltape.recorder",),
    ("evaltape.recorder.wire", "evaltape.recorder.script_server", "evaltape.recorder.deadline",
     "evaltape.recorder.tape", "evaltape.recorder.mcp_tape", "evaltape.recorder.mcp_http"),
    ("evaltape.recorder.cassette", "evaltape.recorder.stale"),
    ("evaltape.recorder.runfolder", "evaltape.recorder.episodes"),
    ("evaltape.recorder.loop", "evaltape.recorder.conversation"),
    ("evaltape.recorder.agents", "evaltape.recorder.local_adapter",
     "evaltape.recorder.framework"),
    ("evaltape.recorder.record", "evaltape.recorder.proxy"),
    ("evaltape.recorder.command",),
    ("evaltape.recorder.replay",),
    ("evaltape.recorder.proxy_run", "evaltape.recorder.judge", "evaltape.recorder.run"),
)


def _package_dirs() -> dict[str, Path]:
    """``package name → folder`` of the installed package and its two sub-packages (found
    through the import system, so an editable and a regular install both work)."""
    out = {}
    for name in ("evaltape", "evaltape.grader", "evaltape.recorder"):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.submodule_search_locations, name
        out[name] = Path(list(spec.submodule_search_locations)[0])
    return out


def _modules() -> dict[str, Path]:
    """Every module of the installed package: ``dotted name → file``."""
    dirs = _package_dirs()
    mods: dict[str, Path] = {}
    for pkg, folder in dirs.items():
        for f in sorted(folder.rglob("*.py")):
            parts = list(f.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join([pkg, *parts])
            # evaltape/grader and evaltape/recorder may be folders of the evaltape package
            # itself in a regular install; they are read once, under their own name
            if pkg == "evaltape" and parts and parts[0] in ("grader", "recorder"):
                continue
            mods[name] = f
    return mods


def _imports(name: str, path: Path, mods: dict[str, Path]) -> list[tuple[str, int, list[str]]]:
    """``(imported module, line, imported names)`` for every evaltape import of one module,
    those inside functions included; a name that is a submodule counts as that module."""
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("evaltape"):
                    out.append((a.name, node.lineno, []))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("evaltape"):
                continue
            plain = []
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in mods:
                    out.append((sub, node.lineno, []))
                else:
                    plain.append(a.name)
            if plain:
                out.append((target, node.lineno, plain))
    return out


def _owner(target: str, mods: dict[str, Path]) -> str | None:
    """The module that defines ``target`` (itself, or the nearest package above it)."""
    while target and target not in mods:
        target = target.rpartition(".")[0]
    return target or None


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, Path], dict[str, dict[str, int]], list[str]]:
    """(modules, ``module → {imported module: first line}``, private-name imports)."""
    mods = _modules()
    edges: dict[str, dict[str, int]] = {m: {} for m in mods}
    private = []
    for name, path in mods.items():
        for target, line, names in _imports(name, path, mods):
            owner = _owner(target, mods)
            if owner is None or owner == name:
                continue
            edges[name].setdefault(owner, line)
            for n in names:
                if n.startswith("_") and not n.startswith("__"):
                    private.append(f"{path}:{line}: {name} imports {owner}.{n}")
    return mods, edges, private


def _cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan 1972), iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in edges:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def _layer(name: str, layers: tuple[tuple[str, ...], ...]) -> int | None:
    """The layer of module ``name``: that of the longest prefix naming it; the package
    itself (``layers[0][0]``) names only its ``__init__``, so every module is placed."""
    top = layers[0][0]
    best: tuple[int, int] | None = None
    for i, prefixes in enumerate(layers):
        for p in prefixes:
            hit = name == p or (p != top and name.startswith(p + "."))
            if hit and (best is None or len(p) > best[1]):
                best = (i, len(p))
    return best[0] if best else None


def test_the_scan_sees_the_package_and_its_lazy_imports(graph):
    """The scan is not vacuous: it finds the package's modules and an import made inside a
    function (a run's range reader imports the trace parser lazily)."""
    mods, edges, _private = graph
    assert {"evaltape.cli", "evaltape.grader.engine", "evaltape.recorder.loop"} <= set(mods)
    assert "evaltape.grader.io.traces" in edges["evaltape.grader.io.run"]
    assert _cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [
        ["a", "b", "c"]]


def test_no_import_cycle(graph):
    _mods, edges, _private = graph
    cycles = _cycles(edges)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("layers", [GRADER_LAYERS, RECORDER_LAYERS], ids=["grader", "recorder"])
def test_layers_import_downwards_only(graph, layers):
    mods, edges, _private = graph
    top = layers[0][0]
    upward = []
    for name in sorted(mods):
        if not (name == top or name.startswith(top + ".")):
            continue
        mine = _layer(name, layers)
        assert mine is not None, f"{name} is in no layer: add it to the layer list"
        for target, line in sorted(edges[name].items()):
            theirs = _layer(target, layers)
            if theirs is not None and theirs > mine:
                upward.append(f"{mods[name]}:{line}: {name} (layer {mine}) imports "
                              f"{target} (layer {theirs})")
    assert not upward, "imports that climb a layer:\n" + "\n".join(upward)


def test_grader_never_imports_the_recorder(graph):
    mods, edges, _private = graph
    bad = [f"{a} -> {b}" for a in mods if a.startswith("evaltape.grader")
           for b in edges[a] if b.startswith("evaltape.recorder")]
    assert not bad


def test_no_private_name_is_imported_across_modules(graph):
    _mods, _edges, private = graph
    assert not private, "\n".join(private)
