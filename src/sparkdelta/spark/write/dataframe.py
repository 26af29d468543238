"""Writing a DataFrame into a Delta table: Spark's native Parquet writer, then one commit.

Spark writes the files into a hidden staging directory inside the table; they are moved
to their final place (``<partition dirs>/part-...snappy.parquet``, named as delta-spark
names them), their stats are read from the Parquet footers, and the kernel commits
them. Nothing becomes visible before the commit; a failed write removes the files it
wrote.

The metadata a write commits (a new table's, or a schema grown by ``mergeSchema``) is
prepared by the kernel before any data is written: column-mapped tables need their
physical names and ids first, and a protocol upgrade the metadata needs is committed
with it. ``delta.*`` write options become table properties of a table the write creates.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any, cast
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from ...exceptions import DeltaAnalysisException, DeltaIllegalArgumentException
from ...kernel import (
    AddCDCFile,
    AddFile,
    Metadata,
    Protocol,
    RemoveFile,
    Snapshot,
    Table,
    TableNotFoundError,
    Transaction,
    metadata_change,
)
from ...kernel.clustering import clustering_columns
from ...kernel.column_mapping import mapping_mode
from ...kernel.create_table import create_table, overwrite_schema
from ...kernel.features import metadata_features
from ...kernel.file_actions import file_paths, remove_actions
from ...kernel.file_paths import CHANGE_DATA_DIR, STAGING_DIR
from ...kernel.identity import marks_committed
from ...kernel.parquet_footer import parquet_metadata
from ...kernel.protocol import require_writable
from ...kernel.scan import logical_rows, num_records
from ...kernel.stats_schema import stats_leaves
from ...kernel.storage import FileStatus, Storage
from ...kernel.table_properties import normalize_properties
from ...kernel.transaction import CommitState
from ..conf import (
    ALLOW_ARBITRARY_PROPERTIES,
    OPTIMIZE_WRITE,
    REPLACE_WHERE_CONSTRAINT_CHECK,
    SCHEMA_AUTO_MERGE,
    USER_METADATA,
    get_bool,
    get_str,
    property_defaults,
    table_or_session_flag,
)
from ..options import DeltaOptions
from ..paths import absolute_path, hadoop_path, is_object_store, log_path, spark_lists
from ..pyspark_classes import is_connect
from ..server_paths import unseen_path_error
from ..storage import open_table
from ..time_zones import zone
from .column_mapping import physical_name, to_physical
from .constraints import Constraint, enforce, table_constraints, violation
from .generated import generated_checks
from .idempotent import AppTransaction, already_committed, app_transaction, set_transaction
from .identity import identity_bounds, identity_overflow, missing_identity_columns, refuse_explicit_insert, with_identity_values
from .overwrite import files_in_partitions, files_to_replace
from .post_commit import run_post_commit_hooks
from ..row_tracking import materialized
from .schema import aligned as aligned_rows
from .schema import check_schema, delta_schema_json, merge_schemas, new_table_schema
from .stats import column_bounds, file_stats

__all__ = [
    "CHANGE_TYPE_COLUMN",
    "DeltaAnalysisException",
    "WriteResult",
    "WrittenFiles",
    "discard_uncommitted",
    "keep_uncommitted",
    "record_counts",
    "refuse_data_outside_a_table",
    "remove_unreferenced",
    "write_change_files",
    "write_dataframe",
    "write_table_files",
]

log = logging.getLogger(__name__)

CHANGE_TYPE_COLUMN = "_change_type"
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_MODES = {
    "append": "Append",
    "overwrite": "Overwrite",
    "error": "ErrorIfExists",
    "errorifexists": "ErrorIfExists",
    "default": "ErrorIfExists",
    "ignore": "Ignore",
}


@dataclass(frozen=True)
class WriteResult:
    version: int | None
    num_files: int
    num_rows: int


def _utc_partition_value(local: str, time_zone: str) -> str:
    """A timestamp partition directory value (session time) as ISO 8601 UTC, delta-spark's form."""
    moment = datetime.fromisoformat(local).replace(tzinfo=zone(time_zone))
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _partition_values(relative_dir: str, timestamps: set[str], time_zone: str) -> dict[str, str | None]:
    values: dict[str, str | None] = {}
    for part in filter(None, relative_dir.split("/")):
        name, _, raw = part.partition("=")
        key, value = unquote(name), (None if raw == HIVE_NULL else unquote(raw))
        values[key] = _utc_partition_value(value, time_zone) if value is not None and key in timestamps else value
    return values


