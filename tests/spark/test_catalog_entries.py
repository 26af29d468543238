"""The catalog's side of named tables, called directly, as classic and Spark Connect sessions share it.

Identifier parsing is held to Spark's own parser (on a classic session, whose JVM has
it); catalog entries to what Spark's catalog lists and does (``SHOW TABLES``, ``DROP``);
the ``delta`` data source to loading in a Python that has no sparkdelta, as a Connect
server's workers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from pyspark import cloudpickle
from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import SparkSession
from pyspark.sql.types import ArrayType, IntegerType, LongType, MapType, StringType, StructField, StructType

from sparkdelta.exceptions import DeltaAnalysisException
from sparkdelta.spark.catalog import (
    default_location,
    is_delta_table_name,
    is_temp_view,
    lookup,
    qualified_name,
    register,
    unregister,
)
from sparkdelta.spark.delta_provider import DeltaSource
from sparkdelta.spark.identifiers import parse_identifier, split_identifier
from sparkdelta.spark.session_catalog import check_metastore_free, release_delta_spark_catalog
from sparkdelta.spark.session_facts import default_parallelism, spark_sql
from sparkdelta.spark.source import ensure_delta_source

NAMES = [
    "t", "db.t", " t ", "db . t", "`a.b`", "`a``b`", "``", "1a", "1e", "a1", "_x", "select", "join", "a.1b",
    "t -- note", "t /* note /* nested */ */", "db.`t`.x", "x.y.z.w", "t\n", "sElEcT.FrOm", "0x1", "1_000",
    "café", "1", "1L", "1e5", "1bd", "1d", "1.5", "a-b", "a.", ".a", "a..b", "a b", "`a` `b`", "a.1", "a$b",
    "`a", "a`", "a:b", "", "t /* open", "db.`t",
]  # fmt: skip


@pytest.mark.classic_only
def test_names_split_as_spark_parses_them(spark: SparkSession) -> None:
    parser = spark._jsparkSession.sessionState().sqlParser()  # the oracle: Spark's own parser
    for name in NAMES:
        try:
            parsed = parser.parseMultipartIdentifier(name)
            expected: list[str] | None = [str(parsed.apply(i)) for i in range(parsed.size())]
        except Exception:
            expected = None
        assert split_identifier(name) == expected, name


def test_a_malformed_name_fails_with_sparks_error(spark: SparkSession) -> None:
    assert parse_identifier(spark, "spark_catalog.`my db`.t") == ["spark_catalog", "my db", "t"]
    with pytest.raises(ParseException, match="INVALID_IDENTIFIER"):
        parse_identifier(spark, "a-b")
    with pytest.raises(ParseException, match="PARSE_SYNTAX_ERROR"):
        parse_identifier(spark, "db.")
    with pytest.raises(ParseException):
        lookup(spark, "a b")
    assert not is_delta_table_name(spark, "a b")  # Spark's own call reports it


@pytest.fixture(scope="module")
def database(spark: SparkSession) -> Iterator[str]:
    name = f"entries_{uuid.uuid4().hex[:8]}"
    spark_sql(spark, f"CREATE DATABASE {name}")
    yield name
    spark_sql(spark, f"DROP DATABASE {name} CASCADE")


SCHEMA = StructType(
    [
        StructField("id", LongType(), False, {"comment": "the rider's id"}),
        StructField("odd name`s", StringType()),
        StructField("nested", StructType([StructField("x y", IntegerType(), False)])),
        StructField("tags", MapType(StringType(), ArrayType(IntegerType()))),
    ]
)


def test_an_external_entry_is_listed_with_its_location_and_columns(spark: SparkSession, database: str, tmp_path: Path) -> None:
    location = str(tmp_path / "a table's place")
    name = f"{database}.`Trips_2024`"  # Spark's session catalog takes letters, digits and _ only
    entry = register(spark, name, location, managed=False, schema=SCHEMA, comment="it's a test")
    assert (entry.name, entry.location, entry.managed, entry.is_delta) == (f"{database}.Trips_2024", location, False, True)
    assert lookup(spark, f"spark_catalog.{name}") == entry
    assert is_delta_table_name(spark, name)
    assert qualified_name(spark, name) == f"{database}.Trips_2024"
    assert lookup(spark, f"{database}.trips_2024") == replace(entry, name=f"{database}.trips_2024")
    # Spark's catalog holds the columns sparkdelta gave it, comments and nested names included.
    described = {r["col_name"]: r for r in spark_sql(spark, f"DESCRIBE TABLE {entry_sql(database, 'trips_2024')}").collect()}
    assert described["id"]["comment"] == "the rider's id"
    assert described["odd name`s"]["data_type"] == "string"
    assert described["nested"]["data_type"] == "struct<x y:int>"
    listed = spark_sql(spark, f"SHOW TABLE EXTENDED IN {database} LIKE 'trips_2024'").first()
    assert listed is not None and "Comment: it's a test\n" in listed["information"]
    unregister(spark, name)
    assert lookup(spark, name) is None
    assert not is_delta_table_name(spark, name)


def entry_sql(database: str, table: str) -> str:
    return f"spark_catalog.`{database}`.`{table}`"


def test_a_managed_entry_lives_where_spark_puts_it_and_goes_with_its_directory(spark: SparkSession, database: str) -> None:
    name = f"{database}.Managed_Trips"
    location = default_location(spark, name)
    assert location.endswith(f"/{database}.db/managed_trips")
    entry = register(spark, name, location, managed=True, schema=SCHEMA)
    assert (entry.location, entry.managed, entry.is_delta) == (location, True, True)
    Path(location).mkdir(parents=True, exist_ok=True)
    (Path(location) / "data").write_text("x")
    unregister(spark, name)
    assert lookup(spark, name) is None
    assert not Path(location).exists()


def test_views_other_providers_and_missing_names(spark: SparkSession, database: str, tmp_path: Path) -> None:
    spark_sql(spark, f"CREATE TABLE {database}.plain (x INT) USING parquet")
    spark_sql(spark, f"CREATE VIEW {database}.a_view AS SELECT 1 AS z")
    plain = lookup(spark, f"{database}.plain")
    assert plain is not None and plain.provider == "parquet" and plain.managed and not plain.is_delta
    view = lookup(spark, f"{database}.a_view")
    assert view is not None and (view.provider, view.location) == ("view", "")
    assert not is_delta_table_name(spark, f"{database}.plain")
    assert lookup(spark, f"{database}.missing") is None
    assert lookup(spark, "no_such_database.t") is None
    with pytest.raises(DeltaAnalysisException, match="does not exist"):
        register(spark, "no_such_database.t", str(tmp_path / "t"), managed=False, schema=SCHEMA)
    with pytest.raises(DeltaAnalysisException, match="'table' or 'database.table'"):
        lookup(spark, "other_catalog.db.t")
    # SHOW TABLES matches a pattern: a name that is a pattern for others still finds only itself.
    assert lookup(spark, f"{database}.`plai*`") is None


def test_temporary_views_shadow_one_part_names(spark: SparkSession, tmp_path: Path) -> None:
    name = f"shadow_{uuid.uuid4().hex[:8]}"
    register(spark, name, str(tmp_path / "t"), managed=False, schema=SCHEMA)
    try:
        assert is_delta_table_name(spark, name) and not is_temp_view(spark, name)
        spark.range(1).createOrReplaceTempView(name)
        assert is_temp_view(spark, name)
        assert not is_delta_table_name(spark, name)
        assert is_delta_table_name(spark, f"{spark.catalog.currentDatabase()}.{name}")
        assert lookup(spark, name) is not None  # a qualified lookup is the table's
    finally:
        spark.catalog.dropTempView(name)
        unregister(spark, name)
    assert not is_temp_view(spark, "no_such_view")


def test_spark_never_asks_the_data_source_for_sparkdeltas_entries(spark: SparkSession, database: str, tmp_path: Path) -> None:
    """Entries carry their columns; the source's reader refuses, so a scan Spark made itself would fail here."""
    register(spark, f"{database}.untouched", str(tmp_path / "u"), managed=False, schema=SCHEMA)
    assert [f.name for f in spark.catalog.listColumns(f"{database}.untouched")] == [f.name for f in SCHEMA.fields]
    with pytest.raises(AnalysisException, match="cannot scan Delta table"):
        spark_sql(spark, f"SELECT * FROM {database}.untouched").collect()  # sparkdelta serves reads; Spark alone cannot


