"""Column-mapped tables whose column names hold spaces, dots, commas, ``=`` or non-ASCII letters.

Each table goes through a full round trip in ``name`` and ``id`` mode: write (partitioned
by such a column), read, filters that prune files by stats and by partition, DELETE,
UPDATE (a nested field too), MERGE, OPTIMIZE, the change data feed, RENAME COLUMN (a
partition column too) and DROP COLUMN. After each step the rows are checked against a
Python model, and against delta-rs reading the table through its DataFusion query engine
(``QueryBuilder``): ``deltalake.DeltaTable.to_pyarrow_table()`` reads column-mapped
tables as all nulls (delta-rs's pyarrow dataset path ignores the mapping), so it is not
used as an oracle here.

Stats must key such columns by their whole name: ``a.b`` the column is not field ``b``
of a struct ``a`` (checked on an unmapped table holding both, and on a table whose
mapping was enabled late, so its physical names are the original dotted ones).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

from sparkdelta.kernel import Table
from sparkdelta.spark.read.scan import scan_info
from sparkdelta.tables import DeltaTable

Row = dict[str, Any]
SCHEMA = "`my col` long, `a.b` string, `é` string, `数量` long, `x,y` long, `c=1` string, `s t` struct<`f.g`: long>"


def _rows() -> list[Row]:
    return [
        {"my col": i, "a.b": f"v{i}", "é": f"e{i}", "数量": i * 10, "x,y": i % 3, "c=1": f"p {i % 2}", "s t": {"f.g": i}}
        for i in range(8)
    ]


def _frame(spark: SparkSession, rows: list[Row]) -> DataFrame:
    """``rows`` (every column of ``SCHEMA``) as a DataFrame."""
    return spark.createDataFrame([tuple(_spark_value(v) for v in r.values()) for r in rows], SCHEMA)


def _spark_value(value: Any) -> Any:
    return tuple(value.values()) if isinstance(value, dict) else value


def _sorted(rows: list[Row], columns: list[str]) -> list[tuple]:
    return sorted(tuple(json.dumps(r[c], ensure_ascii=False) for c in columns) for r in rows)


def _ours(spark: SparkSession, path: str) -> tuple[list[str], list[Row]]:
    df = spark.read.format("delta").load(path)
    return df.columns, [r.asDict(recursive=True) for r in df.collect()]


def _delta_rs(path: str) -> tuple[list[str], list[Row]]:
    reader = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path)).execute("SELECT * FROM t")
    table = pa.table(reader.read_all())
    return table.column_names, table.to_pylist()


def _check(spark: SparkSession, path: str, expected: list[Row], columns: list[str]) -> None:
    """Our reader and delta-rs's both read exactly ``expected``, with the columns in order."""
    for read in (lambda: _ours(spark, path), lambda: _delta_rs(path)):
        names, rows = read()
        assert names == columns
        assert _sorted(rows, columns) == _sorted(expected, columns)


def _files_read(df: DataFrame) -> tuple[int, int]:
    info = scan_info(df)
    assert info is not None
    return info.files_read, info.files_total


@pytest.mark.parametrize("mode", ["name", "id"])
def test_round_trip_with_awkward_column_names(spark: SparkSession, tmp_path: Path, mode: str) -> None:
    path = str(tmp_path / "t")
    model = _rows()
    columns = list(model[0])
    (
        _frame(spark, model)
        .repartition(4, "my col")
        .write.format("delta")
        .option("delta.columnMapping.mode", mode)
        .option("delta.enableChangeDataFeed", "true")
        .partitionBy("c=1")
        .save(path)
    )
    field = Table(path).snapshot().schema.field("a.b")
    assert field.physical_name != "a.b"  # a fresh mapped table names its files' columns anew
    _check(spark, path, model, columns)

    # Data skipping on a data column and partition pruning, results as the model's.
    table = spark.read.format("delta").load(path)
    pruned = table.where("`数量` >= 70")
    assert [r["my col"] for r in pruned.collect()] == [7]
    read, total = _files_read(pruned)
    assert read < total
    nested = table.where("`s t`.`f.g` = 6 AND `a.b` = 'v6'")
    assert [r["my col"] for r in nested.collect()] == [6]
    assert _files_read(nested)[0] < total
    partition = table.where("`c=1` = 'p 1'")
    assert sorted(r["my col"] for r in partition.collect()) == [1, 3, 5, 7]
    assert _files_read(partition)[0] < total

    # DELETE, UPDATE (a top-level and a nested field by delta-spark's keys), MERGE.
    delta = DeltaTable.forPath(spark, path)
    delta.delete("`a.b` = 'v0' OR `x,y` = 2 AND `c=1` = 'p 1'")
    model = [r for r in model if not (r["a.b"] == "v0" or (r["x,y"] == 2 and r["c=1"] == "p 1"))]
    _check(spark, path, model, columns)
    version = Table(path).latest_version()
    delta.update("`数量` > 30", {"`é`": "concat(`é`, '!')", "`s t`.`f.g`": "`s t`.`f.g` * -1"})
    before = {r["my col"]: dict(r) for r in model}
    for r in model:
        if r["数量"] > 30:
            r["é"], r["s t"] = r["é"] + "!", {"f.g": -r["s t"]["f.g"]}
    _check(spark, path, model, columns)
    changes = (
        spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", version + 1).load(path).collect()
    )
    expected_changes = [(k, before[k]["é"], "update_preimage") for k in before if before[k]["数量"] > 30]
    expected_changes += [(k, before[k]["é"] + "!", "update_postimage") for k in before if before[k]["数量"] > 30]
    assert sorted((r["my col"], r["é"], r["_change_type"]) for r in changes) == sorted(expected_changes)

    incoming = [
        {"my col": 1, "a.b": "m1", "é": "me", "数量": 1, "x,y": 9, "c=1": "p 1", "s t": {"f.g": 100}},
        {"my col": 20, "a.b": "m20", "é": "né", "数量": 200, "x,y": 9, "c=1": "p 9", "s t": {"f.g": 200}},
    ]
    (
        delta.alias("t")
        .merge(_frame(spark, incoming).alias("s"), "t.`my col` = s.`my col`")
        .whenMatchedUpdate(set={"`a.b`": "s.`a.b`", "`数量`": "s.`数量` + t.`数量`"})
        .whenNotMatchedInsertAll()
        .execute()
    )
    for r in model:
        if r["my col"] == 1:
            r["a.b"], r["数量"] = "m1", 1 + r["数量"]
    model.append(incoming[1])
    _check(spark, path, model, columns)

    # OPTIMIZE keeps every row.
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    _check(spark, path, model, columns)

    # RENAME COLUMN (a data column, a partition column, a nested field) and DROP COLUMN.
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN `a.b` TO `b c.d`")
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN `c=1` TO `分区 c`")
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN `s t`.`f.g` TO `h,i`")
    spark.sql(f"ALTER TABLE delta.`{path}` DROP COLUMN `é`")
    assert Table(path).snapshot().metadata.partition_columns == ("分区 c",)
    model = [
        {
            "my col": r["my col"],
            "b c.d": r["a.b"],
            "数量": r["数量"],
            "x,y": r["x,y"],
            "分区 c": r["c=1"],
            "s t": {"h,i": r["s t"]["f.g"]},
        }
        for r in model
    ]
    columns = ["my col", "b c.d", "数量", "x,y", "分区 c", "s t"]
    _check(spark, path, model, columns)
    renamed = spark.read.format("delta").load(path).where("`分区 c` = 'p 9'")
    assert [r["my col"] for r in renamed.collect()] == [20]
    assert _files_read(renamed)[0] == 1
    skipped = spark.read.format("delta").load(path).where("`s t`.`h,i` = 200")
    assert [r["b c.d"] for r in skipped.collect()] == ["m20"]
    assert _files_read(skipped)[0] == 1


