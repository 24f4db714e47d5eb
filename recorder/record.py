"""The in-process driver: record a dataset with an agent function, one cassette and one trace
per (case, trial), episodes run in forked workers; with ``--refresh``, replay finished
episodes first and re-record only those that do not reproduce (:func:`refresh_episode`).
The run folder is :mod:`.runfolder`'s, a program behind the proxy :mod:`.command`'s.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import shutil
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import anthropic
import orjson

from evaltape.grader.io.datasets import load_dataset
from evaltape.grader.errors import BadInputError, UsageError
from evaltape.grader.model import TRACE_SCHEMA, Case

from .agents import resolve_agent
from .conversation import accepts_user, make_user
from .cassette import (cassette_name, make_vcr, prune_retried, recorded_lines_kept,
                       refresh_divergence, refreshed_interactions, work_cassette)
from .deadline import (DEFAULT_EPISODE_TIMEOUT_S, EpisodeTimeout, episode_deadline,
                       mark_timed_out, on_request)
from .runfolder.folder import open_run_folder
from .runfolder.manifest import finish_manifest
from .runfolder.options import (DEFAULT_MODEL, SCRIPTED_MODEL, RecordOptions, check_base_url,
                                check_episode_timeout, load_scripts, load_standin_users,
                                refuse_secrets_in_inputs,
                                worker_count)
from .runfolder.outcomes import EpisodeOutcome, episode_finisher, refresh_outcome_handler
from .runfolder.plan import plan_recording
from .stale import first_agent_request, setup_changed_message, setup_difference, \
    trace_difference
from .script_server import CASE_HEADER, SPEAKER_HEADER, ScriptServer, case_header, parse_turn
from .wire.codings import UnscannableBody
from .wire.credentials import url_credentials


def run_episode(agent_fn: Callable[..., dict], case: Case, trial: int, client: Any,
                model: str, stream: bool, user: Any = None) -> dict:
    """Run one episode and complete its trace with the recorder's fields (``schema``, ``case_id``,
    ``trial``, ``input``, ``model``, ``latency_s``), which win over the agent's. ``user`` is
    passed as ``user=`` for a conversation case. An agent that raises, or a trace nested too
    deep (:func:`too_deep_trace`), ends with ``stop_reason: "error"``; an infrastructure API
    failure (:func:`.loop.is_infra`) also sets ``infra_error``.

    Raises:
        BadInputError: the agent returned a non-dict or a trace the grader's reader rejects.
    """
    from evaltape.grader.errors import BadInputError
    from evaltape.grader.io.traces import parse_trace
    t0 = time.perf_counter()
    kwargs: dict[str, Any] = {"model": model}
    if stream:
        kwargs["stream"] = True
    if case.user is not None:
        kwargs["user"] = user
    try:
        fields = agent_fn(case, client, **kwargs)
    except Exception as e:  # noqa: BLE001 - a crashing agent must not stop the whole run
        what = str(e)
        if len(what) > 300:  # (an SDK error may quote the whole answer it could not parse)
            what = what[:300] + "…"
        if not what:  # (an assert without a message) where it was raised
            frame = traceback.extract_tb(e.__traceback__)[-1]
            what = f"raised at {frame.filename}:{frame.lineno}"
        fields = {"tool_calls": [], "final_response": None, "stop_reason": "error", "steps": 0,
                  "error": f"agent raised {type(e).__name__}: {what}"}
        from .loop import StreamBroke, infra_kind, is_infra
        cause = e.error if isinstance(e, StreamBroke) else e
        if isinstance(cause, (anthropic.APIError, EpisodeTimeout)) and is_infra(cause):
            fields["infra_error"] = infra_kind(cause)
        if isinstance(e, StreamBroke):
            fields["partial_response"] = e.partial_text
        if isinstance(e, UnscannableBody):  # an answer the recorder refused to store
            fields["infra_error"] = e.infra_kind
    if not isinstance(fields, dict):
        raise BadInputError(f"agent returned {type(fields).__name__}, expected a dict of "
                            "trace fields (README: Your own agent)", path=f"case {case.id}")
    latency = round(time.perf_counter() - t0, 3)
    trace = {"error": None, "usage": {}, "messages": []}
    where = f"trace the agent returned for case {case.id!r}"
    try:
        fields = plain_json(fields, where)
        deep = _too_deep(fields)
    except RecursionError:  # (deeper than plain_json itself can walk)
        deep = "$"
    if deep is not None:
        fields = too_deep_trace(fields, deep)
    trace.update(fields)
    trace.update({"schema": TRACE_SCHEMA, "case_id": case.id, "trial": trial,
                  "input": case.input, "model": model, "latency_s": latency})
    try:
        parse_trace(trace, path=f"trace the agent returned for case {case.id!r}")
    except BadInputError as e:
        raise BadInputError(f"{e.message}; the agent must return the trace fields of "
                            "docs/formats.md (trace)", path=e.path, field=e.field) from None
    return trace


def _too_deep(fields: dict) -> str | None:
    """The JSON path of a trace's first value nested deeper than
    :data:`~evaltape.grader.io.jsonfiles.MAX_DEPTH` (``tool_calls[0].arguments.q[0]…``),
    else ``None``. One ``orjson.dumps`` (which refuses that depth); only a refused trace
    is walked."""
    from evaltape.grader.io.jsonfiles import value_depth_error
    try:
        orjson.dumps(fields)
    except TypeError:
        err = value_depth_error(fields, None)
        return err.field if err is not None else None
    return None


def too_deep_trace(fields: dict, path: str) -> dict:
    """The trace fields of an episode whose trace nests deeper than evaltape stores (at JSON path
    ``path``): ``stop_reason: "error"``, no calls or messages, an ``error`` saying so; plain
    steps and usage kept.
    """
    from evaltape.grader.io.jsonfiles import MAX_DEPTH
    steps, usage = fields.get("steps"), fields.get("usage")
    ok_usage = isinstance(usage, dict) and all(
        isinstance(k, str) and type(v) is int for k, v in usage.items())
    return {"tool_calls": [], "final_response": None, "stop_reason": "error",
            "steps": steps if type(steps) is int and steps >= 0 else 0,
            "messages": [], "usage": usage if ok_usage else {},
            "error": f"trace_too_deep: the episode's trace nests deeper than {MAX_DEPTH} "
                     f"levels of arrays and objects at '{path}' (a model answer or tool "
                     "input nested that deep), more than evaltape stores"}


def plain_json(value: Any, where: str, path: str = "$") -> Any:
    """``value`` as plain JSON: SDK (pydantic) objects become their
    ``model_dump(mode="json", exclude_none=True)`` dicts; tuples become lists.

    Raises:
        BadInputError: a value JSON cannot hold (names ``where`` and the JSON path).
    """
    from evaltape.grader.errors import BadInputError
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise BadInputError(f"{value} is not a JSON number", path=where, field=path)
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise BadInputError(f"object key {k!r} is not a string", path=where,
                                    field=path)
            out[k] = plain_json(v, where, f"{path}.{k}" if path != "$" else k)
        return out
    if isinstance(value, (list, tuple)):
        return [plain_json(v, where, f"{path}[{i}]") for i, v in enumerate(value)]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return plain_json(dump(mode="json", exclude_none=True), where, path)
    raise BadInputError(f"a {type(value).__name__} is not JSON data (return dicts, lists, "
                        "strings, numbers; SDK objects are converted)", path=where, field=path)


#: ``{(process id, base URL, key, retries): client}``: see :func:`shared_client`.
_CLIENTS: dict[tuple, anthropic.Anthropic] = {}


def shared_client(base_url: str | None, api_key: str | None,
                  max_retries: int = 4) -> anthropic.Anthropic:
    """The one Messages-API client of this process per ``(base_url, api_key, max_retries)``,
    built on first use (:func:`sdk_client`) and shared by later episodes and threads.
    """
    key = (base_url, api_key or "no-key", max_retries)
    client = _CLIENTS.get(key)
    if client is None:
        client = _CLIENTS[key] = sdk_client(base_url, api_key, max_retries)
    return client


def sdk_client(base_url: str | None, api_key: str | None,
               max_retries: int) -> anthropic.Anthropic:
    """A new Messages-API client for ``base_url`` (``None``: the SDK default) whose HTTP client
    carries the deadline hook (:func:`.deadline.on_request`). URL credentials are sent as basic
    auth from the client's ``auth``, so recorded request URIs hold no userinfo.
    """
    creds = None
    if base_url:
        base_url, creds = url_credentials(base_url)
    http = anthropic.DefaultHttpxClient(auth=creds, event_hooks={"request": [on_request]})
    return anthropic.Anthropic(api_key=api_key or "no-key", base_url=base_url,
                               max_retries=max_retries, http_client=http)


def warm_up(agent: str, base_url: str | None, api_key: str | None) -> None:
    """Pay an episode's one-time costs (lazy imports, vcrpy stubs, SDK models, the shared client
    and SSL context) in the recorder before it forks workers, which inherit them. No request.
    """
    import importlib

    import vcr.stubs.httpx_stubs  # noqa: F401 - imported when a cassette first patches httpx

    from evaltape.grader.io import traces  # noqa: F401 - run_episode checks each trace
    resolve_agent(agent)
    client = shared_client(base_url, api_key)
    client.messages  # noqa: B018 - the resource and its types load on first access
    for name in ("httpcore", "httpcore2"):  # the transport layer the SDK's httpx uses
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    from anthropic.types import Message
    Message.model_validate({"id": "msg_warm", "type": "message", "role": "assistant",
                            "model": "warm-up", "content": [{"type": "text", "text": ""}],
                            "stop_reason": "end_turn", "stop_sequence": None,
                            "usage": {"input_tokens": 0, "output_tokens": 0}})


def make_client(base_url: str | None, api_key: str | None, case_id: str, trial: int,
                max_retries: int = 4, speaker: str | None = None) -> anthropic.Anthropic:
    """The client of one episode: the process's :func:`shared_client` with the episode's
    headers (``with_options`` copies share its HTTP client and connection pool); the case
    id and trial travel in headers for the script server. ``speaker="user"`` marks the
    simulated user's requests (header :data:`.script_server.SPEAKER_HEADER`)."""
    headers = {CASE_HEADER: case_header(case_id), "x-evaltape-trial": str(trial)}
    if speaker is not None:
        headers[SPEAKER_HEADER] = speaker
    return shared_client(base_url, api_key, max_retries).with_options(default_headers=headers)


