"""Deletion vectors written by DML: rows marked deleted where they are, on the executors.

The rows to delete arrive as (file path, row index) pairs. They are hash-partitioned by
file, so each file's rows meet in one task; each task unions them per file with the
file's current DV, writes all its DVs into one ``deletion_vector_<uuid>.bin`` (as
delta-spark does per task) and returns one descriptor row per file. The driver only
sees those rows, and turns each into a remove of the file with its old DV and an add of
the same file with the new one (PROTOCOL.md, "Deletion Vectors"), or into a plain
remove when the file has no row left.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyroaring import BitMap64
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from ....kernel import AddFile, Snapshot
from ....kernel.actions import Action
from ....kernel.deletion_vectors import (
    DeletionVectorDescriptor,
    bitmap_of,
    read_deletion_vector,
    write_deletion_vectors,
)
from ....kernel.errors import DeletionVectorError
from ....kernel.file_actions import remove_actions
from ....kernel.scan import DELETION_VECTOR, NUM_RECORDS
from ....kernel.storage import Storage
from ...paths import absolute_path
from ...session_facts import default_parallelism
from .files import FILE_PATH_COLUMN, MATCHED_ROWS_COLUMN, ROW_INDEX_COLUMN

_DV_FIELDS = ("storageType", "pathOrInlineDv", "offset", "sizeInBytes", "cardinality")
_NUM_RECORDS = "numRecords"
_DV_FILE = "dvFile"
_RESULT = StructType(
    [
        StructField("path", StringType(), False),
        StructField(MATCHED_ROWS_COLUMN, LongType(), False),
        StructField(_NUM_RECORDS, LongType(), False),
        StructField("storageType", StringType()),
        StructField("pathOrInlineDv", StringType()),
        StructField("offset", IntegerType()),
        StructField("sizeInBytes", IntegerType()),
        StructField("cardinality", LongType()),
        StructField(_DV_FILE, StringType()),
    ]
)
_RESULT_ARROW_FIELDS: list[pa.Field] = [
    pa.field("path", pa.string(), False),
    pa.field(MATCHED_ROWS_COLUMN, pa.int64(), False),
    pa.field(_NUM_RECORDS, pa.int64(), False),
    pa.field("storageType", pa.string()),
    pa.field("pathOrInlineDv", pa.string()),
    pa.field("offset", pa.int32()),
    pa.field("sizeInBytes", pa.int32()),
    pa.field("cardinality", pa.int64()),
    pa.field(_DV_FILE, pa.string()),
]
_RESULT_ARROW = pa.schema(_RESULT_ARROW_FIELDS)


@dataclass(frozen=True)
class DeletedRows:
    """What ``store_deletion_vectors`` did: the touched files and the actions that record it."""

    touched: pa.Table  # rows of the given files that lost rows, with MATCHED_ROWS_COLUMN
    files_emptied: pa.Table  # of those, the files left without rows (removed outright)
    actions: list[Action]
    dv_files: list[str]  # DV files written (absolute), to delete if the commit fails
    vectors_added: int
    vectors_updated: int
    vectors_removed: int

    @property
    def num_rows(self) -> int:
        """Rows newly deleted."""
        return int(pc.sum(self.touched.column(MATCHED_ROWS_COLUMN)).as_py() or 0)


def _file_info(files: pa.Table) -> pa.Table:
    """What a task needs per candidate file (scan files): its current DV and its record count."""
    dvs = cast(pa.StructArray, files.column(DELETION_VECTOR).combine_chunks())
    columns: list[pa.Array | pa.ChunkedArray] = [files.column("path"), files.column(NUM_RECORDS)]
    columns += [dvs.field(name) for name in _DV_FIELDS]
    return pa.Table.from_arrays(columns, names=["path", _NUM_RECORDS, *_DV_FIELDS])


def _physical_rows(storage: Storage, root: str, path: str) -> int:
    """A data file's row count, from its Parquet footer (for files whose add has no stats)."""
    location = absolute_path(root, path)
    local = storage.local_path(location)
    source = local if local is not None else pa.BufferReader(storage.read(location))
    return int(pq.read_metadata(source).num_rows)


def _rows_by_file(batches: Iterator[pa.RecordBatch]) -> dict[str, BitMap64]:
    """The row indexes of each file in a task's batches, grouped by Arrow, not per row."""
    bitmaps: dict[str, BitMap64] = {}
    for batch in batches:
        if batch.num_rows == 0:
            continue
        grouped = pa.Table.from_batches([batch]).group_by(FILE_PATH_COLUMN).aggregate([(ROW_INDEX_COLUMN, "list")])
        lists = grouped.column(f"{ROW_INDEX_COLUMN}_list").combine_chunks()
        values = pc.list_flatten(lists).to_numpy(zero_copy_only=False)
        ends = np.cumsum(pc.list_value_length(lists).to_numpy(zero_copy_only=False))
        starts = ends - pc.list_value_length(lists).to_numpy(zero_copy_only=False)
        for path, start, end in zip(cast(list[str], grouped.column(FILE_PATH_COLUMN).to_pylist()), starts, ends, strict=True):
            indexes = bitmap_of(values[start:end])
            if path in bitmaps:
                bitmaps[path] |= indexes
            else:
                bitmaps[path] = indexes
    return bitmaps


