"""Grader configuration: ``[tool.evaltape]`` in ``pyproject.toml`` or a standalone
``evaltape.toml``: ``[metrics_args.<metric>]`` (dataclass fields, so part of the metric
specs and ``config_sha256``), ``[judges.<name>]`` (judged metrics of your own),
``[thresholds]`` and ``[verdict]`` (``gate`` or ``informational``;
:mod:`evaltape.grader.stats.verdict`). Reference: docs/metrics.md (evaltape.toml).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Collection, Sequence

from evaltape.grader.errors import BadInputError
from evaltape.grader.io.jsonfiles import MAX_DEPTH, value_depth_error

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

#: Keys the evaltape table may hold: metric arguments, the judges users write
#: (``[judges.NAME]``, :mod:`evaltape.grader.io.judges`), thresholds and the verdict's gate.
KNOWN_KEYS = ("metrics_args", "judges", "thresholds", "verdict")
#: Keys of the ``[verdict]`` table.
VERDICT_KEYS = ("gate", "informational")


def load_config(path: str | Path) -> dict[str, Any]:
    """The evaltape table of a TOML file (``[tool.evaltape]`` of a ``pyproject.toml``, else the
    whole document); ``{}`` when a pyproject has none.

    Raises:
        BadInputError: unreadable, a BOM, invalid TOML (with its line), too deep, or a
            ``tool``/``tool.evaltape`` that is not a table.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
        if text.startswith("\ufeff"):
            raise BadInputError("the file starts with a UTF-8 byte-order mark (BOM, bytes EF BB "
                                "BF), which TOML does not allow: save it as UTF-8 without a "
                                "BOM", path=str(p))
        doc = tomllib.loads(text)
    except OSError as e:
        raise BadInputError(f"cannot read config: {e.strerror}", path=str(p)) from None
    except UnicodeDecodeError:
        raise BadInputError("not a text (UTF-8) TOML file", path=str(p)) from None
    except tomllib.TOMLDecodeError as e:
        raise BadInputError(f"invalid TOML ({e})", path=str(p)) from None
    except RecursionError:  # (the TOML reader recurses once per level of arrays and tables)
        raise BadInputError(f"nested deeper than {MAX_DEPTH} levels of arrays and tables (the "
                            "most evaltape reads)", path=str(p)) from None
    deep = value_depth_error(doc, str(p))
    if deep is not None:
        raise deep
    tool = doc.get("tool", {})
    if not isinstance(tool, dict):
        raise BadInputError(f"expected a table [tool], got a {_kind(tool)}", path=str(p),
                            field="tool")
    table = tool.get("evaltape", {} if p.name == "pyproject.toml" else doc)
    if not isinstance(table, dict):
        raise BadInputError(f"expected a table [tool.evaltape], got a {_kind(table)}",
                            path=str(p), field="tool.evaltape")
    table = dict(table)
    _check(table, str(p))
    return table


def check_table(table: dict[str, Any], path: str) -> None:
    """:func:`load_config`'s checks for a table given in code (``evaltape.grade(config=)``).

    Raises:
        BadInputError: an unknown key or a wrong shape.
    """
    _check(table, path)


def _check(table: dict[str, Any], path: str) -> None:
    """Refuse unknown keys and wrong shapes, so a typo never silently means "defaults"."""
    import difflib

    for key in table:
        if key not in KNOWN_KEYS:
            near = difflib.get_close_matches(key, KNOWN_KEYS, n=1)
            hint = f"; did you mean '{near[0]}'?" if near else ""
            raise BadInputError(f"unknown key{hint}", path=path, field=key)
    args = table.get("metrics_args", {})
    if not isinstance(args, dict):
        raise BadInputError("expected a table {metric: {argument: value}}", path=path,
                            field="metrics_args")
    for name, kw in args.items():
        if ":" in name:
            raise BadInputError("name the metric by its 'name' (the report column), not by "
                                "its module:Class path", path=path,
                                field=f"metrics_args.{name}")
        if not isinstance(kw, dict):
            raise BadInputError("expected a table of arguments", path=path,
                                field=f"metrics_args.{name}")
    from evaltape.grader.io.judges import config_judges
    for name in config_judges(table, path):
        if name in args:
            raise BadInputError(f"judge {name!r} is configured in its [judges.{name}] table, "
                                "not in metrics_args", path=path, field=f"metrics_args.{name}")
    _check_verdict_shapes(table, path)


