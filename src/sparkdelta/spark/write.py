"""Writing a DataFrame into a Delta table: Spark's native Parquet writer, then one commit.

Spark writes the files into a hidden staging directory inside the table; they are moved
to their final place (``<partition dirs>/part-...snappy.parquet``, named as delta-spark
names them), their stats are read from the Parquet footers, and the kernel commits
them. Nothing becomes visible before the commit; a failed write leaves only unreferenced
files that VACUUM removes.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from ..kernel import AddFile, Metadata, Protocol, RemoveFile, SetTransaction, Snapshot, Table, TableNotFoundError
from ..kernel.errors import DeltaError
from ..kernel.schema import parse_schema
from .constraints import Constraint, enforce, table_constraints, violation
from .overwrite import files_in_partitions, files_to_replace
from .paths import absolute_path, log_path
from .stats import file_stats

STAGING_DIR = "_delta_staging"
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_MODES = {"append": "Append", "overwrite": "Overwrite", "error": "ErrorIfExists", "errorifexists": "ErrorIfExists",
          "default": "ErrorIfExists", "ignore": "Ignore"}


class DeltaAnalysisException(DeltaError):
    """A write that does not fit the table (schema, partitioning, mode)."""


@dataclass(frozen=True)
class WriteResult:
    version: int | None
    num_files: int
    num_rows: int


def _true(options: dict[str, Any], key: str) -> bool:
    return str(options.get(key, "false")).lower() == "true"


def _session_default(df: DataFrame, key: str) -> bool:
    return str(df.sparkSession.conf.get(key, "false")).lower() == "true"


def _table_defaults(df: DataFrame) -> dict[str, str]:
    """``spark.databricks.delta.properties.defaults.*`` settings, as table properties."""
    prefix = "spark.databricks.delta.properties.defaults."
    settings = df.sparkSession.conf.getAll
    return {"delta." + k[len(prefix):]: v for k, v in settings.items() if k.startswith(prefix)}


def delta_schema_json(schema: StructType) -> str:
    """Spark's schema JSON with the key order delta-spark writes."""
    return parse_schema(schema.json()).json()


def _field_text(field: StructField) -> str:
    return f"{field.name} {field.dataType.simpleString()}"


def _merge_schemas(table: StructType, data: StructType, where: str) -> StructType:
    """Table schema plus the data's new columns at the end (names match case-insensitively)."""
    by_name = {f.name.lower(): f for f in data.fields}
    merged = []
    for field in table.fields:
        incoming = by_name.pop(field.name.lower(), None)
        if incoming is not None and incoming.dataType != field.dataType:
            if isinstance(field.dataType, StructType) and isinstance(incoming.dataType, StructType):
                field = StructField(field.name, _merge_schemas(field.dataType, incoming.dataType, where), field.nullable, field.metadata)
            else:
                raise DeltaAnalysisException(
                    f"{where}: failed to merge column {field.name}: the table has {field.dataType.simpleString()}, "
                    f"the data has {incoming.dataType.simpleString()}"
                )
        merged.append(field)
    # New columns are nullable: rows written before them have none.
    merged.extend(StructField(f.name, f.dataType, True, f.metadata) for f in data.fields if f.name.lower() in by_name)
    return StructType(merged)


def _check_schema(table: StructType, data: StructType, where: str) -> None:
    """Refuse data whose columns the table does not have, or with other types."""
    known = {f.name.lower(): f for f in table.fields}
    extra = [f for f in data.fields if f.name.lower() not in known]
    different = [
        (known[f.name.lower()], f) for f in data.fields if f.name.lower() in known and known[f.name.lower()].dataType != f.dataType
    ]
    if not extra and not different:
        return
    lines = [f"{where}: the data's schema does not match the table's."]
    if extra:
        lines.append("Columns not in the table: " + ", ".join(_field_text(f) for f in extra) + ".")
    for theirs, ours in different:
        lines.append(f"Column {ours.name}: the table has {theirs.dataType.simpleString()}, the data has {ours.dataType.simpleString()}.")
    lines.append(
        "To add the new columns, write with .option('mergeSchema', 'true') (or set "
        "spark.databricks.delta.schema.autoMerge.enabled=true); to replace the schema, overwrite with "
        ".option('overwriteSchema', 'true')."
    )
    raise DeltaAnalysisException(" ".join(lines))


def _protocol_for(schema: StructType, configuration: dict[str, str]) -> Protocol:
    """The lowest protocol the schema and properties need."""
    if "timestamp_ntz" in schema.json():
        return Protocol(3, 7, frozenset({"timestampNtz"}), frozenset({"timestampNtz", "appendOnly", "invariants"}))
    if configuration.get("delta.enableChangeDataFeed", "false").lower() == "true":
        return Protocol(1, 4)
    return Protocol(1, 2)