_LOAD_WITHOUT_SPARKDELTA = """
import sys
sys.modules["sparkdelta"] = None  # as on a Spark Connect server: importing sparkdelta fails
from pyspark import cloudpickle
source = cloudpickle.loads(sys.stdin.buffer.read())
print(source.name())
try:
    source(options={"path": "/nowhere"}).schema()
except RuntimeError as error:
    print("schema:", error)
"""


def test_the_data_source_loads_where_sparkdelta_is_not_installed() -> None:
    import sparkdelta.spark.source  # noqa: F401  (registers the class for pickling by value)

    payload = cloudpickle.dumps(DeltaSource)
    done = subprocess.run(
        [sys.executable, "-c", _LOAD_WITHOUT_SPARKDELTA],
        input=payload,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": ""},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    lines = done.stdout.decode().splitlines()
    assert lines[0] == "delta"
    assert lines[1].startswith("schema: sparkdelta is not installed where Spark runs Python data sources")


def test_session_facts(spark: SparkSession) -> None:
    ensure_delta_source(spark)
    ensure_delta_source(spark)  # once per session
    check_metastore_free(spark)  # this session's own metastore (or its server's) is no conflict
    release_delta_spark_catalog(spark)
    assert default_parallelism(spark) == 2  # the tests' master is local[2]


@pytest.mark.classic_only
def test_default_parallelism_is_the_spark_contexts(spark: SparkSession) -> None:
    assert default_parallelism(spark) == spark.sparkContext.defaultParallelism
