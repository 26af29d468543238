"""What DELETE, UPDATE and MERGE share: which rows and files a change touches, and its one commit.

A DML command runs in three steps, each served here:

1. **Candidates** (``candidate_files``): the files that may hold a row the condition
   matches, by partition pruning and data skipping on the condition's kernel predicate.
2. **Target rows** (``read_target``): the candidates' rows, deletion vectors applied,
   each with its file's path as the log spells it (``FILE_PATH_COLUMN``) and its position
   in that file (``ROW_INDEX_COLUMN``). The files a change touches come from an
   aggregation on that path (``touched_files``), never from a loop over rows.
3. **The commit** (``DmlCommit``): the command writes through it and commits once:

   - copy-on-write: ``remove_files(touched)`` and ``add_rows(rows to keep and new versions)``;
   - deletion vectors (``deletion_vectors_enabled``): ``delete_rows(candidates, rows)``
     marks rows deleted where they are (a remove and an add of the same file with the
     merged DV; a file that loses every row is only removed), and ``add_rows(new
     versions)`` writes updated or inserted rows;
   - change data feed (``change_data_feed_enabled``): ``add_changes(rows with
     _change_type)`` writes ``_change_data`` files and their ``cdc`` actions. A commit
     with ``cdc`` actions is read only through them, so every changed row of the
     commit must be among them;
   - ``commit(metrics)``: one kernel commit with conflict checks against the files
     and partitions read. If anything fails before the commit lands, the files
     written so far are deleted and the table is unchanged.

   With an app transaction in the session (``spark.databricks.delta.write.txnAppId`` and
   ``txnVersion``, ``write/idempotent.py``) the command first asks ``already_committed()``
   and runs nothing when the table holds it; otherwise its commit carries the ``txn``.

Example (a copy-on-write DELETE, in outline)::

    with DmlCommit(spark, table, snapshot, "DELETE", {"predicate": [text]}) as dml:
        candidates = candidate_files(spark, snapshot, condition)
        dml.read(candidates, condition)
        target = read_target(spark, snapshot, candidates)
        touched = touched_files(candidates, target.where(matched(condition)))
        dml.remove_files(touched)
        dml.add_rows(read_target(spark, snapshot, touched).where(~matched(condition)))
        dml.commit({"numDeletedRows": int(pc.sum(touched.column(MATCHED_ROWS_COLUMN)).as_py())})
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from ....kernel import AddCDCFile, AddFile, Metadata, Protocol, Snapshot, Table
from ....kernel import skipping as S
from ....kernel.actions import Action
from ....kernel.command_result import NOTHING_COMMITTED, CommandResult
from ....kernel.file_actions import file_paths, remove_actions
from ....kernel.identity import marks_committed
from ....kernel.protocol import require_writable
from ....kernel.scan import DELETION_VECTOR, NUM_RECORDS, PARTITION_VALUES
from ...conf import USER_METADATA, get_str
from ...expressions import resolve_condition
from ...job_tags import tagged
from ...read.parquet import read_files
from ...read.predicates import Condition, kernel_predicate, table_schema
from ...row_tracking import commit_tags, preserves, read_with_row_tracking
from ...write.dataframe import (
    CHANGE_TYPE_COLUMN,
    keep_uncommitted,
    record_counts,
    remove_unreferenced,
    write_change_files,
    write_table_files,
)
from ...write.idempotent import already_committed, app_transaction, set_transaction
from .deletion_vectors import DeletedRows, store_deletion_vectors
from .files import FILE_PATH_COLUMN, MATCHED_ROWS_COLUMN, ROW_INDEX_COLUMN

__all__ = [
    "CHANGE_TYPE_COLUMN",
    "FILE_PATH_COLUMN",
    "Condition",
    "MATCHED_ROWS_COLUMN",
    "ROW_INDEX_COLUMN",
    "DmlCommit",
    "candidate_files",
    "change_data_feed_enabled",
    "condition_column",
    "condition_sql",
    "deletion_vectors_enabled",
    "matched",
    "partition_only_files",
    "read_target",
    "rows_written",
    "touched_files",
]


def deletion_vectors_enabled(snapshot: Snapshot) -> bool:
    """Whether DML marks rows deleted with deletion vectors (``delta.enableDeletionVectors``)."""
    return str(snapshot.configuration.get("delta.enableDeletionVectors", "false")).lower() == "true"


def change_data_feed_enabled(snapshot: Snapshot) -> bool:
    """Whether DML must write change data files (``delta.enableChangeDataFeed``)."""
    return str(snapshot.configuration.get("delta.enableChangeDataFeed", "false")).lower() == "true"


def condition_column(condition: Condition | None) -> Column:
    """A condition (SQL text or Column) as a Column; none means every row."""
    if condition is None:
        return F.lit(True)
    return F.expr(condition) if isinstance(condition, str) else condition


def condition_sql(spark: SparkSession, snapshot: Snapshot, condition: Condition) -> str:
    """A condition's SQL as Spark resolves it against the table, for ``operationParameters``.

    delta-spark records the resolved expression's SQL too (``(RideId = 100000)``), which
    ``spark/expressions`` prints in Python; what it cannot print is recorded as given.
    """
    text = resolve_condition(spark, condition, table_schema(snapshot)).sql()
    if text is not None:
        return text
    return condition if isinstance(condition, str) else str(condition)


def matched(condition: Condition | None) -> Column:
    """True exactly where ``condition`` is true: a NULL condition matches no row, as in SQL DML."""
    return F.coalesce(condition_column(condition), F.lit(False))


def candidate_files(spark: SparkSession, snapshot: Snapshot, condition: Condition | None) -> pa.Table:
    """The scan files (``Snapshot.scan``) that may hold a row matching ``condition`` (partition pruning, data skipping)."""
    return snapshot.scan(kernel_predicate(spark, snapshot, condition)).files


def _referenced_columns(spark: SparkSession, snapshot: Snapshot, condition: Condition) -> set[str] | None:
    """Lower-cased names of the table columns ``condition`` reads (None if that is not certain)."""
    columns = resolve_condition(spark, condition, table_schema(snapshot)).references()
    return None if columns is None else {c.path[0].lower() for c in columns}


def partition_only_files(spark: SparkSession, snapshot: Snapshot, condition: Condition | None) -> pa.Table | None:
    """The files whose partition values satisfy ``condition`` when it reads partition columns only, else None.

    Such a condition selects whole files, so Spark evaluates it exactly over one row of
    typed partition values per file (a NULL result selects nothing), reading no data.
    """
    if condition is None or not snapshot.partition_columns:
        return None
    referenced = _referenced_columns(spark, snapshot, condition)
    if not referenced or not referenced <= {c.lower() for c in snapshot.partition_columns}:
        return None
    files = snapshot.scan().files
    values = pa.Table.from_struct_array(files.column(PARTITION_VALUES))
    frame = spark.createDataFrame(values.append_column(FILE_PATH_COLUMN, files.column("path")))
    chosen = frame.where(matched(condition)).select(FILE_PATH_COLUMN).collect()
    paths = pa.array([row[0] for row in chosen], pa.string())
    return files.filter(pc.is_in(files.column("path"), value_set=paths))


def rows_written(adds: list[AddFile]) -> int:
    """Rows in newly written files, from their stats."""
    return sum(record_counts(adds))


def read_target(spark: SparkSession, snapshot: Snapshot, files: pa.Table) -> DataFrame:
    """Rows of ``files`` (scan files of ``snapshot``), with ``FILE_PATH_COLUMN`` and ``ROW_INDEX_COLUMN``,
    and with row tracking enabled each row's id and version (``spark/row_tracking.py``)."""
    labelled = files.append_column(FILE_PATH_COLUMN, files.column("path"))
    if preserves(snapshot):
        return read_with_row_tracking(spark, snapshot, labelled, file_columns=[FILE_PATH_COLUMN], with_row_index=True)
    rows = read_files(spark, snapshot, labelled, file_columns=[FILE_PATH_COLUMN], with_row_index=True)
    if not files.num_rows:  # read_files' empty result for no files lacks it (asking Spark for the columns costs a schema)
        rows = rows.withColumn(ROW_INDEX_COLUMN, F.lit(None).cast("long"))
    return rows


