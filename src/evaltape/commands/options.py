"""Options that several commands share, declared once: the dataset, the metric set, the
configuration file and the number of worker processes."""
from __future__ import annotations

from typing import Callable, TypeVar

import click

F = TypeVar("F", bound=Callable)

#: the help of ``--dataset`` on commands that read a run folder
DATASET_HELP = "Dataset of the run (default: the one named in the run's manifest)."
CONFIG_HELP = ("Metric arguments and judges of your own: a TOML file, or a pyproject.toml "
               "with [tool.evaltape]. Default: ./evaltape.toml, else ./pyproject.toml when "
               "it has [tool.evaltape].")


def dataset_option(help: str = DATASET_HELP) -> Callable[[F], F]:
    """``--dataset PATH`` (default ``None``: the manifest's), passed as ``dataset``."""
    return click.option("--dataset", "dataset", default=None, metavar="PATH", help=help)


def metrics_option(help: str = "Comma-separated metric names or module:Class paths "
                               "(as evaltape grade --metrics).") -> Callable[[F], F]:
    """``--metrics NAMES`` (default ``None``: the default set), passed as ``metric_names``."""
    return click.option("--metrics", "metric_names", default=None, metavar="NAMES", help=help)


def config_option(help: str = CONFIG_HELP) -> Callable[[F], F]:
    """``--config FILE.toml`` (default ``None``: found in the working directory), passed
    as ``config_path``."""
    return click.option("--config", "config_path", default=None, metavar="FILE.toml",
                        help=help)


def workers_option(help: str, default: int | None = 1) -> Callable[[F], F]:
    """``--workers N`` (N >= 1; ``default`` when not given), passed as ``workers``: how many
    processes share the work."""
    return click.option("--workers", "workers", type=click.IntRange(min=1), default=default,
                        show_default=default is not None, help=help)


def metric_name_list(value: str | None) -> list[str] | None:
    """A ``--metrics`` value as a list of names (``None`` when the option was not given).

    Raises:
        click.UsageError: the value names no metric (empty, or only commas).
    """
    if value is None:
        return None
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise click.UsageError("--metrics names no metric")
    return names


def config_or_found(config_path: str | None) -> str | None:
    """``config_path`` when given, else the configuration found in the working directory
    (:func:`evaltape.grader.io.config.discover_config`; its path is said on stderr), else
    ``None``.

    Raises:
        BadInputError: the file found cannot be read or parsed (exit 3).
    """
    if config_path is not None:
        return config_path
    from evaltape.grader.io.config import discover_config
    found = discover_config()
    if found is None:
        return None
    click.echo(f"config: {found} (found in the working directory; --config names another)",
               err=True)
    return str(found)
