"""Named Delta tables in Spark's session catalog (the embedded Hive metastore by default).

The catalog holds a name, a location and the provider ``delta``; the Delta log at the
location holds everything else (schema, partitioning, properties), as in delta-spark.
The schema stored with the entry is informational only: reads always take the schema of
the snapshot they read.

Spark accepts the provider ``delta`` because sparkdelta registers a Python data source
of that name (see ``source.py``). A managed table is registered before its first commit:
Spark refuses to create a managed entry over a non-empty directory.

Everything here is asked of Spark through its catalog API and SQL, so classic and Spark
Connect sessions share it: ``SHOW TABLE EXTENDED`` tells a table's type, provider and
location (``DESCRIBE TABLE`` does not, for a table whose provider is a Python data
source), and ``CREATE TABLE`` with the table's columns writes an entry without Spark
asking the data source anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, urlparse

from pyspark.errors import AnalysisException
from pyspark.sql import Row, SparkSession
from pyspark.sql.types import StructField, StructType

from ..exceptions import DeltaAnalysisException
from .catalog_sql import columns_sql, string_literal
from .commands.column_names import quoted
from .identifiers import parse_identifier, split_identifier
from .paths import hadoop_path, is_object_store, location_from_uri
from .session_facts import spark_sql
from .source import ensure_delta_source
from .storage import open_table

DELTA_PROVIDER = "delta"
SESSION_CATALOG = "spark_catalog"
_FACTS = ("Type", "Provider", "Location")


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


@dataclass(frozen=True)
class _Name:
    """A table of the session catalog, with its database spelled out."""

    database: str
    table: str

    @property
    def qualified(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def sql(self) -> str:
        return quoted([SESSION_CATALOG, self.database, self.table])


def _name(spark: SparkSession, name: str, parts: list[str] | None = None) -> _Name:
    """``name`` (``table``, ``db.table`` or ``spark_catalog.db.table``) in the session catalog."""
    parts = parts if parts is not None else parse_identifier(spark, name)
    if len(parts) == 3 and parts[0].lower() == SESSION_CATALOG:
        parts = parts[1:]
    if len(parts) not in (1, 2):
        raise DeltaAnalysisException(f"{name}: a table name is 'table' or 'database.table'")
    return _Name(parts[0] if len(parts) == 2 else spark.catalog.currentDatabase(), parts[-1])


def qualified_name(spark: SparkSession, name: str) -> str:
    """``database.table`` for ``name``, as the catalog spells it."""
    return _name(spark, name).qualified


def _listed(spark: SparkSession, name: _Name) -> list[Row]:
    """``SHOW TABLE EXTENDED`` rows of the tables named ``name`` and of temporary views of its table name.

    Spark matches ``LIKE`` as a case-insensitive regular expression (``*`` for ``.*``,
    ``|`` between alternatives): every other character becomes ``.``, and the rows are
    then held to the exact name. A database that does not exist lists nothing.
    """
    pattern = re.sub(r"[^A-Za-z0-9_]", ".", name.table)
    database = quoted([SESSION_CATALOG, name.database])
    try:
        rows = spark_sql(spark, f"SHOW TABLE EXTENDED IN {database} LIKE '{pattern}'").collect()
    except AnalysisException as error:
        if error.getCondition() == "SCHEMA_NOT_FOUND":
            return []
        raise
    named = [r for r in rows if r["tableName"] == name.table]
    return named or [r for r in rows if r["tableName"].lower() == name.table.lower()]


def _facts(name: _Name, information: str) -> dict[str, str]:
    """The type, provider and location lines of ``SHOW TABLE EXTENDED``'s ``information``.

    They come before the schema; a table comment or property could hold a line of the
    same shape, which makes the listing ambiguous: refused rather than guessed at.
    """
    facts: dict[str, str] = {}
    for line in information.split("\n"):
        if line.startswith("Schema:"):
            break
        key, colon, value = line.partition(": ")
        if colon and key in _FACTS:
            if key in facts:
                raise DeltaAnalysisException(
                    f"{name.qualified}: Spark's catalog listing shows two '{key}' lines (a comment or property "
                    "holding one?); sparkdelta cannot tell where the table is"
                )
            facts[key] = value
    return facts


def _entry(name: _Name, rows: list[Row]) -> CatalogEntry | None:
    """The catalog entry among ``rows``, or None if the catalog has no table of that name."""
    tables = [r for r in rows if not r["isTemporary"]]
    if not tables:
        return None
    facts = _facts(name, tables[0]["information"])
    kind = facts.get("Type", "")
    if kind == "VIEW":
        location = ""  # a view has no location
    elif "Location" in facts:
        location = location_from_uri(facts["Location"])
    else:
        raise DeltaAnalysisException(f"{name.qualified}: Spark's catalog shows no location for the table")
    return CatalogEntry(name.qualified, location, kind == "MANAGED", facts.get("Provider") or kind.lower())


def lookup(spark: SparkSession, name: str) -> CatalogEntry | None:
    """The catalog entry for ``name``, or None if no table has that name."""
    ensure_delta_source(spark)
    target = _name(spark, name)
    return _entry(target, _listed(spark, target))


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
    """Where a managed table of this name keeps its data: Spark's ``defaultTablePath``, the
    database's directory and the table's name (lower-cased unless the session is case-sensitive)."""
    target = _name(spark, name)
    _database_must_exist(spark, target)
    directory = spark.catalog.getDatabase(quoted([SESSION_CATALOG, target.database])).locationUri
    table = target.table if spark.conf.get("spark.sql.caseSensitive", "false") == "true" else target.table.lower()
    return location_from_uri(f"{directory.rstrip('/')}/{quote(table, safe='') if urlparse(directory).scheme else table}")


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

    A managed entry must be registered before anything is written at its location; Spark
    chooses its location, which must be ``location`` (``default_location``). An entry
    Spark lists anywhere but ``location`` is taken back out and refused: data written
    where the catalog does not point would be lost to readers of the name.
    """
    ensure_delta_source(spark)
    target = _name(spark, name)
    _database_must_exist(spark, target)
    if schema is None:
        schema = StructType.fromJson(open_table(spark, location).snapshot().schema.to_json())
    columns = _catalog_schema(schema)
    # With its columns given, Spark records the entry without asking the data source for a schema.
    statement = f"CREATE TABLE {target.sql}" + (f" ({columns_sql(columns)})" if columns.fields else "")
    statement += f" USING {DELTA_PROVIDER}"
    if comment is not None:
        statement += f" COMMENT {string_literal(comment)}"
    if not managed:
        statement += f" LOCATION {string_literal(hadoop_path(location) if is_object_store(location) else location)}"
    spark_sql(spark, statement)
    entry = _entry(target, _listed(spark, target))
    assert entry is not None
    if entry.location != location:
        unregister(spark, target.qualified)
        raise DeltaAnalysisException(
            f"{target.qualified}: Spark's catalog placed the table at {entry.location}, not at {location} where its "
            "data was to be; the entry was taken back out"
        )
    return entry