NO_MODEL_MESSAGE = (
    "no model to talk to. Record against Claude: set ANTHROPIC_API_KEY. Or, with no key: "
    "--base-url URL (or ANTHROPIC_BASE_URL) for a Messages-API server on 127.0.0.1 such as "
    "llama-server (make local-model); --standin-script FILE for a stand-in model whose "
    "turns you write per case (any agent); or --agent scripted for a dataset whose cases "
    "carry a 'script'")


def refuse_foreign_tools_for_scripted(cases: Any) -> None:
    """Refuse a dataset naming tools ``--agent scripted`` lacks: its sandbox has only
    ``get_weather``, ``add``, ``divide`` and ``lookup_doc``. A script calling another tool is
    recorded, with a warning on stderr.

    Raises:
        UsageError: a case expects or offers another tool (names case, tool, and
            ``--agent module:run --standin-script FILE``).
    """
    from .agents.scripted import TOOLS as sandbox_tools

    own = {t["name"] for t in sandbox_tools}
    what = (f"--agent scripted is the scripted example suite's sandbox agent, with its own "
            f"four tools ({', '.join(sorted(own))})")
    how = ("To script your own agent with no model, give it a stand-in: --agent "
           "yourmodule:run --standin-script FILE (docs/your-agent.md)")
    warned = False
    for case in cases:
        named = list(case.expected_tools or ())
        named += [str(t.get("name")) for t in (case.tools or ()) if isinstance(t, dict)]
        foreign = [n for n in named if n not in own]
        if foreign:
            raise UsageError(f"{what}; case {case.id!r} expects the tool {foreign[0]!r}, "
                             f"which it does not have. {how}")
        called = [str(c.get("tool")) for turn in case.script or ()
                  for c in (parse_turn(turn) or [])]
        foreign = [n for n in called if n not in own]
        if foreign and not warned:
            warned = True
            print(f"warning: {what}; the script of case {case.id!r} calls {foreign[0]!r}, "
                  f"which becomes an 'Unknown tool' error result. {how}", file=sys.stderr)


