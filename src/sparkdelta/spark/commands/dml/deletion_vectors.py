"""Deletion vectors written by DML: rows marked deleted where they are.

The rows to delete arrive as (file path, row index) pairs. They are hash-partitioned by
file, so each file's rows meet in one task, which returns the file's new deletions as a
serialized DV (compact: at most a bit per row of the file) with its count; the code that
does so is shipped by value (``spark/worker``), so the Spark server needs nothing of
sparkdelta. The client unions each with the file's current DV, if it has one, writes the
DVs into ``deletion_vector_<uuid>.bin`` files (one per ``_DV_FILE_BYTES``) through the
kernel's storage, and turns each
file into a remove of the file with its old DV and an add of the same file with the new
one (PROTOCOL.md, "Deletion Vectors"), or into a plain remove when no row is left.

The union happens on the client, not on the executors: the client writes every new DV
anyway, and a file's merged DV is at least as large as its old one, so reading the old
ones costs it no more than what it writes, where the executors would need a second scan
of the old DV files and a shuffle of their bytes to meet the rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

from ....kernel import AddFile, Snapshot
from ....kernel.actions import Action
from ....kernel.deletion_vectors import (
    DeletionVectorDescriptor,
    bitmap_of,
    decode_bitmap_array,
    encode_bitmap_array,
    read_deletion_vectors,
    write_deletion_vectors,
)
from ....kernel.errors import DeletionVectorError
from ....kernel.file_actions import remove_actions
from ....kernel.scan import DELETION_VECTOR, NUM_RECORDS
from ....kernel.storage import Storage
from ...paths import absolute_path
from ...session_facts import default_parallelism
from ...worker.deletion_vectors import DV, LAST_ROW, PATH, ROWS, deleted_rows_by_file
from .files import FILE_PATH_COLUMN, MATCHED_ROWS_COLUMN, ROW_INDEX_COLUMN

_DELETED_ROWS = StructType(
    [
        StructField(PATH, StringType(), False),
        StructField(ROWS, LongType(), False),
        StructField(LAST_ROW, LongType(), False),
        StructField(DV, BinaryType(), False),
    ]
)
# DVs go into one DV file up to about this size, then into another.
_DV_FILE_BYTES = 64 << 20


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


def _physical_rows(storage: Storage, root: str, path: str) -> int:
    """A data file's row count, from its Parquet footer (for files whose add has no stats)."""
    location = absolute_path(root, path)
    local = storage.local_path(location)
    source = local if local is not None else pa.BufferReader(storage.read(location))
    return int(pq.read_metadata(source).num_rows)


def _new_vectors(snapshot: Snapshot, touched: pa.Table, deleted: pa.Table) -> tuple[list[tuple[bytes, int] | None], list[int]]:
    """Per touched file, its DV (serialized, with its cardinality) after ``deleted`` (aligned rows of
    ``DELETED_ROWS``), or None when it deletes every row of the file; and the file's row count.

    A file without a DV takes the executors' one as it is; one with a DV, the union of both.
    """
    storage, root = snapshot.storage, snapshot.table_root
    paths = cast(list[str], touched.column("path").to_pylist())
    old_dvs = cast(list[dict[str, Any] | None], touched.column(DELETION_VECTOR).to_pylist())
    with_dv = {i: DeletionVectorDescriptor.from_dict(dv) for i, dv in enumerate(old_dvs) if dv is not None}
    old = read_deletion_vectors(storage, root, [(descriptor, paths[i]) for i, descriptor in with_dv.items()])
    old_rows = dict(zip(with_dv, old, strict=True))
    totals = cast(list[int | None], touched.column(NUM_RECORDS).to_pylist())
    counts = cast(list[int], deleted.column(ROWS).to_pylist())
    last_rows = cast(list[int], deleted.column(LAST_ROW).to_pylist())
    vectors: list[tuple[bytes, int] | None] = []
    rows: list[int] = []
    for i, (path, count, last, data) in enumerate(
        zip(paths, counts, last_rows, cast(list[bytes], deleted.column(DV).to_pylist()), strict=True)
    ):
        if i in old_rows:
            new, before = decode_bitmap_array(data), bitmap_of(old_rows[i])
            if before.intersection_cardinality(new):
                raise DeletionVectorError(f"{root}: DML deletes rows of {path} that its deletion vector already deletes")
            merged = before | new
            data, count, last = encode_bitmap_array(merged), len(merged), merged.max()
        known = totals[i]
        total = known if known is not None else _physical_rows(storage, root, path)
        rows.append(total)
        if last >= total:
            raise DeletionVectorError(f"{root}: row index {last} is past the end of {path} ({total} rows)")
        vectors.append((data, count) if count < total else None)  # a file losing every row gets no DV
    return vectors, rows