def touched_files(files: pa.Table, rows: DataFrame) -> pa.Table:
    """The rows of ``files`` holding any of ``rows`` (with ``FILE_PATH_COLUMN``), plus ``MATCHED_ROWS_COLUMN``.

    One aggregation job; only one row per touched file reaches the driver.
    """
    counts = rows.groupBy(FILE_PATH_COLUMN).count().collect()
    paths = pa.array([r[0] for r in counts], pa.string())
    touched = files.filter(pc.is_in(files.column("path"), value_set=paths))
    positions = pc.index_in(touched.column("path"), value_set=paths)
    return touched.append_column(MATCHED_ROWS_COLUMN, pc.take(pa.array([r[1] for r in counts], pa.int64()), positions))


def _partition_expression(predicate: S.Predicate | None, partition_columns: tuple[str, ...]) -> pc.Expression:
    """The partition-column part of ``predicate`` as an Arrow expression over typed partition values.

    What it cannot express becomes ``True`` (every partition), which only widens the
    read set, so conflict checks stay sound.
    """
    names = {c.lower(): c for c in partition_columns}

    def convert(p: S.Predicate) -> pc.Expression | None:
        if isinstance(p, S.And):
            left, right = convert(p.left), convert(p.right)
            if left is None or right is None:
                return left if right is None else right
            return left & right
        if isinstance(p, S.Or):
            left, right = convert(p.left), convert(p.right)
            return None if left is None or right is None else left | right
        if isinstance(p, (S.Compare, S.In, S.IsNull)) and len(p.column.path) == 1 and p.column.path[0].lower() in names:
            field = pc.field(names[p.column.path[0].lower()])
            if isinstance(p, S.IsNull):
                return pc.is_valid(field) if p.negated else field.is_null()
            if isinstance(p, S.In):
                return field.isin([v.value for v in p.values])
            value = pc.scalar(p.value.value)
            return {
                "=": field == value,
                "<": field < value,
                "<=": field <= value,
                ">": field > value,
                ">=": field >= value,
            }[p.op]
        return None

    converted = convert(predicate) if predicate is not None else None
    return converted if converted is not None else pc.scalar(True)