def unregister(spark: SparkSession, name: str) -> None:
    """Drop the entry for ``name`` (a managed table's directory goes with it)."""
    spark_sql(spark, f"DROP TABLE IF EXISTS {_name(spark, name).sql} PURGE")


def _database_must_exist(spark: SparkSession, name: _Name) -> None:
    if not spark.catalog.databaseExists(quoted([SESSION_CATALOG, name.database])):
        raise DeltaAnalysisException(
            f"{name.qualified}: database {name.database!r} does not exist; create it with CREATE DATABASE {name.database}",
            errorClass="SCHEMA_NOT_FOUND",
        )


def is_temp_view(spark: SparkSession, name: str) -> bool:
    """Whether ``name`` resolves to a temporary view (a local one, or ``global_temp.view``)."""
    try:
        return bool(spark.catalog.getTable(name).isTemporary)
    except AnalysisException:  # no table or view of that name, or not a name at all
        return False


def is_delta_table_name(spark: SparkSession, name: str) -> bool:
    """Whether ``name`` resolves to a Delta table in the catalog (temporary views shadow tables).

    A name Spark cannot parse is not one: Spark's own call then reports it.
    """
    parts = split_identifier(name)
    if parts is None:
        return False
    ensure_delta_source(spark)
    try:
        target = _name(spark, name, parts)
    except DeltaAnalysisException:  # not a session-catalog name
        return False
    rows = _listed(spark, target)
    if len(parts) == 1 and any(r["isTemporary"] for r in rows):
        return False
    try:
        entry = _entry(target, rows)
    except DeltaAnalysisException:
        return False
    return entry is not None and entry.is_delta
