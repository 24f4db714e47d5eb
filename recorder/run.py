"""``evaltape record``'s entry point: the driver for the run's kind of agent.

An agent function (``--agent NAME`` or ``module:function``) runs in process
(:func:`.record.record`); a program (``--command CMD``) runs behind the recording proxy
(:func:`.command.record_command`). Both write the same run folder (:mod:`.runfolder`).
"""
from __future__ import annotations

from typing import Callable

from .command import record_command
from .record import record
from .runfolder.options import RecordOptions, check_episode_timeout


def record_run(opts: RecordOptions,
               progress: Callable[[str, dict], None] | None = None) -> dict:
    """Record every unfinished (case, trial) of ``opts.dataset`` into ``opts.out`` with the
    driver ``opts`` asks for: the command driver when ``opts.command`` is set, else the
    in-process one.

    Returns:
        ``{"recorded", "skipped", "errors", "tokens", "failed", ...}``: the driver's counts.

    Raises:
        UsageError, BadInputError, SecretLeakError: as the driver raises them
        (:func:`.record.record`, :func:`.command.record_command`).
    """
    check_episode_timeout(opts.episode_timeout)
    if opts.command is not None:
        return record_command(opts, progress)
    return record(opts, progress)
