"""OPTIMIZE: bin-packing compaction and Z-ordering, as delta-spark's ``DeltaOptimizeBuilder``.

Compaction groups, per partition, the files smaller than the target size (and files
with deletion vectors, which it purges) into bins of up to ``delta.targetFileSize``
(else ``spark.databricks.delta.optimize.maxFileSize``, 1 GiB); each bin of two or more
files, or one file with a DV, becomes one new file. A second run finds nothing to do.

Z-ordering rewrites every selected file, ordered along a Z-curve: each column's values
are ranked into 2^8 buckets from approximate quantiles (one sketch job), the bucket
numbers' bits are interleaved into one key, and the rows are range-partitioned on it
(within each partition) into files of about the target size, sorted inside each file.
Files then cover small boxes of the columns' joint space, so a selective filter on any
one of them skips most files.

On a liquid-clustered table (``clusterBy``), OPTIMIZE clusters the files no OPTIMIZE has
clustered yet (those without ``clusteringProvider``) along the same Z-curve of its
clustering columns, marking the new files ``liquid``; a second run finds nothing.

Both commit as operation OPTIMIZE with ``dataChange=false`` adds and removes: readers of
the change feed and streams see no change, and concurrent appends do not conflict. The
commit records what delta-spark records (the partition predicates as Catalyst prints them,
``partition_predicates``), and the command answers delta-spark's ``OptimizeMetrics`` row.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.ml.feature import Bucketizer
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DateType, NumericType, StringType, StructType, TimestampNTZType, TimestampType

from ...exceptions import DeltaAnalysisException, DeltaIllegalArgumentException, DeltaUnsupportedOperationException, spark_surface
from ...kernel import Snapshot, Table
from ...kernel.clustering import CLUSTERING_PROVIDER, clustering_columns
from ...kernel.command_result import CommandResult
from ...kernel.file_actions import file_paths, remove_actions
from ...kernel.protocol import require_writable
from ...kernel.scan import DELETION_VECTOR, PARTITION_VALUES, partition_keys
from ..conf import OPTIMIZE_MAX_FILE_SIZE, get_int
from ..paths import qualified
from .. import row_tracking
from ..read.parquet import read_files, spark_schema
from ..write.dataframe import discard_uncommitted, record_counts, remove_unreferenced, write_table_files
from ..write.overwrite import files_in_partitions
from .optimize_metrics import RESULT_SCHEMA, added_file_sizes, optimize_metrics
from .partition_predicates import checked_partition_predicates, files_in_selected_partitions

_BIN = "__sparkdelta_optimize_bin"
_Z = "__sparkdelta_zorder_key"
_TOTAL_Z_BITS = 60
_BITS_PER_COLUMN = 8


def target_file_size(spark: SparkSession, snapshot: Snapshot) -> int:
    configured = snapshot.configuration.get("delta.targetFileSize")
    return int(configured) if configured else get_int(spark, OPTIMIZE_MAX_FILE_SIZE)


@dataclass(frozen=True)
class OptimizeResult(CommandResult):
    """OPTIMIZE's commit and metrics, with the summary delta-spark returns (its ``metrics`` column)."""

    path: str
    summary: dict[str, Any]


def optimize_frame(spark: SparkSession, result: OptimizeResult) -> DataFrame:
    """delta-spark's one-row result of OPTIMIZE: the table's ``path`` and the summary as ``metrics``."""
    return spark.createDataFrame([(result.path, result.summary)], RESULT_SCHEMA)


