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
    """Record with the command driver when ``opts.command`` is set, else in process; returns
    the driver's counts. Raises what :func:`.record.record` or
    :func:`.command.record_command` raise.
    """
    check_episode_timeout(opts.episode_timeout)
    if opts.command is not None:
        return record_command(opts, progress)
    return record(opts, progress)
