"""Delta scans that prune files: partition pruning and data skipping on ``filter``/``where``.

A DataFrame read from a Delta table remembers its snapshot and the predicates applied to
it. Filtering it again re-plans the scan over only the files the kernel cannot rule out,
then applies the filter as usual, so results never change, only the files read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession

from ...exceptions import DeltaAnalysisException
from ...kernel import Snapshot
from ...kernel import skipping as S
from ...kernel.file_actions import file_paths
from ...kernel.scan import conjunction
from ..options import DeltaOptions
from ..paths import spark_file_uris
from ..storage import open_table
from ..time_zones import session_instant
from .change_feed import load_changes
from .parquet import input_file_name, read_files
from .predicates import condition_predicate, table_schema

log = logging.getLogger(__name__)

SCAN_ATTRIBUTE = "_sparkdelta_scan"


@dataclass
class ScanInfo:
    """What a Delta DataFrame reads: its snapshot, the filters so far, and the files kept."""

    snapshot: Snapshot
    conditions: list[str | Column] = field(default_factory=list)
    predicates: list[S.Predicate] = field(default_factory=list)
    files_total: int = 0
    files_read: int = 0
    files: pa.Table | None = None  # the files kept
    alias: str | None = None  # the DataFrame's alias (``DeltaTable.alias(..).toDF()``), set before any filter

    @property
    def files_pruned(self) -> int:
        return self.files_total - self.files_read


def scan(
    spark: SparkSession,
    snapshot: Snapshot,
    conditions: list[str | Column] | None = None,
    predicates: list[S.Predicate] | None = None,
    alias: str | None = None,
) -> DataFrame:
    """Rows of ``snapshot`` matching every condition, reading only files ``predicates`` cannot rule out.

    ``predicates`` are the kernel forms of the conditions that have one. ``alias`` names
    the rows (``df.alias``) before the conditions apply, so they may use it.
    """
    conditions = list(conditions or [])
    predicates = list(predicates or [])
    kernel_scan = snapshot.scan(conjunction(predicates))
    files = kernel_scan.files
    df = read_files(spark, snapshot, files)
    if alias:
        df = df.alias(alias)
    for condition in conditions:
        df = df.filter(condition)
    metrics = kernel_scan.metrics
    info = ScanInfo(snapshot, conditions, predicates, metrics.files_total, metrics.files_selected, files, alias)
    setattr(df, SCAN_ATTRIBUTE, info)
    if conditions:
        log.info("%s: read %d of %d files (%d pruned)", snapshot.table_root, info.files_read, info.files_total, info.files_pruned)
    return df


def load(spark: SparkSession, path: str, options: DeltaOptions) -> DataFrame:
    """``spark.read.format("delta").load(path)``, honouring ``versionAsOf`` / ``timestampAsOf`` and ``readChangeFeed``."""
    if options.read_change_feed:
        return load_changes(spark, path, options)
    if options.version_as_of is not None and options.timestamp_as_of is not None:
        raise DeltaAnalysisException(
            f"{path}: give versionAsOf or timestampAsOf, not both", errorClass="DELTA_UNSUPPORTED_TIME_TRAVEL_MULTIPLE_FORMATS"
        )
    instant = session_instant(spark, options.timestamp_as_of)
    snapshot = open_table(spark, path, options.storage).snapshot(version=options.version_as_of, timestamp=instant)
    return scan(spark, snapshot)


def scan_info(df: DataFrame) -> ScanInfo | None:
    """The Delta scan behind ``df``, if it is a (filtered) Delta read."""
    return df.__dict__.get(SCAN_ATTRIBUTE)  # not getattr: a DataFrame's __getattr__ asks Spark for its columns


def filter_with_pruning(original: Any) -> Any:
    """Wrap ``DataFrame.filter`` so filters on a Delta read prune its files."""

    def filter(self: DataFrame, condition: str | Column) -> DataFrame:
        info = scan_info(self)
        if info is None:
            return original(self, condition)
        predicate = condition_predicate(self.sparkSession, table_schema(info.snapshot), condition, info.alias)
        predicates = [*info.predicates, predicate] if predicate is not None else info.predicates
        return scan(self.sparkSession, info.snapshot, [*info.conditions, condition], predicates, info.alias)

    filter.__doc__ = original.__doc__
    return filter


def input_files_from_log(original: Any) -> Any:
    """Wrap ``DataFrame.inputFiles`` so a Delta read answers from the log.

    The files are the scan's own, spelled as Spark spells them; PySpark would otherwise
    fetch them from the JVM one py4j call per file (about 5 s for 100,000 files).
    """

    def input_files(self: DataFrame) -> list[str]:
        info = scan_info(self)
        if info is None or info.files is None:
            return original(self)
        return [input_file_name(key) for key in spark_file_uris(info.snapshot.table_root, file_paths(info.files))]

    input_files.__doc__ = original.__doc__
    input_files.__wrapped__ = original  # type: ignore[attr-defined]
    return input_files
