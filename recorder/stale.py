"""The run fingerprint: what a recording depends on, so that ``evaltape record`` into an
existing run refuses a different agent before sending a request. The manifest's
``fingerprint`` holds ``agent`` (module and source hashes, :func:`agent_sources`, or a
``--command`` line and its files, :func:`command_files`), ``model`` (model, streaming,
stand-in script hash) and ``wire`` (:func:`wire_fingerprint`). :func:`fingerprint_changes`
names every difference; :func:`trace_difference` decides that a replayed episode does not
reproduce its trace (replay, ``--list-stale``, ``record --refresh``).
"""
from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import shlex
import sys
import sysconfig
from pathlib import Path
from typing import Any, Iterable, Mapping

import orjson

from .wire.jsonpath import first_difference
from .wire.matchers import shorten_pair
from .wire.scrub import scrub_value

#: Trace keys that legitimately differ between recording and replay.
VOLATILE_KEYS = ("latency_s",)
#: Request body keys that are not "parameters" in :func:`wire_fingerprint` (the
#: conversation, the prompt and tools, which are hashed apart, and per-request metadata).
NOT_PARAMETERS = frozenset({"messages", "system", "tools", "model", "metadata"})
#: Distinct parameter sets a wire fingerprint keeps (the rest are counted).
MAX_PARAMETER_SETS = 20


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 (hex) of a file's bytes.

    Raises:
        OSError: the file cannot be read.
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _installed_roots() -> list[Path]:
    """Folders whose modules are not the user's: the standard library and every
    site-packages folder (``sys.prefix``, ``sys.base_prefix`` and ``sysconfig``'s paths)."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            roots.add(sysconfig.get_paths()[key])
        except KeyError:
            pass
    return [Path(r).resolve() for r in roots if r]


def _module_file(name: str) -> Path | None:
    """The ``.py`` file of module ``name`` (already imported, or found without importing it
    when its parent package is imported), or ``None`` (a built-in, an extension module, a
    namespace package, a module that cannot be found)."""
    mod = sys.modules.get(name)
    origin = getattr(mod, "__file__", None) if mod is not None else None
    if origin is None and mod is None:
        parent = name.rpartition(".")[0]
        if parent and parent not in sys.modules:
            return None  # (finding it would import its parent package)
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError, AttributeError):
            return None
        origin = spec.origin if spec is not None else None
    if not origin or not str(origin).endswith(".py"):
        return None
    return Path(origin)


def _imported_names(path: Path, name: str) -> set[str]:
    """The modules a module's file imports (``import a.b``, ``from a import b`` gives ``a``
    and ``a.b``; relative imports resolved against ``name``), imports inside functions
    included. A file that does not parse imports nothing here (its hash still counts)."""
    try:
        tree = ast.parse(path.read_bytes(), str(path))
    except (SyntaxError, ValueError, OSError):
        return set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target:
                out.add(target)
                out.update(f"{target}.{a.name}" for a in node.names if a.name != "*")
    return out


def agent_sources(module: str) -> dict[str, str]:
    """``{module name: sha256 of its file}`` for an in-process agent's source files: its module
    and, transitively, the user's modules it imports (the agent's own top-level package or its
    folder; not the standard library, site-packages or evaltape, except a built-in agent's own
    module). Modules that cannot be found as ``.py`` files are left out.

    Raises:
        OSError: a source file cannot be read.
    """
    start = _module_file(module)
    if start is None:
        return {}
    top = module.split(".")[0]
    folder = start.resolve().parent
    installed = _installed_roots()

    def users(name: str, path: Path) -> bool:
        if name == module:
            return True
        if name.split(".")[0] == "evaltape":
            return False
        real = path.resolve()
        if any(r == real or r in real.parents for r in installed):
            return False
        return name.split(".")[0] == top or real.parent == folder

    found: dict[str, Path] = {module: start}
    todo = [module]
    while todo:
        name = todo.pop()
        for imported in sorted(_imported_names(found[name], name)):
            if imported in found:
                continue
            path = _module_file(imported)
            if path is not None and users(imported, path):
                found[imported] = path
                todo.append(imported)
    return {name: file_sha256(path) for name, path in sorted(found.items())}


def command_files(command: str) -> dict[str, str]:
    """``{path as written: sha256}`` of the files a ``--command`` line names: each argument (or
    ``--name=value`` value) that is an existing file, and the program when given as a path; a
    program on ``PATH`` is not hashed. ``python -m MODULE`` adds :func:`python_module_files`.

    Raises:
        OSError: a named file cannot be read.
    """
    try:
        argv = shlex.split(command)
    except ValueError:
        return {}
    out: dict[str, str] = {}
    for i, arg in enumerate(argv):
        if i == 0 and "/" not in arg:
            continue
        for cand in (arg, arg.partition("=")[2] if arg.startswith("-") else ""):
            if cand and "{" not in cand and Path(cand).is_file():
                out[cand] = file_sha256(cand)
    for module in _dash_m_modules(argv):
        out.update(python_module_files(module))
    return dict(sorted(out.items()))


def _dash_m_modules(argv: list[str]) -> list[str]:
    """The modules named by ``-m NAME`` (or ``-mNAME``) after a Python interpreter
    (an argument whose file name starts with ``python``) in ``argv``."""
    out = []
    python = False
    for i, arg in enumerate(argv):
        if Path(arg).name.startswith("python"):
            python = True
        elif python and arg == "-m" and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif python and arg.startswith("-m") and len(arg) > 2 and not arg.startswith("--"):
            out.append(arg[2:])
    return [m for m in out if m and "{" not in m]


def _search_roots() -> list[Path]:
    """Where ``python -m`` finds the user's modules first: the working directory, then
    each ``PYTHONPATH`` folder."""
    roots = [Path.cwd()]
    roots += [Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return roots


def _find_in_roots(name: str, roots: list[Path]) -> list[Path]:
    """The files of module ``name`` under the first root that holds it: ``a/b.py``, or
    a package's ``a/b/__init__.py`` (and ``__main__.py``, which ``-m`` runs); the
    ``__init__.py`` of each parent package too (``-m`` imports them)."""
    parts = name.split(".")
    for root in roots:
        base = root.joinpath(*parts)
        files = [base.with_suffix(".py")] if base.with_suffix(".py").is_file() else \
            [p for p in (base / "__init__.py", base / "__main__.py") if p.is_file()]
        if files:
            parents = [root.joinpath(*parts[:k], "__init__.py") for k in range(1, len(parts))]
            return [p for p in parents if p.is_file()] + files
    return []


def python_module_files(module: str) -> dict[str, str]:
    """``{path relative to the working directory: sha256}`` of the module ``python -m module``
    runs and, transitively, the modules it imports found in the working directory or
    ``PYTHONPATH`` (found without importing). A module not found there names no file.

    Raises:
        OSError: a source file cannot be read.
    """
    roots = _search_roots()
    cwd = Path.cwd()
    found: dict[Path, str] = {}
    todo = [module]
    seen = {module}
    while todo:
        name = todo.pop()
        for path in _find_in_roots(name, roots):
            if path in found:
                continue
            found[path] = name
            # (a package's __main__ resolves relative imports against the package)
            as_name = f"{name}.__main__" if path.name == "__main__.py" else name
            for imported in sorted(_imported_names(path, as_name)):
                if imported not in seen:
                    seen.add(imported)
                    todo.append(imported)

    def shown(p: Path) -> str:
        try:
            return p.resolve().relative_to(cwd.resolve()).as_posix()
        except ValueError:
            return p.as_posix()
    return {shown(p): file_sha256(p) for p in sorted(found)}


def _sha(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()


def wire_fingerprint(cassettes: Iterable[Path],
                     previous: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What the recorded Messages requests of ``cassettes`` sent: ``{"system_sha256",
    "tools_sha256", "models", "parameters", "parameter_sets"}``, lists sorted and unique
    (``"none"`` for an absent prompt or tool list); ``parameters`` are body keys other than
    :data:`NOT_PARAMETERS`, at most :data:`MAX_PARAMETER_SETS` sets (``parameter_sets``
    counts all). Requests without ``messages``, non-JSON bodies and unreadable files are
    skipped. ``previous``: an earlier wire fingerprint of the run, merged in (a resume).
    """
    prev = previous if isinstance(previous, Mapping) else {}

    def strings(key: str) -> set[str]:
        vals = prev.get(key)
        return {v for v in vals if isinstance(v, str)} if isinstance(vals, list) else set()

    systems, tools, models = strings("system_sha256"), strings("tools_sha256"), \
        strings("models")
    params: set[bytes] = {orjson.dumps(v, option=orjson.OPT_SORT_KEYS)
                          for v in prev.get("parameters") or () if isinstance(v, dict)}
    for path in cassettes:
        try:
            lines = Path(path).read_bytes().splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                obj = orjson.loads(line)
                body = obj["request"]["body"].get("json")
            except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
                continue
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                continue
            systems.add("none" if body.get("system") is None else _sha(body["system"]))
            tools.add("none" if body.get("tools") is None else _sha(body["tools"]))
            models.add(str(body.get("model")))
            params.add(orjson.dumps({k: v for k, v in body.items()
                                     if k not in NOT_PARAMETERS},
                                    option=orjson.OPT_SORT_KEYS))
    ordered = sorted(params)
    earlier = prev.get("parameter_sets")
    return {"system_sha256": sorted(systems), "tools_sha256": sorted(tools),
            "models": sorted(models),
            "parameters": [orjson.loads(p) for p in ordered[:MAX_PARAMETER_SETS]],
            "parameter_sets": max(len(ordered), earlier if type(earlier) is int else 0)}


