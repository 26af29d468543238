"""ALTER TABLE on Delta tables: properties, columns, comments, CHECK constraints; metadata-only commits.

Each change is one commit of new metadata, prepared by the kernel (protocol upgrades
for features it turns on, column-mapping ids for new columns) under delta-spark's
operation names. Renaming and dropping columns need column mapping (``name`` or
``id``), so that data files keep their physical column names and nothing is rewritten.
``CLUSTER BY`` changes the liquid-clustering columns (a domain-metadata commit): files
already clustered stay as they are, OPTIMIZE clusters new data by the new columns.
A new CHECK constraint is validated against every existing row first (one Spark job).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DecimalType, StructField, StructType

from ...exceptions import DeltaAnalysisException
from ...kernel import Metadata, Snapshot, Table, metadata_change
from ...kernel.clustering import CLUSTERING_FEATURE, clustering_domain
from ...kernel.column_mapping import mapping_mode
from ...kernel.command_result import NOTHING_COMMITTED, CommandResult
from ...kernel.features import is_true
from ...kernel.protocol import FEATURE_PROP_PREFIX, require_writable, required_protocol, writer_features
from ...kernel.table_properties import normalize_properties
from ..conf import ALLOW_ARBITRARY_PROPERTIES, get_bool
from ..read.parquet import read_snapshot, spark_schema
from ..write.constraints import CONSTRAINT_PREFIX
from ..write.identity import identity_columns
from ..write.schema import delta_schema_json, new_table_schema

TYPE_WIDENING_PROPERTY = "delta.enableTypeWidening"
TYPE_CHANGES_KEY = "delta.typeChanges"


def _commit(
    table: Table,
    change: Any,
    operation: str,
    parameters: dict[str, Any],
    renamed_partition: tuple[str, str] | None = None,
    checked: Snapshot | None = None,
) -> CommandResult:
    """Commit ``change(configuration, schema) -> (configuration, schema)`` as new metadata (no metrics, as delta-spark's).

    ``renamed_partition`` (old name, new name) renames a partition column in the
    metadata's partition columns too, as delta-spark does. ``checked`` is the snapshot whose
    rows the change was validated against: the commit then depends on all of them, so a
    concurrent append refuses it rather than slip unchecked rows past it.
    """
    snapshot = checked or table.snapshot()
    require_writable(snapshot.protocol, snapshot.metadata, table.root)
    configuration, schema = change(dict(snapshot.metadata.configuration), spark_schema(snapshot))
    partition_columns = snapshot.metadata.partition_columns
    if renamed_partition is not None:
        old, new = renamed_partition
        partition_columns = tuple(new if c.lower() == old.lower() else c for c in partition_columns)
    wanted: Metadata = replace(
        snapshot.metadata,
        configuration=configuration,
        schema_string=delta_schema_json(schema),
        partition_columns=partition_columns,
    )
    prepared, protocol = metadata_change.prepare(wanted, snapshot.metadata, snapshot.protocol)
    actions: list[Any] = [prepared] if protocol is snapshot.protocol else [protocol, prepared]
    transaction = table.transaction(read_snapshot=snapshot)
    if checked is not None:
        transaction.mark_read_whole_table()
    return CommandResult(transaction.commit(actions, operation, parameters), {})


def set_properties(spark: SparkSession, table: Table, properties: dict[str, str]) -> CommandResult:
    allow = get_bool(spark, ALLOW_ARBITRARY_PROPERTIES)
    normalized = normalize_properties(properties, table.root, allow)
    return _commit(
        table, lambda conf, schema: ({**conf, **normalized}, schema), "SET TBLPROPERTIES", {"properties": json.dumps(normalized)}
    )


def unset_properties(table: Table, keys: list[str], if_exists: bool) -> CommandResult:
    def change(conf: dict[str, str], schema: StructType) -> tuple[dict[str, str], StructType]:
        by_lower = {k.lower(): k for k in conf}
        missing = [k for k in keys if k.lower() not in by_lower]
        if missing and not if_exists:
            raise DeltaAnalysisException(
                f"{table.root}: cannot unset {', '.join(missing)}: no such table properties",
                errorClass="DELTA_UNSET_NON_EXISTENT_PROPERTY",
            )
        gone = {by_lower[k.lower()] for k in keys if k.lower() in by_lower}
        return {k: v for k, v in conf.items() if k not in gone}, schema

    return _commit(table, change, "UNSET TBLPROPERTIES", {"properties": json.dumps(keys), "ifExists": if_exists})


def _field(schema: StructType, path: list[str], where: str) -> tuple[StructType, StructField]:
    """The struct holding the column at ``path`` and the column itself (names matched case-insensitively)."""
    parent = schema
    for depth, name in enumerate(path):
        found = next((f for f in parent.fields if f.name.lower() == name.lower()), None)
        if found is None:
            raise DeltaAnalysisException(f"{where}: no column {'.'.join(path)}")
        if depth == len(path) - 1:
            return parent, found
        if not isinstance(found.dataType, StructType):
            raise DeltaAnalysisException(f"{where}: {'.'.join(path[: depth + 1])} is not a struct")
        parent = found.dataType
    raise DeltaAnalysisException(f"{where}: no column given")


def _replaced(schema: StructType, path: list[str], new: StructType) -> StructType:
    """``schema`` with the struct at ``path`` (a struct column, or the root for ``[]``) replaced by ``new``."""
    if not path:
        return new
    fields = []
    for f in schema.fields:
        if f.name.lower() == path[0].lower():
            assert isinstance(f.dataType, StructType)
            f = StructField(f.name, _replaced(f.dataType, path[1:], new), f.nullable, f.metadata)
        fields.append(f)
    return StructType(fields)


def add_columns(table: Table, columns: list[tuple[list[str], StructField]]) -> CommandResult:
    """Add columns at the end of the table or of a struct (``path`` is the new column's full name)."""

    def change(conf: dict[str, str], schema: StructType) -> tuple[dict[str, str], StructType]:
        for path, field in columns:
            parent_path = path[:-1]
            parent = schema if not parent_path else _field(schema, parent_path, table.root)[1].dataType
            assert isinstance(parent, StructType)
            if any(f.name.lower() == path[-1].lower() for f in parent.fields):
                raise DeltaAnalysisException(f"{table.root}: column {'.'.join(path)} already exists")
            if not field.nullable:
                raise DeltaAnalysisException(
                    f"{table.root}: a column added to an existing table must be nullable ({'.'.join(path)})"
                )
            added = new_table_schema(StructType([field])).fields[0]
            added = StructField(path[-1], added.dataType, True, field.metadata)
            schema = _replaced(schema, parent_path, StructType([*parent.fields, added]))
        return conf, schema

    described = [{"column": {"name": ".".join(p), "type": f.dataType.simpleString()}} for p, f in columns]
    return _commit(table, change, "ADD COLUMNS", {"columns": json.dumps(described)})


def set_comment(table: Table, path: list[str], comment: str) -> CommandResult:
    def change(conf: dict[str, str], schema: StructType) -> tuple[dict[str, str], StructType]:
        parent, field = _field(schema, path, table.root)
        updated = StructField(field.name, field.dataType, field.nullable, {**field.metadata, "comment": comment})
        fields = [updated if f is field else f for f in parent.fields]
        return conf, _replaced(schema, path[:-1], StructType(fields))

    return _commit(table, change, "CHANGE COLUMN", {"column": json.dumps({"name": ".".join(path), "comment": comment})})


_INTEGERS = ("byte", "short", "integer", "long")


def _widens(old: DataType, new: DataType) -> bool:
    """Whether ``old`` -> ``new`` is one of the type changes PROTOCOL.md's Type Widening allows.

    Date -> timestamp_ntz is allowed there too; it is left out here because stats written as
    dates would then be compared as timestamps."""
    old_name, new_name = old.typeName(), new.typeName()
    if old_name in _INTEGERS and new_name in _INTEGERS:
        return _INTEGERS.index(old_name) < _INTEGERS.index(new_name)
    if new_name == "double":
        return old_name in ("float", "byte", "short", "integer")
    if isinstance(new, DecimalType):
        if isinstance(old, DecimalType):
            grown, scaled = new.precision - old.precision, new.scale - old.scale
            return grown >= scaled >= 0 and (grown, scaled) != (0, 0)
        digits = {"byte": 10, "short": 10, "integer": 10, "long": 20}.get(old_name)
        return digits is not None and new.precision - digits >= new.scale >= 0
    return False


def _widened(field: StructField, new_type: DataType, path: list[str], where: str) -> StructField:
    """``field`` with ``new_type``, its change recorded in ``delta.typeChanges``; refused unless a widening."""
    if not _widens(field.dataType, new_type):
        raise DeltaAnalysisException(
            f"{where}: cannot change {'.'.join(path)} from "
            f"{field.dataType.simpleString()} to {new_type.simpleString()}: not a type widening sparkdelta supports "
            "(byte < short < int < long, float or int to double, wider decimals, integers to wide enough decimals)",
            errorClass="DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP",
        )
    history = [
        *field.metadata.get(TYPE_CHANGES_KEY, []),
        {"toType": new_type.jsonValue(), "fromType": field.dataType.jsonValue()},
    ]
    return StructField(field.name, new_type, field.nullable, {**field.metadata, TYPE_CHANGES_KEY: history})


def change_type(table: Table, path: list[str], new_type: DataType) -> CommandResult:
    """``ALTER TABLE ... ALTER COLUMN c TYPE t``: widen a column's type (table feature typeWidening).

    Data files keep their old types; readers widen them as they read (Spark's Parquet reader
    does). The change is recorded in the field's ``delta.typeChanges`` metadata."""
    snapshot = table.snapshot()
    if len(path) == 1 and any(c.name.lower() == path[0].lower() for c in identity_columns(spark_schema(snapshot))):
        raise DeltaAnalysisException(
            "ALTER TABLE ALTER COLUMN is not supported for IDENTITY columns.",
            errorClass="DELTA_IDENTITY_COLUMNS_ALTER_COLUMN_NOT_SUPPORTED",
        )
    if not is_true(snapshot.configuration, TYPE_WIDENING_PROPERTY):
        raise DeltaAnalysisException(
            f"{table.root}: changing the type of {'.'.join(path)} needs "
            f"type widening; enable it first with ALTER TABLE ... SET TBLPROPERTIES ('{TYPE_WIDENING_PROPERTY}' = 'true')",
            errorClass="DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP",
        )
    _, field = _field(spark_schema(snapshot), path, table.root)
    if field.dataType == new_type:
        return NOTHING_COMMITTED
    widened = _widened(field, new_type, path, table.root)

    def change(conf: dict[str, str], schema: StructType) -> tuple[dict[str, str], StructType]:
        parent, current = _field(schema, path, table.root)
        new = _widened(current, new_type, path, table.root)
        return conf, _replaced(schema, path[:-1], StructType([new if f is current else f for f in parent.fields]))

    return _commit(table, change, "CHANGE COLUMN", {"column": json.dumps(widened.jsonValue(), separators=(",", ":"))})


def _require_mapping(table: Table, what: str) -> None:
    if mapping_mode(table.snapshot().configuration) == "none":
        raise DeltaAnalysisException(
            f"{table.root}: {what} needs column mapping; enable it first with "
            "ALTER TABLE ... SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
        )


def rename_column(table: Table, path: list[str], new_name: str) -> CommandResult:
    """Rename a column or struct field; data files keep its physical name. A partition column
    is renamed in the partition columns too (partition values are keyed by physical name)."""
    _require_mapping(table, "renaming a column")

    def change(conf: dict[str, str], schema: StructType) -> tuple[dict[str, str], StructType]:
        parent, field = _field(schema, path, table.root)
        if any(f.name.lower() == new_name.lower() for f in parent.fields if f is not field):
            raise DeltaAnalysisException(f"{table.root}: cannot rename {'.'.join(path)} to {new_name}: that column exists")
        renamed = StructField(new_name, field.dataType, field.nullable, field.metadata)
        return conf, _replaced(schema, path[:-1], StructType([renamed if f is field else f for f in parent.fields]))

    parameters = {"oldColumnPath": ".".join(path), "newColumnPath": ".".join([*path[:-1], new_name])}
    return _commit(table, change, "RENAME COLUMN", parameters, (path[0], new_name) if len(path) == 1 else None)


def drop_columns(table: Table, paths: list[list[str]], if_exists: bool) -> CommandResult:
    _require_mapping(table, "dropping a column")

    def change(conf: dict[str, str], schema: StructType) -> tuple[dict[str, str], StructType]:
        partitions = {c.lower() for c in table.snapshot().partition_columns}
        for path in paths:
            try:
                parent, field = _field(schema, path, table.root)
            except DeltaAnalysisException:
                if if_exists:
                    continue
                raise
            if len(path) == 1 and path[0].lower() in partitions:
                raise DeltaAnalysisException(f"{table.root}: cannot drop partition column {path[0]}")
            remaining = [f for f in parent.fields if f is not field]
            if not remaining:
                raise DeltaAnalysisException(f"{table.root}: cannot drop {'.'.join(path)}: it is the last column of its struct")
            schema = _replaced(schema, path[:-1], StructType(remaining))
        return conf, schema

    return _commit(table, change, "DROP COLUMNS", {"columns": json.dumps([".".join(p) for p in paths])})


def cluster_by(table: Table, columns: list[str]) -> CommandResult:
    """Make ``columns`` the clustering columns (none: unclustered); existing files are not rewritten."""
    snapshot = table.snapshot()
    require_writable(snapshot.protocol, snapshot.metadata, table.root)
    domain = clustering_domain(snapshot.schema, columns, snapshot.partition_columns, table.root)
    actions: list[Any] = [domain]
    if CLUSTERING_FEATURE not in writer_features(snapshot.protocol):
        wanted = replace(
            snapshot.metadata,
            configuration={**snapshot.metadata.configuration, f"{FEATURE_PROP_PREFIX}{CLUSTERING_FEATURE}": "supported"},
        )
        actions.insert(0, required_protocol(wanted, snapshot.protocol))
    parameters = {"clusteringColumns": json.dumps(columns, separators=(",", ":"))}
    return CommandResult(table.transaction(read_snapshot=snapshot).commit(actions, "CLUSTER BY", parameters), {})


def add_constraint(spark: SparkSession, table: Table, name: str, expression: str) -> CommandResult:
    """Add CHECK constraint ``name``, after checking that every existing row satisfies it."""
    key = f"{CONSTRAINT_PREFIX}{name.lower()}"
    snapshot = table.snapshot()
    if key in {k.lower() for k in snapshot.configuration}:
        raise DeltaAnalysisException(
            f"{table.root}: constraint '{name}' already exists; drop it first", errorClass="DELTA_CONSTRAINT_ALREADY_EXISTS"
        )
    violating = read_snapshot(spark, snapshot).where(~F.coalesce(F.expr(expression), F.lit(False))).count()
    if violating:
        raise DeltaAnalysisException(
            f"{table.root}: {violating} rows in version {snapshot.version} violate the new CHECK constraint ({expression})",
            errorClass="DELTA_NEW_CHECK_CONSTRAINT_VIOLATION",
        )
    return _commit(
        table,
        lambda conf, schema: ({**conf, key: expression}, schema),
        "ADD CONSTRAINT",
        {"name": name, "expr": expression},
        checked=snapshot,
    )


def drop_constraint(table: Table, name: str, if_exists: bool) -> CommandResult:
    def change(conf: dict[str, str], schema: StructType) -> tuple[dict[str, str], StructType]:
        key = next((k for k in conf if k.lower() == f"{CONSTRAINT_PREFIX}{name.lower()}"), None)
        if key is None:
            if if_exists:
                return conf, schema
            raise DeltaAnalysisException(
                f"{table.root}: constraint '{name}' does not exist", errorClass="DELTA_CONSTRAINT_DOES_NOT_EXIST"
            )
        return {k: v for k, v in conf.items() if k != key}, schema

    return _commit(table, change, "DROP CONSTRAINT", {"name": name})
