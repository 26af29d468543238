"""Named Delta tables: saveAsTable, CREATE TABLE ... USING delta, forName, spark.table.

Rows are checked against delta-rs reading the table's location, so a table registered at
the wrong place, or read from the wrong snapshot, fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import catalog_configs
from deltalake import DeltaTable as RsTable
from pyspark.sql import SparkSession

from sparkdelta.exceptions import DeltaAnalysisException
from sparkdelta.kernel import Table
from sparkdelta.spark.catalog import lookup
from sparkdelta.tables import DeltaTable


def _rows(df: Any) -> Counter:
    return Counter(tuple(r) for r in df.collect())


def _rs_rows(location: str, columns: list[str]) -> Counter:
    table = RsTable(location).to_pyarrow_table().select(columns)
    return Counter(zip(*[table.column(c).to_pylist() for c in columns], strict=True))


@pytest.fixture(scope="module")
def database(spark: SparkSession) -> str:
    spark.sql("CREATE DATABASE IF NOT EXISTS catalogtests")
    return "catalogtests"


def test_save_as_table_creates_a_managed_table_under_the_warehouse(spark: SparkSession, database: str) -> None:
    name = f"{database}.managed"
    df = spark.range(20).selectExpr("id", "CAST(id % 3 AS INT) AS p", "CAST(id AS STRING) AS s")
    df.write.format("delta").partitionBy("p").saveAsTable(name)

    entry = lookup(spark, name)
    assert entry is not None and entry.managed and entry.is_delta
    warehouse = spark.conf.get("spark.sql.warehouse.dir")
    assert entry.location.startswith(warehouse.removeprefix("file:"))
    assert Table(entry.location).snapshot().partition_columns == ("p",)
    expected = _rs_rows(entry.location, ["id", "p", "s"])
    assert sum(expected.values()) == 20
    assert _rows(spark.table(name).select("id", "p", "s")) == expected
    assert _rows(spark.read.table(name).select("id", "p", "s")) == expected
    assert _rows(DeltaTable.forName(spark, name).toDF().select("id", "p", "s")) == expected
    assert DeltaTable.forName(spark, name).detail().first()["name"] == f"spark_catalog.{name}"


def test_save_as_table_modes(spark: SparkSession, database: str) -> None:
    name = f"{database}.modes"
    spark.range(5).write.format("delta").saveAsTable(name)
    location = lookup(spark, name).location  # type: ignore[union-attr]

    with pytest.raises(DeltaAnalysisException, match="already exists"):
        spark.range(5).write.format("delta").saveAsTable(name)
    spark.range(100, 103).write.format("delta").mode("ignore").saveAsTable(name)
    assert Table(location).latest_version() == 0

    spark.range(5, 8).write.format("delta").mode("append").saveAsTable(name)
    # No format: an existing Delta table keeps its provider, as in Spark.
    spark.range(8, 9).write.mode("append").saveAsTable(name)
    assert sorted(r.id for r in spark.table(name).collect()) == list(range(9))
    spark.range(50, 52).write.format("delta").mode("overwrite").saveAsTable(name)
    assert _rows(spark.table(name)) == _rs_rows(location, ["id"]) == Counter({(50,): 1, (51,): 1})
    assert sorted(r.id for r in spark.read.format("delta").option("versionAsOf", 0).table(name).collect()) == list(range(5))
    assert [h["operation"] for h in DeltaTable.forName(spark, name).history().collect()] == [
        "CREATE OR REPLACE TABLE AS SELECT",
        "WRITE",
        "WRITE",
        "CREATE TABLE AS SELECT",
    ]
    # Overwriting a named table replaces its schema, as delta-spark's saveAsTable does.
    spark.range(2).selectExpr("CAST(id AS STRING) AS label").write.format("delta").mode("overwrite").saveAsTable(name)
    assert _rows(spark.table(name)) == _rs_rows(location, ["label"]) == Counter({("0",): 1, ("1",): 1})


def test_external_table_keeps_its_data_when_dropped(spark: SparkSession, database: str, tmp_path: Path) -> None:
    name = f"{database}.external"
    location = str(tmp_path / "ext table")
    spark.range(3).write.format("delta").option("path", location).saveAsTable(name)
    entry = lookup(spark, name)
    assert entry is not None and not entry.managed and entry.location == location
    assert _rows(spark.table(name)) == _rs_rows(location, ["id"])
    spark.sql(f"DROP TABLE {name}")
    assert lookup(spark, name) is None
    assert RsTable(location).version() == 0


def test_dropping_a_managed_table_deletes_its_data(spark: SparkSession, database: str) -> None:
    name = f"{database}.dropped"
    spark.range(3).write.format("delta").saveAsTable(name)
    location = lookup(spark, name).location  # type: ignore[union-attr]
    spark.sql(f"DROP TABLE {name}")
    assert not os.path.exists(location)


def test_create_table_using_delta_location_registers_without_copying(spark: SparkSession, database: str, tmp_path: Path) -> None:
    location = str(tmp_path / "existing")
    spark.range(4).selectExpr("id", "id * 2 AS twice").write.format("delta").save(location)
    files_before = sorted(p.name for p in Path(location).iterdir())
    spark.sql(f"CREATE TABLE {database}.registered USING delta LOCATION '{location}'")
    assert sorted(p.name for p in Path(location).iterdir()) == files_before
    assert Table(location).latest_version() == 0
    assert _rows(spark.table(f"{database}.registered")) == _rs_rows(location, ["id", "twice"])
    spark.sql(f"CREATE TABLE IF NOT EXISTS {database}.registered USING delta LOCATION '{location}'")
    with pytest.raises(ValueError, match="needs a LOCATION holding a Delta table"):
        spark.sql(f"CREATE TABLE {database}.nothing USING delta LOCATION '{tmp_path / 'empty'}'")
    assert lookup(spark, f"{database}.nothing") is None


def test_create_table_as_select(spark: SparkSession, database: str) -> None:
    name = f"{database}.ctas"
    spark.sql(f"CREATE TABLE {name} USING delta PARTITIONED BY (p) AS SELECT id, id % 2 AS p FROM range(6)")
    location = lookup(spark, name).location  # type: ignore[union-attr]
    assert Table(location).snapshot().partition_columns == ("p",)
    assert _rows(spark.table(name)) == _rs_rows(location, ["id", "p"])
    spark.sql(
        f"CREATE OR REPLACE TABLE {name} USING delta COMMENT 'letters' "
        "TBLPROPERTIES ('delta.logRetentionDuration' = 'interval 60 days', 'owner.team' = 'rides') AS SELECT 'x' AS letter"
    )
    detail = DeltaTable.forName(spark, name).detail().first()
    assert detail["description"] == "letters"
    assert detail["properties"] == {"delta.logRetentionDuration": "interval 60 days", "owner.team": "rides"}
    assert DeltaTable.forName(spark, name).history(1).first()["operation"] == "CREATE OR REPLACE TABLE AS SELECT"
    assert _rows(spark.table(name)) == Counter({("x",): 1})
    assert Table(location).latest_version() == 1
    spark.sql(f"CREATE TABLE IF NOT EXISTS {name} USING delta AS SELECT 'y' AS letter")
    assert Table(location).latest_version() == 1


def test_insert_into_matches_columns_by_position(spark: SparkSession, database: str) -> None:
    name = f"{database}.inserted"
    spark.createDataFrame([(1, "a")], "n INT, s STRING").write.format("delta").saveAsTable(name)
    spark.createDataFrame([(2, "b")], "x INT, y STRING").write.insertInto(name)
    assert _rows(spark.table(name)) == Counter({(1, "a"): 1, (2, "b"): 1})
    spark.createDataFrame([(3, "c")], "x INT, y STRING").write.insertInto(name, overwrite=True)
    assert _rows(spark.table(name)) == Counter({(3, "c"): 1})
    with pytest.raises(DeltaAnalysisException, match="by position"):
        spark.createDataFrame([(3,)], "x INT").write.insertInto(name)


def test_temporary_views_shadow_tables_and_other_providers_pass_through(spark: SparkSession, database: str) -> None:
    spark.range(2).write.format("delta").saveAsTable("shadowed")
    spark.range(7).createOrReplaceTempView("shadowed")
    try:
        assert spark.table("shadowed").count() == 7
    finally:
        spark.catalog.dropTempView("shadowed")
    assert spark.table("shadowed").count() == 2

    spark.range(3).write.format("parquet").saveAsTable(f"{database}.plain")
    assert spark.table(f"{database}.plain").count() == 3
    spark.sql(f"CREATE OR REPLACE VIEW {database}.plain_view AS SELECT id FROM {database}.plain WHERE id > 0")
    assert spark.table(f"{database}.plain_view").count() == 2  # a view has no location to look up
    with pytest.raises(DeltaAnalysisException, match="not a Delta table"):
        DeltaTable.forName(spark, f"{database}.plain")
    with pytest.raises(DeltaAnalysisException, match="no table of that name"):
        DeltaTable.forName(spark, f"{database}.missing")
    with pytest.raises(DeltaAnalysisException, match="does not exist"):
        spark.range(1).write.format("delta").saveAsTable("nodatabase.t")


def test_a_failed_first_write_leaves_no_catalog_entry(spark: SparkSession, database: str) -> None:
    name = f"{database}.failed"
    bad = spark.range(3).selectExpr("id", "raise_error('boom') AS oops")
    with pytest.raises(Exception, match="boom"):
        bad.write.format("delta").saveAsTable(name)
    assert lookup(spark, name) is None
    spark.range(2).write.format("delta").saveAsTable(name)
    assert spark.table(name).count() == 2


_SESSION_SCRIPT = """
import json, sys
from pyspark.sql import SparkSession
import sparkdelta
from sparkdelta.tables import DeltaTable

