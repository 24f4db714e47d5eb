"""Normalisation before matching: parts of a request meant to vary between recording and
replay (a date, a directory) are replaced by a placeholder on both sides. A rule is
``{"name", "path", "pattern", "placeholder"}``: every string under the nodes the JSON path
selects (``$`` then ``.name``, ``["name"]``, ``[n]``, ``[*]``/``.*``) has each pattern match
replaced literally. A run's rules sit in ``manifest.json`` under ``normalise``
(:func:`run_normaliser`); stored requests never change. :data:`BUILTIN` holds named sets.
"""
from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["Rule", "Normaliser", "BUILTIN", "parse_path", "rules_from_json", "resolve_rules",
           "run_normaliser", "manifest_rules", "describe_rule", "MANIFEST_KEY"]

#: The manifest key that holds a run's rules.
MANIFEST_KEY = "normalise"

_STEP = re.compile(r"""\.(?P<name>[A-Za-z_][A-Za-z0-9_\-]*)|\.(?P<star1>\*)|\[(?P<index>\d+)\]
                       |\[(?P<star2>\*)\]|\["(?P<quoted>(?:[^"\\]|\\.)*)"\]""", re.X)


def parse_path(path: str) -> tuple[Any, ...]:
    """The steps of a JSON path: a ``str`` key, an ``int`` index, or ``None`` for ``*``.

    Raises:
        ValueError: not a valid path (position named).
    """
    if not isinstance(path, str) or not path.startswith("$"):
        raise ValueError(f"a JSON path starts with '$', got {path!r}")
    steps: list[Any] = []
    pos = 1
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None:
            raise ValueError(f"JSON path {path!r}: cannot read it from character {pos + 1} "
                             f"({path[pos:pos + 10]!r}); steps are .name, [\"name\"], [n], "
                             "[*] and .*")
        if m.group("name") is not None:
            steps.append(m.group("name"))
        elif m.group("index") is not None:
            steps.append(int(m.group("index")))
        elif m.group("quoted") is not None:
            steps.append(json.loads(f'"{m.group("quoted")}"'))
        else:
            steps.append(None)
        pos = m.end()
    return tuple(steps)


@dataclass(frozen=True)
class Rule:
    """One normalisation rule: ``path`` (JSON path), ``pattern`` (a Python regex),
    ``placeholder`` (literal) and ``name`` (shown by ``evaltape replay``).
    """

    path: str
    pattern: str
    placeholder: str
    name: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_steps", parse_path(self.path))
        object.__setattr__(self, "_regex", re.compile(self.pattern))

    def apply(self, body: Any) -> Any:
        """``body`` with this rule applied (a new value where anything changed; the input
        is never modified)."""
        return _at(body, self._steps, self._sub)  # type: ignore[attr-defined]

    def _sub(self, node: Any) -> Any:
        if isinstance(node, str):
            return self._regex.sub(lambda _m: self.placeholder, node)  # type: ignore[attr-defined]
        if isinstance(node, list):
            return [self._sub(v) for v in node]
        if isinstance(node, dict):
            return {k: self._sub(v) for k, v in node.items()}
        return node

    def to_json(self) -> dict[str, str]:
        """The rule as stored in a manifest."""
        out = {"path": self.path, "pattern": self.pattern, "placeholder": self.placeholder}
        if self.name:
            out = {"name": self.name, **out}
        return out


def _at(node: Any, steps: tuple, fn: Any) -> Any:
    """``node`` with ``fn`` applied to what ``steps`` select (copies along the way)."""
    if not steps:
        return fn(node)
    step, rest = steps[0], steps[1:]
    if step is None:
        if isinstance(node, list):
            return [_at(v, rest, fn) for v in node]
        if isinstance(node, dict):
            return {k: _at(v, rest, fn) for k, v in node.items()}
        return node
    if isinstance(step, int):
        if isinstance(node, list) and step < len(node):
            return node[:step] + [_at(node[step], rest, fn)] + node[step + 1:]
        return node
    if isinstance(node, dict) and step in node:
        return {**node, step: _at(node[step], rest, fn)}
    return node


