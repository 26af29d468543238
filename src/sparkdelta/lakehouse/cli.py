"""The ``lakehouse`` command: ``run`` the pipeline, ``generate`` more landing files, ``report`` on the tables.

Progress and logs go to stderr, the summary to stdout (``--json`` makes it JSON), so
``lakehouse run --json | jq`` works. ``--master`` runs the same job on a Spark cluster
whose driver and executors all see the warehouse: a shared directory, or an object store
(``--warehouse s3a://bucket/lake`` with ``--conf spark.hadoop.fs.s3a.*`` settings, or the
``AWS_*`` environment, and the cluster's S3A connector).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from datetime import date
from typing import Any, TypeVar

import click
from pyspark.sql import SparkSession
from rich.console import Console

from .generator import FeedSpec, generate
from .pipeline import PipelineConfig, run
from .warehouse import Location, Warehouse

DEFAULTS = FeedSpec()
# A command function, before ``main.command`` makes it a click Command.
F = TypeVar("F", bound=Callable[..., Any])


def session(master: str, driver_memory: str, conf: tuple[str, ...] = ()) -> SparkSession:
    """A sparkdelta session for the job: tables by path, so no metastore in the working directory.
    ``conf`` holds ``KEY=VALUE`` settings, as ``spark-submit --conf`` takes them."""
    import sparkdelta

    builder = (
        SparkSession.builder.appName("lakehouse")
        .master(master)
        .config("spark.driver.memory", driver_memory)
        .config("spark.ui.showConsoleProgress", "false")  # rich shows the stages instead
        .config("spark.sql.catalogImplementation", "in-memory")
    )
    for setting in conf:
        key, equals, value = setting.partition("=")
        if not equals or not key.strip():
            raise click.BadParameter(f"{setting!r}: give KEY=VALUE", param_hint="--conf")
        builder = builder.config(key.strip(), value)
    spark = sparkdelta.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _feed(rows_per_day: int, seed: int, start: str, congestion_from: int) -> FeedSpec:
    return FeedSpec(rows_per_day=rows_per_day, seed=seed, start=date.fromisoformat(start), congestion_from=congestion_from)


def spark_options(command: F) -> F:
    command = click.option(
        "--master", default=lambda: os.environ.get("SPARK_MASTER", "local[*]"), show_default="local[*]", help="Spark master URL."
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
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def run_command(
    warehouse: str,
    driver_memory: str,
    conf: tuple[str, ...],
    master: str,
    rows_per_day: int,
    seed: int,
    start_date: str,
    congestion_from: int,
    days: int,
    optimize_min_files: int,
    retention_hours: float,
    as_json: bool,
) -> None:
    """Generate data if landing is empty, then bring bronze, silver and gold up to date and maintain them."""
    config = PipelineConfig(
        Location.of(warehouse), _feed(rows_per_day, seed, start_date, congestion_from), days, optimize_min_files, retention_hours
    )
    progress = Console(stderr=True)
    summary = run(session(master, driver_memory, conf), config, console=progress)
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
        session(master, driver_memory, conf), spec, Warehouse(Location.of(warehouse)).landing, range(first_day, first_day + days)
    )
    for path in written:
        click.echo(str(path))


@main.command("report")
@spark_options
@click.option("--output", help="HTML file to write, a local path or object-store URL (default: WAREHOUSE/report.html).")
def report_command(warehouse: str, driver_memory: str, conf: tuple[str, ...], master: str, output: str | None) -> None:
    """Write a static HTML page: charts of the gold tables and the health of every table."""
    from .report import write_report

    target = write_report(session(master, driver_memory, conf), Warehouse(Location.of(warehouse)), output)
    click.echo(str(target))
