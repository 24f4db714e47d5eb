"""The ``evaltape`` command line: a thin, lazily-loaded layer over ``grader`` and ``recorder``.

Exit codes: 0 ok; 1 a quality gate failed; 2 usage error; 3 bad input;
70 an internal error (a bug: see :func:`main`).
Subcommands are imported only when invoked, so ``evaltape grade`` never imports the
recorder, ``anthropic`` or ``vcrpy``.
"""
from __future__ import annotations

import importlib
import sys

import click

from evaltape.grader.errors import BadInputError, EvaltapeError, UsageError

#: Subcommand name → "module:attribute". Add a line here to add a command.
COMMANDS = {
    "audit": "evaltape.commands.audit:audit",
    "diff": "evaltape.commands.diff:diff",
    "env": "evaltape.commands.env:env",
    "grade": "evaltape.commands.grade:grade",
    "import": "evaltape.commands.importer:import_cmd",
    "proxy": "evaltape.commands.proxy:proxy",
    "judge": "evaltape.commands.judge:judge",
    "mcp-tape": "evaltape.commands.mcp_tape:mcp_tape",
    "merge": "evaltape.commands.merge:merge",
    "normalise": "evaltape.commands.normalise:normalise",
    "record": "evaltape.commands.record:record",
    "replay": "evaltape.commands.replay:replay",
    "review": "evaltape.commands.review:review",
    "schema": "evaltape.commands.schema:schema",
    "view": "evaltape.commands.view:view",
}


class BadInput(click.ClickException):
    """Unreadable or invalid input file (exit 3)."""

    exit_code = 3


class GateFailed(click.ClickException):
    """A quality gate failed: threshold or regression (exit 1)."""

    exit_code = 1