@spark_surface
@dataclass(frozen=True)
class DeltaOptimizeBuilder:
    """``DeltaTable.optimize()``: optional partition ``where``s, then ``executeCompaction`` or ``executeZOrderBy``."""

    spark: SparkSession
    table: Table
    partition_filters: tuple[str, ...] = ()

    def where(self, partitionFilter: str) -> DeltaOptimizeBuilder:
        """Optimize only the partitions ``partitionFilter`` (over partition columns only) selects;
        a second ``where`` narrows further, as in delta-spark, and both are recorded."""
        return DeltaOptimizeBuilder(self.spark, self.table, (*self.partition_filters, partitionFilter))

    def executeCompaction(self) -> DataFrame:
        """Compact small files into files of about the target size; one row of ``path`` and ``metrics``."""
        return optimize_frame(self.spark, optimize(self.spark, self.table, self.partition_filters, ()))

    def executeZOrderBy(self, *columns: str) -> DataFrame:
        """Rewrite the selected files Z-ordered by ``columns``; one row of ``path`` and ``metrics``."""
        names = [c for group in columns for c in ([group] if isinstance(group, str) else group)]
        if not names:
            raise DeltaAnalysisException(f"{self.table.root}: executeZOrderBy needs at least one column")
        return optimize_frame(self.spark, optimize(self.spark, self.table, self.partition_filters, tuple(names)))


def _resolves(data_type: DataType, parts: list[str]) -> bool:
    """Whether the dotted name ``parts`` names a (nested) field of ``data_type``, case-insensitively."""
    for part in parts:
        if not isinstance(data_type, StructType):
            return False
        field = next((f for f in data_type.fields if f.name.lower() == part.lower()), None)
        if field is None:
            return False
        data_type = field.dataType
    return True


def _check_z_order_columns(snapshot: Snapshot, z_order: tuple[str, ...]) -> None:
    """delta-spark's ``validateZorderByColumns``: data columns of the table only."""
    partitions = {c.lower() for c in snapshot.partition_columns}
    data_schema = StructType([f for f in spark_schema(snapshot).fields if f.name.lower() not in partitions])
    for column in z_order:
        if column.lower() in partitions:
            raise DeltaIllegalArgumentException(
                f"{column} is a partition column. Z-Ordering can only be performed on data columns",
                errorClass="DELTA_ZORDERING_ON_PARTITION_COLUMN",
            )
        if not _resolves(data_schema, column.split(".")):
            raise DeltaIllegalArgumentException(
                f"Z-Ordering column {column} does not exist in data schema.", errorClass="DELTA_ZORDERING_COLUMN_DOES_NOT_EXIST"
            )


def _partition_keys(files: pa.Table) -> list[str]:
    return cast(list[str], partition_keys(files.column(PARTITION_VALUES)).to_pylist())


def _bins(files: pa.Table, target: int) -> list[list[int]]:
    """Row numbers of ``files`` per output file: small files packed per partition; lone files without a DV skipped."""
    sizes = cast(list[int], files.column("size").to_pylist())
    has_dv = cast(list[bool], files.column("deletionVector").is_valid().to_pylist())
    by_partition: dict[str, list[int]] = {}
    for i, key in enumerate(_partition_keys(files)):
        if sizes[i] < target or has_dv[i]:
            by_partition.setdefault(key, []).append(i)
    bins: list[list[int]] = []
    for members in by_partition.values():
        current: list[int] = []
        filled = 0
        for i in sorted(members, key=lambda i: sizes[i]):
            if current and filled + sizes[i] > target:
                bins.append(current)
                current, filled = [], 0
            current.append(i)
            filled += sizes[i]
        bins.append(current)
    return [b for b in bins if len(b) > 1 or has_dv[b[0]]]


def _hash_keys(spark: SparkSession, count: int) -> list[int]:
    """For each task number, a value Spark's hash partitioning sends to that task, so each bin is one task."""
    found: dict[int, int] = {}
    start = 0
    while len(found) < count:
        probe = spark.range(start, start + 64 * count).select("id", F.pmod(F.hash("id"), F.lit(count)).alias("task"))
        for row in probe.groupBy("task").agg(F.min("id")).collect():
            found.setdefault(int(row[0]), int(row[1]))
        start += 64 * count
    return [found[task] for task in range(count)]


def _order_preserving_number(column: Column, data_type: object) -> Column:
    """A double that sorts as the column does (strings by their first 7 bytes)."""
    if isinstance(data_type, (TimestampType, TimestampNTZType)):
        return F.unix_micros(column.cast("timestamp")).cast("double")
    if isinstance(data_type, DateType):
        return F.unix_date(column).cast("double")
    if isinstance(data_type, StringType):
        prefix = F.rpad(F.hex(F.substring(F.encode(column, "UTF-8"), 1, 7)), 14, "0")
        return F.conv(prefix, 16, 10).cast("double")
    if isinstance(data_type, NumericType):
        return column.cast("double")
    raise DeltaAnalysisException(f"Z-order cannot order a column of type {data_type}")


