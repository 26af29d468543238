"""ALTER TABLE on Delta tables through ``spark.sql``: properties, columns, comments, constraints,
renames and drops under column mapping; each a metadata-only commit, checked in the log and
by delta-rs where it can read the table."""

from __future__ import annotations

import json
from pathlib import Path

import deltalake
import pytest
from pyspark.sql import SparkSession

from sparkdelta.exceptions import (
    ConcurrentAppendException,
    DeltaAnalysisException,
    DeltaInvariantViolationException,
    InvalidTablePropertyError,
)
from sparkdelta.kernel import Table


@pytest.fixture
def path(spark: SparkSession, tmp_path: Path) -> str:
    location = str(tmp_path / "t")
    rows = spark.createDataFrame([(1, "a", (10, "x")), (2, "b", (20, "y"))], "id long, v string, s struct<n: int, w: string>")
    rows.write.format("delta").save(location)
    return location


def _operation(path: str) -> str:
    return Table(path).snapshot().commit_info["operation"]


def test_set_and_unset_properties(spark: SparkSession, path: str) -> None:
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.logRetentionDuration' = 'interval 60 days', 'team' = 'taxi')"
    )
    assert Table(path).snapshot().configuration == {"delta.logRetentionDuration": "interval 60 days", "team": "taxi"}
    assert _operation(path) == "SET TBLPROPERTIES"
    with pytest.raises(InvalidTablePropertyError, match="delta.appendOnly"):
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.appendOnly' = 'maybe')")
    spark.sql(f"ALTER TABLE delta.`{path}` UNSET TBLPROPERTIES ('team')")
    assert Table(path).snapshot().configuration == {"delta.logRetentionDuration": "interval 60 days"}
    assert _operation(path) == "UNSET TBLPROPERTIES"
    version = Table(path).latest_version()
    with pytest.raises(DeltaAnalysisException, match="team"):
        spark.sql(f"ALTER TABLE delta.`{path}` UNSET TBLPROPERTIES ('team')")
    spark.sql(f"ALTER TABLE delta.`{path}` UNSET TBLPROPERTIES IF EXISTS ('team')")
    assert Table(path).latest_version() == version + 1
    assert deltalake.DeltaTable(path).metadata().configuration == {"delta.logRetentionDuration": "interval 60 days"}


def test_add_columns_and_comments(spark: SparkSession, path: str) -> None:
    spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (amount DOUBLE COMMENT 'in dollars', s.z INT)")
    schema = spark.read.format("delta").load(path).schema
    assert schema.simpleString() == "struct<id:bigint,v:string,s:struct<n:int,w:string,z:int>,amount:double>"
    assert schema["amount"].metadata["comment"] == "in dollars"
    assert _operation(path) == "ADD COLUMNS"
    spark.createDataFrame([(3, "c", (30, "z", 3), 1.5)], schema).write.format("delta").mode("append").save(path)
    rows = sorted(deltalake.DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["amount"], r["s"]["z"]) for r in rows] == [(1, None, None), (2, None, None), (3, 1.5, 3)]
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN v COMMENT 'the value'")
    assert spark.read.format("delta").load(path).schema["v"].metadata["comment"] == "the value"
    with pytest.raises(DeltaAnalysisException, match="already exists"):
        spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (v STRING)")


def test_add_constraint_refused_when_rows_land_after_its_check(
    spark: SparkSession, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The constraint is checked against one snapshot: an append committed after the check
    (here, one that violates it) must refuse the ALTER, as in delta-spark, where it read
    the whole table and so is no blind append."""
    from sparkdelta.spark.commands import alter

    checked_rows = alter.read_snapshot
    bad = spark.createDataFrame([(-1, "n", (0, "q"))], "id long, v string, s struct<n: int, w: string>")

    def append_while_checking(*args, **kwargs):  # noqa: ANN002, ANN003
        rows = checked_rows(*args, **kwargs)
        bad.write.format("delta").mode("append").save(path)
        return rows

    monkeypatch.setattr(alter, "read_snapshot", append_while_checking)
    with pytest.raises(ConcurrentAppendException):
        spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT positive CHECK (id > 0)")
    assert "delta.constraints.positive" not in Table(path).snapshot().configuration


def test_check_constraints_are_validated_then_enforced(spark: SparkSession, path: str) -> None:
    version = Table(path).latest_version()
    with pytest.raises(DeltaAnalysisException, match="1 rows in version 0 violate"):
        spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT small CHECK (id < 2)")
    assert Table(path).latest_version() == version
    spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT positive CHECK (id > 0)")
    snapshot = Table(path).snapshot()
    assert snapshot.configuration["delta.constraints.positive"] == "id > 0"
    assert snapshot.protocol.min_writer_version >= 3 and _operation(path) == "ADD CONSTRAINT"
    bad = spark.createDataFrame([(-1, "n", (0, "q"))], "id long, v string, s struct<n: int, w: string>")
    with pytest.raises(DeltaInvariantViolationException, match="positive"):
        bad.write.format("delta").mode("append").save(path)
    spark.sql(f"ALTER TABLE delta.`{path}` DROP CONSTRAINT positive")
    bad.write.format("delta").mode("append").save(path)
    assert spark.read.format("delta").load(path).count() == 3
    with pytest.raises(DeltaAnalysisException, match="does not exist"):
        spark.sql(f"ALTER TABLE delta.`{path}` DROP CONSTRAINT positive")
    spark.sql(f"ALTER TABLE delta.`{path}` DROP CONSTRAINT IF EXISTS positive")


def test_rename_and_drop_columns_under_column_mapping_rewrite_nothing(spark: SparkSession, path: str) -> None:
    with pytest.raises(DeltaAnalysisException, match="needs column mapping"):
        spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN v TO value")
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    files = set(Table(path).snapshot().file_paths())
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN v TO value")
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN s.w TO word")
    spark.sql(f"ALTER TABLE delta.`{path}` DROP COLUMN s.n")
    table = spark.read.format("delta").load(path)
    assert table.columns == ["id", "value", "s"]
    assert sorted((r.id, r.value, r.s.word) for r in table.collect()) == [(1, "a", "x"), (2, "b", "y")]
    assert set(Table(path).snapshot().file_paths()) == files
    spark.sql(f"ALTER TABLE delta.`{path}` DROP COLUMNS (value)")
    assert spark.read.format("delta").load(path).columns == ["id", "s"]
    fields = json.loads(Table(path).snapshot().metadata.schema_string)["fields"]
    assert all("delta.columnMapping.physicalName" in f["metadata"] for f in fields)
    assert [h["operation"] for h in deltalake.DeltaTable(path).history(4)] == [
        "DROP COLUMNS",
        "DROP COLUMNS",
        "RENAME COLUMN",
        "RENAME COLUMN",
    ]


def test_named_tables_and_other_formats(spark: SparkSession, path: str) -> None:
    spark.sql(f"CREATE TABLE altered USING delta LOCATION '{path}'")
    try:
        spark.sql("ALTER TABLE altered SET TBLPROPERTIES ('owner' = 'me')")
        assert Table(path).snapshot().configuration == {"owner": "me"}
        spark.sql("CREATE TABLE plain_parquet (id INT) USING parquet")
        spark.sql("ALTER TABLE plain_parquet ADD COLUMNS (extra STRING)")  # Spark's own
        assert spark.table("plain_parquet").columns == ["id", "extra"]
    finally:
        spark.sql("DROP TABLE IF EXISTS altered")
        spark.sql("DROP TABLE IF EXISTS plain_parquet")
