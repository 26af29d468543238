"""CREATE TABLE, REPLACE TABLE and CREATE OR REPLACE TABLE: delta-spark's ``CreateDeltaTableCommand``.

Both surfaces build a ``TableSpec`` and run ``create_table``: ``DeltaTableBuilder``
(``DeltaTable.create(spark)...execute()``) and SQL's ``CREATE TABLE ... USING delta``.
The table is committed in one transaction, recorded in history as delta-spark records
it (``CREATE TABLE``, ``REPLACE TABLE``, ``CREATE OR REPLACE TABLE``). Replacing is
dropping and re-creating in place: the new table has a new id, its own schema and no
files, but keeps the history (time travel still reaches the old versions) and never a
lower protocol.

A table is named by ``name`` (a catalog entry), by ``location`` (a path), or both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import DataType, StructField, StructType

from ...exceptions import DeltaAnalysisException
from ...kernel import CommitResult, Snapshot, Table, TableNotFoundError, UnsupportedFeatureError, column_defaults
from ...kernel.clustering import clustering_columns
from ...kernel.command_result import CommandResult
from ...kernel.create_table import NewTable
from ...kernel.create_table import create_table as new_table
from ...kernel.features import GENERATION_EXPRESSION
from ...kernel.file_actions import remove_actions
from ...kernel.protocol import require_writable
from .. import catalog
from ..conf import ALLOW_ARBITRARY_PROPERTIES, IDENTITY_COLUMNS_ENABLED, get_bool, property_defaults
from ..paths import normalize_location
from ..storage import open_table
from ..write.dataframe import refuse_data_outside_a_table
from ..write.generated import validate_generated_columns
from ..write.identity import check_identity_columns, check_identity_definition, identity_columns, identity_metadata
from ..write.schema import bare, delta_schema_json

MODES = ("create", "createIfNotExists", "replace", "createOrReplace")
_OPERATIONS = {
    "create": "CREATE TABLE",
    "createIfNotExists": "CREATE TABLE",
    "replace": "REPLACE TABLE",
    "createOrReplace": "CREATE OR REPLACE TABLE",
}


@dataclass(frozen=True)
class TableSpec:
    """The table to create: delta-spark's ``CatalogTable`` and save mode, as both surfaces give them.

    ``columns`` carry NOT NULL, comments (metadata ``comment``), generation expressions
    (``delta.generationExpression``) and identity definitions (``delta.identity.*``);
    ``properties`` are the user's, before the session's
    ``spark.databricks.delta.properties.defaults.*``.
    """

    mode: str
    name: str | None = None
    location: str | None = None
    columns: tuple[StructField, ...] = ()
    partition_columns: tuple[str, ...] = ()
    clustering_columns: tuple[str, ...] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    comment: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown create mode {self.mode!r}: use one of {', '.join(MODES)}")

    @property
    def schema(self) -> StructType:
        return StructType(list(self.columns))


@dataclass(frozen=True)
class CreateTableResult(CommandResult):
    """The create's commit (None when ``createIfNotExists`` found the table), with the table's
    ``location`` and, for a named table, its catalog ``name``."""

    location: str
    name: str | None


@dataclass(frozen=True)
class Identity:
    """An identity column's definition: ``GENERATED ALWAYS`` or ``BY DEFAULT AS IDENTITY (START
    WITH start INCREMENT BY step)``."""

    start: int = 1
    step: int = 1
    always: bool = True


def column(
    name: str,
    data_type: DataType,
    nullable: bool,
    generated_always_as: str | None,
    comment: str | None,
    identity: Identity | None = None,
    default: str | None = None,
) -> StructField:
    """A column as both surfaces declare it: its generation expression or identity definition,
    default (SQL) and comment, in its metadata. An identity definition is checked here, as
    delta-spark's column builder checks it."""
    metadata: dict[str, Any] = {}
    if default is not None:
        metadata[column_defaults.KEY] = default
    if identity is not None:
        metadata.update(identity_metadata(identity.start, identity.step, not identity.always))
    if generated_always_as is not None:
        metadata[GENERATION_EXPRESSION] = generated_always_as
    if comment is not None:
        metadata["comment"] = comment
    field = StructField(name, data_type, nullable, metadata)
    if identity is not None:
        check_identity_definition(field)
    return field