def warn_unused_user_model(opts: Any, cases: Any) -> str | None:
    """Warn on stderr when ``--user-model`` or ``--user-base-url`` is given and no case has
    a simulated user (every conversation's user is scripted, or no case has a user): the
    options would be silently ignored. Returns the warning text, or ``None``."""
    given = [name for name, value in (("--user-model", opts.user_model),
                                      ("--user-base-url", opts.user_base_url)) if value]
    if not given or any(c.user is not None and not c.user.scripted for c in cases):
        return None
    scripted = sum(1 for c in cases if c.user is not None)
    why = (f"all {scripted} conversation(s) of the dataset have scripted users (turns)"
           if scripted else "no case of the dataset is a conversation (no user)")
    text = (f"{' and '.join(given)} ignored: {why}, so no user model is called; give a "
            "dataset whose users have instructions (a simulated user) to use one")
    print(f"warning: {text}", file=sys.stderr)
    return text


def record(opts: RecordOptions, progress: Callable[[str, dict], None] | None = None) -> dict:
    """Record every unfinished (case, trial) episode of ``opts.dataset`` into ``opts.out``, each
    under ``opts.episode_timeout`` (:mod:`.deadline`). A changed fingerprint is refused before
    any request unless ``opts.allow_changed``; ``opts.refresh`` replays finished episodes and
    re-records those that do not reproduce (:func:`refresh_episode`).

    Returns:
        ``{"recorded", "skipped", "errors", "infra_kept", "tokens", "failed", "live_requests"}``
        (with ``opts.refresh`` also ``"kept"``, ``"refreshed"``, ``"new"``,
        ``"replayed_requests"``). API-error episodes are not saved unless ``keep_errors``.

    Raises:
        UsageError: no key or base URL, bad trials/concurrency, a run file not writable, or a
            changed fingerprint.
        BadInputError: the dataset is invalid.
        SecretLeakError: a cassette or trace would hold a key.
    """
    check_episode_timeout(opts.episode_timeout)
    if opts.command is not None:
        raise UsageError("a --command run is recorded by evaltape.recorder.command."
                         "record_command (evaltape.recorder.run.record_run picks the driver)")
    if opts.trials < 1:
        raise UsageError("--trials must be at least 1")
    cases = load_dataset(opts.dataset)
    if not cases:
        raise UsageError(f"{opts.dataset}: the dataset has no cases")
    refuse_secrets_in_inputs(cases, opts.dataset)
    agent_fn = resolve_agent(opts.agent)
    talking = [c.id for c in cases if c.user is not None]
    if talking and not accepts_user(agent_fn):
        raise UsageError(f"agent {opts.agent!r} takes no user (no 'user' keyword), but "
                         f"case(s) {', '.join(talking[:5])} are conversations with a user: "
                         "use an agent built on evaltape.recorder.conversation.run_case "
                         "(built-in: clinic, helpdesk, scripted)")
    warn_unused_user_model(opts, cases)
    scripts = load_scripts(opts, cases)
    if opts.agent == "scripted" and not opts.standin_scripts:
        refuse_foreign_tools_for_scripted(cases)
    api_key = os.environ.get("ANTHROPIC_API_KEY")
    base_url = opts.base_url or os.environ.get("ANTHROPIC_BASE_URL")
    if scripts is None and not api_key and not base_url:
        raise UsageError(NO_MODEL_MESSAGE)
    check_base_url(base_url)
    check_base_url(opts.user_base_url, "--user-base-url")
    model = opts.model or (SCRIPTED_MODEL if scripts is not None else DEFAULT_MODEL)
    out = Path(opts.out)
    lock, previous = open_run_folder(out, cases, opts, model)
    try:
        plan = plan_recording(out, opts, cases, agent_fn, model, base_url, previous, progress,
                              "a source file of the agent")
        manifest, ledger, traces, todo = plan.manifest, plan.ledger, plan.traces, plan.todo
        counts, recorded = plan.counts, plan.recorded
        with ExitStack() as stack:
            if scripts is not None:
                users_said = (load_standin_users(opts.standin_scripts)
                              if opts.standin_scripts else None)
                server = stack.enter_context(ScriptServer(scripts, user_scripts=users_said))
                base_url, api_key = server.base_url, "scripted-no-key"
            users = UserOptions(opts.user_model or model, opts.user_base_url or base_url,
                                api_key if opts.user_base_url is None else
                                (os.environ.get("ANTHROPIC_API_KEY") or "no-key"))
            jobs: list[EpisodeJob | RefreshJob] = []
            for case, trial in todo:
                job = EpisodeJob(opts.agent, case, trial,
                                 str(out / "http" / cassette_name(case.id, trial)), base_url,
                                 api_key, model, opts.stream, opts.episode_timeout,
                                 users if case.user is not None else None)
                line = recorded.get((case.id, trial))
                if line is not None:
                    check_refresh_cassette(Path(job.cassette))
                jobs.append(job if line is None else RefreshJob(job, orjson.loads(line)))

            finished = episode_finisher(out, traces, counts, opts.keep_errors, len(todo), progress)
            handle = refresh_outcome_handler(out, counts, finished, ledger, recorded,
                                             opts.keep_errors, len(todo), progress)
            wire = (previous.get("fingerprint") or {}).get("wire") if previous else None
            if isinstance(wire, dict) and len(plan.done) >= 2 and not opts.refresh and \
                    not opts.allow_changed:  # (one recorded episode shows no constant setup)
                handle, changed = first_request_checked(handle, wire, out,
                                                        {c.id for c in cases if c.tools})
            else:
                changed = None

            try:
                workers = worker_count(opts.concurrency, len(jobs))
                if workers == 1:
                    for job in jobs:
                        handle(run_job(job))
                        if changed:
                            break
                else:
                    warm_up(opts.agent, base_url, api_key)
                    # objects alive now are shared with the forked workers: keep the collector from
                    # touching (and so copying) their pages in every worker
                    gc.freeze()
                    ctx = multiprocessing.get_context("fork")
                    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                             initializer=_die_with_parent) as pool:
                        futures = [pool.submit(run_job, job) for job in jobs]
                        for fut in as_completed(futures):
                            if fut.cancelled():
                                continue
                            handle(fut.result())
                            if changed:  # the episodes not started are not run
                                for f in futures:
                                    f.cancel()
                if changed:
                    finish_manifest(out, manifest, traces, [(c.id, t) for c, t in todo])
                    raise UsageError(setup_changed_message(out, changed[0], counts["recorded"],
                                                           in_process=True))
                if ledger is not None:
                    ledger.finish(counts)
                finish_manifest(out, manifest, traces,
                                None if opts.refresh else [(c.id, t) for c, t in todo])
            except OSError as e:
                # disk full, quota, a read-only or vanished folder: the finished episodes are
                # saved whole (atomic cassettes, one complete trace line each); say so
                raise UsageError(f"{e.filename or out}: cannot save the episode ({e.strerror}); "
                                 f"{counts['recorded']} episode(s) saved in this run, the rest "
                                 "not: fix the cause and rerun the same command to resume"
                                 ) from None
        return counts
    finally:
        lock.close()  # (also when a check refuses the run)