def _short(sha: Any) -> str:
    return f"{sha[:12]}…" if isinstance(sha, str) and len(sha) > 12 else repr(sha)


def _changed_hashes(what: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Lines naming the entries of two ``{name: sha256}`` maps that differ."""
    out = []
    for name in sorted(set(old) | set(new)):
        if name not in new:
            out.append(f"{what} {name} is gone (was {_short(old[name])})")
        elif name not in old:
            out.append(f"{what} {name} is new ({_short(new[name])})")
        elif old[name] != new[name]:
            out.append(f"{what} {name} changed (sha256 {_short(old[name])} → "
                       f"{_short(new[name])})")
    return out


def fingerprint_changes(previous: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[str]:
    """What differs between the recorded manifest ``previous`` and ``manifest``, one plain line
    each in a fixed order (agent, sources or command files, model, streaming, stand-in script,
    system prompt and tools, then each changed case input). Parts ``previous`` lacks are not
    compared; ``[]`` when nothing recorded differs.
    """
    if not previous:
        return []
    out: list[str] = []
    old_fp = previous.get("fingerprint") if isinstance(previous.get("fingerprint"), dict) \
        else {}
    new_fp = manifest.get("fingerprint") or {}
    for key in ("agent", "command"):
        if key in previous and previous.get(key) != manifest.get(key):
            out.append(f"{key} {previous.get(key)!r} → {manifest.get(key)!r}")
    old_agent = old_fp.get("agent") if isinstance(old_fp.get("agent"), dict) else {}
    new_agent = new_fp.get("agent") or {}
    for part, what in (("sources", "agent source"), ("files", "command file")):
        if isinstance(old_agent.get(part), dict):
            out += _changed_hashes(what, old_agent[part], new_agent.get(part) or {})
    for key in ("model", "stream", "standin_scripts"):
        if key in previous and previous.get(key) != manifest.get(key):
            out.append(f"{key} {previous.get(key)!r} → {manifest.get(key)!r}")
    old_model = old_fp.get("model") if isinstance(old_fp.get("model"), dict) else {}
    new_model = new_fp.get("model") or {}
    if "standin_scripts_sha256" in old_model and \
            old_model["standin_scripts_sha256"] != new_model.get("standin_scripts_sha256") \
            and previous.get("standin_scripts") == manifest.get("standin_scripts"):
        out.append(f"stand-in script {manifest.get('standin_scripts')} changed (sha256 "
                   f"{_short(old_model['standin_scripts_sha256'])} → "
                   f"{_short(new_model.get('standin_scripts_sha256'))})")
    for key, what in (("system_prompt_sha256", "system prompt"), ("tools_sha256", "tools")):
        if previous.get(key) is not None and previous.get(key) != manifest.get(key):
            out.append(f"{what} (the agent's spec) changed (sha256 {_short(previous[key])} → "
                       f"{_short(manifest.get(key))})")
    out += [f"case {cid!r}: its input changed" for cid in changed_inputs(previous, manifest)]
    return out


def changed_inputs(previous: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[str]:
    """The ids of the cases both manifests record whose input hash differs, in the order of
    ``manifest``'s ``dataset.cases``."""
    old = (previous.get("dataset") or {}).get("cases") if isinstance(
        previous.get("dataset"), dict) else None
    new = (manifest.get("dataset") or {}).get("cases") or {}
    if not isinstance(old, dict):
        return []
    return [cid for cid, sha in new.items() if cid in old and old[cid] != sha]


def comparable_usage(recorded: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """``now`` with its ``usage`` cut to the token counts the recorded trace has: a recorded
    trace may hold only input and output tokens where a replay also yields prompt-cache counts.
    Counts both traces hold must still be equal.
    """
    old, new = recorded.get("usage"), now.get("usage")
    if isinstance(old, dict) and isinstance(new, dict) and set(new) - set(old):
        now = dict(now, usage={k: v for k, v in new.items() if k in old})
    return now


def trace_difference(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
    """Where a replayed trace ``now`` first differs from ``recorded`` (all keys but
    :data:`VOLATILE_KEYS`, usage per :func:`comparable_usage`, ``now`` redacted first), as
    ``trace differs at $.PATH: recorded A, replayed B`` (values redacted, cut); ``None`` if equal.
    """
    now = with_recorded_times(dict(recorded), dict(now))  # (times are never measured again)
    a = {k: v for k, v in recorded.items() if k not in VOLATILE_KEYS}
    b = comparable_usage(a, {k: v for k, v in now.items() if k not in VOLATILE_KEYS})
    # the recorded trace was stored redacted: compare the replayed one as it would be stored
    # (a tool result holding a key-shaped string replays as "[REDACTED]" on both sides)
    b = scrub_value(b)
    d = first_difference(a, b)
    if d is None:
        return None
    sa, sb = shorten_pair(scrub_value(d[1]), scrub_value(d[2]))
    return f"trace differs at {d[0]}: recorded {sa}, replayed {sb}"


#: Trace keys that hold measured times (seconds), beside each tool call's ``duration_s``.
TIMING_KEYS = ("latency_s", "timing")


def with_recorded_times(recorded: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """``now`` (a replayed trace) with ``recorded``'s ``latency_s``, ``timing`` and per-call
    ``duration_s`` (by position) in place of the replay's, dropped when the recording lacks them.
    """
    out = dict(now)
    for key in TIMING_KEYS:
        if key in recorded:
            out[key] = recorded[key]
        else:
            out.pop(key, None)
    old, new = recorded.get("tool_calls"), out.get("tool_calls")
    if isinstance(old, list) and isinstance(new, list):
        calls = []
        for i, call in enumerate(new):
            was = old[i] if i < len(old) else None
            if isinstance(call, dict) and isinstance(was, dict):
                call = {k: v for k, v in call.items() if k != "duration_s"}
                if "duration_s" in was:
                    call["duration_s"] = was["duration_s"]
            calls.append(call)
        out["tool_calls"] = calls
    return out


def setup_difference(body: Any, wire: Mapping[str, Any] | None,
                     case_tools: bool = False) -> str | None:
    """How a Messages request ``body`` differs from the recorded setup ``wire``
    (:func:`wire_fingerprint`), or ``None``. A part (system prompt, tools, model) is compared
    only when every recorded request sent one value for it; tools are not compared when
    ``case_tools``; ``None`` too when ``body`` has no ``messages`` list. The message names each
    part: ``system prompt sha256 ab12… (the recordings sent cd34…)``.
    """
    if not isinstance(wire, Mapping) or not isinstance(body, dict) or \
            not isinstance(body.get("messages"), list):
        return None
    out = []

    def known(key: str) -> list[str] | None:
        vals = wire.get(key)
        return [v for v in vals if isinstance(v, str)] if isinstance(vals, list) and \
            len(vals) == 1 else None

    def listed(vals: list[str]) -> str:
        return ", ".join(_short(v) for v in vals)

    systems, tools, models = known("system_sha256"), known("tools_sha256"), known("models")
    system = "none" if body.get("system") is None else _sha(body["system"])
    if systems is not None and system not in systems:
        out.append(f"system prompt {'none' if system == 'none' else 'sha256 ' + _short(system)}"
                   f" (the recordings sent {listed(systems)})")
    tool_sha = "none" if body.get("tools") is None else _sha(body["tools"])
    if tools is not None and tool_sha not in tools and not case_tools:
        names = [str(t.get("name")) for t in body.get("tools") or () if isinstance(t, dict)]
        out.append(f"tools {'none' if tool_sha == 'none' else 'sha256 ' + _short(tool_sha)} "
                   f"[{', '.join(names)}] (the recordings sent {listed(tools)})")
    model = str(body.get("model"))
    if models is not None and model not in models:
        out.append(f"model {model!r} (the recordings sent "
                   f"{', '.join(repr(m) for m in models)})")
    return "; ".join(out) or None


def single_setup(wire: Mapping[str, Any] | None) -> dict[str, str | None]:
    """The run's setup as its recorded requests state it: ``{"system_prompt_sha256",
    "tools_sha256", "model"}``, each the one value every recorded Messages request sent
    (``None`` when they sent several, none was recorded, or the requests sent no system
    prompt / no tools)."""
    out: dict[str, str | None] = {}
    for key, name in (("system_sha256", "system_prompt_sha256"),
                      ("tools_sha256", "tools_sha256"), ("models", "model")):
        vals = wire.get(key) if isinstance(wire, Mapping) else None
        one = vals[0] if isinstance(vals, list) and len(vals) == 1 else None
        out[name] = one if isinstance(one, str) and one not in ("none", "None") else None
    return out


def first_agent_request(path: Path) -> Any:
    """The JSON body of the first Messages request an episode's agent sent, read from its
    cassette (a simulated user's requests, marked ``x-evaltape-speaker: user``, are passed
    over), or ``None``: no such request, or the file does not read."""
    try:
        lines = Path(path).read_bytes().splitlines()
    except OSError:
        return None
    for line in lines:
        try:
            req = orjson.loads(line)["request"]
            body = req["body"].get("json")
            speaker = (req.get("headers") or {}).get("x-evaltape-speaker") or []
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            continue
        if "user" in speaker:
            continue
        if isinstance(body, dict) and isinstance(body.get("messages"), list):
            return body
    return None


def setup_changed_message(out: Any, changed: str, recorded: int, in_process: bool) -> str:
    """The error of a resumed recording whose first new request differs from the run's
    recorded setup (:func:`setup_difference`)."""
    what = ("Its episode's requests were sent, but it was not saved, nor was any episode "
            "that ended after it" if in_process else
            "It was refused, and no episode that sent a request after it was saved")
    return (f"{out}: the agent's first new request differs from what the run's recordings "
            f"sent: {changed}. {what} ({recorded} recorded before it). Rerun with --refresh "
            f"to replay every finished episode and record again those that no longer "
            f"reproduce (`evaltape replay {out} --list-stale` lists them without a model), or "
            "with --allow-changed to record the missing episodes and leave the finished ones "
            "as they are")