class Normaliser:
    """Rules applied in order to a parsed request body; equal rule lists give equal
    normalisers (they are compared and hashed by their rules).

    Args:
        rules: the rules, applied in this order.
    """

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(rules)

    def __call__(self, body: Any) -> Any:
        """``body`` normalised (only JSON objects and arrays are; text and bytes bodies
        are returned as they are)."""
        if not isinstance(body, (dict, list)):
            return body
        for rule in self.rules:
            body = rule.apply(body)
        return body

    def __bool__(self) -> bool:
        return bool(self.rules)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Normaliser) and other.rules == self.rules

    def __hash__(self) -> int:
        return hash(self.rules)


def rules_without_effect(rules: Sequence[Rule], bodies: Iterable[Any]) -> list[Rule]:
    """The rules that change none of ``bodies`` (parsed request bodies): their path selects
    nothing in them, or their pattern matches nothing there."""
    idle = list(rules)
    for body in bodies:
        if not idle:
            break
        idle = [r for r in idle if r.apply(body) == body]
    return idle


def _cc(name: str, path: str, pattern: str, placeholder: str) -> Rule:
    return Rule(path, pattern, placeholder, f"claude-code: {name}")


#: Named rule sets. ``claude-code``: what the Claude Code CLI (the program the Claude
#: Agent SDK runs) puts into its Messages requests that changes with the day, the working
#: directory, ``$HOME``, the machine and the session: today's date (in the first user
#: message, or the system prompt), the current month (in the web search tool's
#: description), the primary working directory and the memory folder under ``$HOME``
#: (system prompt), the OS version, and the device and session ids in
#: ``metadata.user_id`` (a JSON text, or the older ``user_<hash>_account_…_session_<uuid>``).
BUILTIN: dict[str, tuple[Rule, ...]] = {
    "claude-code": (
        _cc("date", "$.messages[*].content",
            r"(?<=Today's date is )\d{4}-\d{2}-\d{2}|(?<=Today's date: )\d{4}-\d{2}-\d{2}",
            "<date>"),
        _cc("date", "$.system",
            r"(?<=Today's date is )\d{4}-\d{2}-\d{2}|(?<=Today's date: )\d{4}-\d{2}-\d{2}",
            "<date>"),
        _cc("month", "$.tools[*].description",
            r"(?<=The current month is )[A-Z][a-z]+ \d{4}", "<month>"),
        _cc("working directory", "$.system",
            r"(?<=Primary working directory: )[^\n]*|(?<=Working directory: )[^\n]*",
            "<cwd>"),
        _cc("memory folder under HOME", "$.system",
            r"(?<=file-based memory at `)[^`\n]*(?=`)", "<memory-dir>"),
        _cc("OS version", "$.system", r"(?<=OS Version: )[^\n]*", "<os-version>"),
        _cc("device id", "$.metadata.user_id",
            r'(?<="device_id":")[^"]*|^user_[0-9a-f]{64}(?=_account)', "<device-id>"),
        _cc("session id", "$.metadata.user_id",
            r'(?<="session_id":")[^"]*|(?<=_session_)[0-9a-fA-F-]{36}$', "<session-id>"),
    ),
}

_RULE_KEYS = {"path", "pattern", "placeholder", "name"}


