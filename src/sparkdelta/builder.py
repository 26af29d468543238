"""``DeltaTableBuilder``: delta-spark's ``DeltaTable.create(spark)...execute()`` API.

The builder collects a schema (with NOT NULL, generated columns and comments), the
partitioning, a comment and table properties, then commits a table in one transaction,
recorded in history as delta-spark records it (``CREATE TABLE``, ``REPLACE TABLE``,
``CREATE OR REPLACE TABLE``). Replacing is dropping and re-creating in place: the new
table has a new id, its own schema and no files, but keeps the history (time travel
still reaches the old versions) and never a lower protocol.

A table is named by ``tableName`` (a catalog entry), by ``location`` (a path), or both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import SparkSession
from pyspark.sql.types import DataType, StructField, StructType, _parse_datatype_string

from .exceptions import DeltaAnalysisException, spark_surface
from .kernel import Snapshot, Table, TableNotFoundError
from .kernel.clustering import clustering_columns
from .kernel.create_table import NewTable, create_table
from .kernel.file_actions import remove_actions
from .kernel.protocol import require_writable
from .spark import catalog
from .spark.conf import ALLOW_ARBITRARY_PROPERTIES, get_bool, property_defaults
from .spark.paths import normalize_location
from .spark.storage import open_table
from .spark.write.dataframe import refuse_data_outside_a_table
from .spark.write.generated import GENERATION_EXPRESSION, validate_generated_columns
from .spark.write.schema import bare, delta_schema_json

if TYPE_CHECKING:
    from .tables import DeltaTable

MODES = ("create", "createIfNotExists", "replace", "createOrReplace")
_OPERATIONS = {
    "create": "CREATE TABLE",
    "createIfNotExists": "CREATE TABLE",
    "replace": "REPLACE TABLE",
    "createOrReplace": "CREATE OR REPLACE TABLE",
}


@dataclass(frozen=True)
class IdentityGenerator:
    """delta-spark's identity column spec (``generatedAlwaysAs=IdentityGenerator()``); refused on use."""

    start: int = 1
    step: int = 1


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


