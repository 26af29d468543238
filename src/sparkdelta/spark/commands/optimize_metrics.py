"""OPTIMIZE's answers in delta-spark's shapes: the metrics row and the commit's file sizes.

delta-spark's ``OptimizeTableCommand`` answers one row of ``path`` and ``metrics``, its
``OptimizeMetrics`` case class, and records the added files' size percentiles in the
commit's ``operationMetrics``; code reading either (``metrics.zOrderStats.numOutputCubes``,
``p50FileSize``) finds the same fields here.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from ...kernel import Snapshot
from ...kernel.stats_schema import DEFAULT_NUM_INDEXED_COLS
from ..session_facts import default_parallelism


def _size_stats(sizes: list[int]) -> dict[str, int | float | None]:
    """delta-spark's ``FileSizeMetrics``: no min or max without files."""
    if not sizes:
        return {"min": None, "max": None, "avg": 0.0, "totalFiles": 0, "totalSize": 0}
    return {
        "min": min(sizes),
        "max": max(sizes),
        "avg": sum(sizes) / len(sizes),
        "totalFiles": len(sizes),
        "totalSize": sum(sizes),
    }


def added_file_sizes(sizes: list[int]) -> dict[str, int]:
    """delta-spark's ``FileSizeStatsWithHistogram`` of the added files, for the commit's metrics."""
    ordered = sorted(sizes) or [0]
    count = len(ordered)
    return {
        "minFileSize": ordered[0],
        "p25FileSize": ordered[count // 4],
        "p50FileSize": ordered[count // 2],
        "p75FileSize": ordered[count * 3 // 4],
        "maxFileSize": ordered[-1],
    }


def optimize_metrics(
    spark: SparkSession,
    snapshot: Snapshot,
    adds: list[int],
    removed: list[int],
    partitions_optimized: int,
    bins: int,
    considered: list[int],
    start_time_ms: int,
    dv_cardinalities: list[int],
    mode: str,
) -> dict[str, Any]:
    """delta-spark's ``OptimizeMetrics`` (its ``OptimizeStats.toOptimizeMetrics``), field for field.

    Z-order reports delta-spark's ``ZOrderStats`` of strategy ``all`` (every file of a
    partition rewritten into one cube per partition); liquid clustering its
    ``ClusteringStats``, with every input file outside a ZCube, as sparkdelta tags none.
    Batches are always one, as delta-spark's without ``optimize.batchSize``; ``endTimeMs``
    stays 0 and ``totalScheduledTasks`` too, as delta-spark leaves them.
    """
    columns = len(snapshot.schema.fields)
    indexed = int(snapshot.configuration.get("delta.dataSkippingNumIndexedCols", DEFAULT_NUM_INDEXED_COLS))
    merged = sum(removed)
    return {
        "numFilesAdded": len(adds),
        "numFilesRemoved": len(removed),
        "filesAdded": _size_stats(adds),
        "filesRemoved": _size_stats(removed),
        "partitionsOptimized": partitions_optimized,
        "zOrderStats": {
            "strategyName": "all",
            "inputCubeFiles": {"num": 0, "size": 0},
            "inputOtherFiles": {"num": len(removed), "size": merged},
            "inputNumCubes": 0,
            "mergedFiles": {"num": len(removed), "size": merged},
            "numOutputCubes": partitions_optimized,
            "mergedNumCubes": None,
        }
        if mode == "z-order"
        else None,
        "clusteringStats": {
            "inputZCubeFiles": {"numFiles": 0, "size": 0},
            "inputOtherFiles": {"numFiles": len(considered), "size": sum(considered)},
            "inputNumZCubes": 0,
            "mergedFiles": {"numFiles": len(removed), "size": merged},
            "numOutputZCubes": bins,
        }
        if mode == "cluster"
        else None,
        "numBins": bins,
        "numBatches": 1,
        "totalConsideredFiles": len(considered),
        "totalFilesSkipped": len(considered) - len(removed),
        "preserveInsertionOrder": False,
        "numFilesSkippedToReduceWriteAmplification": 0,
        "numBytesSkippedToReduceWriteAmplification": 0,
        "startTimeMs": start_time_ms,
        "endTimeMs": 0,
        "totalClusterParallelism": default_parallelism(spark),
        "totalScheduledTasks": 0,
        "autoCompactParallelismStats": None,
        "deletionVectorStats": {
            "numDeletionVectorsRemoved": len(dv_cardinalities),
            "numDeletionVectorRowsRemoved": sum(dv_cardinalities),
        }
        if dv_cardinalities
        else None,
        "numTableColumns": columns,
        "numTableColumnsWithStats": min(indexed, columns),
    }


_SIZES = "struct<min: long, max: long, avg: double, totalFiles: long, totalSize: long>"
_Z_FILES = "struct<num: long, size: long>"
_CLUSTER_FILES = "struct<numFiles: long, size: long>"
# delta-spark's ``Encoders.product[OptimizeMetrics].schema``, nullability aside.
RESULT_SCHEMA = (
    "path string, metrics struct<numFilesAdded: long, numFilesRemoved: long, "
    f"filesAdded: {_SIZES}, filesRemoved: {_SIZES}, partitionsOptimized: long, "
    f"zOrderStats: struct<strategyName: string, inputCubeFiles: {_Z_FILES}, inputOtherFiles: {_Z_FILES}, "
    f"inputNumCubes: long, mergedFiles: {_Z_FILES}, numOutputCubes: long, mergedNumCubes: long>, "
    f"clusteringStats: struct<inputZCubeFiles: {_CLUSTER_FILES}, inputOtherFiles: {_CLUSTER_FILES}, "
    f"inputNumZCubes: long, mergedFiles: {_CLUSTER_FILES}, numOutputZCubes: long>, "
    "numBins: long, numBatches: long, totalConsideredFiles: long, totalFilesSkipped: long, "
    "preserveInsertionOrder: boolean, numFilesSkippedToReduceWriteAmplification: long, "
    "numBytesSkippedToReduceWriteAmplification: long, startTimeMs: long, endTimeMs: long, "
    "totalClusterParallelism: long, totalScheduledTasks: long, "
    "autoCompactParallelismStats: struct<maxClusterActiveParallelism: long, minClusterActiveParallelism: long, "
    "maxSessionActiveParallelism: long, minSessionActiveParallelism: long>, "
    "deletionVectorStats: struct<numDeletionVectorsRemoved: long, numDeletionVectorRowsRemoved: long>, "
    "numTableColumns: long, numTableColumnsWithStats: long>"
)
