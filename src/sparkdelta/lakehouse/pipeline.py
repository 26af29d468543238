"""One run of the pipeline: landing -> bronze -> silver -> gold -> maintenance.

In batch mode every layer decides what is new from the tables themselves (see
markers.py); in stream mode (streams.py) each layer is a Structured Streaming query
whose checkpoint says what it has read, and the tables which micro-batches they hold.
Either way a run can stop anywhere (killed, crashed, interrupted) and the next run picks
up exactly where it stopped, and a run with nothing new commits nothing.

Stream mode runs each query with ``availableNow`` (to the end of what there is, bronze,
then silver, then gold, then maintenance as in batch mode), or, ``continuous``, all three
side by side every ``trigger_seconds`` until ``until()`` or Ctrl-C (maintenance is left
to a later run).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from rich.console import Console

from . import bronze, generator, gold, maintenance, markers, silver, streams
from .generator import FeedSpec
from .summary import RunSummary
from .warehouse import Location, Warehouse


@dataclass(frozen=True)
class PipelineConfig:
    warehouse: Location | str | os.PathLike[str]  # a local directory or an object-store URL
    feed: FeedSpec = field(default_factory=FeedSpec)
    days: int = 7  # days generated when the landing folder is empty
    min_files: int = 8  # small files in a partition that make maintenance OPTIMIZE it
    retention_hours: float = 168.0  # delta.deletedFileRetentionDuration of the tables it creates
    stream: bool = False  # the layers as Structured Streaming queries
    continuous: bool = False  # stream mode: the queries side by side until stopped, not availableNow
    trigger_seconds: float = 10.0  # continuous: seconds between micro-batches

    @property
    def mode(self) -> str:
        return "continuous" if self.continuous else "stream" if self.stream else "batch"


def _no_hook(point: str) -> None:
    """Called after each commit with its name (``bronze:3``, ``silver:merge``, ``gold:daily_zone:merge``...)."""


Stage = Callable[[str, str], AbstractContextManager[None]]  # a stage's name and what it does -> its timing

DOING = {
    "bronze": "bronze: ingesting new landing files",
    "silver": "silver: validating, deduplicating, merging corrections",
    "gold": "gold: folding silver's change feed into the aggregates",
}


def run(
    spark: SparkSession,
    config: PipelineConfig,
    console: Console | None = None,
    on_commit: Callable[[str], None] = _no_hook,
    until: Callable[[], bool] | None = None,
) -> RunSummary:
    """Run every stage once; ``console`` shows progress, ``on_commit`` lets tests stop a run
    between commits, ``until`` ends a continuous run (polled every half second; by default
    only Ctrl-C does)."""
    if config.continuous and not config.stream:
        raise ValueError("a continuous run is a stream run: set stream too")
    warehouse = Warehouse(Location.of(config.warehouse))
    streams.check_mode(warehouse, config.stream)
    summary = RunSummary(str(warehouse.root), config.mode)
    before = {name: markers.version(path) for name, path in warehouse.tables().items()}

    @contextmanager
    def stage(name: str, doing: str) -> Iterator[None]:
        started = time.perf_counter()
        with _tagged(spark, f"lakehouse_{name}"), console.status(doing) if console else nullcontext():
            yield
        summary.seconds[name] = time.perf_counter() - started
        if console:
            console.log(f"{name} done in {summary.seconds[name]:.1f} s")

    if not warehouse.landing_files():
        with stage("generate", f"generating {config.days} days of {config.feed.rows_per_day:,} trips"):
            written = generator.generate(spark, config.feed, warehouse.landing, range(config.days))
            summary.generated = [p.name for p in written]
    if config.stream:
        _streams(spark, warehouse, config, summary, stage, on_commit, until)
    else:
        with stage("bronze", DOING["bronze"]):
            summary.bronze = bronze.ingest(spark, warehouse, config.retention_hours, on_commit)
        with stage("silver", DOING["silver"]):
            summary.silver = silver.refine(spark, warehouse, config.retention_hours, on_commit)
        with stage("gold", DOING["gold"]):
            summary.gold = gold.refresh(spark, warehouse, config.retention_hours, on_commit)
    if not config.continuous:
        with stage("maintenance", "maintenance: OPTIMIZE and VACUUM"):
            summary.maintenance = maintenance.maintain(spark, warehouse, config.min_files)
    summary.versions = {name: (before[name], markers.version(path)) for name, path in warehouse.tables().items()}
    return summary


def _streams(
    spark: SparkSession,
    warehouse: Warehouse,
    config: PipelineConfig,
    summary: RunSummary,
    stage: Stage,
    on_commit: Callable[[str], None],
    until: Callable[[], bool] | None,
) -> None:
    """The layers as queries: one after the other to the end of their input, or side by side."""
    bronze_before, files_before = markers.version(warehouse.bronze), bronze.ingested_files(spark, warehouse.bronze)
    queries = streams.Queries(spark, warehouse, config.retention_hours, on_commit, summary)
    queries.create_tables()
    if config.continuous:
        every = f"every {config.trigger_seconds:g} s until stopped"
        with stage("streaming", f"streaming bronze, silver and gold {every} (Ctrl-C stops)"):
            queries.continuous(config.trigger_seconds, until)
    else:
        for layer in streams.LAYERS:
            with stage(layer, f"{DOING[layer]} (stream, availableNow)"):
                queries.available_now(layer)
    summary.bronze = streams.bronze_result(spark, warehouse, bronze_before, files_before)
    if summary.bronze.batches:
        summary.micro_batches["bronze"] = summary.bronze.batches


@contextmanager
def _tagged(spark: SparkSession, tag: str) -> Iterator[None]:
    """The stage's Spark jobs carry ``tag`` (Spark's operation tags, on classic and Connect sessions)."""
    spark.addTag(tag)
    try:
        yield
    finally:
        spark.removeTag(tag)
