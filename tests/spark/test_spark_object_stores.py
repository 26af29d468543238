"""Spark on ``s3a://``: sparkdelta's whole Spark surface on a real S3 endpoint (moto's server).

Spark reaches the bucket through Hadoop's S3A connector (fetched for the tests by
``scripts/fetch_hadoop_aws.sh``; sparkdelta ships none), configured the way users do:
``fs.s3a.*`` settings on the session. The kernel reads them from the same session, so
credentials are given once. Oracles: delta-rs reading the same bucket with its own
client, boto3 listing the objects, and plain Python models of the expected rows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest
from conftest import hadoop_aws_classpath
from lakehouse_oracle import GOLD_KEYS, expected_gold, expected_silver, keyed, landing_lines
from object_stores import CuttableProxy, MotoServer, RecordingProxy, start_moto
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from sparkdelta.exceptions import DeltaIllegalArgumentException, StorageError
from sparkdelta.kernel import Table
from sparkdelta.kernel.object_store import ObjectStoreStorage
from sparkdelta.spark.storage import open_table
from sparkdelta.tables import DeltaTable

_S3A_SETTINGS = ("endpoint", "access.key", "secret.key", "path.style.access", "endpoint.region", "connection.ssl.enabled")


@pytest.fixture(scope="module")
def s3a(spark: SparkSession, moto_s3: MotoServer) -> Iterator[MotoServer]:
    """The session configured for the moto endpoint, as a user configures S3A (``fs.s3a.*``)."""
    if hadoop_aws_classpath() is None:
        pytest.fail("hadoop-aws is not on Spark's classpath: scripts/fetch_hadoop_aws.sh failed")
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
    assert not [k for k in keys if "/_delta_staging/" in k or k.endswith("_SUCCESS")], f"staging leftovers: {keys}"
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


@pytest.fixture(scope="module")
def other_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """A second S3 endpoint the session knows nothing about."""
    server = start_moto(tmp_path_factory.mktemp("other-moto"))
    yield server
    server.stop()


def test_table_options_reach_the_log_and_spark_data_path(
    spark: SparkSession, s3a: MotoServer, other_endpoint: MotoServer
) -> None:
    """delta-spark's ``forPath(spark, path, hadoopConf)`` and reader/writer ``fs.*`` options:
    a table on an endpoint only the options name is read and written whole."""
    bucket = other_endpoint.new_bucket("elsewhere")
    url = f"s3a://{bucket}/t"
    deltalake.write_deltalake(url.replace("s3a://", "s3://"), pa.table({"id": [1, 2, 3]}), storage_options=other_endpoint.options)
    there = {"fs.s3a.endpoint": other_endpoint.endpoint}
    assert sorted(r.id for r in DeltaTable.forPath(spark, url, there).toDF().collect()) == [1, 2, 3]
    spark.range(4, 6).write.format("delta").options(**there).mode("append").save(url)
    assert spark_rows(spark, url, **there) == [(i,) for i in (1, 2, 3, 4, 5)]
    assert delta_rs_rows(other_endpoint, url) == [(i,) for i in (1, 2, 3, 4, 5)]
    assert bucket not in {b["Name"] for b in s3a.client().list_buckets()["Buckets"]}


def test_for_path_hadoop_conf_serves_every_command(spark: SparkSession, s3a: MotoServer, other_endpoint: MotoServer) -> None:
    """``DeltaTable.forPath(spark, path, hadoopConf)`` with delta-spark's signature: a table on an
    endpoint only ``hadoopConf`` names is deleted from, updated, described, vacuumed and given
    manifests through that one object, every file landing in that bucket (boto3 and delta-rs,
    with their own clients, are the oracles). Keys that are no file system settings are
    refused by name, as delta-spark refuses them."""
    bucket = other_endpoint.new_bucket("conf")
    url = f"s3a://{bucket}/t"
    there = {"fs.s3a.endpoint": other_endpoint.endpoint, "fs.s3a.path.style.access": "true"}
    rows = spark.range(0, 10, 1, 2).selectExpr("id", "id % 2 AS p")
    rows.write.format("delta").partitionBy("p").options(**there).save(url)

    table = DeltaTable.forPath(spark, url, there)
    table.delete("id = 3")
    table.update("id = 4", {"id": "40"})
    assert delta_rs_rows(other_endpoint, url) == sorted((i, i % 2) for i in (0, 1, 2, 5, 6, 7, 8, 9, 40))
    assert [r.operation for r in table.history().collect()] == ["UPDATE", "DELETE", "WRITE"]
    assert table.detail().collect()[0].numFiles == len(deltalake_files(other_endpoint, url))
    table.generate("symlink_format_manifest")
    keys = other_endpoint.keys(bucket, "t/_symlink_format_manifest/")
    assert sorted(keys) == ["t/_symlink_format_manifest/p=0/manifest", "t/_symlink_format_manifest/p=1/manifest"]
    listed = [
        line
        for key in keys
        for line in other_endpoint.client().get_object(Bucket=bucket, Key=key)["Body"].read().decode().splitlines()
    ]
    assert sorted(listed) == sorted(f"s3a://{bucket}/t/{f}" for f in deltalake_files(other_endpoint, url))
    table.vacuum()
    assert [r.operation for r in table.history(2).collect()] == ["VACUUM END", "VACUUM START"]

    with pytest.raises(DeltaIllegalArgumentException, match="spark.hadoop.fs.s3a.endpoint") as refused:
        DeltaTable.forPath(spark, url, {**there, "spark.hadoop.fs.s3a.endpoint": other_endpoint.endpoint})
    assert refused.value.getCondition() == "DELTA_TABLE_FOR_PATH_UNSUPPORTED_HADOOP_CONF"


def deltalake_files(server: MotoServer, url: str) -> list[str]:
    """The table's active files as delta-rs lists them (relative, decoded)."""
    table = deltalake.DeltaTable(url.replace("s3a://", "s3://"), storage_options=server.options)
    return sorted(table.get_add_actions(flatten=True).column("path").to_pylist())