@dataclass(frozen=True)
class _Layout:
    """How rows become files: physical partition columns, which leaves get stats, optimized writes,
    and at most how many rows a file holds (``maxRecordsPerFile``; None: Spark's session setting)."""

    partition_columns: list[str]
    timestamp_partitions: set[str]
    indexed: set[tuple[str, ...]]
    time_zone: str
    optimize_write: bool
    max_records_per_file: int | None = None
    # Identity columns whose written values move their high-water marks: (physical, logical) names.
    tracked: tuple[tuple[str, str], ...] = ()


# Spark's Parquet writer shreds variants when the session lets it (Spark 4.3's default), with a
# schema it infers per file; a table without the variantShredding feature must hold them
# unshredded (PROTOCOL.md). This writer option turns the inference off for the write alone, so
# the session stays as its user set it. Only a shredding schema forced by a test-only setting is
# left, and refused by name.
_NO_VARIANT_SHREDDING = {"spark.sql.variant.inferShreddingSchema": "false"}
_WRITE_SHREDDING = "spark.sql.variant.writeShredding.enabled"
_FORCED_SHREDDING = "spark.sql.variant.forceShreddingSchemaForTest"


def _refuse_forced_shredding(spark: SparkSession, metadata: Metadata, where: str) -> None:
    """Refuse to write variants while the session forces Spark's writer to shred them."""
    if "variantType" not in metadata_features(metadata) or not str(spark.conf.get(_FORCED_SHREDDING, "") or "").strip():
        return
    if str(spark.conf.get(_WRITE_SHREDDING, "true")).lower() == "false":
        return
    raise DeltaAnalysisException(
        f"{where}: cannot write variant columns while {_FORCED_SHREDDING} forces Spark's Parquet writer to shred them: "
        f"the table must hold them unshredded (sparkdelta does not write table feature variantShredding); "
        f"unset {_FORCED_SHREDDING} or set {_WRITE_SHREDDING} to false"
    )


def _layout(
    spark: SparkSession,
    schema: StructType,
    metadata: Metadata,
    where: str,
    options: DeltaOptions | None = None,
    tracked: Collection[str] = (),
) -> _Layout:
    """How a write lays out its files; a write's ``optimizeWrite`` option wins over the table's
    property and the session. ``tracked``: identity columns whose high-water marks the
    written values move."""
    _refuse_forced_shredding(spark, metadata, where)
    optimize_write = options.optimize_write if options is not None else None
    if optimize_write is None:
        optimize_write = table_or_session_flag(spark, metadata.configuration, OPTIMIZE_WRITE)
    by_name = {f.name.lower(): f for f in schema.fields}
    partitions = [by_name[c.lower()] for c in metadata.partition_columns]
    leaves = stats_leaves(metadata.schema, metadata.partition_columns, metadata.configuration)
    return _Layout(
        [physical_name(f) for f in partitions],
        {physical_name(f) for f in partitions if isinstance(f.dataType, TimestampType)},
        {leaf.physical for leaf in leaves},
        str(spark.conf.get("spark.sql.session.timeZone", "UTC")),
        optimize_write,
        options.max_records_per_file if options is not None else None,
        tuple((physical_name(by_name[c.lower()]), by_name[c.lower()].name) for c in tracked),
    )


_REMOTE_MOVES = 16  # concurrent server-side copies when placing a write's files in an object store