def first_request_checked(handle: Callable[[EpisodeOutcome], None], wire: dict, out: Path,
                          case_tools: set[str] = frozenset()
                          ) -> tuple[Callable[[EpisodeOutcome], None], list[str]]:
    """``handle`` wrapped to compare the first new episode's first request with the run's recorded
    setup (:func:`.stale.setup_difference`; tools not compared for cases in ``case_tools``).
    Returns the handler and a list receiving the difference; after one, no new episode is filed.
    """
    changed: list[str] = []
    state = {"checked": False}

    def checked(o: EpisodeOutcome) -> None:
        if o.kind == "new" and (changed or not state["checked"]):
            path = out / "http" / cassette_name(o.case_id, o.trial)
            if not changed:
                body = first_agent_request(path)
                if body is None:  # no request: nothing to compare yet
                    handle(o)
                    return
                state["checked"] = True
                diff = setup_difference(body, wire, o.case_id in case_tools)
                if diff is None:
                    handle(o)
                    return
                changed.append(diff)
            path.unlink(missing_ok=True)
            return
        handle(o)
    return checked, changed


@dataclass(frozen=True)
class UserOptions:
    """Where a simulated user's model is (``--user-model``, ``--user-base-url``; by
    default the run's model and server) and the key sent to it."""

    model: str
    base_url: str | None
    api_key: str | None