def with_column(columns: tuple[StructField, ...], added: StructField) -> tuple[StructField, ...]:
    """``columns`` and ``added``; a name given twice (in any case) is refused."""
    if added.name.lower() in {f.name.lower() for f in columns}:
        raise DeltaAnalysisException(f"column {added.name} is added twice")
    return (*columns, added)


@dataclass(frozen=True)
class _Target:
    """Where the table lives, under which name, and whether the catalog must learn of it."""

    location: str
    name: str | None
    managed: bool
    registered: bool

    @property
    def label(self) -> str:
        """The table as errors name it (delta-spark's spelling for path-only tables)."""
        return self.name or f"delta.`{self.location}`"


def create_table(spark: SparkSession, spec: TableSpec) -> CreateTableResult:
    """Create (or replace) the table ``spec`` describes, and name it in the catalog if it has a name."""
    target = _target(spark, spec)
    table = open_table(spark, target.location)
    try:
        snapshot = table.snapshot()
    except TableNotFoundError:
        snapshot = None
    if snapshot is not None:
        _check_existing_schema(spec, target, snapshot.schema.json())
    if snapshot is not None and spec.mode in ("create", "createIfNotExists"):
        if spec.mode == "create" and not _registers_existing(spec, target, snapshot.schema.json(), snapshot.partition_columns):
            raise DeltaAnalysisException(
                f"Cannot create table {target.label} because it already exists. "
                "Choose a different name, drop the existing table, or use createIfNotExists / createOrReplace.",
                errorClass="TABLE_OR_VIEW_ALREADY_EXISTS",
            )
        _register_external(spark, target)
        return CreateTableResult(None, {}, target.location, target.name)
    if snapshot is None and spec.mode == "replace":
        if target.name is not None:  # Spark's error for a catalog table, as delta-spark lets Spark raise it
            raise DeltaAnalysisException(
                f"Table or view {target.label} cannot be replaced as it did not exist. "
                "Use CREATE OR REPLACE TABLE to create the table.",
                errorClass="CANNOT_REPLACE_MISSING_TABLE",
            )
        raise DeltaAnalysisException(
            f"Table {target.label} cannot be replaced as it does not exist. Use CREATE OR REPLACE TABLE to create the table.",
            errorClass="DELTA_CANNOT_REPLACE_MISSING_TABLE",
        )
    if snapshot is None:
        refuse_data_outside_a_table(table)
    return CreateTableResult(_commit(spark, spec, target, table, snapshot), {}, target.location, target.name)


def _target(spark: SparkSession, spec: TableSpec) -> _Target:
    if spec.name is None and spec.location is None:
        raise DeltaAnalysisException("a Delta table needs a tableName or a location")
    location = Table(normalize_location(spec.location)).root if spec.location is not None else None
    if spec.name is None:
        assert location is not None
        return _Target(location, None, managed=False, registered=False)
    entry = catalog.lookup(spark, spec.name)
    if entry is not None:
        if not entry.is_delta:
            raise DeltaAnalysisException(f"{entry.name} exists and is not a Delta table (its provider is {entry.provider!r})")
        if location is not None and location != Table(entry.location).root:
            raise DeltaAnalysisException(f"{entry.name} is at {entry.location}, not at the given location {location}")
        return _Target(Table(entry.location).root, entry.name, entry.managed, registered=True)
    if location is not None:
        return _Target(location, spec.name, managed=False, registered=False)
    return _Target(Table(catalog.default_location(spark, spec.name)).root, spec.name, managed=True, registered=False)


def _registers_existing(spec: TableSpec, target: _Target, schema_json: str, partition_columns: tuple[str, ...]) -> bool:
    """Whether ``create`` only names an existing table (delta-spark allows that when the
    given schema and partitioning match the table's)."""
    if target.name is None or target.registered or not spec.columns:
        return False
    existing = StructType.fromJson(json.loads(schema_json))
    return bare(existing) == bare(spec.schema) and [c.lower() for c in partition_columns] == [
        c.lower() for c in spec.partition_columns
    ]