def _stats(path: str) -> list[dict[str, Any]]:
    return [json.loads(f["stats"]) for f in Table(path).snapshot().files.to_pylist()]


def test_stats_key_a_dotted_column_by_its_whole_name(spark: SparkSession, tmp_path: Path) -> None:
    """An unmapped table with the column ``a.b`` and the struct ``a`` with field ``b``: two different stats."""
    path = str(tmp_path / "t")
    rows = [(i, (100 + i,)) for i in range(4)]
    frame = spark.createDataFrame(rows, "`a.b` long, a struct<b: long>")
    frame.repartitionByRange(2, "`a.b`").write.format("delta").save(path)
    stats = sorted(_stats(path), key=lambda s: s["minValues"]["a.b"])
    assert [(s["minValues"], s["maxValues"], s["nullCount"]) for s in stats] == [
        ({"a.b": 0, "a": {"b": 100}}, {"a.b": 1, "a": {"b": 101}}, {"a.b": 0, "a": {"b": 0}}),
        ({"a.b": 2, "a": {"b": 102}}, {"a.b": 3, "a": {"b": 103}}, {"a.b": 0, "a": {"b": 0}}),
    ]
    table = spark.read.format("delta").load(path)
    for condition in ("`a.b` = 2", "a.b = 102"):
        found = table.where(condition)
        assert [r["a.b"] for r in found.collect()] == [2]
        assert _files_read(found) == (1, 2)


def test_mapping_enabled_late_keeps_dotted_physical_names(spark: SparkSession, tmp_path: Path) -> None:
    """Enabling mapping keeps the existing names as physical names (``a.b``, ``数量``): stats, rename and
    partition rename still work, and delta-rs reads what we read."""
    path = str(tmp_path / "t")
    rows = [{"a.b": i, "数量": f"q{i}", "é": f"p{i % 2}"} for i in range(6)]
    spark.createDataFrame([tuple(r.values()) for r in rows], "`a.b` long, `数量` string, `é` string").repartition(3).write.format(
        "delta"
    ).partitionBy("é").save(path)
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES "
        "('delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"
    )
    assert Table(path).snapshot().schema.field("a.b").physical_name == "a.b"
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN `a.b` TO `my col`")
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN `é` TO `x,y`")
    spark.createDataFrame([(100, "q100", "p1")], "`my col` long, `数量` string, `x,y` string").write.format("delta").mode(
        "append"
    ).save(path)
    model = [{"my col": r["a.b"], "数量": r["数量"], "x,y": r["é"]} for r in rows] + [
        {"my col": 100, "数量": "q100", "x,y": "p1"}
    ]
    columns = ["my col", "数量", "x,y"]
    _check(spark, path, model, columns)
    found = spark.read.format("delta").load(path).where("`my col` >= 100")
    assert [r["数量"] for r in found.collect()] == ["q100"]
    assert _files_read(found)[0] == 1
    DeltaTable.forPath(spark, path).update("`my col` = 100", {"`数量`": "'changed'"})
    model[-1]["数量"] = "changed"
    _check(spark, path, model, columns)