def _store_task(storage: Storage, root: str, info: pa.Table, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor side: one task's (path, row index) rows in, one row per file with its new DV out."""
    bitmaps = _rows_by_file(batches)
    if not bitmaps:
        return
    known = info.filter(pc.is_in(info.column("path"), value_set=pa.array(list(bitmaps), pa.string())))
    by_path = {row["path"]: row for row in known.to_pylist()}
    paths, added, totals, merged = [], [], [], []
    for path in sorted(bitmaps):
        if path not in by_path:
            raise DeletionVectorError(f"{root}: DML marked rows of {path}, which is not among the files it read")
        row = by_path[path]
        new = bitmaps[path]
        bitmap = new
        if row["storageType"] is not None:
            old = bitmap_of(read_deletion_vector(storage, root, DeletionVectorDescriptor.from_dict(row), path))
            if old.intersection_cardinality(new):
                raise DeletionVectorError(f"{root}: DML deletes rows of {path} that its deletion vector already deletes")
            bitmap = old | new
        total = row[_NUM_RECORDS] if row[_NUM_RECORDS] is not None else _physical_rows(storage, root, path)
        if bitmap.max() >= total:
            raise DeletionVectorError(f"{root}: row index {bitmap.max()} is past the end of {path} ({total} rows)")
        paths.append(path)
        added.append(len(new))
        totals.append(total)
        merged.append(bitmap)
    kept = [i for i, bitmap in enumerate(merged) if len(bitmap) < totals[i]]  # a file losing every row gets no DV
    descriptors: list[DeletionVectorDescriptor | None] = [None] * len(paths)
    for i, descriptor in zip(kept, write_deletion_vectors(storage, root, [merged[i] for i in kept]), strict=True):
        descriptors[i] = descriptor
    dv_file = next((d.absolute_path(root) for d in descriptors if d is not None), None)
    yield pa.RecordBatch.from_arrays(
        [
            pa.array(paths, pa.string()),
            pa.array(added, pa.int64()),
            pa.array(totals, pa.int64()),
            pa.array([None if d is None else d.storage_type for d in descriptors], pa.string()),
            pa.array([None if d is None else d.path_or_inline_dv for d in descriptors], pa.string()),
            pa.array([None if d is None else d.offset for d in descriptors], pa.int32()),
            pa.array([None if d is None else d.size_in_bytes for d in descriptors], pa.int32()),
            pa.array([None if d is None else d.cardinality for d in descriptors], pa.int64()),
            pa.array([None if d is None else dv_file for d in descriptors], pa.string()),
        ],
        schema=_RESULT_ARROW,
    )


def _wide_bounds(stats: str | None, num_records: int) -> str:
    """A re-added file's stats: the old ones (counting the data file's rows), no longer tight bounds."""
    parsed = json.loads(stats) if stats else {"numRecords": num_records}
    parsed["tightBounds"] = False
    return json.dumps(parsed, separators=(",", ":"))


def store_deletion_vectors(spark: SparkSession, snapshot: Snapshot, files: pa.Table, rows: DataFrame) -> DeletedRows:
    """Mark ``rows`` (``FILE_PATH_COLUMN``, ``ROW_INDEX_COLUMN``) of ``files`` deleted with deletion vectors.

    ``rows`` must come from a target read of ``files`` (``read_target``), so no row is
    one the file's current DV already deletes; the tasks check it.
    """
    root = snapshot.table_root
    tasks = max(1, min(files.num_rows, default_parallelism(spark)))
    pairs = rows.select(FILE_PATH_COLUMN, ROW_INDEX_COLUMN).repartition(tasks, FILE_PATH_COLUMN)
    store = partial(_store_task, snapshot.storage, root, _file_info(files))
    results = pairs.mapInArrow(store, _RESULT).toArrow()
    written = cast(list[str], pc.unique(results.column(_DV_FILE).drop_null()).to_pylist())
    touched = files.filter(pc.is_in(files.column("path"), value_set=results.column("path")))
    positions = pc.index_in(touched.column("path"), value_set=results.column("path"))
    touched = touched.append_column(MATCHED_ROWS_COLUMN, pc.take(results.column(MATCHED_ROWS_COLUMN), positions))
    by_path = {r["path"]: r for r in results.to_pylist()}
    removes = remove_actions(touched, data_change=True)
    actions: list[Action] = []
    emptied: list[bool] = []
    added = updated = removed = 0
    for file, remove in zip(touched.to_pylist(), removes, strict=True):
        result = by_path[file["path"]]
        had_dv = file["deletionVector"] is not None
        actions.append(remove)
        emptied.append(result["storageType"] is None)
        if emptied[-1]:
            removed += had_dv
            continue
        added += not had_dv
        updated += had_dv
        actions.append(
            AddFile(
                file["path"],
                dict(file["partitionValues"]),
                file["size"],
                file["modificationTime"],
                True,
                _wide_bounds(file["stats"], result[_NUM_RECORDS]),
                dict(file["tags"]) if file["tags"] else None,
                DeletionVectorDescriptor.from_dict(result).to_dict(),
            )
        )
    return DeletedRows(
        touched,
        touched.filter(pa.array(emptied, pa.bool_())),
        actions,
        written,
        added,
        updated,
        removed,
    )