@dataclass(frozen=True)
class WriteMark:
    """How far a ``DmlCommit`` had got (``mark``): its actions, files written and counts then."""

    actions: int
    written: int
    dv_files: int
    metrics: dict[str, int]
    identity_bounds: dict[str, tuple[int, int]]


class DmlCommit:
    """One DML commit: the files it writes, the actions it gathers, its metrics; then ``commit``.

    Use it as a context manager: leaving the block by an exception deletes every file
    written through it (data, change data, deletion vectors), since none is referenced.
    Metrics gathered here use delta-spark's names (``numAddedFiles``, ``numRemovedFiles``,
    ``numAddedBytes``, ``numRemovedBytes``, ``numAddedChangeFiles``,
    ``numDeletionVectorsAdded`` / ``Removed`` / ``Updated``, ``scanTimeMs``,
    ``rewriteTimeMs``, ``executionTimeMs``); the command adds its own row counts.

    The session's app transaction is read here, so a half-set pair fails before any work.
    ``txn_when_unchanged``: whether a command that changed nothing still commits its
    ``txn`` (delta-spark's UPDATE and MERGE do, so that their replay is skipped; its
    DELETE commits nothing then).
    """

    def __init__(
        self,
        spark: SparkSession,
        table: Table,
        snapshot: Snapshot,
        operation: str,
        parameters: dict[str, Any],
        txn_when_unchanged: bool = True,
    ) -> None:
        require_writable(snapshot.protocol, snapshot.metadata, snapshot.table_root)
        self._txn = app_transaction(spark)
        self._txn_when_unchanged = txn_when_unchanged
        self.spark = spark
        self.table = table
        self.snapshot = snapshot
        self.operation = operation
        self.parameters = parameters
        self.transaction = table.transaction(read_snapshot=snapshot)
        self.actions: list[Action] = []
        self._metadata = snapshot.metadata
        self.metrics: dict[str, int] = {
            "numAddedFiles": 0,
            "numRemovedFiles": 0,
            "numAddedBytes": 0,
            "numRemovedBytes": 0,
            "numAddedChangeFiles": 0,
            "numDeletionVectorsAdded": 0,
            "numDeletionVectorsRemoved": 0,
            "numDeletionVectorsUpdated": 0,
            "scanTimeMs": 0,
            "rewriteTimeMs": 0,
        }
        self._started = time.monotonic()
        self._written: list[AddFile | AddCDCFile] = []
        self._dv_files: list[str] = []
        self._identity_bounds: dict[str, tuple[int, int]] = {}

    def __enter__(self) -> DmlCommit:
        return self

    def already_committed(self) -> bool:
        """Whether the table holds the session's app transaction already: the command then runs
        nothing and returns ``ALREADY_COMMITTED`` (delta-spark's ``hasBeenExecuted``)."""
        return already_committed(self.spark, self.snapshot, self._txn)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        if error is not None:
            self.abort()

    @contextlib.contextmanager
    def timed(self, metric: str, description: str) -> Iterator[None]:
        """Add the block's wall time to ``metric`` (ms); its Spark jobs carry ``description`` as a tag."""
        start = time.monotonic()
        try:
            with tagged(self.spark, f"{self.operation} {self.snapshot.table_root}: {description}"):
                yield
        finally:
            self.metrics[metric] += int((time.monotonic() - start) * 1000)

    def read(self, files: pa.Table, condition: Condition | None = None, predicate: S.Predicate | None = None) -> None:
        """Record what the outcome depends on: ``files``, and the partitions ``condition`` selects.

        A concurrent commit that removes one of ``files`` then conflicts
        (``ConcurrentDeleteReadException``), as does one adding files (other than a blind
        append, under WriteSerializable) into a partition the condition may match.
        ``predicate``, if given, is the condition's kernel form (else it is derived).
        """
        if predicate is None and condition is not None:
            predicate = kernel_predicate(self.spark, self.snapshot, condition)
        self.transaction.mark_files_read(file_paths(files))
        self.transaction.mark_read_predicate(_partition_expression(predicate, self.snapshot.partition_columns))

    @property
    def metadata(self) -> Metadata:
        """The metadata the commit's files are written with: the snapshot's, unless the commit sets new metadata."""
        return self._metadata

    def set_metadata(self, metadata: Metadata, protocol: Protocol | None = None) -> None:
        """Commit ``metadata`` (and ``protocol``, when it changes) with the command (MERGE schema
        evolution); files written from now on follow it. The snapshot read is left as it is."""
        self.actions.extend(a for a in (protocol, metadata) if a is not None)
        self._metadata = metadata

    def remove_files(self, files: pa.Table) -> None:
        """Remove ``files`` (scan files of ``snapshot``) with their partition values, size, stats and DV."""
        self.actions.extend(remove_actions(files, data_change=True))
        self.metrics["numRemovedFiles"] += files.num_rows
        self.metrics["numRemovedBytes"] += int(pc.sum(files.column("size")).as_py() or 0)
        self.metrics["numDeletionVectorsRemoved"] += files.num_rows - files.column(DELETION_VECTOR).null_count

    def add_rows(self, rows: DataFrame, tracked: Collection[str] = ()) -> list[AddFile]:
        """Write ``rows`` (the table's columns, by name) as new data files; constraints checked in the job.

        ``tracked``: identity columns the rows got generated values for; the commit moves
        their high-water marks past every value written here (as delta-spark's MERGE does).
        """
        files = write_table_files(rows, self.snapshot, metadata=self._metadata, tracked=tracked)
        written = files.adds
        for name, (low, high) in files.identity_bounds.items():
            known = self._identity_bounds.get(name, (low, high))
            self._identity_bounds[name] = (min(known[0], low), max(known[1], high))
        self._written.extend(written)
        # Spark writes a file even for no rows; an empty file adds nothing to the table.
        adds = [a for a, rows in zip(written, record_counts(written), strict=True) if rows > 0]
        remove_unreferenced(self.snapshot.storage, self.snapshot.table_root, [a for a in written if a not in adds])
        self.actions.extend(adds)
        self.metrics["numAddedFiles"] += len(adds)
        self.metrics["numAddedBytes"] += sum(a.size for a in adds)
        return adds

    def add_changes(self, rows: DataFrame) -> list[AddCDCFile]:
        """Write change rows (the table's columns and ``_change_type``) as change data files with ``cdc`` actions."""
        cdcs = write_change_files(rows, self.snapshot, metadata=self._metadata)
        self._written.extend(cdcs)
        self.actions.extend(cdcs)
        self.metrics["numAddedChangeFiles"] += len(cdcs)
        return cdcs

    def delete_rows(self, files: pa.Table, rows: DataFrame) -> DeletedRows:
        """Mark ``rows`` (``FILE_PATH_COLUMN``, ``ROW_INDEX_COLUMN``; rows of ``files``) deleted with deletion vectors.

        Each touched file's DV is the union of its old one and the new rows (gathered on
        the executors, written by the client); the file is removed and re-added with it
        (stats kept, bounds no longer tight), or only removed when no row is left.
        """
        deleted = store_deletion_vectors(self.spark, self.snapshot, files, rows)
        self._dv_files.extend(deleted.dv_files)
        self.actions.extend(deleted.actions)
        self.metrics["numRemovedFiles"] += deleted.files_emptied.num_rows
        self.metrics["numRemovedBytes"] += int(pc.sum(deleted.files_emptied.column("size")).as_py() or 0)
        self.metrics["numDeletionVectorsAdded"] += deleted.vectors_added
        self.metrics["numDeletionVectorsUpdated"] += deleted.vectors_updated
        self.metrics["numDeletionVectorsRemoved"] += deleted.vectors_removed
        return deleted

    def mark(self) -> WriteMark:
        """What the commit holds now, for ``discard_since``."""
        return WriteMark(
            len(self.actions), len(self._written), len(self._dv_files), dict(self.metrics), dict(self._identity_bounds)
        )

    def discard_since(self, mark: WriteMark) -> None:
        """Delete the files written since ``mark`` and forget their actions and counts (times stay):
        a step the command redoes before it commits. Nothing is committed yet, so they are no one's."""
        remove_unreferenced(self.snapshot.storage, self.snapshot.table_root, self._written[mark.written :])
        for path in self._dv_files[mark.dv_files :]:
            self.snapshot.storage.delete(path)
        del self.actions[mark.actions :], self._written[mark.written :], self._dv_files[mark.dv_files :]
        self.metrics.update({name: value for name, value in mark.metrics.items() if not name.endswith("TimeMs")})
        self._identity_bounds = dict(mark.identity_bounds)

    def commit(self, metrics: dict[str, int] | None = None) -> CommandResult:
        """Commit the gathered actions as one version with ``metrics`` added to the gathered ones;
        the commit and every metric it recorded.

        Nothing to commit (no row matched) commits nothing, as delta-spark does, unless the
        ``txn`` of an app transaction is to be recorded (``txn_when_unchanged``). A failed
        commit deletes the files written for it.
        """
        if not self.actions and (self._txn is None or not self._txn_when_unchanged):
            self.abort()
            return NOTHING_COMMITTED
        all_metrics = {**self.metrics, **(metrics or {})}
        all_metrics["executionTimeMs"] = int((time.monotonic() - self._started) * 1000)
        try:
            actions, tags = marks_committed(self.actions, self._metadata, self._identity_bounds)
            tags = {**(tags or {}), **commit_tags(self.snapshot)} or None
            if self._txn is not None:
                actions = [set_transaction(self.spark, self.transaction, self._txn), *actions]
            user_metadata = get_str(self.spark, USER_METADATA)  # delta-spark records it on every commit
            commit = self.transaction.commit(actions, self.operation, self.parameters, all_metrics, user_metadata, tags)
            return CommandResult(commit, all_metrics)
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Delete every file written through this commit, unless the log may reference them
        (the commit landed, or its outcome is unknown): then they are the table's."""
        if self.transaction.may_discard_files:
            remove_unreferenced(self.snapshot.storage, self.snapshot.table_root, self._written)
            for path in self._dv_files:
                self.snapshot.storage.delete(path)
        else:
            keep_uncommitted(self.transaction, self.snapshot.table_root, len(self._written) + len(self._dv_files))
        self._written, self._dv_files = [], []
