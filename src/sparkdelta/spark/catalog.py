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

from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql.types import StructField, StructType

from ..exceptions import DeltaAnalysisException
from .paths import hadoop_path, is_object_store, location_from_uri
from .source import ensure_delta_source
from .storage import open_table

DELTA_PROVIDER = "delta"


@dataclass(frozen=True)
class CatalogEntry:
    """A catalog table: its qualified name, where its data lives (nowhere for a view) and who owns that data."""

    name: str
    location: str
    managed: bool
    provider: str

    @property
    def is_delta(self) -> bool:
        return self.provider.lower() == DELTA_PROVIDER


def _identifier(spark: SparkSession, name: str) -> object:
    """The JVM ``TableIdentifier`` for ``name`` (``table``, ``db.table`` or ``spark_catalog.db.table``)."""
    parsed = spark._jsparkSession.sessionState().sqlParser().parseMultipartIdentifier(name)
    parts = [str(parsed.apply(i)) for i in range(parsed.size())]
    if len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if len(parts) not in (1, 2):
        raise DeltaAnalysisException(f"{name}: a table name is 'table' or 'database.table'")
    jvm = spark._jvm
    assert jvm is not None
    database = jvm.scala.Some(parts[0]) if len(parts) == 2 else jvm.scala.Some(spark.catalog.currentDatabase())
    return jvm.org.apache.spark.sql.catalyst.TableIdentifier(parts[-1], database)


def _session_catalog(spark: SparkSession) -> object:
    return spark._jsparkSession.sessionState().catalog()


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
    kind = table.tableType().name()
    return CatalogEntry(
        f"{identifier.database().get()}.{identifier.table()}",  # type: ignore[attr-defined]
        "" if kind == "VIEW" else location_from_uri(table.location().toString()),  # a view has no location
        kind == "MANAGED",
        provider or kind.lower(),
    )


def delta_entry(spark: SparkSession, name: str) -> CatalogEntry:
    """The entry for ``name``, which must exist and be a Delta table."""
    entry = lookup(spark, name)
    if entry is None:
        raise DeltaAnalysisException(
            f"{name}: no table of that name in the catalog (database {spark.catalog.currentDatabase()!r})",
            errorClass="DELTA_MISSING_DELTA_TABLE",
        )
    if not entry.is_delta:
        raise DeltaAnalysisException(
            f"{entry.name} is not a Delta table (its provider is {entry.provider!r})", errorClass="DELTA_MISSING_DELTA_TABLE"
        )
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
        raise DeltaAnalysisException(
            f"{name}: database {database!r} does not exist; create it with CREATE DATABASE {database}",
            errorClass="SCHEMA_NOT_FOUND",
        )


def is_delta_table_name(spark: SparkSession, name: str) -> bool:
    """Whether ``name`` resolves to a Delta table in the catalog (temporary views shadow tables)."""
    if "." not in name and _session_catalog(spark).getTempView(name.strip("`")).isDefined():  # type: ignore[attr-defined]
        return False
    try:
        entry = lookup(spark, name)
    except DeltaAnalysisException:
        return False
    return entry is not None and entry.is_delta