def redacted(text: str) -> str:
    """``text`` as an error message may show it: the live keys (of the environment, or
    seen by the recording proxy), every piece of 12 or more characters of one and
    key-shaped strings replaced by ``[REDACTED]``
    (:func:`evaltape.recorder.wire.scrub.scrub_text`). With no live key (none in the
    environment, and the recorder's registry of live keys not loaded, so none registered)
    the recorder's scrubber is not loaded: the key-shaped strings are redacted alone."""
    import os
    if "evaltape.recorder.wire.live_keys" not in sys.modules and not (
            os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
        from evaltape.grader.io.secrets import redact
        return redact(text)
    from evaltape.recorder.wire.scrub import scrub_text
    return scrub_text(text)


def to_click(exc: EvaltapeError) -> click.ClickException:
    """Map a domain error onto the click exception carrying its exit code (its message
    :func:`redacted`)."""
    if isinstance(exc, BadInputError):
        return BadInput(redacted(str(exc)))
    if isinstance(exc, UsageError):
        return click.UsageError(redacted(str(exc)))
    return click.ClickException(redacted(str(exc)))


#: Modules of the ``record`` extra (pyproject.toml) → the package that provides them.
#: Recording, replay, the judge and the proxy need them; grading never does.
RECORD_EXTRA = {"anthropic": "anthropic", "vcr": "vcrpy", "yaml": "pyyaml"}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use (click docs, "LazyGroup")."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The subcommand names, sorted (click's Group protocol)."""
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        """Import and return one subcommand on first use (click's Group protocol)."""
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def invoke(self, ctx: click.Context):
        """Run the subcommand; domain errors become click exceptions with their exit codes."""
        try:
            return super().invoke(ctx)
        except EvaltapeError as e:
            raise to_click(e) from None
        except ModuleNotFoundError as e:
            top = (e.name or "").partition(".")[0]
            if top not in RECORD_EXTRA:
                raise
            raise click.UsageError(
                f"'evaltape {ctx.invoked_subcommand}' needs the recording extra, and "
                f"{RECORD_EXTRA[top]} is not installed here (a grading-only install): "
                "pip install 'evaltape[record]'") from None
        except KeyboardInterrupt as e:
            if isinstance(e, Terminated):
                click.echo("terminated (SIGTERM)", err=True, nl=False)
                click.echo("; " if ctx.invoked_subcommand in ("record", "judge") else "\n",
                           err=True, nl=False)
            if ctx.invoked_subcommand in ("record", "judge"):
                click.echo("interrupted: finished episodes are saved; rerun to resume",
                           err=True)
            else:  # grade, import, merge...: their outputs are written whole or not at all
                click.echo(f"interrupted: 'evaltape {ctx.invoked_subcommand}' stopped before "
                           "it finished; its temporary files are deleted", err=True)
            ctx.exit(143 if isinstance(e, Terminated) else 130)


@click.group(cls=LazyGroup)
@click.version_option(package_name="evaltape")
def cli() -> None:
    """evaltape: record tool-calling agents once, grade them offline forever."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI job cancelled, ``timeout``), raised in the main thread so that it
    unwinds as Ctrl-C does: temporary files deleted, finished episodes kept (exit 143)."""


def _terminated(signum: int, frame: object) -> None:
    raise Terminated()


#: Exit code of an internal error (a bug, not bad input and not a failed gate): BSD
#: sysexits' EX_SOFTWARE, so CI never reads a crash as a quality regression (exit 1).
INTERNAL_ERROR = 70


def main() -> None:
    """Console-script entry point.

    An exception that escapes a command is a bug: it exits :data:`INTERNAL_ERROR` (70)
    with one line naming the exception and where it was raised, not exit 1 (which means a
    quality gate failed); ``EVALTAPE_DEBUG=1`` shows the whole traceback. Standard output
    that cannot be written (``> /dev/full``, a full disk) is one line saying so and exit
    :data:`OUTPUT_FAILED` (1); a closed pipe (``| head``) exits 1 without a message.
    """
    import signal
    signal.signal(signal.SIGTERM, _terminated)  # (pool workers forked later inherit it)
    try:
        cli(prog_name="evaltape")
    except OSError as e:
        if not _stdout_failed(e):
            _internal_error(e)
        if not isinstance(e, BrokenPipeError):  # (a closed pipe, `| head`: no message)
            click.echo(f"evaltape: cannot write to standard output: "
                       f"{e.strerror or type(e).__name__}; the output is incomplete",
                       err=True)
        sys.exit(OUTPUT_FAILED)
    except Exception as e:  # noqa: BLE001 - the last line of defence, see the docstring
        _internal_error(e)


#: Exit code when standard output cannot be written (a full disk behind ``> file``,
#: ``> /dev/full``, a closed pipe): the command did not finish its output.
OUTPUT_FAILED = 1


def _stdout_failed(e: OSError) -> bool:
    """Whether ``e`` came from writing standard output, which cannot be told from the
    exception itself (the stream drops what it could not write): a closed pipe while
    stdout is a pipe, or a full device (``ENOSPC``, ``EDQUOT``, ``EFBIG``) while stdout is
    a device (``/dev/full``) or a file on a file system with no free block left. Then
    stdout is pointed at /dev/null, so the interpreter's own flush at exit does not fail
    again."""
    import errno
    import os
    import stat
    try:
        fd = sys.stdout.fileno()
        mode = os.fstat(fd).st_mode
        if isinstance(e, BrokenPipeError):
            failed = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
        elif e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            failed = stat.S_ISCHR(mode) or (stat.S_ISREG(mode) and
                                            os.fstatvfs(fd).f_bavail == 0)
        else:
            failed = False
    except (OSError, ValueError, AttributeError):
        return False
    if failed:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
        except OSError:
            pass
    return failed


def _internal_error(e: Exception) -> None:
    """Exit :data:`INTERNAL_ERROR` with one line naming ``e`` (see :func:`main`)."""
    import os
    import traceback
    if os.environ.get("EVALTAPE_DEBUG"):
        raise e
    frame = traceback.extract_tb(e.__traceback__)[-1]
    click.echo(redacted(f"evaltape: internal error (a bug, not your input and not a "
                        f"failed gate): {type(e).__name__}: {e} (at {frame.filename}:"
                        f"{frame.lineno}); rerun with EVALTAPE_DEBUG=1 for the "
                        "traceback and report it"), err=True)
    sys.exit(INTERNAL_ERROR)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
