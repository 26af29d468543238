"""Spark on ``s3a://``: sparkdelta's whole Spark surface on a real S3 endpoint (moto's server).

Spark reaches the bucket through Hadoop's S3A connector (fetched for the tests by
``scripts/fetch_hadoop_aws.sh``; sparkdelta ships none), configured the way users do:
``fs.s3a.*`` settings on the session. The kernel reads them from the same session, so
credentials are given once. Oracles: delta-rs reading the same bucket with its own
client, boto3 listing the objects, and plain Python models of the expected rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import deltalake
import pytest
from object_stores import MotoServer
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from sparkdelta.kernel import Table
from sparkdelta.kernel.errors import StorageError
from sparkdelta.spark.storage import open_table
from sparkdelta.tables import DeltaTable

_S3A_SETTINGS = ("endpoint", "access.key", "secret.key", "path.style.access", "endpoint.region", "connection.ssl.enabled")


@pytest.fixture(scope="module")
def s3a(spark: SparkSession, moto_s3: MotoServer) -> Iterator[MotoServer]:
    """The session configured for the moto endpoint, as a user configures S3A (``fs.s3a.*``)."""
    try:
        spark._jvm.java.lang.Class.forName("org.apache.hadoop.fs.s3a.S3AFileSystem")  # type: ignore[union-attr]
    except Exception as exc:  # noqa: BLE001 - py4j wraps the ClassNotFoundException
        pytest.fail(f"hadoop-aws is not on Spark's classpath (scripts/fetch_hadoop_aws.sh failed?): {exc}")
    values = ("endpoint", moto_s3.access_key, moto_s3.secret_key, "true", "us-east-1", "false")
    for key, value in zip(_S3A_SETTINGS, values, strict=True):
        spark.conf.set(f"fs.s3a.{key}", moto_s3.endpoint if key == "endpoint" else value)
    yield moto_s3
    for key in _S3A_SETTINGS:
        spark.conf.unset(f"fs.s3a.{key}")


def new_table(server: MotoServer, scheme: str = "s3a") -> tuple[str, str, str]:
    """(URL, bucket, key prefix) of a table location in a fresh bucket."""
    bucket = server.new_bucket("spark")
    prefix = f"tables/{uuid.uuid4().hex[:8]}"
    return f"{scheme}://{bucket}/{prefix}", bucket, prefix


def delta_rs_rows(server: MotoServer, url: str, version: int | None = None) -> list[tuple]:
    """The table's rows as delta-rs reads them from the bucket, sorted."""
    table = deltalake.DeltaTable(url.replace("s3a://", "s3://"), version=version, storage_options=server.options)
    data = table.to_pyarrow_table()
    return sorted(zip(*[data.column(name).to_pylist() for name in sorted(data.column_names)], strict=True))


def spark_rows(spark: SparkSession, url: str, **options: object) -> list[tuple]:
    df = spark.read.format("delta").options(**options).load(url)
    return sorted(tuple(row) for row in df.select(*sorted(df.columns)).collect())


def test_write_append_overwrite_and_time_travel(spark: SparkSession, s3a: MotoServer) -> None:
    url, bucket, prefix = new_table(s3a)
    first = spark.createDataFrame([(i, f"p{i % 3}") for i in range(30)], "id long, part string")
    first.write.format("delta").partitionBy("part").save(url)
    spark.createDataFrame([(100, "p0"), (101, "p9")], "id long, part string").write.format("delta").mode("append").save(url)
    spark.createDataFrame([(7, "p1")], "id long, part string").write.format("delta").mode("overwrite").save(url)

    expected = {
        0: sorted((i, f"p{i % 3}") for i in range(30)),
        1: sorted([*((i, f"p{i % 3}") for i in range(30)), (100, "p0"), (101, "p9")]),
        2: [(7, "p1")],
    }
    for version, rows in expected.items():
        assert spark_rows(spark, url, versionAsOf=version) == rows
        assert delta_rs_rows(s3a, url, version) == rows
    assert spark_rows(spark, url) == expected[2]

    keys = s3a.keys(bucket, prefix)
    assert not [k for k in keys if "/_staging/" in k or k.endswith("_SUCCESS")], "staging leftovers"
    data_keys = {k[len(prefix) + 1 :] for k in keys if k.endswith(".parquet") and "/_delta_log/" not in k}
    logged = set(Table(url.replace("s3a://", "s3://"), storage_options=s3a.options).snapshot(1).files.column("path").to_pylist())
    assert logged <= data_keys and all(not p.startswith("s3") for p in logged), "log paths are relative to the root"
    assert [h["operation"] for h in DeltaTable.forPath(spark, url).history().orderBy("version").collect()] == [
        "WRITE",
        "WRITE",
        "WRITE",
    ]


def test_s3_and_s3a_spellings_name_one_table(spark: SparkSession, s3a: MotoServer) -> None:
    url, bucket, prefix = new_table(s3a, "s3a")
    spark.range(3).write.format("delta").save(url)
    spark.range(3, 5).write.format("delta").mode("append").save(url.replace("s3a://", "s3://"))
    assert spark_rows(spark, url.replace("s3a://", "s3://")) == [(i,) for i in range(5)]
    assert spark_rows(spark, url) == [(i,) for i in range(5)]
    assert DeltaTable.forPath(spark, url.replace("s3a://", "s3://")).toDF().count() == 5
    assert [k for k in s3a.keys(bucket, prefix) if "_delta_log/0000" in k and k.endswith(".json")] == [
        f"{prefix}/_delta_log/{v:020d}.json" for v in (0, 1)
    ]