def _with_curve_key(rows: DataFrame, columns: list[str], hilbert: bool) -> DataFrame:
    """``rows`` with ``_Z``: the rows' position on a curve through the columns' quantile buckets.

    Buckets come from one approximate-quantile job; Spark's ``Bucketizer`` finds each
    value's bucket by binary search in the JVM. NULLs sort first, in bucket 0. The curve
    is a Z-curve (ZORDER BY, interleaved bits, the first column's most significant, as
    delta-spark's ``interleave_bits``) or, for liquid clustering of two or more columns,
    a Hilbert curve, as delta-spark's: it has no Z-curve's long jumps, so each file
    covers a more compact box and a range on either column reads fewer files.
    """
    bits = max(1, min(_BITS_PER_COLUMN, _TOTAL_Z_BITS // len(columns)))
    buckets = 1 << bits
    numbers = [f"{_Z}_n{i}" for i in range(len(columns))]
    names = [f"{_Z}_b{i}" for i in range(len(columns))]
    for number, column in zip(numbers, columns, strict=True):
        reference = F.col(".".join(f"`{part}`" for part in column.split(".")))
        value = _order_preserving_number(reference, rows.select(reference).schema[0].dataType)
        rows = rows.withColumn(number, F.coalesce(value, F.lit(float("-inf"))))
    quantiles = rows.approxQuantile(numbers, [k / buckets for k in range(1, buckets)], 1 / (4 * buckets))
    splits = [[float("-inf"), *sorted({q for q in bounds if math.isfinite(q)}), float("inf")] for bounds in quantiles]
    rows = Bucketizer(splitsArray=splits, inputCols=numbers, outputCols=names, handleInvalid="keep").transform(rows)
    rows = rows.drop(*numbers)
    for name in names:
        rows = rows.withColumn(name, F.col(name).cast("long"))
    if hilbert and len(names) > 1:
        rows = _hilbert_transpose(rows, names, bits)
    return rows.withColumn(_Z, _interleaved(names, bits)).drop(*names)


def _interleaved(names: list[str], bits: int) -> Column:
    """The columns' low ``bits`` bits interleaved, most significant first, the first column's first at each level."""
    n = len(names)
    key: Column = F.lit(0).cast("long")
    for i, name in enumerate(names):
        for bit in range(bits):
            key = key.bitwiseOR(F.shiftleft(F.shiftright(F.col(name), bit).bitwiseAND(F.lit(1)), bit * n + (n - 1 - i)))
    return key


def _hilbert_transpose(rows: DataFrame, names: list[str], bits: int) -> DataFrame:
    """Skilling's axes-to-transpose ("Programming the Hilbert curve", 2004) on ``bits``-bit columns.

    Interleaving the result gives the Hilbert index. Each step is its own projection, so
    the expression tree stays linear in ``bits`` x columns: Spark keeps projections apart
    when a later one reads a CASE of an earlier one twice.
    """
    x0 = names[0]
    q = 1 << (bits - 1)
    while q > 1:
        p = q - 1
        for xi in names:
            if xi == x0:
                rows = rows.withColumn(x0, F.when(F.col(x0).bitwiseAND(q) != 0, F.col(x0).bitwiseXOR(p)).otherwise(F.col(x0)))
                continue
            swap = F.col(x0).bitwiseXOR(F.col(xi)).bitwiseAND(p)
            set_bit = F.col(xi).bitwiseAND(q) != 0
            rows = rows.withColumns(  # both from the step's input
                {
                    x0: F.when(set_bit, F.col(x0).bitwiseXOR(p)).otherwise(F.col(x0).bitwiseXOR(swap)),
                    xi: F.when(set_bit, F.col(xi)).otherwise(F.col(xi).bitwiseXOR(swap)),
                }
            )
        q >>= 1
    for previous, xi in zip(names, names[1:], strict=False):  # Gray encode
        rows = rows.withColumn(xi, F.col(xi).bitwiseXOR(F.col(previous)))
    last = F.col(names[-1])
    flips: Column = F.lit(0).cast("long")
    q = 1 << (bits - 1)
    while q > 1:
        flips = flips.bitwiseXOR(F.when(last.bitwiseAND(q) != 0, F.lit(q - 1)).otherwise(F.lit(0)))
        q >>= 1
    return rows.withColumns({xi: F.col(xi).bitwiseXOR(flips) for xi in names})


def _json(value: object) -> str:
    """JSON as delta-spark's Jackson writes a parameter: compact, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def optimize(
    spark: SparkSession,
    table: Table,
    partition_filter: str | Sequence[str] | None,
    z_order: tuple[str, ...],
    partitions: list[dict[str, str | None]] | None = None,
    target: int | None = None,
    purge: bool = False,
) -> OptimizeResult:
    """OPTIMIZE; ``partitions`` and ``target`` are auto-compaction's: the partitions a write
    touched and its own target size (recorded as ``auto`` in the history). ``purge`` is
    ``REORG TABLE ... APPLY (PURGE)``: only files with deletion vectors, rewritten without them.

    ``partition_filter`` is one predicate or several (``where`` twice), each over partition
    columns only. The checks run in delta-spark's order: clustering, predicates, Z-order columns.
    """
    start_time_ms = int(time.time() * 1000)
    filters = (partition_filter,) if isinstance(partition_filter, str) else tuple(partition_filter or ())
    snapshot = table.snapshot()
    require_writable(snapshot.protocol, snapshot.metadata, table.root)
    schema = spark_schema(snapshot)
    names = {f.name.lower(): f.name for f in schema.fields}
    clustering = clustering_columns(snapshot)
    if clustering is not None and not purge:
        if filters:
            raise DeltaUnsupportedOperationException(
                "OPTIMIZE command for Delta table with clustering doesn't support partition predicates. "
                f"Please remove the predicates: {' '.join(filters)}.",
                errorClass="DELTA_CLUSTERING_WITH_PARTITION_PREDICATE",
            )
        if z_order:
            raise DeltaAnalysisException(
                "OPTIMIZE command for Delta table with clustering cannot specify ZORDER BY. "
                f"Please remove ZORDER BY ({', '.join(z_order)}).",
                errorClass="DELTA_CLUSTERING_WITH_ZORDER_BY",
            )
    recorded_predicates = checked_partition_predicates(spark, snapshot, filters)
    _check_z_order_columns(snapshot, z_order)
    considered = (
        files_in_selected_partitions(spark, snapshot, filters)
        if partitions is None
        else files_in_partitions(snapshot, partitions)
    )
    if purge:
        considered = considered.filter(considered.column(DELETION_VECTOR).is_valid())
    auto = target is not None
    target = target or target_file_size(spark, snapshot)
    if purge:
        bins = _bins(considered, target)
        order_by = []
    elif clustering:  # only what no OPTIMIZE has clustered yet
        unclustered = cast(list[int], pc.indices_nonzero(pc.is_null(considered.column("clusteringProvider"))).to_pylist())
        bins = [unclustered] if unclustered else []
        order_by = clustering
    elif z_order:
        groups: dict[str, list[int]] = {}
        for i, key in enumerate(_partition_keys(considered)):
            groups.setdefault(key, []).append(i)
        bins = list(groups.values())
        order_by = [names.get(c.lower(), c) for c in z_order]
    else:
        bins = _bins(considered, target)
        order_by = []
    chosen = considered.take(pa.array(sorted(i for b in bins for i in b), pa.int64()))
    adds = _rewrite(spark, snapshot, considered, bins, order_by, target, hilbert=bool(clustering))
    if clustering and not purge:
        adds = [replace(a, clustering_provider=CLUSTERING_PROVIDER) for a in adds]
    removed_sizes = cast(list[int], chosen.column("size").to_pylist())
    dvs = chosen.column(DELETION_VECTOR)
    removed_dvs = cast(pa.StructArray, dvs.filter(dvs.is_valid()).combine_chunks())
    metrics = optimize_metrics(
        spark,
        snapshot,
        adds=[a.size for a in adds],
        removed=removed_sizes,
        partitions_optimized=len(set(_partition_keys(chosen))),
        bins=len(bins),
        considered=cast(list[int], considered.column("size").to_pylist()),
        start_time_ms=start_time_ms,
        dv_cardinalities=cast(list[int], removed_dvs.field("cardinality").to_pylist()),
        mode="cluster" if clustering and not purge else "z-order" if z_order else "compact",
    )
    if chosen.num_rows:
        transaction = table.transaction(read_snapshot=snapshot)
        transaction.mark_files_read(file_paths(chosen))
        predicate = _json(recorded_predicates)
        parameters = (
            {"predicate": predicate, "applyPurge": True}
            if purge
            else {
                "predicate": predicate,
                "zOrderBy": _json([] if clustering else list(z_order)),
                "clusterBy": _json(clustering or []),
                "auto": auto,
                **({"isFull": False} if clustering else {}),
            }
        )
        commit_metrics = {
            "numAddedFiles": len(adds),
            "numRemovedFiles": chosen.num_rows,
            "numAddedBytes": sum(a.size for a in adds),
            "numRemovedBytes": sum(removed_sizes),
            **added_file_sizes([a.size for a in adds]),
            "numDeletionVectorsRemoved": len(removed_dvs),
        }
        try:
            commit = transaction.commit(
                [*remove_actions(chosen, data_change=False), *adds],
                "REORG" if purge else "OPTIMIZE",
                parameters,
                commit_metrics,
                tags=row_tracking.commit_tags(snapshot) or None,
            )
        except BaseException:
            discard_uncommitted(transaction, table.storage, table.root, adds)
            raise
        return OptimizeResult(commit, commit_metrics, qualified(table.root), metrics)
    return OptimizeResult(None, {}, qualified(table.root), metrics)


def _rewrite(
    spark: SparkSession,
    snapshot: Snapshot,
    files: pa.Table,
    bins: list[list[int]],
    z_order: list[str],
    target: int,
    hilbert: bool = False,
) -> list:
    """Write each bin's rows as new files (one per bin, or curve-ordered files of about ``target`` bytes)."""
    if not bins:
        return []
    order = [i for b in bins for i in b]
    keys = _hash_keys(spark, len(bins)) if not z_order else list(range(len(bins)))
    labels = pa.array([keys[n] for n, b in enumerate(bins) for _ in b], pa.int64())
    chosen = files.take(pa.array(order, pa.int64())).append_column(_BIN, labels)
    tracked = row_tracking.preserves(snapshot)  # compacted rows keep their ids and versions
    read = row_tracking.read_with_row_tracking if tracked else read_files
    rows = read(spark, snapshot, chosen, file_columns=[_BIN])
    columns = [F.col(f"`{f}`") for f in spark_schema(snapshot).fieldNames()] + [F.col(c) for c in row_tracking.COLUMNS if tracked]
    if not z_order:
        rows = rows.repartition(len(bins), F.col(_BIN))
    else:
        total = int(pc.sum(chosen.column("size")).as_py() or 0)
        count = max(1, math.ceil(total / target))
        rows = _with_curve_key(rows, z_order, hilbert)
        rows = rows.repartitionByRange(count, F.col(_BIN), F.col(_Z)).sortWithinPartitions(F.col(_Z))
    adds = write_table_files(rows.select(*columns), snapshot, data_change=False).adds
    empty = [a for a, rows in zip(adds, record_counts(adds), strict=True) if rows == 0]
    remove_unreferenced(snapshot.storage, snapshot.table_root, empty)
    return [a for a in adds if a not in empty]


def purge_deletion_vectors(
    spark: SparkSession, table: Table, partition_filter: str | Sequence[str] | None = None
) -> OptimizeResult:
    """``REORG TABLE ... APPLY (PURGE)``: rewrite the files that have deletion vectors, so
    deleted rows are gone from storage (and DROP FEATURE deletionVectors can proceed)."""
    return optimize(spark, table, partition_filter, (), purge=True)
