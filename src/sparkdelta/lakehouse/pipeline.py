"""One run of the pipeline: landing -> bronze -> silver -> gold -> maintenance.

Every layer decides what is new from the tables themselves (see markers.py), so a run
can stop anywhere (killed, crashed, interrupted) and the next run picks up exactly where
the tables say, and a run with nothing new commits nothing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from rich.console import Console

from . import bronze, generator, gold, maintenance, markers, silver
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


def _no_hook(point: str) -> None:
    """Called after each commit with its name (``bronze:3``, ``silver:merge``, ``gold:daily_zone:merge``...)."""


def run(
    spark: SparkSession,
    config: PipelineConfig,
    console: Console | None = None,
    on_commit: Callable[[str], None] = _no_hook,
) -> RunSummary:
    """Run every stage once; ``console`` shows progress, ``on_commit`` lets tests stop a run between commits."""
    warehouse = Warehouse(Location.of(config.warehouse))
    summary = RunSummary(str(warehouse.root))
    before = {name: markers.version(path) for name, path in warehouse.tables().items()}

    @contextmanager
    def stage(name: str, doing: str) -> Iterator[None]:
        spark.sparkContext.setJobDescription(f"lakehouse {name}")
        started = time.perf_counter()
        with console.status(doing) if console else nullcontext():
            yield
        summary.seconds[name] = time.perf_counter() - started
        spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
        if console:
            console.log(f"{name} done in {summary.seconds[name]:.1f} s")

    if not warehouse.landing_files():
        with stage("generate", f"generating {config.days} days of {config.feed.rows_per_day:,} trips"):
            written = generator.generate(spark, config.feed, warehouse.landing, range(config.days))
            summary.generated = [p.name for p in written]
    with stage("bronze", "bronze: ingesting new landing files"):
        summary.bronze = bronze.ingest(spark, warehouse, config.retention_hours, on_commit)
    with stage("silver", "silver: validating, deduplicating, merging corrections"):
        summary.silver = silver.refine(spark, warehouse, config.retention_hours, on_commit)
    with stage("gold", "gold: folding silver's change feed into the aggregates"):
        summary.gold = gold.refresh(spark, warehouse, config.retention_hours, on_commit)
    with stage("maintenance", "maintenance: OPTIMIZE and VACUUM"):
        summary.maintenance = maintenance.maintain(spark, warehouse, config.min_files)
    summary.versions = {name: (before[name], markers.version(path)) for name, path in warehouse.tables().items()}
    return summary
