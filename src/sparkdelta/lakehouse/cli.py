"""The ``lakehouse`` command: ``run`` the pipeline, ``generate`` more landing files, ``report`` on the tables.

Progress and logs go to stderr, the summary to stdout (``--json`` makes it JSON), so
``lakehouse run --json | jq`` works. ``--master`` runs the same job on a Spark cluster
whose driver and executors all see the warehouse: a shared directory, or an object store
(``--warehouse s3a://bucket/lake`` with ``--conf spark.hadoop.fs.s3a.*`` settings, or the
``AWS_*`` environment, and the cluster's S3A connector). ``--remote sc://host:15002``
runs it on a Spark Connect server instead: sparkdelta runs here, the server does the
data work, and both must see the warehouse.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable
from datetime import date
from typing import Any, TypeVar

import click
from pyspark.sql import SparkSession
from rich.console import Console

from .errors import LandingColumnsError, ModeError
from .generator import FeedSpec, generate
from .pipeline import PipelineConfig, run
from .warehouse import Location, Warehouse

DEFAULTS = FeedSpec()
# A command function, before ``main.command`` makes it a click Command.
F = TypeVar("F", bound=Callable[..., Any])


def session(master: str, driver_memory: str, conf: tuple[str, ...] = (), remote: str | None = None) -> SparkSession:
    """A sparkdelta session for the job: tables by path, so no metastore in the working directory.
    ``conf`` holds ``KEY=VALUE`` settings, as ``spark-submit --conf`` takes them. With
    ``remote``, a Spark Connect session of that server, which keeps its own settings and
    catalog (``conf`` can then set session settings only)."""
    import sparkdelta

    if remote:
        builder = SparkSession.builder.remote(remote).appName("lakehouse")
    else:
        builder = (
            SparkSession.builder.appName("lakehouse")
            .master(master)
            .config("spark.driver.memory", driver_memory)
            .config("spark.ui.showConsoleProgress", "false")  # rich shows the stages instead
            .config("spark.log.level", "ERROR")  # SparkContext.setLogLevel, from the start
            .config("spark.sql.catalogImplementation", "in-memory")
        )
    for setting in conf:
        key, equals, value = setting.partition("=")
        if not equals or not key.strip():
            raise click.BadParameter(f"{setting!r}: give KEY=VALUE", param_hint="--conf")
        builder = builder.config(key.strip(), value)
    return sparkdelta.configure(builder).getOrCreate()


def _feed(rows_per_day: int, seed: int, start: str, congestion_from: int) -> FeedSpec:
    return FeedSpec(rows_per_day=rows_per_day, seed=seed, start=date.fromisoformat(start), congestion_from=congestion_from)


_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?)\s*(ms|s|m|h)?\s*")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _seconds(context: click.Context, parameter: click.Parameter, value: str | None) -> float | None:
    """A duration given as ``500ms``, ``10s``, ``2m``, ``1h`` or plain seconds, in seconds."""
    if value is None:
        return None
    found = _DURATION.fullmatch(value)
    if found is None or float(found.group(1)) <= 0:
        raise click.BadParameter(f"{value!r}: give a positive duration such as 500ms, 10s or 2m")
    return float(found.group(1)) * _UNIT_SECONDS[found.group(2) or "s"]


def _deadline(seconds: float) -> Callable[[], bool]:
    """True once ``seconds`` have passed since its first call (when the queries have started)."""
    started: list[float] = []

    def passed() -> bool:
        if not started:
            started.append(time.monotonic())
        return time.monotonic() - started[0] >= seconds

    return passed


def spark_options(command: F) -> F:
    command = click.option(
        "--master", default=lambda: os.environ.get("SPARK_MASTER", "local[*]"), show_default="local[*]", help="Spark master URL."
    )(command)
    command = click.option(
        "--remote",
        metavar="URL",
        default=lambda: os.environ.get("SPARK_REMOTE"),
        help="A Spark Connect server (sc://host:15002) to run on, instead of --master; it must see the warehouse.",
    )(command)
    command = click.option("--driver-memory", default="2g", show_default=True, help="spark.driver.memory.")(command)
    command = click.option(
        "--conf",
        multiple=True,
        metavar="KEY=VALUE",
        help="A Spark setting, as spark-submit's --conf (e.g. spark.hadoop.fs.s3a.endpoint=...); repeatable.",
    )(command)
    return click.option(
        "--warehouse",
        default="warehouse",
        show_default=True,
        help="Directory or object-store URL (s3a://bucket/lake) holding the landing folder and every table.",
    )(command)


def feed_options(command: F) -> F:
    for decorator in [
        click.option(
            "--congestion-from",
            type=int,
            default=DEFAULTS.congestion_from,
            show_default=True,
            help="First day (0-based) whose file has CongestionSurcharge.",
        ),
        click.option("--start-date", default=DEFAULTS.start.isoformat(), show_default=True, help="Date of day 0."),
        click.option("--seed", type=int, default=DEFAULTS.seed, show_default=True, help="Seed of the generated data."),
        click.option(
            "--rows-per-day", type=click.IntRange(1), default=DEFAULTS.rows_per_day, show_default=True, help="Rides per day."
        ),
    ]:
        command = decorator(command)
    return command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """The taxi lakehouse: landing CSV files -> bronze -> silver -> gold Delta tables."""


@main.command("run")
@spark_options
@feed_options
@click.option(
    "--days", type=click.IntRange(1), default=7, show_default=True, help="Days to generate when the landing folder is empty."
)
@click.option(
    "--optimize-min-files",
    type=click.IntRange(2),
    default=8,
    show_default=True,
    help="Small files in a partition that trigger OPTIMIZE.",
)
@click.option(
    "--retention-hours",
    type=float,
    default=168.0,
    show_default=True,
    help="delta.deletedFileRetentionDuration of new tables (VACUUM).",
)
@click.option("--stream", is_flag=True, help="Run the layers as Structured Streaming queries (availableNow).")
@click.option("--continuous", is_flag=True, help="With --stream: run the queries side by side until Ctrl-C (or --run-for).")
@click.option(
    "--trigger-interval",
    callback=_seconds,
    default="10s",
    show_default=True,
    help="With --continuous: time between micro-batches (500ms, 10s, 2m).",
)
@click.option("--run-for", callback=_seconds, help="With --continuous: stop after this long (30s, 5m).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def run_command(
    warehouse: str,
    driver_memory: str,
    conf: tuple[str, ...],
    master: str,
    remote: str | None,
    rows_per_day: int,
    seed: int,
    start_date: str,
    congestion_from: int,
    days: int,
    optimize_min_files: int,
    retention_hours: float,
    stream: bool,
    continuous: bool,
    trigger_interval: float,
    run_for: float | None,
    as_json: bool,
) -> None:
    """Generate data if landing is empty, then bring bronze, silver and gold up to date and maintain them."""
    if continuous and not stream:
        raise click.UsageError("--continuous runs the layers as streams: give --stream too")
    if run_for is not None and not continuous:
        raise click.UsageError("--run-for bounds a continuous run: give --stream --continuous too")
    config = PipelineConfig(
        Location.of(warehouse),
        _feed(rows_per_day, seed, start_date, congestion_from),
        days,
        optimize_min_files,
        retention_hours,
        stream=stream,
        continuous=continuous,
        trigger_seconds=trigger_interval,
    )
    progress = Console(stderr=True)
    until = None if run_for is None else _deadline(run_for)
    try:
        summary = run(session(master, driver_memory, conf, remote), config, console=progress, until=until)
    except (ModeError, LandingColumnsError) as error:
        raise click.ClickException(str(error)) from error
    if as_json:
        click.echo(json.dumps(summary.to_json(), indent=2))
    else:
        # Logs and CI captures are not terminals; rich would wrap them at 80 columns.
        summary.render(Console() if sys.stdout.isatty() else Console(width=120))


@main.command("generate")
@spark_options
@feed_options
@click.option("--first-day", type=click.IntRange(0), default=0, show_default=True, help="First day (0-based) to write.")
@click.option("--days", type=click.IntRange(1), default=1, show_default=True, help="Days to write.")
def generate_command(
    warehouse: str,
    driver_memory: str,
    conf: tuple[str, ...],
    master: str,
    remote: str | None,
    rows_per_day: int,
    seed: int,
    start_date: str,
    congestion_from: int,
    first_day: int,
    days: int,
) -> None:
    """Drop more days into the landing folder (same options as the first run give the same files)."""
    spec = _feed(rows_per_day, seed, start_date, congestion_from)
    written = generate(
        session(master, driver_memory, conf, remote),
        spec,
        Warehouse(Location.of(warehouse)).landing,
        range(first_day, first_day + days),
    )
    for path in written:
        click.echo(str(path))


@main.command("report")
@spark_options
@click.option("--output", help="HTML file to write, a local path or object-store URL (default: WAREHOUSE/report.html).")
def report_command(
    warehouse: str, driver_memory: str, conf: tuple[str, ...], master: str, remote: str | None, output: str | None
) -> None:
    """Write a static HTML page: charts of the gold tables and the health of every table."""
    from .report import write_report

    target = write_report(session(master, driver_memory, conf, remote), Warehouse(Location.of(warehouse)), output)
    click.echo(str(target))