def _check_verdict_shapes(table: dict[str, Any], path: str) -> None:
    """``[thresholds]``: a table of finite numbers in [0, 1]; ``[verdict]``: ``gate`` and
    ``informational``, each a list of metric names, no name in both."""
    import difflib

    thresholds = table.get("thresholds", {})
    if not isinstance(thresholds, dict):
        raise BadInputError("expected a table {metric = threshold from 0 to 1}", path=path,
                            field="thresholds")
    for name, value in thresholds.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not 0 <= value <= 1:  # NaN and infinities fail the range check
            raise BadInputError(f"a threshold must be a finite number from 0 to 1, got a "
                                f"{_kind(value)} {value!r}", path=path,
                                field=f"thresholds.{name}")
    verdict = table.get("verdict", {})
    if not isinstance(verdict, dict):
        raise BadInputError("expected a table with gate = [...] and/or informational = "
                            "[...]", path=path, field="verdict")
    for key, names in verdict.items():
        if key not in VERDICT_KEYS:
            near = difflib.get_close_matches(key, VERDICT_KEYS, n=1)
            hint = f"; did you mean '{near[0]}'?" if near else ""
            raise BadInputError(f"unknown key{hint} (known: {', '.join(VERDICT_KEYS)})",
                                path=path, field=f"verdict.{key}")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise BadInputError("expected a list of metric names", path=path,
                                field=f"verdict.{key}")
    both = sorted(set(verdict.get("gate", ())) & set(verdict.get("informational", ())))
    if both:
        raise BadInputError(f"{', '.join(both)} named both in gate and in informational",
                            path=path, field="verdict")


def verdict_settings(config: dict[str, Any], path: str | None, selected: Sequence[str],
                     builtin: Collection[str] = ()
                     ) -> tuple[dict[str, float], tuple[str, ...] | None, tuple[str, ...]]:
    """The checked ``[thresholds]`` and ``[verdict]``: ``(thresholds, gate, informational)``;
    ``gate`` is ``None`` when absent (every selected metric gates). ``selected``: the run's
    metrics; ``builtin``: the built-in metric names.

    Raises:
        BadInputError: a threshold for an unknown metric (nearest name suggested), a ``gate``
            naming a metric not graded, or an ``informational`` name that is no metric.
    """
    import difflib

    known = set(builtin) | set(selected)

    def refuse(name: str, field: str, why: str) -> None:
        near = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"; did you mean '{near[0]}'?" if near else ""
        raise BadInputError(f"{why}{hint}", path=path, field=field)

    thresholds = {}
    for name, value in config.get("thresholds", {}).items():
        if name not in known:
            refuse(name, f"thresholds.{name}", f"no such metric {name!r} (neither built in "
                   "nor selected)")
        thresholds[name] = float(value)
    verdict = config.get("verdict", {})
    gate = None
    if "gate" in verdict:
        for name in verdict["gate"]:
            if name not in selected:
                refuse(name, "verdict.gate", f"{name!r} is not graded in this run (add it "
                       "to --metrics, or leave it out of the gate)")
        gate = tuple(dict.fromkeys(verdict["gate"]))
    informational = tuple(dict.fromkeys(verdict.get("informational", ())))
    for name in informational:
        if name not in known:
            refuse(name, "verdict.informational", f"no such metric {name!r}")
    return thresholds, gate, informational


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "table"
    return type(value).__name__