def _aligned(df: DataFrame, schema: StructType, partition_columns: list[str]) -> DataFrame:
    """Columns in table order, missing ones as typed nulls, names spelled as the table spells them."""
    present = {f.name.lower(): f.name for f in df.schema.fields}
    columns = []
    for field in schema.fields:
        source = present.get(field.name.lower())
        value = F.col(f"`{source}`") if source else F.lit(None)
        columns.append(value.cast(field.dataType).alias(field.name))
    return df.select(*columns)


def _partition_values(relative_dir: str) -> dict[str, str | None]:
    values: dict[str, str | None] = {}
    for part in filter(None, relative_dir.split("/")):
        name, _, raw = part.partition("=")
        values[unquote(name)] = None if raw == HIVE_NULL else unquote(raw)
    return values


def _write_files(df: DataFrame, root: str, partition_columns: list[str], configuration: dict[str, str], data_change: bool) -> list[AddFile]:
    """Write ``df`` with Spark into the table and describe the new files as add actions."""
    staging = f"{root}/{STAGING_DIR}/{uuid.uuid4()}"
    writer = df.write.mode("errorifexists").option("compression", "snappy")
    if partition_columns:
        writer = writer.partitionBy(*partition_columns)
    writer.parquet(f"file://{staging}")
    adds = []
    now = int(time.time() * 1000)
    try:
        for directory, _, names in os.walk(staging):
            relative_dir = os.path.relpath(directory, staging)
            relative_dir = "" if relative_dir == "." else relative_dir
            for name in sorted(names):
                if not name.endswith(".parquet") or name.startswith((".", "_")):
                    continue
                relative = f"{relative_dir}/{name}" if relative_dir else name
                target = f"{root}/{relative}"
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.replace(f"{directory}/{name}", target)
                stats, _ = file_stats(target, configuration)
                adds.append(
                    AddFile(
                        log_path(relative),
                        _partition_values(relative_dir),
                        os.path.getsize(target),
                        now,
                        data_change=data_change,
                        stats=stats,
                    )
                )
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return adds


def _dynamic_partition_overwrite(df: DataFrame, options: dict[str, Any]) -> bool:
    mode = options.get("partitionoverwritemode") or df.sparkSession.conf.get("spark.sql.sources.partitionOverwriteMode", "static")
    return str(mode).lower() == "dynamic"


def _removes(files: pa.Table, data_change: bool) -> list[RemoveFile]:
    now = int(time.time() * 1000)
    return [
        RemoveFile(p, now, data_change, extended_file_metadata=True, partition_values=dict(pv), size=s)
        for p, s, pv in zip(
            files.column("path").to_pylist(), files.column("size").to_pylist(), files.column("partitionValues").to_pylist()
        )
    ]


def _num_records(add: AddFile) -> int:
    return int(json.loads(add.stats)["numRecords"]) if add.stats else 0