builder = SparkSession.builder.master("local[1]")
for key, value in json.loads(sys.argv[1]).items():
    builder = builder.config(key, value)
spark = sparkdelta.configure(builder).getOrCreate()
if sys.argv[2] == "write":
    spark.sql("CREATE DATABASE lake")
    spark.range(6).write.format("delta").saveAsTable("lake.trips")
    spark.sql("CREATE TABLE lake.outside USING delta LOCATION '" + sys.argv[3] + "'")
else:
    print(json.dumps({
        "trips": sorted(r.id for r in spark.table("lake.trips").collect()),
        "outside": sorted(r.id for r in DeltaTable.forName(spark, "lake.outside").toDF().collect()),
    }))
spark.stop()
"""


@pytest.mark.classic_only  # a Connect server keeps its own catalog, across its clients' sessions
def test_named_tables_persist_across_sessions(tmp_path: Path, spark: SparkSession) -> None:
    outside = tmp_path / "outside"
    spark.range(10, 12).write.format("delta").save(str(outside))
    configs = json.dumps(catalog_configs(tmp_path / "catalog"))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    script = textwrap.dedent(_SESSION_SCRIPT)
    for step in ("write", "read"):
        done = subprocess.run(
            [sys.executable, "-c", script, configs, step, str(outside)], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"trips": list(range(6)), "outside": [10, 11]}


def test_delta_options_keep_their_spelling(spark: SparkSession, database: str) -> None:
    name = f"{database}.constrained"
    spark.range(1, 4).write.format("delta").option("delta.constraints.PositiveId", "id > 0").saveAsTable(name)
    location = lookup(spark, name).location  # type: ignore[union-attr]
    assert Table(location).snapshot().configuration["delta.constraints.PositiveId"] == "id > 0"
    with pytest.raises(Exception, match="PositiveId"):
        spark.range(-1, 0).write.format("delta").mode("append").saveAsTable(name)
    assert Table(location).latest_version() == 0
