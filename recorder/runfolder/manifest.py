"""A run's ``manifest.json``: what was recorded, with what, and the run's fingerprint (what
the recordings depend on); built at the start of a recording, measured again at its end,
and compared with the earlier recording's before anything is added.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

import orjson

from evaltape.grader.errors import UsageError
from evaltape.grader.io.datasets import case_input_sha256, inputs_sha256
from evaltape.grader.model import Case

from ..cassette import cassette_path
from ..wire.credentials import strip_credentials
from ..wire.persister import atomic_write_text
from ..wire.scrub import scrub_value
from .options import RecordOptions
from .traces import finished_episodes


def versions() -> dict[str, str]:
    """``{package: version}`` of evaltape and the packages a recording depends on (those
    installed), and ``python``: the manifest's ``versions``."""
    out = {}
    for pkg in ("evaltape", "anthropic", "vcrpy", "httpx", "httpx2", "orjson"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    out["python"] = sys.version.split()[0]
    return out


def _sha(obj: Any) -> str:
    return hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()


def write_manifest(path: Path, manifest: dict) -> None:
    """Write a run's ``manifest.json`` atomically (a failed write leaves the old one whole).

    Raises:
        UsageError: the OS refused the write (file and reason named).
        SecretLeakError: the manifest would hold a key.
    """
    try:
        atomic_write_text(path, orjson.dumps(manifest, option=orjson.OPT_SORT_KEYS |
                                             orjson.OPT_INDENT_2).decode() + "\n")
    except OSError as e:
        raise UsageError(f"{path}: cannot write the run's manifest ({e.strerror}); nothing "
                         "recorded in this run, the episodes already finished are kept: fix "
                         "the cause and rerun the same command") from None


def build_manifest(opts: RecordOptions, cases: Sequence[Case], agent_fn: Any, model: str,
                   base_url: str | None, previous: dict) -> dict:
    """The run's ``manifest.json``: agent, model, dataset and case input hashes, trials, versions
    and ``fingerprint`` (:func:`run_fingerprint`); keeps an earlier run's ``created_at``,
    ``wire``, ``refreshes``, ``appended_changed`` and ``--manifest-extra`` facts.

    Raises:
        OSError: a source file of the agent (or a file its command names) cannot be read.
    """
    spec = getattr(agent_fn, "spec", None)
    host = None
    if base_url:  # (never its credentials: base_url_host is host[:port])
        host = strip_credentials(base_url).split("://", 1)[-1].split("/", 1)[0]
    scripted = opts.agent == "scripted" or bool(opts.standin_scripts)
    manifest = {
        "schema": "evaltape.manifest/1",
        "agent": opts.agent,
        "model": model,
        "model_note": ("scripted stand-in model: turns written by hand, not a real model"
                       if scripted else None),
        "base_url_host": "127.0.0.1 (evaltape script server)" if scripted else
        (host or "api.anthropic.com"),
        "dataset": {"path": Path(opts.dataset).as_posix(),
                    "path_from_run": Path(os.path.relpath(Path(opts.dataset).resolve(),
                                                          Path(opts.out).resolve())).as_posix(),
                    "inputs_sha256": inputs_sha256(cases),
                    "cases": {c.id: case_input_sha256(c) for c in cases}},
        "standin_scripts": opts.standin_scripts,
        "system_prompt_sha256": _sha(spec.system) if spec else None,
        "tools_sha256": _sha(list(spec.tools)) if spec else None,
        **({} if spec else _setup_from_requests(previous)),
        "trials": opts.trials,
        "stream": opts.stream,
        **({"shard": {"index": opts.shard[0], "count": opts.shard[1]}} if opts.shard else {}),
        "versions": versions(),
        "created_at": previous.get("created_at") or
        _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **command_lines(previous, [strip_credentials(a) for a in opts.command_line]),
    }
    talking = [c for c in cases if c.user is not None]
    if talking:  # (only runs with conversations: other manifests stay as they were)
        simulated = sum(1 for c in talking if not c.user.scripted)
        users: dict[str, Any] = {"scripted": len(talking) - simulated, "simulated": simulated}
        if simulated:
            users["model"] = opts.user_model or model
            ubase = opts.user_base_url or base_url
            users["base_url_host"] = manifest["base_url_host"] if not opts.user_base_url \
                else strip_credentials(ubase).split("://", 1)[-1].split("/", 1)[0]
        if len(talking) > simulated:
            users["note"] = "scripted users: their turns are written in the dataset, no model"
        manifest["users"] = users
    if opts.command is not None:
        manifest["command"] = opts.command
        if previous.get("model_from_requests") and previous.get("model") == model:
            manifest["model_from_requests"] = True
    manifest["fingerprint"] = run_fingerprint(opts, agent_fn, model, previous)
    for key in ("refreshes", "appended_changed"):
        if isinstance(previous.get(key), list):
            manifest[key] = previous[key]
    # --normalise; a resumed run keeps its rules unless others are given
    rules = list(opts.normalise) or previous.get("normalise")
    if rules:
        manifest["normalise"] = rules
    # --manifest-extra; a resumed run keeps the facts given at its start unless given again
    extra = {**(previous.get("extra") or {}), **opts.manifest_extra}
    if extra:
        manifest["extra"] = extra
    return manifest


def command_lines(previous: dict, current: list[str]) -> dict[str, Any]:
    """The manifest's ``command_line`` (the command that started the run, kept on every
    resume) and ``later_command_lines`` (each later ``record`` into the folder, in order,
    appended: a resume, a refresh, one that recorded nothing). ``current`` is this
    command's (its credentials already stripped)."""
    first = previous.get("command_line")
    if not isinstance(first, list):
        return {"command_line": current}
    later = previous.get("later_command_lines")
    later = list(later) if isinstance(later, list) else []
    return {"command_line": first, "later_command_lines": later + [current]}


def run_fingerprint(opts: RecordOptions, agent_fn: Any, model: str,
                    previous: dict) -> dict[str, Any]:
    """What the recordings depend on (:mod:`.stale`): ``agent`` (``{"name", "module", "sources"}``
    or ``{"command", "files"}``), ``model`` (``{"model", "stream", "standin_scripts_sha256"}``)
    and ``wire`` (the earlier recording's, ``None`` for a new run).

    Raises:
        OSError: a source file or a named file cannot be read.
    """
    from ..stale import agent_sources, command_files, file_sha256
    if opts.command is not None:
        agent: dict[str, Any] = {"command": opts.command, "files": command_files(opts.command)}
    else:
        module = getattr(agent_fn, "__module__", None) or opts.agent.partition(":")[0]
        agent = {"name": opts.agent, "module": module, "sources": agent_sources(module)}
    old = previous.get("fingerprint") if isinstance(previous.get("fingerprint"), dict) else {}
    return {"agent": agent,
            "model": {"model": model, "stream": opts.stream,
                      "standin_scripts_sha256": file_sha256(opts.standin_scripts)
                      if opts.standin_scripts else None},
            "wire": old.get("wire")}


def finish_manifest(out: Path, manifest: dict, traces: Path,
                    recorded: Sequence[tuple[str, int]] | None = None) -> None:
    """Write the manifest again at the end of a recording with its ``wire`` measured
    (:func:`.stale.wire_fingerprint`): from the ``recorded`` episodes' cassettes merged with
    the earlier values, or from every episode's cassette when there are none.

    Raises:
        UsageError: as :func:`write_manifest`.
    """
    from ..stale import wire_fingerprint
    fp = manifest.setdefault("fingerprint", {})
    previous = fp.get("wire") if isinstance(fp.get("wire"), dict) else None
    if recorded is None or previous is None:
        previous = None
        recorded = sorted(finished_episodes(traces)) if traces.exists() else []
    paths = [cassette_path(out / "http", cid, trial) for cid, trial in recorded]
    fp["wire"] = wire_fingerprint((p for p in paths if p.is_file()), previous)
    setup_from_wire(manifest)
    write_manifest(out / "manifest.json", scrub_value(manifest))


def _setup_from_requests(previous: dict) -> dict[str, Any]:
    """The system prompt and tools hashes (and ``setup_from``) a run without a spec'd
    agent keeps from its earlier recording, when they were read from its requests
    (:func:`setup_from_wire` measures them again at the end)."""
    if previous.get("setup_from") != "requests":
        return {}
    return {"system_prompt_sha256": previous.get("system_prompt_sha256"),
            "tools_sha256": previous.get("tools_sha256"), "setup_from": "requests"}


def setup_from_wire(manifest: dict) -> None:
    """Fill in the setup the recorded requests state where the recorder was not told it: for an
    agent without a spec, ``system_prompt_sha256`` and ``tools_sha256`` from ``wire``
    (:func:`.stale.single_setup`) with ``"setup_from": "requests"``; for a ``--command`` run
    without ``--model``, the single model its requests named (``"model_from_requests"``).
    """
    from ..stale import single_setup
    fp = manifest.get("fingerprint") or {}
    if not isinstance(fp.get("wire"), dict) or not fp["wire"].get("models"):
        return  # no request recorded yet
    setup = single_setup(fp["wire"])
    if manifest.get("setup_from") == "requests" or (
            manifest.get("system_prompt_sha256") is None and
            manifest.get("tools_sha256") is None):
        manifest["system_prompt_sha256"] = setup["system_prompt_sha256"]
        manifest["tools_sha256"] = setup["tools_sha256"]
        manifest["setup_from"] = "requests"
    if manifest.get("agent") == "command" and (
            manifest.get("model_from_requests") or manifest.get("model") == "chosen-by-command"):
        if setup["model"] is not None:
            manifest["model"], manifest["model_from_requests"] = setup["model"], True
        else:
            manifest["model"] = "chosen-by-command"
            manifest.pop("model_from_requests", None)


def check_fingerprint(previous: dict, manifest: dict, opts: Any, out: Path) -> list[str]:
    """Refuse to add episodes to a run whose recordings do not match this agent
    (:func:`.stale.fingerprint_changes`). ``opts.refresh`` allows every change;
    ``opts.allow_changed`` records unfinished episodes anyway, noted in
    ``manifest["appended_changed"]``. Returns the changes.

    Raises:
        UsageError: a changed fingerprint without either flag, or ``--allow-changed`` with a
            changed case input.
    """
    from ..stale import changed_inputs, fingerprint_changes
    changes = fingerprint_changes(previous, scrub_value(manifest))
    if not changes or opts.refresh:
        return changes
    listed = "; ".join(changes[:12]) + (f"; and {len(changes) - 12} more"
                                        if len(changes) > 12 else "")
    inputs = changed_inputs(previous, manifest)
    if opts.allow_changed and not inputs:
        manifest["appended_changed"] = list(manifest.get("appended_changed") or []) + [{
            "at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "changes": changes}]
        return changes
    why = ("--allow-changed cannot add episodes while a case's input changed: its finished "
           "episodes hold the old input, which grading refuses. " if opts.allow_changed
           else "")
    raise UsageError(f"{out}: the recordings no longer match what this command records: "
                     f"{listed}. Nothing was recorded. {why}Rerun with --refresh to replay "
                     "every finished episode and record again only those that no longer "
                     "reproduce (`evaltape replay " + str(out) + " --list-stale` lists them "
                     "without a model)" + ("" if opts.allow_changed or inputs else ", or "
                     "with --allow-changed to record the missing episodes and leave the "
                     "finished ones as they are"))