@pytest.fixture(scope="module")
def s3a_lakehouse(s3a: MotoServer) -> tuple[str, list[str]]:
    """``lakehouse run`` then ``lakehouse report`` with ``--warehouse s3a://bucket/lake``,
    configured with ``--conf`` only; the bucket and its keys under ``lake/``."""
    bucket = s3a.new_bucket("lake")
    settings = {
        "spark.hadoop.fs.s3a.endpoint": s3a.endpoint,
        "spark.hadoop.fs.s3a.access.key": s3a.access_key,
        "spark.hadoop.fs.s3a.secret.key": s3a.secret_key,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
        "spark.driver.extraClassPath": hadoop_aws_classpath() or "",
    }
    conf = [arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}")]
    common = ["--warehouse", f"s3a://{bucket}/lake", "--master", "local[2]", *conf]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}  # the --conf settings alone
    for command in (["run", "--days", "2", "--rows-per-day", "300", "--congestion-from", "1", "--json"], ["report"]):
        done = subprocess.run(
            [str(Path(sys.executable).parent / "lakehouse"), command[0], *common, *command[1:]],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    return bucket, s3a.keys(bucket, "lake/")


@pytest.mark.classic_only  # the lakehouse CLI in a child process of its own, with a classic session
def test_lakehouse_cli_runs_end_to_end_on_s3a(s3a_lakehouse: tuple[str, list[str]]) -> None:
    """The landing files and the report are on the bucket."""
    _, keys = s3a_lakehouse
    assert "lake/report.html" in keys
    landing = [k for k in keys if k.startswith("lake/landing/")]
    assert [k.rsplit("/", 1)[1] for k in landing] == ["trips_2024-01-01.csv", "trips_2024-01-02.csv"], landing


@pytest.mark.classic_only  # the lakehouse CLI in a child process of its own, with a classic session
def test_lakehouse_gold_on_s3a_equals_a_recompute_from_its_landing_files(
    s3a: MotoServer, s3a_lakehouse: tuple[str, list[str]], tmp_path: Path
) -> None:
    """Gold, read by delta-rs from the bucket, equals the pandas recompute from the landing
    files the run left there."""
    bucket, keys = s3a_lakehouse
    landing = [k for k in keys if k.startswith("lake/landing/")]
    for key in landing:
        s3a.client().download_file(bucket, key, str(tmp_path / key.rsplit("/", 1)[1]))
    expected = expected_gold(expected_silver(landing_lines(tmp_path)))
    for name, columns in GOLD_KEYS.items():
        gold = deltalake.DeltaTable(f"s3://{bucket}/lake/gold/{name}", storage_options=s3a.options)
        assert keyed(gold.to_pyarrow_table().to_pylist(), columns) == expected[name], name


def test_delta_spark_multi_cluster_settings_commit_through_dynamodb(
    spark: SparkSession, s3a: MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session set up for delta-spark's S3DynamoDBLogStore, on a bucket whose endpoint
    ignores ``If-None-Match``: sparkdelta commits through the DynamoDB table too."""
    proxy = RecordingProxy(int(s3a.endpoint.rsplit(":", 1)[1]), drop_headers=["If-None-Match"])
    bucket = s3a.new_bucket("multi")
    table_name = f"commits_{uuid.uuid4().hex[:8]}"
    settings = {
        f"fs.s3a.bucket.{bucket}.endpoint": proxy.endpoint,
        "spark.delta.logStore.s3a.impl": "io.delta.storage.S3DynamoDBLogStore",
        "spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName": table_name,
    }
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", s3a.endpoint)  # delta-spark has no such setting; moto stands in for AWS
    try:
        for key, value in settings.items():
            spark.conf.set(key, value)
        url = f"s3a://{bucket}/t"
        spark.range(3).write.format("delta").save(url)
        DeltaTable.forPath(spark, url).delete("id = 1")
        assert spark_rows(spark, url) == [(0,), (2,)]
    finally:
        for key in settings:
            spark.conf.unset(key)
        proxy.close()
    import boto3

    scanned = boto3.client(
        "dynamodb",
        endpoint_url=s3a.endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    ).scan(TableName=table_name)["Items"]
    assert sorted((i["tablePath"]["S"], i["fileName"]["S"], i["complete"]["S"]) for i in scanned) == [
        (url, f"{v:020d}.json", "true") for v in (0, 1)
    ]


def test_store_down_at_commit_time_leaves_the_table_at_its_last_version(
    spark: SparkSession, s3a: MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark wrote the files, then the endpoint goes away as the commit is sent: a clear
    error naming the table, no commit, the files kept (the outcome cannot be proven on an
    object store) but unreferenced, and the table reads and writes on at its last version."""
    proxy = CuttableProxy(int(s3a.endpoint.rsplit(":", 1)[1]))
    bucket = s3a.new_bucket("outage")
    spark.conf.set(f"fs.s3a.bucket.{bucket}.endpoint", proxy.endpoint)
    url = f"s3a://{bucket}/t"
    try:
        spark.range(3).write.format("delta").save(url)
        real = ObjectStoreStorage.put_if_absent

        def cut_then_put(self: ObjectStoreStorage, path: str, data: bytes) -> None:
            if "/_delta_log/" in path and path.endswith(".json"):
                proxy.cut()
            real(self, path, data)

        monkeypatch.setattr(ObjectStoreStorage, "put_if_absent", cut_then_put)
        with pytest.raises(StorageError, match=rf"^s3://{bucket}/t: cannot write .*00000000000000000001\.json"):
            spark.range(3, 6).write.format("delta").mode("append").save(url)
        monkeypatch.undo()
        proxy.restore()
        assert s3a.keys(bucket, "t/_delta_log/") == [f"t/_delta_log/{0:020d}.{kind}" for kind in ("crc", "json")]
        assert spark_rows(spark, url) == [(0,), (1,), (2,)]
        data = {k[2:] for k in s3a.keys(bucket, "t/") if k.endswith(".parquet")}
        live = _live_paths(s3a, url)
        assert live < data, "the failed write's files are kept for VACUUM, not referenced"
        spark.range(3, 6).write.format("delta").mode("append").save(url)
        assert spark_rows(spark, url) == [(i,) for i in range(6)]
        assert DeltaTable.forPath(spark, url).history().count() == 2
    finally:
        spark.conf.unset(f"fs.s3a.bucket.{bucket}.endpoint")
        proxy.close()


def test_reads_list_the_table_once_rather_than_ask_about_each_file(spark: SparkSession, s3a: MotoServer) -> None:
    """Spark's file index, given each file's path, sends two HEADs and a LIST per file; a
    read of an object-store table lists its folder instead and picks the log's files by
    name, without opening the others (an older version's, deletion vectors)."""
    proxy = RecordingProxy(int(s3a.endpoint.rsplit(":", 1)[1]))
    bucket = s3a.new_bucket("listed")
    spark.conf.set(f"fs.s3a.bucket.{bucket}.endpoint", proxy.endpoint)
    url = f"s3a://{bucket}/t"
    try:
        spark.range(40).repartition(8).write.format("delta").save(url)
        spark.range(5).coalesce(1).write.format("delta").mode("overwrite").save(url)
        proxy.take()
        df = spark.read.format("delta").option("versionAsOf", 0).load(url)
        heads = [r for r in proxy.take() if r.method == "HEAD"]
        assert len(heads) <= 4, heads  # about the folder itself; per file, it was 16
        assert sorted(r.id for r in df.collect()) == list(range(40))
        assert spark_rows(spark, url) == [(i,) for i in range(5)]

        first = sorted(_live_paths(s3a, url))[0]
        s3a.client().delete_object(Bucket=bucket, Key=f"t/{first}")
        with pytest.raises(
            FileNotFoundError, match=rf"s3://{bucket}/t version 1: 1 data file\(s\) the log names are not in storage"
        ):
            spark.read.format("delta").load(url)
    finally:
        spark.conf.unset(f"fs.s3a.bucket.{bucket}.endpoint")
        proxy.close()


@pytest.mark.classic_only  # streams need sparkdelta on a Connect server (tests/spark/stream/test_stream_connect.py)
def test_stream_from_and_to_s3_with_the_session_settings(spark: SparkSession, s3a: MotoServer, tmp_path: Path) -> None:
    """A Delta stream on S3: the source's own processes read the log and files with the
    session's ``fs.s3a.*`` settings, and the sink commits there exactly once."""
    source, _, _ = new_table(s3a)
    sink, _, _ = new_table(s3a)
    spark.range(0, 5).selectExpr("id", "id * 2 as v").write.format("delta").save(source)
    spark.range(5, 8).selectExpr("id", "id * 2 as v").write.format("delta").mode("append").save(source)

    def run() -> None:
        query = (
            spark.readStream.format("delta")
            .option("maxFilesPerTrigger", 1)
            .load(source)
            .writeStream.format("delta")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start(sink)
        )
        query.awaitTermination()

    run()
    assert delta_rs_rows(s3a, sink) == [(i, i * 2) for i in range(8)]
    spark.range(8, 9).selectExpr("id", "id * 2 as v").write.format("delta").mode("append").save(source)
    run()
    assert delta_rs_rows(s3a, sink) == [(i, i * 2) for i in range(9)]
