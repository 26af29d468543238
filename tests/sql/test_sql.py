"""Delta SQL through ``sparkdelta.sql`` and ``spark.sql``: SQL and the DeltaTable API must agree.

The differential test runs seeded random DELETE, UPDATE and MERGE statements through SQL
on one table and the same operations through the DeltaTable API on a copy: after every
step the rows and the commit's metrics must be equal. The rest checks reads, writes,
commands and errors against the Python API and delta-rs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import deltalake
import pytest
from interloper import interloper
from pyspark.sql import DataFrame, SparkSession

import sparkdelta
from sparkdelta.exceptions import DeltaAnalysisException
from sparkdelta.kernel import Table
from sparkdelta.tables import DeltaTable

TIMING_METRICS = {"executionTimeMs", "scanTimeMs", "rewriteTimeMs", "materializeSourceTimeMs"}


def _rows(df: DataFrame) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _metrics(location: str) -> dict[str, str]:
    info = Table(location).snapshot().commit_info or {}
    return {k: v for k, v in (info.get("operationMetrics") or {}).items() if k not in TIMING_METRICS}


def _make(spark: SparkSession, path: str, rows: int, partitioned: bool, seed: int) -> None:
    df = spark.range(rows, numPartitions=3).selectExpr(
        "CAST(id AS INT) AS id",
        "CAST(id % 3 AS INT) AS p",
        f"CAST(pmod(hash(id, {seed}), 20) AS INT) AS n",
        "concat('v', CAST(id AS STRING)) AS v",
    )
    writer = df.write.format("delta")
    if partitioned:
        writer = writer.partitionBy("p")
    writer.save(path)


@dataclass
class Operation:
    sql: str
    api: Any
    result_metric: str


def _delete(rng: random.Random, target: str) -> Operation:
    k = rng.randrange(20)
    if rng.random() < 0.5:
        return Operation(f"DELETE FROM {target} WHERE n < {k}", lambda t: t.delete(f"n < {k}"), "numDeletedRows")
    return Operation(
        f"DELETE FROM {target} AS t WHERE t.n = {k} OR t.p = 2", lambda t: t.delete(f"n = {k} OR p = 2"), "numDeletedRows"
    )


def _update(rng: random.Random, target: str) -> Operation:
    k = rng.randrange(3)
    return Operation(
        f"UPDATE {target} AS t SET t.v = concat(t.v, '!'), n = n + 1 WHERE t.p = {k}",
        lambda t: t.update(f"p = {k}", {"v": "concat(v, '!')", "n": "n + 1"}),
        "numUpdatedRows",
    )


def _merge(spark: SparkSession, rng: random.Random, target: str, step: int) -> Operation:
    ids = rng.sample(range(-20, 80), 30)
    source = spark.createDataFrame([(i, abs(i) % 3, rng.randrange(20), f"s{i}") for i in ids], "id int, p int, n int, v string")
    view = f"merge_source_{step}_{rng.randrange(10**6)}"
    source.createOrReplaceTempView(view)
    k = rng.randrange(20)
    clauses: list[tuple[str, Any]] = []
    if rng.random() < 0.5:
        clauses.append((f"WHEN MATCHED AND s.n > {k} THEN DELETE", lambda b: b.whenMatchedDelete(f"s.n > {k}")))
    if rng.random() < 0.5:
        clauses.append(("WHEN MATCHED THEN UPDATE SET *", lambda b: b.whenMatchedUpdateAll()))
    else:
        clauses.append(
            (
                "WHEN MATCHED THEN UPDATE SET t.v = s.v, n = t.n + s.n",
                lambda b: b.whenMatchedUpdate(set={"v": "s.v", "n": "t.n + s.n"}),
            )
        )
    if rng.random() < 0.5:
        clauses.append(("WHEN NOT MATCHED THEN INSERT *", lambda b: b.whenNotMatchedInsertAll()))
    else:
        clauses.append(
            (
                f"WHEN NOT MATCHED BY TARGET AND s.n < {k} THEN INSERT (id, p, n, v) VALUES (s.id, s.p, s.n, 'new')",
                lambda b: b.whenNotMatchedInsert(f"s.n < {k}", {"id": "s.id", "p": "s.p", "n": "s.n", "v": "'new'"}),
            )
        )
    if rng.random() < 0.5:
        clauses.append(
            (f"WHEN NOT MATCHED BY SOURCE AND t.n < {k} THEN DELETE", lambda b: b.whenNotMatchedBySourceDelete(f"t.n < {k}"))
        )
    if rng.random() < 0.5:
        clauses.append(
            ("WHEN NOT MATCHED BY SOURCE THEN UPDATE SET t.n = 0", lambda b: b.whenNotMatchedBySourceUpdate(set={"n": "0"}))
        )

    def api(t: DeltaTable) -> None:
        builder = t.alias("t").merge(spark.table(view).alias("s"), "t.id = s.id")
        for _, add in clauses:
            builder = add(builder)
        builder.execute()

    text = f"MERGE INTO {target} AS t USING {view} AS s ON t.id = s.id " + " ".join(c for c, _ in clauses)
    return Operation(text, api, "numTargetRowsUpdated")


@pytest.mark.parametrize(("seed", "partitioned"), [(7, False), (11, True)])
def test_random_dml_through_sql_and_the_api_give_identical_tables(
    spark: SparkSession, tmp_path: Path, seed: int, partitioned: bool
) -> None:
    rng = random.Random(seed)
    via_sql, via_api = str(tmp_path / "sql"), str(tmp_path / "api")
    _make(spark, via_sql, 60, partitioned, seed)
    _make(spark, via_api, 60, partitioned, seed)
    target = f"delta.`{via_sql}`"
    for step in range(6):
        choice = rng.choice(("delete", "update", "merge", "merge"))
        if choice == "delete":
            operation = _delete(rng, target)
        elif choice == "update":
            operation = _update(rng, target)
        else:
            operation = _merge(spark, rng, target, step)
        result = sparkdelta.sql(spark, operation.sql).first()
        operation.api(DeltaTable.forPath(spark, via_api))
        assert _metrics(via_sql) == _metrics(via_api), operation.sql
        assert _rows(DeltaTable.forPath(spark, via_sql).toDF()) == _rows(DeltaTable.forPath(spark, via_api).toDF()), operation.sql
        if choice != "merge":
            assert result.num_affected_rows == int(_metrics(via_sql).get(operation.result_metric, 0))
        else:
            expected = sum(
                int(_metrics(via_sql).get(m, 0))
                for m in ("numTargetRowsUpdated", "numTargetRowsDeleted", "numTargetRowsInserted")
            )
            assert result.num_affected_rows == expected
    assert Table(via_sql).latest_version() == Table(via_api).latest_version()
    delta_rs = deltalake.DeltaTable(via_sql).to_pyarrow_table().to_pylist()
    assert sorted(((r["id"], r["p"], r["n"], r["v"]) for r in delta_rs), key=repr) == _rows(
        spark.read.format("delta").load(via_sql).select("id", "p", "n", "v")
    )


@pytest.mark.parametrize(
    ("statement", "other_writer", "expected"),
    [
        (
            "DELETE FROM {t} WHERE p = 0 AND id < 6",
            lambda t: t.delete("p = 1"),
            {"num_affected_rows": 2},
        ),
        (
            "UPDATE {t} SET n = 0 WHERE p = 0 AND id < 9",
            lambda t: t.update("p = 1", {"n": "1"}),
            {"num_affected_rows": 3},
        ),
        (
            "MERGE INTO {t} AS t USING (SELECT 0 AS id UNION ALL SELECT 3 AS id) AS s ON t.id = s.id AND t.p = 0 "
            "WHEN MATCHED THEN UPDATE SET n = 7",
            lambda t: (
                t.alias("t")
                .merge(t.toDF().sparkSession.range(100, 105).selectExpr("CAST(id AS INT) AS id").alias("s"), "t.id = s.id")
                .whenNotMatchedInsert(values={"id": "s.id", "p": "1", "n": "0", "v": "'new'"})
                .execute()
            ),
            {"num_affected_rows": 2, "num_updated_rows": 2, "num_deleted_rows": 0, "num_inserted_rows": 0},
        ),
    ],
    ids=["delete", "update", "merge"],
)
def test_dml_reports_its_own_counts_past_a_concurrent_commit_of_the_same_operation(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, statement: str, other_writer: Any, expected: dict
) -> None:
    """Another writer commits the same operation between the statement's read and its
    commit: the statement's result still counts its own rows, not the other's."""
    path = str(tmp_path / "t")
    _make(spark, path, 30, partitioned=True, seed=1)
    interloper(monkeypatch, lambda: other_writer(DeltaTable.forPath(spark, path)))
    result = spark.sql(statement.format(t=f"delta.`{path}`")).first().asDict()
    assert Table(path).latest_version() == 2  # the other writer's commit, then the statement's
    assert result == expected


def _table(spark: SparkSession, path: str) -> str:
    _make(spark, path, 30, True, 3)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id >= 20")
    spark.sql(f"UPDATE delta.`{path}` SET v = 'u' WHERE id < 5")
    return path


@pytest.fixture
def table(spark: SparkSession, tmp_path: Path) -> str:
    return _table(spark, str(tmp_path / "t"))


@pytest.fixture(scope="module")
def refusing_table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    """One table for the statements refused before they change anything (each test checks it did not)."""
    return _table(spark, str(tmp_path_factory.mktemp("refusing") / "t"))


def test_time_travel_spellings_read_the_same_versions(spark: SparkSession, table: str) -> None:
    v0 = _rows(spark.read.format("delta").option("versionAsOf", 0).load(table))
    assert _rows(spark.sql(f"SELECT * FROM delta.`{table}` VERSION AS OF 0")) == v0
    assert _rows(spark.sql(f"SELECT * FROM delta.`{table}`@v0")) == v0
    moment = Table(table).history()[-1].timestamp
    from datetime import datetime

    stamp = datetime.fromtimestamp(moment / 1000).strftime("%Y%m%d%H%M%S%f")[:17]
    assert _rows(spark.sql(f"SELECT * FROM delta.`{table}`@{stamp}")) == v0
    text = datetime.fromtimestamp(moment / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:23]
    assert _rows(spark.sql(f"SELECT * FROM delta.`{table}` TIMESTAMP AS OF '{text}'")) == v0
    joined = spark.sql(
        f"WITH old AS (SELECT id, v FROM delta.`{table}` VERSION AS OF 0) "
        f"SELECT old.id, old.v AS before, now.v AS after FROM old JOIN delta.`{table}` AS now ON old.id = now.id "
        "WHERE old.v <> now.v"
    )
    assert _rows(joined) == [(i, f"v{i}", "u") for i in range(5)]
    assert not [t for t in spark.catalog.listTables() if t.name.startswith("__sparkdelta")]


def test_a_one_table_query_skips_files_by_its_where(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "skip")
    for start in range(0, 1000, 200):
        spark.range(start, start + 200, numPartitions=1).write.format("delta").mode("append").save(path)
    df = spark.sql(f"SELECT * FROM delta.`{path}` WHERE id BETWEEN 10 AND 20")
    assert len(df.inputFiles()) == 1 < Table(path).snapshot().num_files
    assert sorted(r.id for r in df.collect()) == list(range(10, 21))


def test_inserts_create_and_replace_where(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "ins")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT NOT NULL, day DATE, amount DOUBLE) USING DELTA PARTITIONED BY (day)")
    result = spark.sql(
        f"INSERT INTO delta.`{path}` VALUES (1, DATE'2026-01-01', 1.5), (2, DATE'2026-01-02', 2), (3, DATE'2026-01-02', 3)"
    )
    assert result.columns == [] and result.collect() == []  # delta-spark's INSERT returns no rows
    assert Table(path).snapshot().commit_info["operationMetrics"]["numOutputRows"] == "3"
    spark.sql(f"INSERT INTO delta.`{path}` (amount, id, day) SELECT 9.5, 4, DATE'2026-01-03'")
    spark.sql(f"INSERT INTO delta.`{path}` REPLACE WHERE day = DATE'2026-01-02' SELECT 5, DATE'2026-01-02', 50.0")
    expected = [(1, "2026-01-01", 1.5), (4, "2026-01-03", 9.5), (5, "2026-01-02", 50.0)]
    got = sorted((r.id, str(r.day), r.amount) for r in spark.read.format("delta").load(path).collect())
    assert got == expected
    rs = deltalake.DeltaTable(path).to_pyarrow_table().to_pylist()
    assert sorted((r["id"], str(r["day"]), r["amount"]) for r in rs) == expected
    spark.sql(f"INSERT OVERWRITE delta.`{path}` SELECT 7, DATE'2026-02-01', 7.0")
    assert _rows(spark.read.format("delta").load(path).select("id")) == [(7,)]
    with pytest.raises(Exception, match="NOT NULL|null"):
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (NULL, DATE'2026-02-01', 1.0)")
    assert Table(path).history()[0].commit_info["operation"] == "WRITE"


def test_commands_match_the_api(spark: SparkSession, table: str, tmp_path: Path) -> None:
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{table}`").first()
    assert detail == DeltaTable.forPath(spark, table).detail().first()
    history = spark.sql(f"DESCRIBE HISTORY delta.`{table}` LIMIT 2").collect()
    assert [r.operation for r in history] == ["UPDATE", "DELETE"]
    spark.sql(f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES ('team' = 'taxi')")
    assert spark.sql(f"SHOW TBLPROPERTIES delta.`{table}` ('team')").collect()[0].value == "taxi"
    described = spark.sql(f"DESCRIBE TABLE delta.`{table}`").collect()
    assert [r.col_name for r in described][:4] == ["id", "p", "n", "v"]
    assert ("p", "int") in [(r.col_name, r.data_type) for r in described[5:]]
    restored = spark.sql(f"RESTORE TABLE delta.`{table}` TO VERSION AS OF 0").first()
    assert restored.num_of_files_after_restore == Table(table).snapshot().num_files
    assert _rows(spark.read.format("delta").load(table)) == _rows(spark.read.format("delta").option("versionAsOf", 0).load(table))
    copy = str(tmp_path / "copy")
    spark.sql(f"CREATE TABLE delta.`{copy}` DEEP CLONE delta.`{table}` VERSION AS OF 1")
    assert _rows(spark.read.format("delta").load(copy)) == _rows(spark.read.format("delta").option("versionAsOf", 1).load(table))
    optimized = spark.sql(f"OPTIMIZE delta.`{copy}` ZORDER BY (n)").first()
    assert optimized.metrics.numFilesRemoved > 0


def test_reorg_and_drop_feature_through_sql(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "dv")
    spark.range(50).write.format("delta").option("delta.enableDeletionVectors", "true").save(path)
    sparkdelta.sql(spark, f"DELETE FROM delta.`{path}` WHERE id % 5 = 0")
    assert Table(path).snapshot().files.column("deletionVector").null_count == 0
    sparkdelta.sql(spark, f"REORG TABLE delta.`{path}` APPLY (PURGE)")
    assert Table(path).snapshot().files.column("deletionVector").null_count == Table(path).snapshot().num_files
    sparkdelta.sql(spark, f"ALTER TABLE delta.`{path}` DROP FEATURE deletionVectors")
    assert sorted(deltalake.DeltaTable(path).to_pyarrow_table().column("id").to_pylist()) == [i for i in range(50) if i % 5]


def test_statements_that_are_not_delta_go_to_spark(spark: SparkSession) -> None:
    assert sparkdelta.sql(spark, "SELECT 1 AS x").first().x == 1
    assert "default" in [r[0] for r in spark.sql("SHOW DATABASES").collect()]
    last = sparkdelta.sql(spark, "SET spark.sql.shuffle.partitions = 4; SELECT 'a;b' AS s -- a comment; here\n")
    assert last.first().s == "a;b"


@pytest.mark.parametrize(
    ("statement", "words"),
    [
        ("VACUUM delta.`{t}` RETAIN many HOURS", r"RETAIN takes a number of HOURS\. Line 1, Col: \d+"),
        ("VACUUM delta.`{t}` LITE", "LITE is not supported"),
        ("OPTIMIZE delta.`{t}` SORT BY (n)", "OPTIMIZE: unsupported clause 'SORT"),
        ("REORG TABLE delta.`{t}` APPLY (UPGRADE UNIFORM)", "only APPLY \\(PURGE\\)"),
        ("CONVERT TO DELTA parquet.`{t}` NO STATISTICS", "NO STATISTICS is not supported"),
        ("INSERT OVERWRITE delta.`{t}` PARTITION (p = 1) SELECT 1, 2, 'x'", "PARTITION clause is not supported"),
        ("MERGE INTO delta.`{t}` AS t USING delta.`{t}` AS s ON t.id = s.id WHEN NOT MATCHED THEN DELETE", "takes INSERT"),
        ("RESTORE TABLE delta.`{t}` TO 3", "expected TO VERSION AS OF"),
    ],
)
def test_errors_name_the_statement_and_clause(spark: SparkSession, refusing_table: str, statement: str, words: str) -> None:
    version = Table(refusing_table).latest_version()
    with pytest.raises((DeltaAnalysisException, ValueError), match=words):
        sparkdelta.sql(spark, statement.format(t=refusing_table))
    assert Table(refusing_table).latest_version() == version


def test_set_delta_settings_reach_the_library(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "defaults")
    try:
        sparkdelta.sql(
            spark,
            "SET spark.databricks.delta.properties.defaults.enableChangeDataFeed = true; "
            f"CREATE TABLE delta.`{path}` (id INT) USING DELTA",
        )
    finally:
        spark.conf.unset("spark.databricks.delta.properties.defaults.enableChangeDataFeed")
    assert Table(path).snapshot().configuration == {"delta.enableChangeDataFeed": "true"}
    sparkdelta.sql(spark, f"INSERT INTO delta.`{path}` VALUES (1), (2)")
    changes = spark.sql(f"SELECT id, _change_type FROM table_changes('{path}', 1)")
    assert _rows(changes) == [(1, "insert"), (2, "insert")]


@pytest.fixture
def nested(spark: SparkSession, tmp_path: Path) -> str:
    path = str(tmp_path / "nested")
    rows = [(i, (i % 2, f"w{i}"), float(i)) for i in range(40)]
    spark.createDataFrame(rows, "id int, s struct<a: int, w: string>, a double").write.format("delta").save(path)
    spark.catalog.dropTempView("small_ids")
    spark.createDataFrame([(3,), (5,)], "id int").createOrReplaceTempView("small_ids")
    return path


def test_queries_keep_their_meaning_over_delta_tables(spark: SparkSession, nested: str, tmp_path: Path) -> None:
    t = f"delta.`{nested}`"
    assert spark.sql(f"SELECT count(*) FROM {t} WHERE s.a = 1").first()[0] == 20  # a struct field, not column a
    assert spark.sql(f"SELECT count(*) FROM {t} AS x WHERE x.s.a = 1 AND x.a > 30").first()[0] == 5
    correlated = spark.sql(f"SELECT id FROM small_ids AS o WHERE EXISTS (SELECT 1 FROM {t} AS d WHERE d.id = o.id AND d.a > 4)")
    assert _rows(correlated) == [(5,)]
    sampled = spark.sql(f"SELECT count(*) FROM {t} TABLESAMPLE (5 ROWS)").first()[0]
    assert sampled == 5
    random_half = spark.sql(f"SELECT count(*) FROM {t} WHERE rand(7) < 2").first()[0]
    assert random_half == 40
    spark.sql("CREATE DATABASE IF NOT EXISTS sql_qualified")
    spark.sql(f"CREATE TABLE sql_qualified.nested USING DELTA LOCATION '{nested}'")
    assert spark.sql("SELECT sql_qualified.nested.id FROM sql_qualified.nested WHERE id < 2").count() == 2
    plain = str(tmp_path / "plain")
    spark.range(3).write.parquet(plain)
    assert spark.sql(f"SELECT count(*) FROM parquet.`{plain}`").first()[0] == 3
    spark.sql(f"CREATE OR REPLACE TEMP VIEW evens AS SELECT id FROM {t} WHERE id % 2 = 0")
    assert spark.table("evens").count() == 20
    assert spark.sql(f"SELECT id FROM {t} WHERE id = :wanted", args={"wanted": 7}).first().id == 7
    assert spark.sql("SELECT count(*) FROM {src} WHERE id < 10", src=spark.read.format("delta").load(nested)).first()[0] == 10
    assert sparkdelta.sql(spark, f"SELECT count(*) FROM {t};\n-- done\n").first()[0] == 40


def test_dml_clauses_delta_spark_refuses_are_refused(spark: SparkSession, nested: str) -> None:
    t = f"delta.`{nested}`"
    version = Table(nested).latest_version()
    with pytest.raises(DeltaAnalysisException, match="subqueries are not supported"):
        spark.sql(f"DELETE FROM {t} AS d WHERE EXISTS (SELECT 1 FROM small_ids AS o WHERE o.id = d.id)")
    with pytest.raises(DeltaAnalysisException, match="LIMIT is not supported"):
        spark.sql(f"DELETE FROM {t} WHERE id < 10 LIMIT 1")
    with pytest.raises(DeltaAnalysisException, match="subqueries are not supported"):
        spark.sql(f"UPDATE {t} SET a = (SELECT max(id) FROM small_ids)")
    with pytest.raises(ValueError, match="NOT NULL is not supported in Hive-style ALTER COLUMN"):
        spark.sql(f"ALTER TABLE {t} CHANGE COLUMN a a DOUBLE NOT NULL")
    with pytest.raises(ValueError, match="Renaming column is not supported in Hive-style ALTER COLUMN"):
        spark.sql(f"ALTER TABLE {t} CHANGE COLUMN a b DOUBLE COMMENT 'x'")
    with pytest.raises(DeltaAnalysisException, match="EXTENDED is not supported"):
        spark.sql(f"DESCRIBE TABLE EXTENDED {t}")
    assert Table(nested).latest_version() == version
    assert spark.sql(f"SHOW TBLPROPERTIES {t} (delta.minReaderVersion)").first().value == "1"


def test_create_as_select_keeps_clustering_and_inserts_elsewhere_read_delta(
    spark: SparkSession, nested: str, tmp_path: Path
) -> None:
    clustered = str(tmp_path / "clustered")
    spark.sql(f"CREATE TABLE delta.`{clustered}` CLUSTER BY (id) COMMENT 'ids' AS SELECT id, a FROM delta.`{nested}`")
    detail = DeltaTable.forPath(spark, clustered).detail().first()
    assert detail.clusteringColumns == ["id"] and detail.description == "ids"
    assert spark.read.format("delta").load(clustered).count() == 40
    spark.sql("CREATE DATABASE IF NOT EXISTS sql_other")
    spark.sql("CREATE TABLE sql_other.copies (id INT, a DOUBLE) USING parquet")
    spark.sql(f"INSERT INTO sql_other.copies SELECT id, a FROM delta.`{nested}` WHERE id < 4")
    assert spark.table("sql_other.copies").count() == 4
    with pytest.raises(ValueError, match="unsupported clause"):
        spark.sql(f"CREATE TABLE delta.`{tmp_path / 'bucketed'}` (id INT) USING DELTA CLUSTERED BY (id) INTO 4 BUCKETS")