def _check_types(metric: Any, kw: dict[str, Any], path: str | None) -> None:
    """Check that each configured value is an argument of the metric of its default's kind.

    Raises:
        BadInputError: names the file, ``metrics_args.<metric>.<argument>`` and both kinds.
    """
    import dataclasses
    fields = ({f.name: getattr(metric, f.name) for f in dataclasses.fields(metric)}
              if dataclasses.is_dataclass(metric) else {})
    for key, value in kw.items():
        where = f"metrics_args.{metric.name}.{key}"
        if key not in fields:
            takes = ", ".join(sorted(fields)) or "none"
            raise BadInputError(f"metric {metric.name!r} takes no argument {key!r} "
                                f"(its arguments: {takes})", path=path, field=where)
        if fields[key] is None:
            continue
        want, got = _kind(fields[key]), _kind(value)
        if want != got:
            raise BadInputError(f"must be a {want}, got a {got}", path=path, field=where)
        if want == "table":
            for k, v in value.items():
                d = fields[key].get(k)
                if d is not None and _kind(d) != _kind(v):
                    raise BadInputError(f"must be a {_kind(d)}, got a {_kind(v)}", path=path,
                                        field=f"{where}.{k}")


def configure(metrics: Sequence[Any], config: dict[str, Any],
              path: str | None = None, *, builtin: Collection[str] = ()) -> list[Any]:
    """Rebuild each metric with ``config["metrics_args"][metric.name]`` as keywords (unchanged
    without). Any built-in metric (``builtin``, passed in: this layer does not import metrics)
    and the selected user metrics may be configured.

    Raises:
        BadInputError: a table for an unknown name close to a known one (nearest suggested),
            an argument the metric does not take, a value of the wrong kind, or one the metric
            refuses (file and key named).
    """
    import difflib

    args = config.get("metrics_args", {})
    known = set(builtin) | {m.name for m in metrics}
    for name in args:
        if name not in known:
            near = difflib.get_close_matches(name, sorted(known), n=1)
            if near:  # a typo of a metric in play: never silently the defaults
                raise BadInputError(f"no such metric; did you mean '{near[0]}'?", path=path,
                                    field=f"metrics_args.{name}")
            # else a user metric this run does not select (one file shared by runs):
            # unused here, and named by unused_tables()
    out = []
    for metric in metrics:
        kw = args.get(metric.name, {})
        _check_types(metric, kw, path)
        try:
            out.append(type(metric)(**kw) if kw else metric)
        except (TypeError, ValueError) as e:
            raise BadInputError(f"refused by the metric: {e}", path=path,
                                field=f"metrics_args.{metric.name}") from None
    return out


def unused_tables(selected: Sequence[str], config: dict[str, Any],
                  builtin: Collection[str] = ()) -> list[str]:
    """The ``metrics_args`` tables that configure no metric of this run (neither among the
    ``builtin`` names nor the ``selected`` ones), for the caller to mention."""
    known = set(builtin) | set(selected)
    return sorted(n for n in config.get("metrics_args", {}) if n not in known)


#: Where ``evaltape grade`` looks for its configuration when ``--config`` is not given, in
#: this order, in the working directory (a pyproject.toml only when it has
#: ``[tool.evaltape]``).
DISCOVERED = ("evaltape.toml", "pyproject.toml")


def discover_config(folder: str | Path = ".") -> Path | None:
    """The file ``evaltape grade`` uses without ``--config``: ``evaltape.toml`` in ``folder``,
    else a ``pyproject.toml`` with ``[tool.evaltape]``; ``None`` when neither.

    Raises:
        BadInputError: the file found cannot be read or parsed.
    """
    base = Path(folder)
    if (base / "evaltape.toml").is_file():
        return base / "evaltape.toml"
    py = base / "pyproject.toml"
    if py.is_file():
        try:
            doc = tomllib.loads(py.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
            return None  # not ours to judge: a project file evaltape may not even need
        tool = doc.get("tool")
        if isinstance(tool, dict) and "evaltape" in tool:
            return py
    return None
