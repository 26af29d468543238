"""delta-spark's ``delta.autoOptimize.*``: optimized writes and auto compaction, for tables fed by small appends.

Optimized writes (``delta.autoOptimize.optimizeWrite`` or
``spark.databricks.delta.optimizeWrite.enabled``) rebalance a write's rows before the
Parquet writer, so each partition value gets files of Spark's advisory size rather than
one small file per task. Auto compaction (``delta.autoOptimize.autoCompact`` or
``spark.databricks.delta.autoCompact.enabled``) runs after a write commits: when the
partitions it wrote hold at least ``spark.databricks.delta.autoCompact.minNumFiles``
(50) files smaller than ``spark.databricks.delta.autoCompact.maxFileSize`` (128 MiB),
they are compacted into files of that size, as a separate OPTIMIZE commit marked auto.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from ...kernel import AddFile, Table
from ..conf import AUTO_COMPACT, AUTO_COMPACT_MAX_FILE_SIZE, AUTO_COMPACT_MIN_FILES, get_int, table_or_session_flag
from ..write.overwrite import files_in_partitions
from .optimize import optimize


def auto_compact(spark: SparkSession, table: Table, written: list[AddFile]) -> None:
    """Compact the partitions ``written`` touched, when auto compaction is on and they hold many small files."""
    snapshot = table.snapshot()
    if not written or not table_or_session_flag(spark, snapshot.configuration, AUTO_COMPACT):
        return
    max_size = get_int(spark, AUTO_COMPACT_MAX_FILE_SIZE)
    files = files_in_partitions(snapshot, [a.partition_values for a in written])
    # Arrow sums booleans as counts; the stubs sum numbers only.
    small = int(pc.sum(pc.less(files.column("size"), pa.scalar(max_size, pa.int64()))).as_py() or 0)  # type: ignore[type-var]
    if small < get_int(spark, AUTO_COMPACT_MIN_FILES):
        return
    optimize(spark, table, None, (), partitions=[a.partition_values for a in written], target=max_size)