@dataclass(frozen=True)
class RefreshJob:
    """A finished episode to refresh (picklable): its recording job and its stored trace."""

    episode: EpisodeJob
    recorded: dict[str, Any]


@dataclass(frozen=True)
class EpisodeJob:
    """Everything one worker needs to record one episode (picklable)."""

    agent: str
    case: Case
    trial: int
    cassette: str
    base_url: str | None
    api_key: str | None
    model: str
    stream: bool
    #: seconds the episode may take (``None``: no deadline)
    timeout_s: float | None = DEFAULT_EPISODE_TIMEOUT_S
    #: the simulated user's model and server, for a case with a ``user``
    user: UserOptions | None = None


def check_refresh_cassette(path: Path) -> None:
    """Refuse to refresh over a finished episode's cassette that does not read (not a file, not
    UTF-8, not cassette lines). A missing cassette is recorded again.

    Raises:
        BadInputError: names the cassette and what is wrong with it.
    """
    from .wire.jsonl_serializer import deserialize
    try:
        if not path.exists():
            return
        if not path.is_file():
            raise BadInputError("cassette is not a file; move it away to record the episode "
                                "again", path=str(path))
        data = path.read_bytes()
    except OSError as e:
        raise BadInputError(f"cannot read the cassette ({e.strerror})", path=str(path)) from None
    try:
        deserialize(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise BadInputError(f"cassette is not UTF-8 text (byte {e.start})",
                            path=str(path)) from None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise BadInputError(f"cassette cannot be read: {e}; move it away to record the "
                            "episode again", path=str(path)) from None


def run_job(job: "EpisodeJob | RefreshJob") -> EpisodeOutcome:
    """Run one job of :func:`record`: a new episode (:func:`record_counted`) or a refresh
    (:func:`refresh_episode`)."""
    if isinstance(job, RefreshJob):
        return refresh_episode(job)
    trace, live = record_counted(job)
    return EpisodeOutcome(job.case.id, job.trial, "new", trace, live)


def _episode_parts(job: EpisodeJob) -> tuple[Callable[..., dict], Any, Any]:
    """``(agent function, agent's client, user or None)`` of one episode to record: the
    client wired to the episode's case and trial, the user (a case with a ``user``) on
    its own client marked as the user's (:func:`.conversation.make_user`)."""
    agent_fn = resolve_agent(job.agent)
    client = make_client(job.base_url, job.api_key, job.case.id, job.trial)
    u = job.user
    user = make_user(job.case, lambda: make_client(u.base_url, u.api_key, job.case.id,
                                                   job.trial, speaker="user"),
                     u.model if u else None, job.stream)
    return agent_fn, client, user


def run_within_deadline(agent_fn: Any, job: EpisodeJob, client: Any, user: Any) -> dict:
    """The trace of one episode run under its deadline (:func:`episode_deadline`): past
    ``job.timeout_s`` its requests are cut and the trace is marked as an infrastructure
    timeout (:func:`mark_timed_out`)."""
    with episode_deadline(job.timeout_s) as deadline:
        trace = run_episode(agent_fn, job.case, job.trial, client, job.model, job.stream,
                            user)
        late = deadline.expired
    if late:
        mark_timed_out(trace, deadline.timeout_s)
    return trace


def record_counted(job: EpisodeJob) -> tuple[dict, int]:
    """Record one episode into its own cassette (atomic write): its trace and the number of
    requests it sent (retries included). Runs in the recorder or a worker; a leftover cassette
    is replaced; past ``job.timeout_s`` it ends as an infrastructure timeout.
    """
    path = Path(job.cassette)
    if path.exists():
        path.unlink()
    agent_fn, client, user = _episode_parts(job)
    with make_vcr("all").use_cassette(str(path)) as cassette:
        trace = run_within_deadline(agent_fn, job, client, user)
        live = len(cassette.data)
        prune_retried(cassette)
    return trace, live


def refresh_episode(job: RefreshJob) -> EpisodeOutcome:
    """Replay a finished episode against a copy of its cassette and record live from its first
    unmatched request (``new_episodes`` on a ``prefix_only``
    :class:`~.wire.indexed.IndexedCassette`). Kept when it sent no live request, used every
    recorded interaction and its trace equals the recorded one (:func:`.stale.trace_difference`);
    otherwise refreshed (:func:`.cassette.refreshed_interactions`). The deadline applies.
    """
    ep = job.episode
    path = Path(ep.cassette)
    work = work_cassette(path)
    if path.is_file():
        shutil.copyfile(path, work)
    else:
        work.unlink(missing_ok=True)
    agent_fn, client, user = _episode_parts(ep)
    with make_vcr("new_episodes").use_cassette(str(work)) as cassette:
        cassette.prefix_only = True
        loaded = len(cassette.data)
        positions = {id(pair): i for i, pair in enumerate(cassette.data)}
        trace = run_within_deadline(agent_fn, ep, client, user)
        live = len(cassette.data) - loaded
        replayed = len(cassette.played_order)
        request, difference = refresh_divergence(cassette, loaded)
        if request is None:
            difference = trace_difference(job.recorded, trace)
        if difference is not None:
            cassette.data[:] = refreshed_interactions(cassette, loaded)
            prune_retried(cassette)
            cassette.dirty = True
    if difference is None:
        work.unlink(missing_ok=True)
        return EpisodeOutcome(ep.case.id, ep.trial, "kept", trace, live, replayed)
    if path.is_file() and work.is_file():
        recorded_lines_kept(work, path, cassette.data, positions)
    return EpisodeOutcome(ep.case.id, ep.trial, "refreshed", trace, live, replayed, request,
                          difference, str(work))


def _die_with_parent() -> None:
    """Worker initializer: the kernel kills the worker when the recorder dies (Linux)."""
    try:
        import ctypes
        import signal
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