@spark_surface
class DeltaTableBuilder:
    """Builds a Delta table: ``DeltaTable.create(spark).tableName(...).addColumn(...).execute()``."""

    def __init__(self, spark: SparkSession, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown builder mode {mode!r}: use one of {', '.join(MODES)}")
        self._spark = spark
        self._mode = mode
        self._name: str | None = None
        self._location: str | None = None
        self._comment: str | None = None
        self._columns: list[StructField] = []
        self._partition_columns: list[str] = []
        self._clustering_columns: list[str] = []
        self._properties: dict[str, str] = {}

    def tableName(self, identifier: str) -> DeltaTableBuilder:
        """The catalog name (``table`` or ``db.table``)."""
        self._name = _text(identifier, "identifier")
        return self

    def location(self, location: str) -> DeltaTableBuilder:
        """Where the table's data and log live."""
        self._location = _text(location, "location")
        return self

    def comment(self, comment: str) -> DeltaTableBuilder:
        """The table's description."""
        self._comment = _text(comment, "comment")
        return self

    def addColumn(
        self,
        colName: str,
        dataType: str | DataType,
        nullable: bool = True,
        generatedAlwaysAs: str | IdentityGenerator | None = None,
        generatedByDefaultAs: IdentityGenerator | None = None,
        comment: str | None = None,
    ) -> DeltaTableBuilder:
        """Add a column; ``dataType`` is a Spark type or its SQL name (``"DECIMAL(10,2)"``)."""
        name = _text(colName, "colName")
        if isinstance(generatedAlwaysAs, IdentityGenerator) or generatedByDefaultAs is not None:
            raise DeltaAnalysisException(
                f"column {name}: identity columns (GENERATED ... AS IDENTITY) are not supported: "
                "sparkdelta cannot write the identityColumns table feature yet"
            )
        data_type = _parse_datatype_string(dataType) if isinstance(dataType, str) else dataType
        if not isinstance(data_type, DataType):
            raise TypeError(f"column {name}: dataType must be a Spark DataType or a type name, not {type(dataType).__name__}")
        if not isinstance(nullable, bool):
            raise TypeError(f"column {name}: nullable must be a bool")
        metadata: dict[str, Any] = {}
        if generatedAlwaysAs is not None:
            metadata[GENERATION_EXPRESSION] = _text(generatedAlwaysAs, "generatedAlwaysAs")
        if comment is not None:
            metadata["comment"] = _text(comment, "comment")
        self._add(StructField(name, data_type, nullable, metadata))
        return self

    def addColumns(self, cols: StructType | list[StructField]) -> DeltaTableBuilder:
        """Add every field of a schema, metadata (comments, generation expressions) included."""
        fields = cols.fields if isinstance(cols, StructType) else cols
        for field in fields:
            if not isinstance(field, StructField):
                raise TypeError(f"addColumns takes a StructType or a list of StructField, not {type(field).__name__}")
            self._add(field)
        return self

    def partitionedBy(self, *cols: str | list[str]) -> DeltaTableBuilder:
        names = cols[0] if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else cols
        self._partition_columns = [_text(c, "partition column") for c in names]
        return self

    def clusterBy(self, *cols: str | list[str]) -> DeltaTableBuilder:
        """Liquid clustering by these columns (OPTIMIZE clusters the data; no partitioning)."""
        names = cols[0] if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else cols
        self._clustering_columns = [_text(c, "clustering column") for c in names]
        return self

    def property(self, key: str, value: str) -> DeltaTableBuilder:
        """A table property, e.g. ``delta.enableChangeDataFeed`` = ``true``."""
        self._properties[_text(key, "key")] = _text(value, "value")
        return self

    def _add(self, field: StructField) -> None:
        if field.name.lower() in {f.name.lower() for f in self._columns}:
            raise DeltaAnalysisException(f"column {field.name} is added twice")
        self._columns.append(field)

    def execute(self) -> DeltaTable:
        """Create (or replace) the table and return it."""
        from .tables import DeltaTable

        return DeltaTable.forPath(self._spark, self.create_table())

    def create_table(self) -> str:
        """Create (or replace) the table as ``execute`` does; its location (for SQL, which has no use for a ``DeltaTable``)."""
        target = self._target()
        table = open_table(self._spark, target.location)
        try:
            snapshot = table.snapshot()
        except TableNotFoundError:
            snapshot = None
        if snapshot is not None and self._mode in ("create", "createIfNotExists"):
            if self._mode == "create" and not self._registers_existing(
                target, snapshot.schema.json(), snapshot.partition_columns
            ):
                raise DeltaAnalysisException(
                    f"Cannot create table {target.label} because it already exists. "
                    "Choose a different name, drop the existing table, or use createIfNotExists / createOrReplace.",
                    errorClass="TABLE_OR_VIEW_ALREADY_EXISTS",
                )
            self._register_external(target)
            return target.location
        if snapshot is None and self._mode == "replace":
            raise DeltaAnalysisException(
                f"Table {target.label} cannot be replaced as it does not exist. Use createOrReplace to create it.",
                errorClass="DELTA_CANNOT_REPLACE_MISSING_TABLE",
            )
        if snapshot is None:
            refuse_data_outside_a_table(table)
        self._commit(target, table, snapshot)
        return target.location

    def _target(self) -> _Target:
        if self._name is None and self._location is None:
            raise DeltaAnalysisException("a Delta table needs a tableName or a location")
        location = Table(normalize_location(self._location)).root if self._location is not None else None
        if self._name is None:
            assert location is not None
            return _Target(location, None, managed=False, registered=False)
        entry = catalog.lookup(self._spark, self._name)
        if entry is not None:
            if not entry.is_delta:
                raise DeltaAnalysisException(f"{entry.name} exists and is not a Delta table (its provider is {entry.provider!r})")
            if location is not None and location != Table(entry.location).root:
                raise DeltaAnalysisException(f"{entry.name} is at {entry.location}, not at the given location {location}")
            return _Target(Table(entry.location).root, entry.name, entry.managed, registered=True)
        if location is not None:
            return _Target(location, self._name, managed=False, registered=False)
        return _Target(Table(catalog.default_location(self._spark, self._name)).root, self._name, managed=True, registered=False)

    def _registers_existing(self, target: _Target, schema_json: str, partition_columns: tuple[str, ...]) -> bool:
        """Whether ``create`` only names an existing table (delta-spark allows that when the
        given schema and partitioning match the table's)."""
        if target.name is None or target.registered or not self._columns:
            return False
        existing = StructType.fromJson(json.loads(schema_json))
        return bare(existing) == bare(StructType(self._columns)) and [c.lower() for c in partition_columns] == [
            c.lower() for c in self._partition_columns
        ]

    def _register_external(self, target: _Target) -> None:
        if target.name is not None and not target.registered:
            catalog.register(self._spark, target.name, target.location, managed=False)

    def _new_table(self, target: _Target, snapshot: Snapshot | None) -> NewTable:
        """The table's metadata, protocol (never below a replaced table's) and clustering domain
        (an empty one clears a replaced table's clustering)."""
        if not self._columns:
            raise DeltaAnalysisException(
                f"{target.label}: the table's schema is not given; add columns with addColumn",
                errorClass="DELTA_SCHEMA_NOT_PROVIDED",
            )
        schema = StructType(self._columns)
        names = {f.name.lower() for f in self._columns}
        unknown = [c for c in self._partition_columns if c.lower() not in names]
        if unknown:
            raise DeltaAnalysisException(f"{target.label}: partition column(s) {', '.join(unknown)} are not columns of the table")
        if self._partition_columns and len(self._partition_columns) == len(self._columns):
            raise DeltaAnalysisException(f"{target.label}: a table cannot use all of its columns as partition columns")
        validate_generated_columns(self._spark, schema, target.label)
        by_name = {f.name.lower(): f.name for f in self._columns}
        clustered = bool(self._clustering_columns) or (snapshot is not None and bool(clustering_columns(snapshot)))
        return create_table(
            target.label,
            delta_schema_json(schema),
            [by_name[c.lower()] for c in self._partition_columns],
            {**property_defaults(self._spark), **self._properties},
            allow_arbitrary_properties=get_bool(self._spark, ALLOW_ARBITRARY_PROPERTIES),
            clustering_columns=self._clustering_columns if clustered else None,
            description=self._comment,
            protocol=snapshot.protocol if snapshot is not None else None,
        )

    def _commit(self, target: _Target, table: Table, snapshot: Snapshot | None) -> None:
        new = self._new_table(target, snapshot)
        metadata = new.metadata
        require_writable(new.protocol, metadata, target.label)
        transaction = table.transaction(read_snapshot=snapshot)
        actions: list[Any] = list(new.actions)
        if snapshot is not None:
            transaction.mark_read_whole_table()
            actions.extend(remove_actions(snapshot.files, data_change=True))
        parameters = {
            "isManaged": "true" if target.managed else "false",
            **({"description": metadata.description} if metadata.description is not None else {}),
            "partitionBy": json.dumps(list(metadata.partition_columns)),
            "properties": json.dumps(metadata.configuration, separators=(",", ":")),
        }
        if target.name is not None and not target.registered and target.managed:
            # A managed entry must exist before its directory has files (see catalog.py).
            catalog.register(
                self._spark, target.name, target.location, managed=True, schema=StructType(self._columns), comment=self._comment
            )
            try:
                transaction.commit(actions, _OPERATIONS[self._mode], parameters)
            except BaseException:
                catalog.unregister(self._spark, target.name)
                raise
            return
        transaction.commit(actions, _OPERATIONS[self._mode], parameters)
        self._register_external(target)


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return value
