"""Partition pruning and data skipping: fewer files read, never different rows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from sparkdelta.kernel import skipping as S
from sparkdelta.spark.read.scan import scan_info

CONDITIONS = [
    ("id < 500", 4),  # spark.range splits 0..9999 into 20 exact runs of 500 ids
    ("500 > id", 4),
    ("id = 4321", 4),
    ("id <= 499 AND p = 1", 1),
    ("p = 1", 20),
    ("p IN (1, 2)", 40),
    ("id IN (5, 7000)", 5),
    ("s LIKE 'k999%'", 5),
    ("id >= 9000 OR p = 2", 26),
    ("NOT (id < 9000)", 8),
    ("id BETWEEN 100 AND 400", 4),
    ("NOT (id NOT BETWEEN 100 AND 400)", 4),
    ("s IS NULL", 0),
    ("s IS NOT NULL AND id > 9990", 4),
    ("st.x < 100", 4),
    ("d > DATE'2024-12-01'", 8),
    ("ts < TIMESTAMP'2024-01-01 00:10:00'", 8),
    ("id % 7 = 3", 80),
    ("id > 100 AND (id % 2 = 0)", 80),
    ("st.w LIKE 'k999%'", 5),
    ("NOT (id > 100 AND id % 2 = 0)", 80),  # half of an AND is no bound under NOT
    ("NOT (id < 100 OR s LIKE 'k1%')", 80),
    ("CAST(f AS INT) = 500", 80),  # a narrowing cast is no bound: f 500.5 casts to 500
    ("CAST(p AS BIGINT) = 2", 20),
]


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, object]:
    path = str(tmp_path_factory.mktemp("skipping") / "t")
    source = (
        spark.range(0, 10000, 1, 20)
        .withColumn("p", F.col("id") % 4)
        .withColumn("s", F.concat(F.lit("k"), F.col("id").cast("string")))
        .withColumn("st", F.struct(F.col("id").alias("x"), F.col("s").alias("w")))
        .withColumn("f", F.col("id") + 0.5)
        .withColumn("d", F.date_add(F.lit(dt.date(2024, 1, 1)), (F.col("id") / 27).cast("int")))
        .withColumn("ts", F.timestamp_seconds(F.lit(1704067200) + F.col("id")))
    )
    source.write.format("delta").partitionBy("p").save(path)
    return path, source.cache()


@pytest.mark.parametrize(("condition", "max_files"), CONDITIONS, ids=[c for c, _ in CONDITIONS])
def test_filters_read_only_files_that_can_match_and_return_the_same_rows(spark, table, condition: str, max_files: int) -> None:
    path, source = table
    result = spark.read.format("delta").load(path).where(condition)
    info = scan_info(result)
    assert info is not None and info.files_total == 80
    assert info.files_read <= max_files and info.files_pruned == 80 - info.files_read
    expected = sorted(tuple(r) for r in source.where(condition).select("id", "p", "s").collect())
    assert sorted(tuple(r) for r in result.select("id", "p", "s").collect()) == expected


def test_chained_filters_keep_pruning(spark, table) -> None:
    path, _ = table
    result = spark.read.format("delta").load(path).where("id > 100").where("id < 200")
    assert result.count() == 99 and scan_info(result).files_read <= 4


def test_files_without_stats_are_kept() -> None:
    import pyarrow as pa

    from sparkdelta.kernel.schema import parse_schema

    schema = parse_schema('{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}')
    files = pa.table(
        {
            "partitionValues": pa.array([[], []], pa.map_(pa.string(), pa.string())),
            "stats": pa.array(['{"numRecords":1,"minValues":{"id":5},"maxValues":{"id":5},"nullCount":{"id":0}}', None]),
        }
    )
    keep = S.SkippingEvaluator(files, schema, ()).keep(S.Compare(">", S.Column(("id",)), S.Literal(10)))
    assert keep.to_pylist() == [False, True]


def test_timestamp_max_truncated_to_millis_does_not_drop_the_file(tmp_path: Path) -> None:
    import pyarrow as pa

    from sparkdelta.kernel.schema import parse_schema

    schema = parse_schema('{"type":"struct","fields":[{"name":"t","type":"timestamp","nullable":true,"metadata":{}}]}')
    stats = '{"numRecords":1,"minValues":{"t":"2024-01-01T00:00:00.000Z"},"maxValues":{"t":"2024-01-01T00:00:00.000Z"},"nullCount":{"t":0}}'
    files = pa.table({"partitionValues": pa.array([[]], pa.map_(pa.string(), pa.string())), "stats": pa.array([stats])})
    just_after = dt.datetime(2024, 1, 1, 0, 0, 0, 500, tzinfo=dt.UTC)
    keep = S.SkippingEvaluator(files, schema, ()).keep(S.Compare(">", S.Column(("t",)), S.Literal(just_after)))
    assert keep.to_pylist() == [True], "the real max may be up to 999 microseconds later"


def test_filtering_a_delta_read_plans_quickly(spark, table) -> None:
    import time

    path, _ = table
    df = spark.read.format("delta").load(path)
    started = time.perf_counter()
    df.where("id < 500")
    assert time.perf_counter() - started < 2.0, "planning a filter must not re-enter the filter hook"


def test_null_partitions_never_match_comparisons() -> None:
    import pyarrow as pa

    from sparkdelta.kernel.schema import parse_schema

    schema = parse_schema(
        '{"type":"struct","fields":[{"name":"city","type":"string","nullable":true,"metadata":{}},'
        '{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
    )
    files = pa.table(
        {
            "partitionValues": pa.array(
                [[("city", "Oslo")], [("city", None)], [("city", "Rome")]], pa.map_(pa.string(), pa.string())
            ),
            "stats": pa.array([None, None, None], pa.string()),
        }
    )
    evaluator = S.SkippingEvaluator(files, schema, ("city",))
    city = S.Column(("city",))
    assert evaluator.keep(S.Compare("=", city, S.Literal("Oslo"))).to_pylist() == [True, False, False]
    assert evaluator.keep(S.Not(S.Compare("<", city, S.Literal("P")))).to_pylist() == [False, False, True]
    assert evaluator.keep(S.StartsWith(city, "R")).to_pylist() == [False, False, True]
    assert evaluator.keep(S.IsNull(city)).to_pylist() == [False, True, False]
    assert evaluator.keep(S.Or(S.IsNull(city), S.Compare("=", city, S.Literal("Rome")))).to_pylist() == [False, True, True]


@pytest.mark.parametrize("op", ["<", "<=", "=", ">", ">=", "!="])
def test_float_columns_skip_as_spark_compares_them_with_double_literals(spark, tmp_path, op: str) -> None:
    """Spark widens a float column to double against 0.7 (exact); narrowing the literal to
    float instead would round it and skip the file whose float 0.7 is just below 0.7."""
    rows = [(0.7, 0.7, 1), (0.25, 0.25, 2)]
    schema = "x FLOAT, p FLOAT, id INT"
    delta, plain = str(tmp_path / "delta"), str(tmp_path / "plain")
    frame = spark.createDataFrame(rows, schema)
    frame.write.format("delta").partitionBy("p").save(delta)
    frame.write.partitionBy("p").parquet(plain)
    for column in ("x", "p"):
        condition = f"{column} {op} 0.7"
        expected = sorted(r.id for r in spark.read.schema(schema).parquet(plain).where(condition).collect())
        assert sorted(r.id for r in spark.read.format("delta").load(delta).where(condition).collect()) == expected, condition


@pytest.mark.parametrize(
    ("alias", "condition", "max_files"), [(None, "id <= 499 AND p = 1", 1), (None, "p IN (1, 2)", 40), ("t", "t.id < 500", 4)]
)
def test_delta_table_to_df_prunes_as_a_path_read_does(spark, table, alias: str | None, condition: str, max_files: int) -> None:
    from sparkdelta.tables import DeltaTable

    path, source = table
    delta_table = DeltaTable.forPath(spark, path)
    result = (delta_table.alias(alias) if alias else delta_table).toDF().where(condition)
    assert len(result.inputFiles()) <= max_files
    info = scan_info(result)
    assert info is not None and info.files_total == 80 and info.files_read <= max_files
    expected = sorted(tuple(r) for r in source.where(condition.removeprefix("t.")).select("id", "p", "s").collect())
    assert sorted(tuple(r) for r in result.select("id", "p", "s").collect()) == expected