def rules_from_json(value: Any, where: str) -> list[Rule]:
    """Rules from their stored form, a list of ``{"path", "pattern", "placeholder", "name"?}``.

    Raises:
        ValueError: bad shape, an unknown key, a bad path or pattern (``where`` and index named).
    """
    if not isinstance(value, list):
        raise ValueError(f"{where}: expected a list of rules, got {type(value).__name__}")
    out = []
    for i, item in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise ValueError(f"{at}: expected an object with path, pattern and placeholder")
        unknown = sorted(set(item) - _RULE_KEYS)
        if unknown:
            raise ValueError(f"{at}: unknown key {unknown[0]!r} (keys: name, path, pattern, "
                             "placeholder)")
        for key in ("path", "pattern", "placeholder"):
            if not isinstance(item.get(key), str):
                raise ValueError(f"{at}.{key}: expected a string")
        if not isinstance(item.get("name", ""), str):
            raise ValueError(f"{at}.name: expected a string")
        try:
            parse_path(item["path"])
        except ValueError as e:
            raise ValueError(f"{at}.path: {e}") from None
        try:
            re.compile(item["pattern"])
        except re.error as e:
            raise ValueError(f"{at}.pattern: not a regular expression ({e})") from None
        out.append(Rule(item["path"], item["pattern"], item["placeholder"],
                        item.get("name", "")))
    return out


def resolve_rules(specs: Sequence[str]) -> list[Rule]:
    """The rules named on a command line: a :data:`BUILTIN` set's name or a JSON file of rules.

    Raises:
        ValueError: an unknown name, an unreadable file, or invalid rules (file and rule named).
    """
    out: list[Rule] = []
    for spec in specs:
        if spec in BUILTIN:
            out.extend(BUILTIN[spec])
            continue
        p = Path(spec)
        if not p.is_file():
            raise ValueError(f"{spec!r}: neither a built-in set "
                             f"({', '.join(sorted(BUILTIN))}) nor a file")
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"{spec}: cannot read the rules ({e})") from None
        except json.JSONDecodeError as e:
            raise ValueError(f"{spec}: line {e.lineno}: not JSON ({e.msg})") from None
        out.extend(rules_from_json(data, spec))
    seen: set[Rule] = set()
    return [r for r in out if not (r in seen or seen.add(r))]


def describe_rule(rule: Rule) -> str:
    """One line for a person: ``name: at PATH, /PATTERN/ → PLACEHOLDER``."""
    head = f"{rule.name}: " if rule.name else ""
    return f"{head}at {rule.path}, /{rule.pattern}/ → {rule.placeholder}"


def manifest_rules(manifest: Mapping[str, Any], where: str) -> list[Rule]:
    """The rules a run's manifest stores (none when it has no ``normalise``).

    Raises:
        ValueError: the stored rules do not validate (:func:`rules_from_json`).
    """
    value = manifest.get(MANIFEST_KEY)
    if value is None:
        return []
    return rules_from_json(value, f"{where}: {MANIFEST_KEY}")


_cache: dict[str, tuple[tuple[int, int], Normaliser | None]] = {}
_cache_lock = threading.Lock()


def _run_of(cassette: str | os.PathLike) -> Path | None:
    """The run folder of a cassette in ``RUN/http/`` (or ``RUN/http/.refresh/``)."""
    p = Path(cassette).parent
    if p.name.startswith("."):  # (http/.refresh/: a refresh's work copies)
        p = p.parent
    return p.parent if p.name == "http" else None


def run_normaliser(cassette: str | os.PathLike | None) -> Normaliser | None:
    """The normaliser of a cassette's run (its manifest's ``normalise`` rules), or ``None``;
    cached per manifest mtime and size.

    Raises:
        ValueError: the manifest's rules do not validate.
    """
    if cassette is None:
        return None
    run = _run_of(cassette)
    if run is None:
        return None
    manifest = run / "manifest.json"
    try:
        st = manifest.stat()
    except OSError:
        return None
    stamp = (st.st_mtime_ns, st.st_size)
    key = str(manifest)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # (the run's readers report a damaged manifest)
    rules = manifest_rules(data, str(manifest)) if isinstance(data, dict) else []
    norm = Normaliser(rules) if rules else None
    with _cache_lock:
        _cache[key] = (stamp, norm)
    return norm
