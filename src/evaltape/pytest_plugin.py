"""pytest plugin (entry point ``pytest11`` ``evaltape``): rule tests over a recorded run as
plain pytest functions. A test requesting the ``episode`` fixture runs once per episode
(ids ``<case_id>#t<trial>``, dataset order then trial) of ``--evaltape-run DIR`` (ini
``evaltape_run``), with ``--evaltape-dataset`` or the manifest's dataset; without a run it
errors. Nothing of the grader is imported unless a run is configured; no model is called.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

_RUN_HELP = "recorded run (cassettes/RUN directory or traces.jsonl) whose episodes " \
            "parametrize tests that request the 'episode' fixture"
_DATASET_HELP = "dataset of the run (default: the path its manifest.json records)"
_NO_RUN = ("no evaltape run configured: pass --evaltape-run DIR (a recorded run such as "
           "cassettes/RUN) or set 'evaltape_run' in the pytest ini options")


class Episode:
    """One recorded episode as a test sees it: ``trace``, ``case``, ``judge`` (recorded judge
    answers or ``None``) and ``run_context`` (recorded system prompt and tools, or ``None``).
    """

    def __init__(self, trace: Any, case: Any, judge: Any = None,
                 run_context: Any = None) -> None:
        self.trace = trace
        self.case = case
        self.judge = judge
        self.run_context = run_context

    @property
    def id(self) -> str:
        """The test id of the episode: ``<case_id>#t<trial>``."""
        return f"{self.trace.case_id}#t{self.trace.trial}"

    @property
    def case_id(self) -> str:
        """The case id of the episode."""
        return self.trace.case_id

    @property
    def trial(self) -> int:
        """The 0-based trial number of the episode."""
        return self.trace.trial

    @property
    def tools_called(self) -> list[str]:
        """Names of the called tools, in call order (duplicates kept)."""
        return self.trace.tools_called

    @property
    def tool_calls(self) -> tuple[Any, ...]:
        """The calls themselves (:class:`evaltape.grader.model.ToolCall`: name, arguments,
        result)."""
        return self.trace.tool_calls

    @property
    def final_response(self) -> str:
        """The final answer text; ``""`` when the agent gave none, so string assertions fail
        cleanly."""
        return self.trace.final_response or ""

    @property
    def expected_tools(self) -> list[str] | None:
        """Expected tool names (from ``expected_tool_calls`` or ``expected_tools``); ``None`` when
        the case states no tool expectation.
        """
        calls = self.case.expected_calls
        return None if calls is None else [c.name for c in calls]

    def score(self, metric_name: str, **params: Any) -> Any:
        """Score this episode with one metric (built-in name or ``module:Class``), ``params``
        overriding its fields; a raising metric errors the test. Returns a
        :class:`evaltape.grader.model.Score`.
        """
        from evaltape.grader.metrics import resolve
        from evaltape.grader.model import EpisodeContext
        metric = resolve([metric_name])[0]
        if params:
            metric = dataclasses.replace(metric, **params)
        return metric.score(EpisodeContext(self.trace, self.case, self.judge,
                                           self.run_context))

    def __repr__(self) -> str:
        return f"<Episode {self.id}>"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--evaltape-run``/``--evaltape-dataset`` and their ini options."""
    group = parser.getgroup("evaltape", "evaltape: tests over a recorded run")
    group.addoption("--evaltape-run", metavar="DIR", default=None, help=_RUN_HELP)
    group.addoption("--evaltape-dataset", metavar="FILE", default=None, help=_DATASET_HELP)
    parser.addini("evaltape_run", _RUN_HELP + " (relative to the ini file)", default="")
    parser.addini("evaltape_dataset", _DATASET_HELP + " (relative to the ini file)",
                  default="")


def _setting(config: pytest.Config, name: str) -> str | None:
    """The command-line value of ``name`` (relative to the working directory), else the
    ini value (relative to the ini file's folder), else ``None``."""
    value = config.getoption(name)
    if value:
        return str(value)
    ini = config.getini(name)
    if ini:
        base = Path(config.inipath).parent if config.inipath else Path(config.rootpath)
        return str(base / ini)
    return None


def load_episodes(run: str, dataset: str | None = None) -> list[Episode]:
    """Load a recorded run as episodes, in dataset order then trial, checked as ``evaltape
    grade`` checks them (:func:`evaltape.open_run`).

    Raises:
        evaltape.grader.errors.EvaltapeError: an unreadable run or dataset, an unknown case, a
            repeated episode, or no episode.
    """
    from evaltape.grader.errors import UsageError
    from evaltape.grader.io.run import open_run
    from evaltape.grader.judge import JudgeStore

    opened = open_run(run, dataset)
    judge = JudgeStore.load(opened.root)
    position = {c.id: i for i, c in enumerate(opened.cases)}
    episodes = [Episode(trace, case, judge, opened.context)
                for trace, case in opened.episodes()]
    if not episodes:
        raise UsageError(f"the run {run} has no episodes")
    episodes.sort(key=lambda e: (position[e.case_id], e.trial))
    return episodes


_CACHE = pytest.StashKey[list]()


def _episodes(config: pytest.Config) -> list[Episode] | None:
    """The configured run's episodes, loaded once per session; ``None`` without a run."""
    if _CACHE in config.stash:
        return config.stash[_CACHE]
    run = _setting(config, "evaltape_run")
    if run is None:
        return None
    from evaltape.grader.errors import EvaltapeError
    try:
        episodes = load_episodes(run, _setting(config, "evaltape_dataset"))
    except EvaltapeError as e:
        raise pytest.UsageError(f"evaltape: {e}") from None
    config.stash[_CACHE] = episodes
    return episodes


def pytest_configure(config: pytest.Config) -> None:
    """Load a configured run up front, so a bad path is one clean ``ERROR:`` line (exit 4)."""
    _episodes(config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize every test that requests ``episode`` with the run's episodes."""
    if "episode" not in metafunc.fixturenames:
        return
    episodes = _episodes(metafunc.config)
    if episodes is None:
        return  # the fixture errors at setup with the reason
    metafunc.parametrize("episode", episodes, ids=[e.id for e in episodes], indirect=True)


@pytest.fixture
def episode(request: pytest.FixtureRequest) -> Episode:
    """One recorded episode of the run given by ``--evaltape-run`` (see module doc)."""
    if not hasattr(request, "param"):
        pytest.fail(_NO_RUN, pytrace=False)
    return request.param