def test_dml_with_deletion_vectors_and_copy_on_write(spark: SparkSession, s3a: MotoServer) -> None:
    model = {i: i * 10 for i in range(40)}
    for dvs in (True, False):
        url, bucket, prefix = new_table(s3a)
        spark.createDataFrame(sorted(model.items()), "id long, v long").repartition(2).write.format("delta").option(
            "delta.enableDeletionVectors", str(dvs).lower()
        ).save(url)
        table = DeltaTable.forPath(spark, url)
        table.delete("id % 4 = 0")
        table.update("id % 4 = 1", {"v": F.col("v") + 1})
        source = spark.createDataFrame([(1, -1), (2, -2), (41, 410), (42, 420)], "id long, v long")
        (table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
        expected = {k: v + (1 if k % 4 == 1 else 0) for k, v in model.items() if k % 4 != 0}
        expected.update({1: -1, 2: -2, 41: 410, 42: 420})
        assert spark_rows(spark, url) == sorted(expected.items()), f"deletion vectors {dvs}"
        dv_files = [k for k in s3a.keys(bucket, prefix) if k.rsplit("/", 1)[-1].startswith("deletion_vector_")]
        assert bool(dv_files) == dvs
        ops = [r["operation"] for r in table.history().orderBy("version").collect()]
        assert ops == ["WRITE", "DELETE", "UPDATE", "MERGE"]
        if not dvs:  # delta-rs does not read deletion vectors
            assert delta_rs_rows(s3a, url) == sorted(expected.items())


def test_optimize_then_vacuum_deletes_only_unreferenced_objects(spark: SparkSession, s3a: MotoServer) -> None:
    url, bucket, prefix = new_table(s3a)
    for i in range(4):
        spark.range(i * 10, i * 10 + 10).repartition(2).write.format("delta").mode("append").save(url)
    table = DeltaTable.forPath(spark, url)
    metrics = table.optimize().executeCompaction().collect()[0]["metrics"]
    assert (metrics["numFilesRemoved"], metrics["numFilesAdded"]) == (8, 1)
    before = {k for k in s3a.keys(bucket, prefix) if k.endswith(".parquet")}
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        table.vacuum(0)
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    after = {k for k in s3a.keys(bucket, prefix) if k.endswith(".parquet")}
    live = {f"{prefix}/{p}" for p in _live_paths(s3a, url)}
    assert after == live and len(before - after) == 8
    assert spark_rows(spark, url) == [(i,) for i in range(40)]
    assert delta_rs_rows(s3a, url) == [(i,) for i in range(40)]


def _live_paths(server: MotoServer, url: str) -> set[str]:
    return set(Table(url.replace("s3a://", "s3://"), storage_options=server.options).snapshot().files.column("path").to_pylist())


def test_change_feed(spark: SparkSession, s3a: MotoServer) -> None:
    url, _, _ = new_table(s3a)
    spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string").write.format("delta").option(
        "delta.enableChangeDataFeed", "true"
    ).save(url)
    table = DeltaTable.forPath(spark, url)
    table.update("id = 1", {"v": F.lit("a2")})
    table.delete("id = 2")
    changes = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 0)
        .load(url)
        .select("id", "v", "_change_type", "_commit_version")
    )
    assert sorted(tuple(r) for r in changes.collect()) == [
        (1, "a", "insert", 0),
        (1, "a", "update_preimage", 1),
        (1, "a2", "update_postimage", 1),
        (2, "b", "delete", 2),
        (2, "b", "insert", 0),
    ]


def test_sql_on_s3_paths(spark: SparkSession, s3a: MotoServer) -> None:
    url, _, _ = new_table(s3a)
    spark.range(10).write.format("delta").save(url)
    spark.sql(f"DELETE FROM delta.`{url}` WHERE id < 5")
    spark.sql(f"UPDATE delta.`{url}` SET id = id * 10 WHERE id = 9")
    assert sorted(r.id for r in spark.sql(f"SELECT * FROM delta.`{url}`").collect()) == [5, 6, 7, 8, 90]
    history = spark.sql(f"DESCRIBE HISTORY delta.`{url}`").orderBy("version").collect()
    assert [r.operation for r in history] == ["WRITE", "DELETE", "UPDATE"]
    assert spark.sql(f"DESCRIBE DETAIL delta.`{url}`").collect()[0].location == url  # Hadoop's spelling, as delta-spark


def test_is_delta_table_on_urls(spark: SparkSession, s3a: MotoServer) -> None:
    url, _, _ = new_table(s3a)
    assert not DeltaTable.isDeltaTable(spark, url)
    spark.range(1).write.format("delta").save(url)
    assert DeltaTable.isDeltaTable(spark, url)
    assert DeltaTable.isDeltaTable(spark, url.replace("s3a://", "s3://"))
    with pytest.raises(StorageError, match="no-such-bucket"):
        DeltaTable.isDeltaTable(spark, "s3a://no-such-bucket-for-sparkdelta/t")


def test_session_settings_reach_the_kernel_and_hadoop_conf_wins(spark: SparkSession, s3a: MotoServer) -> None:
    url, _, _ = new_table(s3a)
    spark.range(2).write.format("delta").save(url)
    table = open_table(spark, url)
    assert table.root == url.replace("s3a://", "s3://")
    assert table.storage.options["aws_endpoint_url"] == s3a.endpoint  # type: ignore[attr-defined]
    with pytest.raises(StorageError, match=url.replace("s3a://", "s3://")):
        DeltaTable.forPath(spark, url, {"fs.s3a.endpoint": "http://127.0.0.1:9"})  # nothing listens there
    assert DeltaTable.forPath(spark, url, {"fs.s3a.endpoint": s3a.endpoint}).toDF().count() == 2