def _check_existing_schema(spec: TableSpec, target: _Target, schema_json: str) -> None:
    """delta-spark's check of a given schema against a table already at the location: a path
    table's replace, and a new name for an existing location, must give its schema
    (``DELTA_CREATE_TABLE_SCHEME_MISMATCH``); a named table's replace and a path's
    createIfNotExists need not."""
    checked = (target.name is None and spec.mode in ("replace", "createOrReplace")) or (
        target.name is not None and not target.registered and spec.mode == "createIfNotExists"
    )
    existing = StructType.fromJson(json.loads(schema_json))
    if checked and spec.columns and bare(existing) != bare(spec.schema):
        raise DeltaAnalysisException(
            f"The specified schema does not match the existing schema at {target.location}. "
            f"Specified: {spec.schema.simpleString()}; existing: {existing.simpleString()}.",
            errorClass="DELTA_CREATE_TABLE_SCHEME_MISMATCH",
        )


def _register_external(spark: SparkSession, target: _Target) -> None:
    if target.name is not None and not target.registered:
        catalog.register(spark, target.name, target.location, managed=False)


def _new_table(spark: SparkSession, spec: TableSpec, target: _Target, snapshot: Snapshot | None) -> NewTable:
    """The table's metadata, protocol (never below a replaced table's) and clustering domain
    (an empty one clears a replaced table's clustering)."""
    if not spec.columns:
        raise DeltaAnalysisException(
            f"{target.label}: the table's schema is not given; add columns with addColumn",
            errorClass="DELTA_SCHEMA_NOT_PROVIDED",
        )
    schema = spec.schema
    names = {f.name.lower() for f in spec.columns}
    unknown = [c for c in spec.partition_columns if c.lower() not in names]
    if unknown:
        raise DeltaAnalysisException(f"{target.label}: partition column(s) {', '.join(unknown)} are not columns of the table")
    if spec.partition_columns and len(spec.partition_columns) == len(spec.columns):
        raise DeltaAnalysisException(f"{target.label}: a table cannot use all of its columns as partition columns")
    if identity_columns(schema) and not get_bool(spark, IDENTITY_COLUMNS_ENABLED):
        raise UnsupportedFeatureError(
            f"{target.label}: the table requires writer table feature(s) that are unsupported while "
            f"{IDENTITY_COLUMNS_ENABLED.key} is false: identityColumns",
            frozenset({"identityColumns"}),
            error_class="DELTA_UNSUPPORTED_FEATURES_FOR_WRITE",
        )
    check_identity_columns(schema, spec.partition_columns, target.label)
    validate_generated_columns(spark, schema, target.label)
    by_name = {f.name.lower(): f.name for f in spec.columns}
    clustered = bool(spec.clustering_columns) or (snapshot is not None and bool(clustering_columns(snapshot)))
    return new_table(
        target.label,
        delta_schema_json(schema),
        [by_name[c.lower()] for c in spec.partition_columns],
        {**property_defaults(spark), **spec.properties},
        allow_arbitrary_properties=get_bool(spark, ALLOW_ARBITRARY_PROPERTIES),
        clustering_columns=list(spec.clustering_columns) if clustered else None,
        description=spec.comment,
        protocol=snapshot.protocol if snapshot is not None else None,
    )


def _commit(spark: SparkSession, spec: TableSpec, target: _Target, table: Table, snapshot: Snapshot | None) -> CommitResult:
    new = _new_table(spark, spec, target, snapshot)
    metadata = new.metadata
    require_writable(new.protocol, metadata, target.label)
    transaction = table.transaction(read_snapshot=snapshot)
    actions: list[Any] = list(new.actions)
    if snapshot is not None:
        transaction.mark_read_whole_table()
        actions.extend(remove_actions(snapshot.files, data_change=True))
    parameters = {
        "isManaged": "true" if target.managed else "false",
        "description": metadata.description,
        "partitionBy": json.dumps(list(metadata.partition_columns)),
        "clusterBy": json.dumps(list(spec.clustering_columns), separators=(",", ":")),
        "properties": json.dumps(metadata.configuration, separators=(",", ":")),
    }
    if target.name is not None and not target.registered and target.managed:
        # A managed entry must exist before its directory has files (see catalog.py).
        catalog.register(spark, target.name, target.location, managed=True, schema=spec.schema, comment=spec.comment)
        try:
            return transaction.commit(actions, _OPERATIONS[spec.mode], parameters)
        except BaseException:
            catalog.unregister(spark, target.name)
            raise
    committed = transaction.commit(actions, _OPERATIONS[spec.mode], parameters)
    _register_external(spark, target)
    return committed