def _write_vectors(
    snapshot: Snapshot, vectors: list[tuple[bytes, int] | None]
) -> tuple[list[DeletionVectorDescriptor | None], list[str]]:
    """Descriptors of ``vectors`` (None stays None), written into DV files of up to about
    ``_DV_FILE_BYTES`` each; the DV files written."""
    groups: list[list[int]] = [[]]
    size = 0
    for i, vector in enumerate(vectors):
        if vector is None:
            continue
        if groups[-1] and size + len(vector[0]) > _DV_FILE_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(i)
        size += len(vector[0])
    descriptors: list[DeletionVectorDescriptor | None] = [None] * len(vectors)
    written: list[str] = []
    for group in filter(None, groups):
        stored = write_deletion_vectors(
            snapshot.storage, snapshot.table_root, [cast(tuple[bytes, int], vectors[i]) for i in group]
        )
        written.append(cast(str, stored[0].absolute_path(snapshot.table_root)))
        for i, descriptor in zip(group, stored, strict=True):
            descriptors[i] = descriptor
    return descriptors, written


def _wide_bounds(stats: str | None, num_records: int) -> str:
    """A re-added file's stats: the old ones (counting the data file's rows), no longer tight bounds."""
    parsed = json.loads(stats) if stats else {"numRecords": num_records}
    parsed["tightBounds"] = False
    return json.dumps(parsed, separators=(",", ":"))


def store_deletion_vectors(spark: SparkSession, snapshot: Snapshot, files: pa.Table, rows: DataFrame) -> DeletedRows:
    """Mark ``rows`` (``FILE_PATH_COLUMN``, ``ROW_INDEX_COLUMN``) of ``files`` deleted with deletion vectors.

    ``rows`` must come from a target read of ``files`` (``read_target``), so no row is
    one the file's current DV already deletes; the union checks it.
    """
    root = snapshot.table_root
    tasks = max(1, min(files.num_rows, default_parallelism(spark)))
    pairs = rows.select(FILE_PATH_COLUMN, ROW_INDEX_COLUMN).repartition(tasks, FILE_PATH_COLUMN)
    deleted = pairs.mapInArrow(deleted_rows_by_file, _DELETED_ROWS).toArrow()
    unknown = pc.invert(pc.is_in(deleted.column(PATH), value_set=files.column("path")))
    if pc.any(unknown).as_py():
        raise DeletionVectorError(
            f"{root}: DML marked rows of {deleted.column(PATH).filter(unknown)[0]}, which is not among the files it read"
        )
    touched = files.filter(pc.is_in(files.column("path"), value_set=deleted.column(PATH)))
    deleted = deleted.take(pc.index_in(touched.column("path"), value_set=deleted.column(PATH)))
    touched = touched.append_column(MATCHED_ROWS_COLUMN, deleted.column(ROWS))
    vectors, totals = _new_vectors(snapshot, touched, deleted)
    descriptors, written = _write_vectors(snapshot, vectors)
    removes = remove_actions(touched, data_change=True)
    actions: list[Action] = []
    emptied: list[bool] = []
    added = updated = removed = 0
    for file, remove, descriptor, total in zip(touched.to_pylist(), removes, descriptors, totals, strict=True):
        had_dv = file["deletionVector"] is not None
        actions.append(remove)
        emptied.append(descriptor is None)
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
                _wide_bounds(file["stats"], total),
                dict(file["tags"]) if file["tags"] else None,
                cast(DeletionVectorDescriptor, descriptor).to_dict(),
                file.get("baseRowId"),  # the same rows: their row ids and commit versions stay
                file.get("defaultRowCommitVersion"),
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
