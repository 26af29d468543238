"""Named Delta tables in Spark's session catalog (the embedded Hive metastore by default).

The catalog holds a name, a location and the provider ``delta``; the Delta log at the
location holds everything else (schema, partitioning, properties), as in delta-spark.
The schema stored with the entry is informational only: reads always take the schema of
the snapshot they read.

Spark accepts the provider ``delta`` because sparkdelta registers a Python data source
of that name (see ``source.py``). A managed table is registered before its first commit:
Spark refuses to create a managed entry over a non-empty directory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructField, StructType

from ..kernel.errors import DeltaError
from .paths import hadoop_path, is_object_store, location_from_uri, normalize_location
from .source import ensure_delta_source
from .storage import open_table

DELTA_PROVIDER = "delta"


class DeltaCatalogError(DeltaError):
    """A table name that does not name a Delta table, or a catalog entry that cannot be made."""


@dataclass(frozen=True)
class CatalogEntry:
    """A catalog table: its qualified name, where its data lives and who owns that data."""

    name: str
    location: str
    managed: bool
    provider: str

    @property
    def is_delta(self) -> bool:
        return self.provider.lower() == DELTA_PROVIDER


def _identifier(spark: SparkSession, name: str) -> object:
    """The JVM ``TableIdentifier`` for ``name`` (``table``, ``db.table`` or ``spark_catalog.db.table``)."""
    parsed = spark._jsparkSession.sessionState().sqlParser().parseMultipartIdentifier(name)  # type: ignore[union-attr]
    parts = [str(parsed.apply(i)) for i in range(parsed.size())]
    if len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if len(parts) not in (1, 2):
        raise DeltaCatalogError(f"{name}: a table name is 'table' or 'database.table'")
    jvm = spark._jvm
    assert jvm is not None
    database = jvm.scala.Some(parts[0]) if len(parts) == 2 else jvm.scala.Some(spark.catalog.currentDatabase())
    return jvm.org.apache.spark.sql.catalyst.TableIdentifier(parts[-1], database)


def _session_catalog(spark: SparkSession) -> object:
    return spark._jsparkSession.sessionState().catalog()  # type: ignore[union-attr]


def qualified_name(spark: SparkSession, name: str) -> str:
    """``database.table`` for ``name``, as the catalog spells it."""
    identifier = _identifier(spark, name)
    return f"{identifier.database().get()}.{identifier.table()}"  # type: ignore[attr-defined]


def lookup(spark: SparkSession, name: str) -> CatalogEntry | None:
    """The catalog entry for ``name``, or None if no table has that name."""
    ensure_delta_source(spark)
    identifier = _identifier(spark, name)
    catalog = _session_catalog(spark)
    if not catalog.tableExists(identifier):  # type: ignore[attr-defined]
        return None
    table = catalog.getTableMetadata(identifier)  # type: ignore[attr-defined]
    provider = table.provider().getOrElse(None) if table.provider().isDefined() else None
    location = table.location().toString()
    return CatalogEntry(
        f"{identifier.database().get()}.{identifier.table()}",  # type: ignore[attr-defined]
        location_from_uri(location),
        table.tableType().name() == "MANAGED",
        provider or table.tableType().name().lower(),
    )


def delta_entry(spark: SparkSession, name: str) -> CatalogEntry:
    """The entry for ``name``, which must exist and be a Delta table."""
    entry = lookup(spark, name)
    if entry is None:
        raise DeltaCatalogError(f"{name}: no table of that name in the catalog (database {spark.catalog.currentDatabase()!r})")
    if not entry.is_delta:
        raise DeltaCatalogError(f"{entry.name} is not a Delta table (its provider is {entry.provider!r})")
    return entry


def default_location(spark: SparkSession, name: str) -> str:
    """Where a managed table of this name keeps its data (under the warehouse)."""
    _database_must_exist(spark, name)
    return location_from_uri(_session_catalog(spark).defaultTablePath(_identifier(spark, name)).toString())  # type: ignore[attr-defined]


def _catalog_schema(schema: StructType) -> StructType:
    """The schema to show in the catalog: names, types and comments, no Delta field metadata."""
    return StructType(
        [
            StructField(f.name, f.dataType, f.nullable, {"comment": f.metadata["comment"]} if "comment" in f.metadata else {})
            for f in schema.fields
        ]
    )


def register(
    spark: SparkSession, name: str, location: str, managed: bool, schema: StructType | None = None, comment: str | None = None
) -> CatalogEntry:
    """Add ``name`` to the catalog as a Delta table at ``location``.

    A managed entry must be registered before anything is written at its location.
    """
    ensure_delta_source(spark)
    _database_must_exist(spark, name)
    columns = _catalog_schema(schema) if schema is not None else StructType()
    options = {} if managed else {"path": hadoop_path(location) if is_object_store(location) else location}
    if not managed and schema is None:
        columns = _catalog_schema(StructType.fromJson(open_table(spark, location).snapshot().schema.to_json()))
    spark.catalog.createTable(name, source=DELTA_PROVIDER, schema=columns, description=comment, **options)
    entry = lookup(spark, name)
    assert entry is not None
    return entry


def unregister(spark: SparkSession, name: str) -> None:
    """Drop the entry for ``name`` (a managed table's directory goes with it)."""
    _session_catalog(spark).dropTable(_identifier(spark, name), True, True)  # type: ignore[attr-defined]


def _database_must_exist(spark: SparkSession, name: str) -> None:
    database = _identifier(spark, name).database().get()  # type: ignore[attr-defined]
    if not spark.catalog.databaseExists(database):
        raise DeltaCatalogError(f"{name}: database {database!r} does not exist; create it with CREATE DATABASE {database}")


def is_delta_table_name(spark: SparkSession, name: str) -> bool:
    """Whether ``name`` resolves to a Delta table in the catalog (temporary views shadow tables)."""
    if "." not in name and _session_catalog(spark).getTempView(name.strip("`")).isDefined():  # type: ignore[attr-defined]
        return False
    try:
        entry = lookup(spark, name)
    except DeltaCatalogError:
        return False
    return entry is not None and entry.is_delta


def read_table(spark: SparkSession, name: str, options: dict[str, Any]) -> DataFrame:
    """``spark.table(name)`` for a Delta table: a native scan of its current (or requested) snapshot."""
    from .scan import load

    return load(spark, delta_entry(spark, name).location, options)


def save_as_table(
    df: DataFrame,
    name: str,
    mode: str,
    partition_by: list[str] | None,
    options: dict[str, Any],
    properties: dict[str, str] | None = None,
    description: str | None = None,
    replace: bool = False,
    cluster_by: list[str] | None = None,
) -> None:
    """``df.write.format("delta").saveAsTable(name)``: write at the table's location, registering new names.

    ``option("path", ...)`` makes an external table; otherwise a new table is managed,
    under the warehouse. A failed first write leaves no catalog entry behind. As in
    delta-spark, creating a table is a ``CREATE TABLE AS SELECT`` and overwriting one a
    ``CREATE OR REPLACE TABLE AS SELECT`` (its schema is replaced); ``replace`` makes a
    new table's commit a replace too (SQL ``CREATE OR REPLACE TABLE ... AS SELECT``).
    ``properties`` and ``description`` (TBLPROPERTIES and COMMENT) apply to a new table.
    """
    from .write import write_dataframe

    spark = df.sparkSession
    options = dict(options)
    path = options.pop("path", None)
    entry = lookup(spark, name)
    mode_name = mode.lower()

    def as_select(operation: str, managed: bool) -> tuple[str, dict[str, Any]]:
        return operation, {
            "isManaged": str(managed).lower(),
            "description": description,
            "partitionBy": json.dumps(partition_by or []),
            "properties": json.dumps(properties or {}),
        }

    if entry is not None:
        if not entry.is_delta:
            raise DeltaCatalogError(f"{entry.name} exists and is not a Delta table (its provider is {entry.provider!r})")
        if mode_name in ("error", "errorifexists", "default"):
            raise DeltaCatalogError(f"{entry.name} already exists (mode ErrorIfExists); use mode append or overwrite")
        if mode_name == "ignore":
            return
        if path is not None and normalize_location(path) != entry.location:
            raise DeltaCatalogError(f"{entry.name} is at {entry.location}, not at the given path {path}")
        operation = None
        if mode_name == "overwrite":
            options["overwriteschema"] = "true"
            operation = as_select("CREATE OR REPLACE TABLE AS SELECT", entry.managed)
        write_dataframe(df, entry.location, mode, partition_by, options, properties, description, operation, cluster_by)
        return
    create = "CREATE OR REPLACE TABLE AS SELECT" if replace else "CREATE TABLE AS SELECT"
    if path is not None:
        location = normalize_location(path)
        write_dataframe(df, location, mode, partition_by, options, properties, description, as_select(create, False), cluster_by)
        register(spark, name, location, managed=False, comment=description)
        return
    location = default_location(spark, name)
    register(spark, name, location, managed=True, schema=df.schema, comment=description)
    try:
        write_dataframe(df, location, mode, partition_by, options, properties, description, as_select(create, True), cluster_by)
    except BaseException:
        unregister(spark, name)
        raise


def insert_into(df: DataFrame, name: str, overwrite: bool) -> None:
    """``df.write.insertInto(name)``: columns by position, as SQL ``INSERT INTO``."""
    from .write import write_dataframe

    entry = delta_entry(df.sparkSession, name)
    table_columns = [f.name for f in open_table(df.sparkSession, entry.location).snapshot().schema.fields]
    if len(df.columns) != len(table_columns):
        raise DeltaCatalogError(
            f"{entry.name}: insertInto matches columns by position; the table has {len(table_columns)} "
            f"columns ({', '.join(table_columns)}), the data has {len(df.columns)}"
        )
    write_dataframe(df.toDF(*table_columns), entry.location, "overwrite" if overwrite else "append", None, {})