def write_dataframe(
    df: DataFrame, path: str, mode: str, partition_by: list[str] | None, options: dict[str, Any]
) -> WriteResult:
    """``df.write.format("delta").mode(mode).save(path)`` with delta-spark's options."""
    if mode.lower() not in _MODES:
        raise ValueError(f"unknown save mode {mode!r}: use append, overwrite, errorifexists or ignore")
    mode_name = _MODES[mode.lower()]
    table = Table(path)
    try:
        snapshot: Snapshot | None = table.snapshot()
    except TableNotFoundError:
        snapshot = None
    where = table.root
    if snapshot is not None and mode_name == "ErrorIfExists":
        raise DeltaAnalysisException(f"{where}: a Delta table already exists here (mode ErrorIfExists); use mode append or overwrite")
    if snapshot is not None and mode_name == "Ignore":
        return WriteResult(None, 0, 0)

    app_id, app_version = options.get("txnappid"), options.get("txnversion")
    if (app_id is None) != (app_version is None):
        raise ValueError(f"{where}: txnAppId and txnVersion go together")
    if snapshot is not None and app_id is not None:
        done = snapshot.app_transactions.get(str(app_id))
        if done is not None and done.version >= int(str(app_version)):
            return WriteResult(None, 0, 0)

    data_schema = df.schema
    merge = _true(options, "mergeschema") or _session_default(df, "spark.databricks.delta.schema.autoMerge.enabled")
    overwrite_schema = mode_name == "Overwrite" and _true(options, "overwriteschema")
    actions: list[Any] = []
    if snapshot is None or overwrite_schema:
        partition_columns = list(partition_by or [])
        schema = StructType([StructField(f.name, f.dataType, True, f.metadata) for f in data_schema.fields])
        missing = [c for c in partition_columns if c.lower() not in {f.name.lower() for f in schema.fields}]
        if missing:
            raise DeltaAnalysisException(f"{where}: partition column(s) {', '.join(missing)} are not in the data")
        configuration = dict(snapshot.configuration) if snapshot else _table_defaults(df)
        metadata = Metadata(
            snapshot.metadata.id if snapshot else str(uuid.uuid4()),
            delta_schema_json(schema),
            tuple(partition_columns),
            configuration,
            created_time=snapshot.metadata.created_time if snapshot else int(time.time() * 1000),
        )
        actions.append(metadata)
        if snapshot is None:
            actions.insert(0, _protocol_for(schema, configuration))
    else:
        schema = StructType.fromJson(snapshot.schema.to_json())
        partition_columns = list(snapshot.partition_columns)
        if partition_by and [c.lower() for c in partition_by] != [c.lower() for c in partition_columns]:
            raise DeltaAnalysisException(
                f"{where}: partition columns {partition_by} do not match the table's {partition_columns}; "
                "overwrite with .option('overwriteSchema', 'true') to change them"
            )
        if merge:
            merged = _merge_schemas(schema, data_schema, where)
            if merged != schema:
                schema = merged
                actions.append(
                    Metadata(
                        snapshot.metadata.id, delta_schema_json(schema), tuple(partition_columns), dict(snapshot.configuration),
                        name=snapshot.metadata.name, description=snapshot.metadata.description,
                        created_time=snapshot.metadata.created_time,
                    )
                )
        else:
            _check_schema(schema, data_schema, where)

    configuration = next((a.configuration for a in actions if isinstance(a, Metadata)), snapshot.configuration if snapshot else {})
    data_change = not (str(options.get("datachange", "true")).lower() == "false")
    replace_where = options.get("replacewhere") if mode_name == "Overwrite" and snapshot is not None else None
    dynamic = mode_name == "Overwrite" and snapshot is not None and _dynamic_partition_overwrite(df, options)
    if dynamic and not partition_columns:
        raise DeltaAnalysisException(f"{where}: dynamic partition overwrite needs a partitioned table")
    if dynamic and replace_where:
        raise DeltaAnalysisException(f"{where}: replaceWhere cannot be combined with dynamic partition overwrite")

    transaction = table.transaction(read_snapshot=snapshot)
    data = _aligned(df, schema, partition_columns)
    checks = table_constraints(schema, configuration)
    replaced: pa.Table | None = None
    if replace_where and snapshot is not None:
        checks.append(Constraint("replaceWhere", replace_where, "replaceWhere"))
        replaced, kept_rows = files_to_replace(df.sparkSession, snapshot, replace_where)
        transaction.mark_files_read(replaced.column("path").to_pylist())
        if kept_rows is not None:
            data = enforce(data, checks).unionByName(enforce(kept_rows, table_constraints(schema, configuration)))
            checks = []
    try:
        adds = _write_files(enforce(data, checks), table.root, partition_columns, configuration, data_change)
    except Exception as exc:
        raise violation(exc, where) or exc

    removes: list[RemoveFile] = []
    if snapshot is not None and mode_name == "Overwrite":
        targets = snapshot.files
        if replaced is not None:
            targets = replaced
        elif dynamic:
            targets = files_in_partitions(snapshot, [a.partition_values for a in adds])
            transaction.mark_files_read(targets.column("path").to_pylist())
        else:
            transaction.mark_read_whole_table()
        removes = _removes(targets, data_change)
    if app_id is not None:
        actions.append(SetTransaction(str(app_id), int(str(app_version)), int(time.time() * 1000)))
        transaction.mark_app_transaction_read(str(app_id))
    num_rows = sum(_num_records(a) for a in adds)
    try:
        result = _commit(transaction, actions, removes, adds, mode_name, partition_columns, num_rows, options, df)
    except BaseException:
        remove_unreferenced(table.root, adds)
        raise
    return WriteResult(result.version, len(adds), num_rows)


def _commit(
    transaction: Any,
    actions: list[Any],
    removes: list[RemoveFile],
    adds: list[AddFile],
    mode_name: str,
    partition_columns: list[str],
    num_rows: int,
    options: dict[str, Any],
    df: DataFrame,
) -> Any:
    return transaction.commit(
        [*actions, *removes, *adds],
        "WRITE",
        {"mode": mode_name, "partitionBy": json.dumps(partition_columns)},
        {
            "numFiles": len(adds),
            "numOutputRows": num_rows,
            "numOutputBytes": sum(a.size for a in adds),
            "numRemovedFiles": len(removes),
        },
        user_metadata=options.get("usermetadata") or df.sparkSession.conf.get("spark.databricks.delta.commitInfo.userMetadata", None),
    )


def remove_unreferenced(root: str, adds: list[AddFile]) -> None:
    """Delete files a failed write left behind."""
    for add in adds:
        try:
            os.unlink(absolute_path(root, add.path))
        except FileNotFoundError:
            pass