@dataclass(frozen=True)
class WrittenFiles:
    """New data files as add actions, and the bounds of the tracked identity columns' values in
    them (logical name: (min, max); a column all null in every file is absent)."""

    adds: list[AddFile]
    identity_bounds: dict[str, tuple[int, int]] = field(default_factory=dict)


def _write_files(df: DataFrame, storage: Storage, root: str, layout: _Layout, data_change: bool) -> WrittenFiles:
    """Write ``df`` (physical columns) with Spark into the table and describe the new files as add actions.

    Spark writes into a private staging folder under the root, through the Hadoop file
    system for the root's scheme; each file is then moved to its place (a rename on disk,
    a server-side copy on an object store) and described from its footer, which also gives
    the bounds of the tracked identity columns.
    """
    staging = f"{root}/{STAGING_DIR}/{uuid.uuid4()}"
    adds: list[AddFile] = []
    moved: list[str] = []
    tracked = dict(layout.tracked)
    bounds: list[dict[str, tuple[Any, Any] | None]] = []
    now = int(time.time() * 1000)
    try:
        if layout.optimize_write:
            df = df.hint("rebalance", *[f"`{c}`" for c in layout.partition_columns])
        writer = (
            df.write.mode("error")
            .option("compression", "snappy")
            .options(**_NO_VARIANT_SHREDDING)
            .options(**storage.engine_options)
        )
        if layout.max_records_per_file is not None:
            writer = writer.option("maxRecordsPerFile", layout.max_records_per_file)
        if layout.partition_columns:
            writer = writer.partitionBy(*layout.partition_columns)
        writer.parquet(hadoop_path(staging))
        if not is_object_store(root) and not storage.exists(staging) and is_connect(df.sparkSession):
            raise unseen_path_error(root)  # the server wrote its files where this process does not look
        written = sorted(
            (f for f in storage.list_tree(staging, spark_lists) if _data_file(f.name)),
            key=lambda f: f.path,
        )

        def place(staged: FileStatus) -> AddFile:
            relative = staged.path[len(staging) + 1 :]
            target = f"{root}/{relative}"
            moved.append(target)  # before the move: one that fails may have copied already
            storage.move(staged.path, target)
            footer = parquet_metadata(storage, target, staged.size)
            stats, _ = file_stats(footer, layout.indexed, target)
            if tracked:
                bounds.append(column_bounds(footer, set(tracked)))
            relative_dir = relative.rpartition("/")[0]
            partition_values = _partition_values(relative_dir, layout.timestamp_partitions, layout.time_zone)
            return AddFile(log_path(relative), partition_values, staged.size, now, data_change, stats)

        if storage.local_path(staging) is not None:
            adds = [place(f) for f in written]
        else:
            pool = ThreadPoolExecutor(_REMOTE_MOVES)
            try:
                adds = list(pool.map(place, written))
            finally:
                pool.shutdown(cancel_futures=True)  # after a failed move, start no more
    except BaseException:
        try:
            for _ in storage.delete_many(moved):
                pass
        except OSError as exc:
            log.warning("%s: could not remove the files of a failed write: %s", root, exc)
        raise
    finally:
        _remove_staging(storage, staging)
    return WrittenFiles(adds, identity_bounds(bounds, tracked, root))


def _data_file(name: str) -> bool:
    """Parquet data files; not Spark's ``_SUCCESS`` or ``.crc`` files."""
    return name.endswith(".parquet") and not name.startswith(("_", "."))


