"""The ``sparkdelta`` command line: inspect and maintain Delta tables.

Everything but ``optimize`` runs on the kernel alone, without importing PySpark, on
local paths and on object stores (``s3://``, ``gs://``, ``az://``...): credentials come
from the environment as delta-rs reads them, or from ``--storage-option KEY=VALUE``.

Start-up counts (a listing should take no longer than delta-rs's): modules only some
commands need (the writer's, rich's progress bar, Spark) are imported by those commands,
and ``run``, the program, sets up Arrow for a short-lived process.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from importlib.machinery import ModuleSpec
from typing import Any, TypeVar, cast

import click
import pyarrow as pa
import pyarrow.compute as pc

from . import __version__
from .cli_output import history_lines, human_size, print_metrics
from .kernel import DeltaError, Snapshot, Table, TableNotFoundError
from .kernel.describe import table_detail
from .kernel.errors import VacuumRetentionError
from .kernel.protocol import reader_features, writer_features

USER_ERRORS = (DeltaError, ValueError, NotImplementedError)
_LINES_PER_WRITE = 10_000
T = TypeVar("T")


def progress(items: Iterable[T], total: int, description: str) -> Iterator[T]:
    """A progress bar on an interactive terminal (here, not from ``sparkdelta.spark``, whose
    package imports PySpark)."""
    from rich.progress import track

    yield from track(items, total=total, description=description, transient=True, disable=not sys.stderr.isatty())


def _storage_options(pairs: tuple[str, ...]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--storage-option")
        options[key.strip()] = value
    return options


def open_table(table: str) -> Table:
    """The table at ``table``, with the ``--storage-option`` settings given to ``main``."""
    context = click.get_current_context(silent=True)
    options = context.find_root().obj if context is not None and context.find_root().obj else None
    return Table(table, storage_options=options)


def _open_snapshot(table: str, version: int | None, timestamp: str | None) -> Snapshot:
    try:
        return open_table(table).snapshot(version=version, timestamp=timestamp)
    except USER_ERRORS as exc:
        raise click.ClickException(str(exc)) from exc


def _iso(millis: int | None) -> str | None:
    if millis is None:
        return None
    return datetime.fromtimestamp(millis / 1000, UTC).isoformat(timespec="milliseconds")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="sparkdelta", message="%(prog)s %(version)s")
@click.option("--verbose", "-v", is_flag=True, help="Log kernel warnings and progress.")
@click.option(
    "--storage-option",
    "-o",
    "storage_option",
    multiple=True,
    metavar="KEY=VALUE",
    help="Object store setting as delta-rs takes it (aws_region=..., aws_endpoint_url=...); repeatable. Overrides the environment.",
)
@click.pass_context
def main(context: click.Context, verbose: bool, storage_option: tuple[str, ...]) -> None:
    """Inspect and maintain Delta tables (local paths, s3://, gs://, az://, abfss://...)."""
    context.obj = _storage_options(storage_option)
    logging.basicConfig(level=logging.INFO if verbose else logging.ERROR, format="%(levelname)s %(message)s")


@main.command()
@click.argument("table")
@click.option("--version", "version", type=int, help="Version to time travel to.")
@click.option("--timestamp", help="Timestamp to time travel to (UTC unless it has an offset).")
def files(table: str, version: int | None, timestamp: str | None) -> None:
    """The active data files' paths as written in the log, one per line."""
    if version is not None and timestamp is not None:
        raise click.UsageError("give --version or --timestamp, not both")
    paths = _open_snapshot(table, version, timestamp).active_files(["path"]).column("path")
    order = pc.sort_indices(paths)
    # Sorted in Arrow, printed _LINES_PER_WRITE lines per write: an echo per line, or every
    # line as a Python string at once, would cost more time or memory than reading the log.
    for start in range(0, len(order), _LINES_PER_WRITE):
        click.echo("\n".join(cast(list[str], paths.take(order[start : start + _LINES_PER_WRITE]).to_pylist())))


def describe_snapshot(snapshot: Snapshot) -> dict[str, Any]:
    """The facts ``describe`` prints, as a JSON-ready dict: DESCRIBE DETAIL's, and the schema."""
    detail = table_detail(snapshot)
    return {
        "location": detail.location,
        "version": snapshot.version,
        "timestamp": _iso(detail.last_modified),
        "protocol": {
            "minReaderVersion": detail.min_reader_version,
            "minWriterVersion": detail.min_writer_version,
            "readerFeatures": sorted(reader_features(snapshot.protocol)),
            "writerFeatures": sorted(writer_features(snapshot.protocol)),
        },
        "metadata": {
            "id": detail.id,
            "name": detail.name,
            "description": detail.description,
            "format": snapshot.metadata.format_provider,
            "schema": snapshot.schema.to_json(),
            "partitionColumns": detail.partition_columns,
            "configuration": detail.properties,
            "createdTime": _iso(detail.created_at),
        },
        "numFiles": detail.num_files,
        "sizeInBytes": detail.size_in_bytes,
    }


def _type_text(raw: Any) -> str:
    return raw if isinstance(raw, str) else raw.get("type", "?")


@main.command()
@click.argument("table")
@click.option("--version", "version", type=int, help="Version to describe.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def describe(table: str, version: int | None, as_json: bool) -> None:
    """Version, protocol, metadata, number of files and size of a table."""
    facts = describe_snapshot(_open_snapshot(table, version, None))
    if as_json:
        click.echo(json.dumps(facts, indent=2))
        return
    protocol = facts["protocol"]
    metadata = facts["metadata"]
    click.echo(f"location:          {facts['location']}")
    click.echo(f"version:           {facts['version']} ({facts['timestamp']})")
    click.echo(f"protocol:          reader {protocol['minReaderVersion']}, writer {protocol['minWriterVersion']}")
    if protocol["readerFeatures"] or protocol["writerFeatures"]:
        click.echo(f"reader features:   {', '.join(protocol['readerFeatures']) or '-'}")
        click.echo(f"writer features:   {', '.join(protocol['writerFeatures']) or '-'}")
    click.echo(f"id:                {metadata['id']}")
    if metadata["name"]:
        click.echo(f"name:              {metadata['name']}")
    click.echo(f"partition columns: {', '.join(metadata['partitionColumns']) or '-'}")
    click.echo(f"files:             {facts['numFiles']}")
    click.echo(f"size:              {human_size(facts['sizeInBytes'])}")
    click.echo("schema:")
    for field in metadata["schema"].get("fields", []):
        nullable = "" if field.get("nullable", True) else " NOT NULL"
        click.echo(f"  {field['name']}: {_type_text(field['type'])}{nullable}")
    if metadata["configuration"]:
        click.echo("configuration:")
        for key, value in sorted(metadata["configuration"].items()):
            click.echo(f"  {key} = {value}")


@main.command()
@click.argument("table")
@click.option("--limit", type=int, help="Only the newest N versions.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON, one object per version.")
def history(table: str, limit: int | None, as_json: bool) -> None:
    """The commitInfo of each version, newest first: operation, parameters and metrics."""
    try:
        records = open_table(table).history(limit)
    except USER_ERRORS as exc:
        raise click.ClickException(str(exc)) from exc
    rows = [{**r.commit_info, "version": r.version, "timestamp": _iso(r.timestamp)} for r in records]
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    click.echo("\n".join(history_lines(rows)))


main.add_command(describe, name="detail")


def _report(facts: dict[str, Any], as_json: bool) -> None:
    """A command's metrics: JSON with raw numbers, or a table for people (sizes in binary units)."""
    if as_json:
        click.echo(json.dumps(facts, indent=2, default=str))
    else:
        print_metrics(facts)


def _retention_refusal(table: str, retain_hours: float | None, error: VacuumRetentionError) -> str:
    """The kernel's refusal of a short retention, told with the CLI's flags rather than delta-spark's setting."""
    from .kernel.vacuum import RETENTION_PROPERTY, table_retention_ms

    if error.error_class != VacuumRetentionError.error_class or retain_hours is None:
        return str(error)  # a negative retention: nothing a flag overrides
    try:
        delta = open_table(table)
        table_hours = table_retention_ms(delta.snapshot()) / 3_600_000
    except USER_ERRORS:
        return f"{error} (the CLI's flag for that: --no-retention-check)"
    return (
        f"{delta.root}: VACUUM with a retention of {retain_hours:g} hours, below the table's {RETENTION_PROPERTY} of "
        f"{table_hours:g} hours, could delete files that running readers or writers still use and break time travel "
        f"inside the window. Give --retain-hours {table_hours:g} or more, or add --no-retention-check if you are sure "
        "(delta-spark's spark.databricks.delta.retentionDurationCheck.enabled=false)"
    )


@main.command()
@click.argument("table")
@click.option("--retain-hours", type=float, help="Retention window (default: the table's delta.deletedFileRetentionDuration).")
@click.option("--dry-run", is_flag=True, help="List the files VACUUM would delete; delete nothing.")
@click.option("--no-retention-check", is_flag=True, help="Allow a window shorter than the table's (breaks time travel).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def vacuum(table: str, retain_hours: float | None, dry_run: bool, no_retention_check: bool, as_json: bool) -> None:
    """Delete files no version inside the retention window reads."""
    from .kernel.vacuum import vacuum as vacuum_table

    try:
        result = vacuum_table(
            open_table(table),
            retain_hours,
            dry_run=dry_run,
            check_retention=not no_retention_check,
            progress=lambda done, total: progress(done, total, f"deleting {total} files"),
        )
    except VacuumRetentionError as exc:
        raise click.ClickException(_retention_refusal(table, retain_hours, exc)) from exc
    except USER_ERRORS as exc:
        raise click.ClickException(str(exc)) from exc
    plan = result.plan
    if dry_run:
        if as_json:
            click.echo(json.dumps({"files": [f.path for f in plan.files], "sizeInBytes": plan.size_in_bytes}, indent=2))
        elif plan.files:
            for status in plan.files:
                click.echo(status.path)
            count = len(plan.files)
            click.echo(f"would delete {count} file{'' if count == 1 else 's'} ({human_size(plan.size_in_bytes)})", err=True)
        else:
            click.echo("nothing to delete", err=True)
        return
    facts = {"numDeletedFiles": result.count("numDeletedFiles"), "sizeOfDeletedData": plan.size_in_bytes}
    _report({**facts, "numVacuumedDirectories": result.count("numVacuumedDirectories")}, as_json)


@main.command()
@click.argument("table")
@click.option("--version", "version", type=int, help="Version to restore.")
@click.option("--timestamp", help="Restore the version at this time (UTC unless it has an offset).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def restore(table: str, version: int | None, timestamp: str | None, as_json: bool) -> None:
    """Commit the table back to an earlier version."""
    from .kernel.restore import restore as restore_table

    if (version is None) == (timestamp is None):
        raise click.UsageError("give --version or --timestamp (one of them)")
    try:
        result = restore_table(open_table(table), version=version, timestamp=timestamp)
    except USER_ERRORS as exc:
        raise click.ClickException(str(exc)) from exc
    _report(dict(result.metrics), as_json)


@main.command()
@click.argument("table")
@click.option("--mode", default="symlink_format_manifest", show_default=True, help="What to generate.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def generate(table: str, mode: str, as_json: bool) -> None:
    """Write symlink format manifests (_symlink_format_manifest/) for Presto, Athena and Hive; no commit."""
    from .kernel.manifest import generate as generate_manifests

    try:
        stats = generate_manifests(open_table(table), mode)
    except USER_ERRORS as exc:
        raise click.ClickException(str(exc)) from exc
    _report({"manifestsWritten": stats.files_written, "manifestsDeleted": stats.files_deleted}, as_json)


@main.command()
@click.argument("table")
@click.option("--where", "partition_filter", help="Only the partitions this predicate (on partition columns) selects.")
@click.option("--zorder-by", help="Z-order by these columns (comma separated) instead of compacting.")
@click.option("--master", help="Spark master URL (default: local[*]).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def optimize(table: str, partition_filter: str | None, zorder_by: str | None, master: str | None, as_json: bool) -> None:
    """Compact small files, or Z-order the table (starts a Spark session)."""
    from .spark.commands.optimize import optimize as optimize_table
    from .spark.session import spark_session
    from .spark.storage import open_table as open_spark_table

    spark = spark_session("sparkdelta optimize", master)
    try:
        delta = open_spark_table(spark, table)
        if not delta.exists():
            raise TableNotFoundError(f"{delta.root} is not a Delta table")
        columns = tuple(c.strip() for c in zorder_by.split(",") if c.strip()) if zorder_by else ()
        summary = optimize_table(spark, delta, partition_filter or None, columns).summary
    except USER_ERRORS as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        spark.stop()
    _report(summary, as_json)


class _NoPandas:
    """An import hook (a ``sys.meta_path`` finder) under which ``import pandas`` fails."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname.partition(".")[0] == "pandas":
            raise ModuleNotFoundError(f"{fullname} is hidden from pyarrow in the sparkdelta CLI", name=fullname)
        return None


def _pyarrow_without_pandas() -> None:
    """Have pyarrow settle now, with pandas out of sight, that it works without pandas.

    pyarrow looks for pandas once per process, on its first conversion of a Python value
    (``pa.array``, ``pa.scalar``, most compute calls), only to tell pandas objects from
    others; importing pandas then costs the CLI 0.3 s and 50 MiB. The CLI hands pyarrow no
    pandas objects (nor does ``optimize``'s Spark session: it builds its DataFrames from rows
    and Arrow tables). pyarrow keeps the answer for the rest of the process, so only ``run`` asks.
    """
    if "pandas" in sys.modules:
        return
    hook = _NoPandas()
    sys.meta_path.insert(0, hook)
    try:
        pa.scalar(0)
    finally:
        sys.meta_path.remove(hook)


def _arrow_memory_returned_at_once() -> None:
    """Arrow's memory from jemalloc, handed back to the system as soon as it is freed.

    pyarrow's default allocator (mimalloc) keeps freed memory for reuse, as suits a
    long-running engine; a command that reads a log once and exits then peaks about
    40 MiB higher. pyarrow builds without jemalloc keep their default.
    """
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:
        return
    pa.jemalloc_set_decay_ms(0)
    pa.set_memory_pool(pool)


def run() -> None:
    """The ``sparkdelta`` program: ``main`` in a process of its own.

    Tests and other programs call ``main`` in theirs: the settings made here (see
    ``_pyarrow_without_pandas`` and ``_arrow_memory_returned_at_once``) hold for the whole
    process, which is not the CLI's to make there.
    """
    _pyarrow_without_pandas()
    _arrow_memory_returned_at_once()
    main()


if __name__ == "__main__":
    run()