def _remove_staging(storage: Storage, staging: str) -> None:
    """Delete what is left in a staging folder (Spark's markers, or files of a failed write)."""
    local = storage.local_path(staging)
    if local is not None:
        shutil.rmtree(local, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.rmdir(os.path.dirname(local))  # only when no other write is staging
        return
    try:
        left = [f.path for f in storage.list_tree(staging, lambda name: True)]
        for _ in storage.delete_many(left):
            pass
    except OSError as exc:
        log.warning("%s: could not remove the staging folder of a write: %s", staging, exc)


def is_dynamic_partition_overwrite(df: DataFrame, options: DeltaOptions) -> bool:
    mode = options.partition_overwrite_mode or df.sparkSession.conf.get("spark.sql.sources.partitionOverwriteMode", "static")
    return str(mode).lower() == "dynamic"


def record_counts(adds: list[AddFile]) -> list[int]:
    """Rows in each file this library wrote (its stats always hold ``numRecords``; 0 without stats)."""
    return cast(list[int], num_records(pa.array([a.stats for a in adds], pa.string())).fill_null(0).to_pylist())


Operation = tuple[str, dict[str, Any]] | Callable[[Metadata], tuple[str, dict[str, Any]]]


def _write_operation(
    mode_name: str, partition_by: list[str] | None, options: DeltaOptions, merge: bool, dynamic: bool, metadata: Metadata
) -> tuple[str, dict[str, Any]]:
    """``WRITE`` and its parameters as delta-spark's ``DeltaOperations.Write`` records them: the
    partition columns the writer was given (not the table's), the replaceWhere predicate as
    written, and a flag for each of dynamic partition overwrite, overwriteSchema and schema
    merging in effect (in any mode)."""
    parameters: dict[str, Any] = {"mode": mode_name, "partitionBy": json.dumps(list(partition_by or []), separators=(",", ":"))}
    if options.replace_where and mode_name == "Overwrite":
        parameters["predicate"] = options.replace_where
    if dynamic:
        parameters["isDynamicPartitionOverwrite"] = True
    if options.overwrite_schema:
        parameters["canOverwriteSchema"] = True
    if merge:
        parameters["canMergeSchema"] = True
    return "WRITE", parameters


@dataclass
class _Plan:
    """The table a write produces: its metadata and protocol, and which of them change."""

    metadata: Metadata
    protocol: Protocol
    actions: list[Any]


def _plan_new_schema(
    df: DataFrame,
    snapshot: Snapshot | None,
    partition_by: list[str] | None,
    properties: dict[str, Any],
    description: str | None,
    where: str,
    cluster_by: list[str] | None = None,
    replace_table: bool = False,
) -> _Plan:
    """A new table (with ``properties`` and ``description``), or an existing one whose schema
    ``overwriteSchema`` replaces (given properties are added, a given description replaces).
    ``cluster_by`` (``DataFrameWriter.clusterBy``) makes it a liquid-clustered table.

    ``replace_table`` replaces an existing table as REPLACE TABLE does: a new table (a new id,
    only the given properties and description) in place of the old one, whose protocol it
    never lowers and whose clustering it clears unless clustered again."""
    schema = new_table_schema(df.schema)
    by_name = {f.name.lower(): f.name for f in schema.fields}
    missing = [c for c in partition_by or [] if c.lower() not in by_name]
    if missing:
        raise DeltaAnalysisException(f"{where}: partition column(s) {', '.join(missing)} are not in the data")
    partition_columns = [by_name[c.lower()] for c in partition_by or []]
    if partition_columns and len(partition_columns) == len(schema.fields):
        raise DeltaAnalysisException(
            f"{where}: Cannot use all columns for partition columns", errorClass="DELTA_CANNOT_USE_ALL_COLUMNS_FOR_PARTITION"
        )
    spark = df.sparkSession
    if snapshot is None or replace_table:
        was_clustered = snapshot is not None and bool(clustering_columns(snapshot))
        new = create_table(
            where,
            delta_schema_json(schema),
            partition_columns,
            {**property_defaults(spark), **properties},
            allow_arbitrary_properties=get_bool(spark, ALLOW_ARBITRARY_PROPERTIES),
            clustering_columns=cluster_by or ([] if was_clustered else None),
            description=description,
            protocol=snapshot.protocol if snapshot is not None else None,
        )
        if snapshot is not None and new.protocol == snapshot.protocol:
            # The replaced table's protocol stays; the commit need not repeat it.
            return _Plan(new.metadata, new.protocol, [a for a in new.actions if not isinstance(a, Protocol)])
    else:
        new = overwrite_schema(
            where,
            snapshot.metadata,
            snapshot.protocol,
            delta_schema_json(schema),
            partition_columns,
            properties,
            clustering_columns=cluster_by or None,
            description=description,
        )
    return _Plan(new.metadata, new.protocol, list(new.actions))


def _plan_existing(
    df: DataFrame,
    snapshot: Snapshot,
    partition_by: list[str] | None,
    merge: bool,
    where: str,
    cluster_by: list[str] | None = None,
) -> _Plan:
    """An existing table keeping its schema, or growing it with ``mergeSchema``."""
    schema = StructType.fromJson(snapshot.schema.to_json())
    partition_columns = list(snapshot.partition_columns)
    if partition_by and [c.lower() for c in partition_by] != [c.lower() for c in partition_columns]:
        raise DeltaAnalysisException(
            f"{where}: partition columns {partition_by} do not match the table's {partition_columns}; "
            "overwrite with .option('overwriteSchema', 'true') to change them"
        )
    clustered = clustering_columns(snapshot) or []
    if cluster_by and [c.lower() for c in cluster_by] != [c.lower() for c in clustered]:
        raise DeltaAnalysisException(
            f"{where}: clustering columns {cluster_by} do not match the table's "
            f"{clustered}; overwrite with .option('overwriteSchema', 'true') to change them",
            errorClass="DELTA_CLUSTERING_COLUMNS_MISMATCH",
        )
    if not merge:
        check_schema(schema, df.schema, where)
        return _Plan(snapshot.metadata, snapshot.protocol, [])
    merged = merge_schemas(schema, df.schema, where)
    if merged == schema:
        return _Plan(snapshot.metadata, snapshot.protocol, [])
    metadata = replace(snapshot.metadata, schema_string=delta_schema_json(merged))
    prepared, protocol = metadata_change.prepare(metadata, snapshot.metadata, snapshot.protocol)
    return _Plan(prepared, protocol, ([] if protocol is snapshot.protocol else [protocol]) + [prepared])


def write_dataframe(
    df: DataFrame,
    path: str,
    mode: str,
    partition_by: list[str] | None,
    options: DeltaOptions,
    properties: dict[str, str] | None = None,
    description: str | None = None,
    operation: Operation | None = None,
    cluster_by: list[str] | None = None,
    added_files_metric: str = "numFiles",
    replace_table: bool = False,
) -> WriteResult:
    """``df.write.format("delta").mode(mode).save(path)`` with delta-spark's options.

    ``operation`` names the commit in history, with its parameters, when the write is
    part of another statement (``CREATE TABLE AS SELECT``), or a function of the metadata
    the commit leaves (for parameters that name its properties); otherwise it is ``WRITE``,
    with the parameters delta-spark's ``DeltaOperations.Write`` records.
    ``added_files_metric`` is the name its metrics give the count of new files: delta-spark's
    streaming sink says ``numAddedFiles`` where writes say ``numFiles``.

    ``properties`` (any keys, e.g. a CTAS's TBLPROPERTIES) and ``description`` apply when
    the write creates the table, as its ``delta.*`` options do.

    A write under an app transaction (``idempotent.py``: options, else session settings)
    whose batch the table holds already writes nothing and returns no version.

    ``replace_table`` (mode overwrite) makes the write a REPLACE TABLE AS SELECT: an existing
    table is replaced by a new one (``_plan_new_schema``), and a missing one is created by a
    commit that, as a replace, reads the whole table (so it is not a blind append).
    """
    if mode.lower() not in _MODES:
        raise DeltaIllegalArgumentException(f"unknown save mode {mode!r}: use append, overwrite, errorifexists or ignore")
    mode_name = _MODES[mode.lower()]
    spark = df.sparkSession
    table = open_table(spark, path, options.storage)
    try:
        snapshot: Snapshot | None = table.snapshot()
    except TableNotFoundError:
        snapshot = None
    where = table.root
    if snapshot is None:
        refuse_data_outside_a_table(table)
    if snapshot is not None and mode_name == "ErrorIfExists":
        raise DeltaAnalysisException(
            f"{where}: a Delta table already exists here (mode ErrorIfExists); use mode append or overwrite",
            errorClass="DELTA_PATH_EXISTS",
        )
    if snapshot is not None and mode_name == "Ignore":
        return WriteResult(None, 0, 0)

    txn = app_transaction(spark, options)
    if already_committed(spark, snapshot, txn):
        return WriteResult(None, 0, 0)

    # delta-spark validates delta.* options on every write, though only a new table takes them.
    given = {**options.table_properties, **(properties or {})}
    normalize_properties(given, where, get_bool(spark, ALLOW_ARBITRARY_PROPERTIES))
    merge = options.merge_schema if options.merge_schema is not None else get_bool(spark, SCHEMA_AUTO_MERGE)
    replace_schema = mode_name == "Overwrite" and options.overwrite_schema
    if replace_schema and snapshot is not None and (options.replace_where or is_dynamic_partition_overwrite(df, options)):
        raise DeltaAnalysisException(
            f"{where}: overwriteSchema cannot be combined with replaceWhere or dynamic partition overwrite, "
            "which keep rows of the old schema"
        )
    if replace_table and mode_name != "Overwrite":
        raise DeltaIllegalArgumentException(f"{where}: replacing a table is a write in mode overwrite, not {mode_name}")
    if snapshot is None or replace_schema or replace_table:
        plan = _plan_new_schema(df, snapshot, partition_by, given, description, where, cluster_by, replace_table)
    else:
        plan = _plan_existing(df, snapshot, partition_by, merge, where, cluster_by)
    # Refuse a table we cannot write before writing any data.
    require_writable(plan.protocol, plan.metadata, where)
    if snapshot is not None:
        require_writable(snapshot.protocol, snapshot.metadata, where)
    recorded = operation or partial(
        _write_operation, mode_name, partition_by, options, merge, is_dynamic_partition_overwrite(df, options)
    )
    return _write(df, table, snapshot, plan, mode_name, options, recorded, added_files_metric, txn, replace_table)


def refuse_data_outside_a_table(table: Table) -> None:
    """Refuse to create a table where files not in it already lie (``Table.untracked_data_file``)."""
    found = table.untracked_data_file()
    if found is not None:
        raise DeltaAnalysisException(
            f"{table.root} is not a Delta table but holds data files (e.g. {found}); creating a table there would "
            f"hide them from readers and VACUUM would delete them. Convert the folder first with CONVERT TO DELTA "
            f"parquet.`{table.root}` (DeltaTable.convertToDelta), or use an empty location"
        )


def _write(
    df: DataFrame,
    table: Table,
    snapshot: Snapshot | None,
    plan: _Plan,
    mode_name: str,
    options: DeltaOptions,
    operation: Operation,
    added_files_metric: str,
    txn: AppTransaction | None,
    replace_table: bool = False,
) -> WriteResult:
    where = table.root
    metadata = plan.metadata
    schema = StructType.fromJson(metadata.schema.to_json())
    configuration = metadata.configuration
    data_change = options.data_change
    replace_where = options.replace_where if mode_name == "Overwrite" and snapshot is not None else None
    dynamic = mode_name == "Overwrite" and snapshot is not None and is_dynamic_partition_overwrite(df, options)
    if dynamic and replace_where:
        raise DeltaIllegalArgumentException(
            "A 'replaceWhere' expression and 'partitionOverwriteMode'='dynamic' cannot both be set in the "
            f"DataFrameWriter options ({where})",
            errorClass="DELTA_REPLACE_WHERE_WITH_DYNAMIC_PARTITION_OVERWRITE",
        )
    # As delta-spark: an unpartitioned table is one partition, which a dynamic overwrite replaces.
    dynamic = dynamic and bool(metadata.partition_columns)

    refuse_explicit_insert(schema, df.columns)
    generated = missing_identity_columns(schema, df.columns)
    df = with_identity_values(df, schema, dict.fromkeys(generated))
    transaction = table.transaction(read_snapshot=snapshot)
    if replace_table:
        transaction.mark_read_whole_table()
    data = aligned_rows(df, schema)
    checks = table_constraints(schema, configuration) + generated_checks(schema, {c.lower() for c in df.columns})
    replaced: pa.Table | None = None
    kept: DataFrame | None = None  # rows of replaced files that stay
    if replace_where and snapshot is not None:
        if get_bool(df.sparkSession, REPLACE_WHERE_CONSTRAINT_CHECK):
            checks.append(Constraint("replaceWhere", replace_where, "replaceWhere"))
        replaced, kept_rows = files_to_replace(df.sparkSession, snapshot, replace_where)
        transaction.mark_files_read(file_paths(replaced))
        if kept_rows is not None:
            # Written apart, as delta-spark rewrites them: their files count the copied rows, and
            # kept values never move the identity marks.
            kept = enforce(kept_rows, table_constraints(schema, configuration))
    rows = enforce(data, checks)
    layout = _layout(df.sparkSession, schema, metadata, where, options, tracked=generated)
    written = _write_job(rows, table.storage, table.root, layout, data_change, schema, configuration)
    adds = written.adds
    kept_adds: list[AddFile] = []
    if kept is not None:
        try:
            kept_layout = replace(layout, tracked=())
            kept_adds = _write_job(kept, table.storage, table.root, kept_layout, data_change, schema, configuration).adds
        except BaseException:
            remove_unreferenced(table.storage, table.root, adds)
            raise
        adds = adds + kept_adds

    removes: list[RemoveFile] = []
    if snapshot is not None and mode_name == "Overwrite":
        targets = snapshot.files
        if replaced is not None:
            targets = replaced
        elif dynamic:
            targets = files_in_partitions(snapshot, [a.partition_values for a in adds])
            transaction.mark_files_read(file_paths(targets))
        else:
            transaction.mark_read_whole_table()
        removes = remove_actions(targets, data_change)
    actions, tags = marks_committed(plan.actions, metadata, written.identity_bounds)
    if txn is not None:
        actions.append(set_transaction(df.sparkSession, transaction, txn))
    num_rows = sum(record_counts(adds))
    name, parameters = operation(metadata) if callable(operation) else operation
    metrics = {added_files_metric: len(adds), "numOutputRows": num_rows, "numOutputBytes": sum(a.size for a in adds)}
    # As delta-spark: its streaming sink always counts removed files; a WRITE counts removals
    # (files and bytes) only when it overwrites.
    if added_files_metric == "numAddedFiles":
        metrics["numRemovedFiles"] = len(removes)
    elif mode_name == "Overwrite" and (snapshot is not None or replace_table):  # a replace counts none removed
        metrics |= {"numRemovedFiles": len(removes), "numRemovedBytes": sum(r.size or 0 for r in removes)}
    if replaced is not None:  # delta-spark's counts of a replaceWhere: rows of the replaced files kept and dropped
        copied = sum(record_counts(kept_adds))
        metrics |= {"numCopiedRows": copied, "numDeletedRows": logical_rows(replaced) - copied, "numAddedChangeFiles": 0}
    try:
        result = transaction.commit(
            [*actions, *removes, *adds],
            name,
            parameters,
            metrics,
            user_metadata=options.user_metadata or get_str(df.sparkSession, USER_METADATA),
            tags=tags,
        )
    except BaseException:
        discard_uncommitted(transaction, table.storage, table.root, adds)
        raise
    run_post_commit_hooks(df.sparkSession, table, adds, result.version, where)
    return WriteResult(result.version, len(adds), num_rows)


def _write_job(
    rows: DataFrame,
    storage: Storage,
    root: str,
    layout: _Layout,
    data_change: bool,
    schema: StructType,
    configuration: dict[str, str],
) -> WrittenFiles:
    """``_write_files`` of rows in the table's logical columns; a row failing a check inside
    the job raises the check's error (a constraint, an identity value overflowing)."""
    if mapping_mode(configuration) != "none":
        rows = to_physical(rows, schema)
    try:
        return _write_files(rows, storage, root, layout, data_change)
    except Exception as exc:
        found = violation(exc, root) or identity_overflow(exc, root)
        if found is None:
            raise
        raise found from exc


def write_table_files(
    df: DataFrame,
    snapshot: Snapshot,
    data_change: bool = True,
    metadata: Metadata | None = None,
    tracked: Collection[str] = (),
) -> WrittenFiles:
    """Write ``df`` (the table's columns, by name) as new data files of ``snapshot``'s table, uncommitted.

    For commands that build their own commit (DELETE, UPDATE, MERGE): rows get the
    table's layout (partitions, column mapping, stats) and every constraint and generated
    column is checked inside the write job. A violation raises
    ``DeltaInvariantViolationException``; the caller commits the returned adds or
    deletes them with ``remove_unreferenced``. ``metadata`` is one the same commit sets (a
    MERGE's evolved schema), else the snapshot's. ``tracked``: identity columns whose bounds
    in the new files the caller commits as high-water marks (a MERGE that generated values).
    Rows carrying row-tracking columns (``spark/row_tracking.py``) keep their ids and
    versions in the table's materialized columns.
    """
    metadata = metadata or snapshot.metadata
    schema = StructType.fromJson(metadata.schema.to_json())
    checks = table_constraints(schema, metadata.configuration) + generated_checks(schema, {c.lower() for c in df.columns})
    df, written = materialized(df, schema, metadata)
    rows = enforce(aligned_rows(df, written), checks)
    layout = _layout(df.sparkSession, schema, metadata, snapshot.table_root, tracked=tracked)
    return _write_job(rows, snapshot.storage, snapshot.table_root, layout, data_change, written, metadata.configuration)


def write_change_files(df: DataFrame, snapshot: Snapshot, metadata: Metadata | None = None) -> list[AddCDCFile]:
    """Write change rows (the table's columns and ``_change_type``) as change data files, uncommitted.

    They go under ``_change_data/``, partitioned as the table is (PROTOCOL.md, "Change
    Data Files"), in the table's physical column names; ``metadata`` as for ``write_table_files``.
    """
    metadata = metadata or snapshot.metadata
    table_schema = StructType.fromJson(metadata.schema.to_json())
    schema = StructType([*table_schema.fields, StructField(CHANGE_TYPE_COLUMN, StringType())])
    rows = aligned_rows(df, schema)
    if mapping_mode(metadata.configuration) != "none":
        rows = to_physical(rows, schema)
    root = f"{snapshot.table_root}/{CHANGE_DATA_DIR}"
    written = _write_files(rows, snapshot.storage, root, _layout(df.sparkSession, table_schema, metadata, root), False)
    return [AddCDCFile(f"{CHANGE_DATA_DIR}/{a.path}", a.partition_values, a.size) for a in written.adds]


def discard_uncommitted(transaction: Transaction, storage: Storage, root: str, written: Sequence[AddFile | AddCDCFile]) -> None:
    """Delete the files written for ``transaction`` after it failed, if the log proves it did
    not commit; otherwise keep them (they may be the table's) and say so."""
    if transaction.may_discard_files:
        remove_unreferenced(storage, root, written)
    else:
        keep_uncommitted(transaction, root, len(written))


def keep_uncommitted(transaction: Transaction, root: str, count: int) -> None:
    """Say that files written for a commit of unknown outcome are kept (none is deleted)."""
    if transaction.state is CommitState.UNKNOWN and count:
        log.warning(
            "%s: kept %d files written for a commit whose outcome is unknown; VACUUM deletes them if it did not land", root, count
        )


def remove_unreferenced(storage: Storage, root: str, adds: Sequence[AddFile | AddCDCFile]) -> None:
    """Delete files that no commit references (written, then left out of the commit)."""
    for _ in storage.delete_many(absolute_path(root, add.path) for add in adds):
        pass
