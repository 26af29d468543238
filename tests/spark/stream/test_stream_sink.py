"""``df.writeStream.format("delta")``: delta-spark's streaming sink, exactly once via ``txn``.

The streams read JSON files from a folder the tests add to (Spark's file source, no Delta
source involved), with ``trigger(availableNow=True)`` so each query ends by itself. Tables
are read back with delta-rs, the query id is checked against the one Spark keeps in the
checkpoint, and the log's shape is compared with delta-spark's own sink.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable as RsTable
from deltaspark import DeltaSpark
from pyspark.errors import AnalysisException, IllegalArgumentException, StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.streaming import StreamingQuery

from sparkdelta.kernel import Table
from sparkdelta.kernel.clustering import clustering_columns
from sparkdelta.spark.catalog import default_location, lookup

# Delta streams run sparkdelta in the Spark server's Python (``spark/stream/server.py``); the
# tests' Connect server has none, so there they are refused by name (test_stream_connect.py).
pytestmark = pytest.mark.classic_only

SCHEMA = "id long, p long"


class Source:
    """A folder of JSON files a file stream reads; each ``add`` is one new file."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir()
        self.files = 0

    def add(self, ids: range, **extra: Any) -> None:
        self.files += 1
        lines = (json.dumps({"id": i, "p": i % 2, **extra}) for i in ids)
        (self.folder / f"part-{self.files:03}.json").write_text("\n".join(lines) + "\n")

    def stream(self, spark: SparkSession, schema: str = SCHEMA) -> DataFrame:
        return spark.readStream.schema(schema).json(str(self.folder))


@pytest.fixture
def source(tmp_path: Path) -> Source:
    return Source(tmp_path / "source")


@pytest.fixture(autouse=True)
def no_query_left(spark: SparkSession) -> Iterator[None]:
    yield
    for query in spark.streams.active:
        query.stop()


def run(query: StreamingQuery) -> StreamingQuery:
    """Wait for an ``availableNow`` query to end (re-raising its failure)."""
    query.awaitTermination(120)
    assert not query.isActive, "the query did not end"
    return query


def commits(path: str) -> list[list[dict[str, Any]]]:
    log = Path(path) / "_delta_log"
    return [[json.loads(line) for line in f.read_text().splitlines()] for f in sorted(log.glob("*.json"))]


def commit_info(commit: list[dict[str, Any]]) -> dict[str, Any]:
    return next(a["commitInfo"] for a in commit if "commitInfo" in a)


def txns(commit: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(a["txn"]["appId"], a["txn"]["version"]) for a in commit if "txn" in a]


def query_id(checkpoint: Path) -> str:
    """The id Spark keeps in the checkpoint and gives every restart of the query."""
    return str(json.loads((checkpoint / "metadata").read_text().splitlines()[0])["id"])


def rows(df: DataFrame, columns: tuple[str, ...] = ("id", "p")) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r) for r in df.select(*columns).collect())


def rs_rows(location: str, columns: tuple[str, ...] = ("id", "p")) -> Counter[tuple[Any, ...]]:
    table = RsTable(location).to_pyarrow_table().select(list(columns))
    return Counter(zip(*[table.column(c).to_pylist() for c in columns], strict=True))


def expected(ids: range | list[int]) -> Counter[tuple[Any, ...]]:
    return Counter((i, i % 2) for i in ids)


def forget_batch(checkpoint: Path, batch: int) -> None:
    """Lose the record that ``batch`` finished, as a crash between the table commit and
    the checkpoint's would: a restart runs the batch again."""
    for name in (str(batch), f".{batch}.crc"):
        (checkpoint / "commits" / name).unlink()


def test_append_is_exactly_once_across_restarts_and_replays(spark: SparkSession, source: Source, tmp_path: Path) -> None:
    path, checkpoint = str(tmp_path / "table"), tmp_path / "checkpoint"

    def start(**options: str) -> StreamingQuery:
        writer = source.stream(spark).writeStream.format("delta").partitionBy("p").options(**options)
        return run(writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start(path))

    source.add(range(0, 10))
    start()
    source.add(range(10, 15))
    start(userMetadata="second run")  # a restart: the same checkpoint, so the same query
    the_query = query_id(checkpoint)
    log = commits(path)
    assert [txns(c) for c in log] == [[(the_query, 0)], [(the_query, 1)]]
    assert [commit_info(c)["operation"] for c in log] == ["STREAMING UPDATE"] * 2
    assert [commit_info(c)["operationParameters"] for c in log] == [
        {"outputMode": "Append", "queryId": the_query, "epochId": str(batch)} for batch in (0, 1)
    ]
    assert commit_info(log[1])["operationMetrics"] == {
        "numAddedFiles": "2",  # one file per partition
        "numRemovedFiles": "0",
        "numOutputRows": "5",
        "numOutputBytes": str(sum(a["add"]["size"] for a in log[1] if "add" in a)),
    }
    assert all(commit_info(c)["isBlindAppend"] for c in log)
    assert [commit_info(c).get("userMetadata") for c in log] == [None, "second run"]
    assert Table(path).snapshot().partition_columns == ("p",)
    assert {a["add"]["partitionValues"]["p"] for a in log[0] if "add" in a} == {"0", "1"}

    # Spark runs batch 1 again (its end was never recorded), then batch 2 with the new file.
    forget_batch(checkpoint, 1)
    source.add(range(15, 18))
    start()
    log = commits(path)
    assert len(log) == 3, "the replayed batch committed nothing"
    assert txns(log[2]) == [(the_query, 2)]
    assert (checkpoint / "commits" / "1").exists() and (checkpoint / "commits" / "2").exists()
    assert rs_rows(path) == expected(range(18))
    assert rows(spark.read.format("delta").load(path)) == expected(range(18))


def test_complete_mode_replaces_the_table_each_batch(spark: SparkSession, source: Source, tmp_path: Path) -> None:
    path, checkpoint = str(tmp_path / "counts"), str(tmp_path / "checkpoint")

    def start() -> StreamingQuery:
        counts = source.stream(spark).groupBy("p").agg(F.count("*").alias("n"))
        writer = counts.writeStream.format("delta").outputMode("complete").option("checkpointLocation", checkpoint)
        return run(writer.trigger(availableNow=True).start(path))

    source.add(range(0, 5))
    start()
    source.add(range(5, 12))
    start()
    assert rs_rows(path, ("p", "n")) == Counter({(0, 6): 1, (1, 6): 1})
    assert rows(spark.read.format("delta").load(path), ("p", "n")) == Counter({(0, 6): 1, (1, 6): 1})
    first, second = commits(path)
    assert commit_info(second)["operationParameters"]["outputMode"] == "Complete"
    assert not commit_info(second)["isBlindAppend"]
    assert {a["remove"]["path"] for a in second if "remove" in a} == {a["add"]["path"] for a in first if "add" in a}
    assert commit_info(second)["operationMetrics"]["numRemovedFiles"] == str(sum("add" in a for a in first))


def test_schema_is_enforced_and_merged_on_request(spark: SparkSession, source: Source, tmp_path: Path) -> None:
    path = str(tmp_path / "table")
    spark.range(3).selectExpr("id", "id % 2 AS p").write.format("delta").save(path)
    source.add(range(10, 13), tag="x")
    wider = source.stream(spark, SCHEMA + ", tag string")

    refused = wider.writeStream.format("delta").option("checkpointLocation", str(tmp_path / "c1"))
    with pytest.raises(StreamingQueryException, match="DELTA_METADATA_MISMATCH") as failed:
        run(refused.trigger(availableNow=True).start(path))
    assert "tag" in str(failed.value) and path in str(failed.value)
    assert Table(path).snapshot().version == 0

    merged = wider.writeStream.format("delta").option("mergeSchema", "true").option("checkpointLocation", str(tmp_path / "c2"))
    run(merged.trigger(availableNow=True).start(path))
    assert [f.name for f in Table(path).snapshot().schema.fields] == ["id", "p", "tag"]
    assert rs_rows(path, ("id", "tag")) == Counter([(0, None), (1, None), (2, None), (10, "x"), (11, "x"), (12, "x")])


@pytest.mark.parametrize(
    "trigger",
    [{}, {"processingTime": "100 milliseconds"}, {"once": True}, {"availableNow": True}],
    ids=["default", "processingTime", "once", "availableNow"],
)
def test_every_micro_batch_trigger_is_passed_on(spark: SparkSession, source: Source, tmp_path: Path, trigger: dict) -> None:
    path = str(tmp_path / "table")
    source.add(range(6))
    writer = source.stream(spark).writeStream.format("delta").option("checkpointLocation", str(tmp_path / "checkpoint"))
    name = "sink_" + next(iter(trigger), "default")
    query = (writer.trigger(**trigger) if trigger else writer).queryName(name).start(path)
    assert query.name == name
    ran_with = str(query._jsq.streamingQuery().trigger())  # the JVM query's own trigger
    assert ran_with == {"default": "ProcessingTimeTrigger(0)", "processingTime": "ProcessingTimeTrigger(100)"}.get(
        next(iter(trigger), "default"), ran_with
    )
    if "once" in trigger or "availableNow" in trigger:
        run(query)  # it ends by itself
    else:
        query.processAllAvailable()
        assert query.isActive
        query.stop()
    assert rs_rows(path) == expected(range(6))


def test_to_table_creates_a_named_table(spark: SparkSession, source: Source, tmp_path: Path) -> None:
    name = "default.stream_created"
    source.add(range(8))
    writer = source.stream(spark).writeStream.format("delta").option("checkpointLocation", str(tmp_path / "checkpoint"))
    run(writer.trigger(availableNow=True).toTable(name, partitionBy="p"))
    entry = lookup(spark, name)
    assert entry is not None and entry.is_delta and entry.managed
    create, append = commits(entry.location)
    assert commit_info(create)["operation"] == "CREATE TABLE" and not any("add" in a for a in create)
    assert commit_info(append)["operation"] == "STREAMING UPDATE"
    assert Table(entry.location).snapshot().partition_columns == ("p",)
    assert rs_rows(entry.location) == expected(range(8))
    assert rows(spark.table(name)) == expected(range(8))

    # Into the existing table: the new batch appends, with a query of its own.
    source.add(range(8, 10))
    writer = source.stream(spark).writeStream.format("delta").option("checkpointLocation", str(tmp_path / "other"))
    run(writer.trigger(availableNow=True).toTable(name))
    assert rows(spark.table(name)) == expected(range(8)) + expected(range(10))
    assert txns(commits(entry.location)[-1]) == [(query_id(tmp_path / "other"), 0)]


def test_to_table_clusters_a_new_table(spark: SparkSession, source: Source, tmp_path: Path) -> None:
    external = str(tmp_path / "clustered")
    source.add(range(4))
    writer = source.stream(spark).writeStream.format("delta").clusterBy("p").option("path", external)
    run(writer.option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).toTable("stream_clustered"))
    entry = lookup(spark, "stream_clustered")
    assert entry is not None and not entry.managed and entry.location == external
    assert clustering_columns(Table(external).snapshot()) == ["p"]
    assert rs_rows(external) == expected(range(4))


FAILED_STARTS = {
    "no checkpoint": (lambda w: w, AnalysisException, "checkpointLocation must be specified"),
    "bad option": (lambda w: w.option("mergeSchema", "maybe"), IllegalArgumentException, "DELTA_ILLEGAL_OPTION"),
    "update mode": (lambda w: w.outputMode("update"), AnalysisException, "DELTA_UNSUPPORTED_OUTPUT_MODE"),
    "no partition column": (lambda w: w.partitionBy("nope"), AnalysisException, "partition column nope not found"),
    "continuous trigger": (lambda w: w.trigger(continuous="1 second"), AnalysisException, "continuous trigger"),
    # Spark's own check, once the table exists: complete mode needs an aggregation.
    "Spark refuses the query": (lambda w: w.outputMode("complete"), AnalysisException, "STREAMING_OUTPUT_MODE"),
}


@pytest.mark.parametrize("case", list(FAILED_STARTS))
@pytest.mark.parametrize("where", ["managed", "external"])
def test_a_failed_to_table_leaves_no_table_behind(
    spark: SparkSession, source: Source, tmp_path: Path, case: str, where: str
) -> None:
    configure, error, message = FAILED_STARTS[case]
    name = f"stream_failed_{where}"
    external = tmp_path / "external"
    location = Path(default_location(spark, name)) if where == "managed" else external
    writer = source.stream(spark).writeStream.format("delta")
    if where == "external":
        writer = writer.option("path", str(external))
    if case != "no checkpoint":
        writer = writer.option("checkpointLocation", str(tmp_path / "checkpoint"))
    with pytest.raises(error, match=message):
        configure(writer).toTable(name)
    assert not spark.catalog.tableExists(name)
    assert not (location / "_delta_log").exists()
    assert where == "external" or not location.exists()

    # The name is free: a good start creates the table and fills it.
    source.add(range(3))
    good = source.stream(spark).writeStream.format("delta").option("checkpointLocation", str(tmp_path / "good"))
    if where == "external":
        good = good.option("path", str(external))
    run(good.trigger(availableNow=True).toTable(name))
    assert rows(spark.table(name)) == expected(range(3))
    spark.sql(f"DROP TABLE {name}")


def test_to_table_refuses_what_is_not_a_delta_table(spark: SparkSession, source: Source, tmp_path: Path) -> None:
    spark.sql("CREATE TABLE IF NOT EXISTS stream_parquet (id BIGINT, p BIGINT) USING parquet")
    spark.sql("CREATE OR REPLACE VIEW stream_view AS SELECT 1 AS id")
    spark.range(1).createOrReplaceTempView("stream_temp")
    writer = source.stream(spark).writeStream.format("delta").option("checkpointLocation", str(tmp_path / "checkpoint"))
    with pytest.raises(AnalysisException, match=r"default\.stream_parquet's data source provider\(parquet\)"):
        writer.toTable("stream_parquet")
    with pytest.raises(AnalysisException, match="Streaming into views"):
        writer.toTable("stream_view")
    with pytest.raises(AnalysisException, match="stream_temp"):  # Spark's own refusal
        writer.toTable("stream_temp")
    entry = lookup(spark, "stream_parquet")
    assert entry is not None and entry.provider == "parquet"
    assert not (tmp_path / "checkpoint").exists()


def test_start_refusals_name_the_table_and_write_nothing(spark: SparkSession, source: Source, tmp_path: Path) -> None:
    path = str(tmp_path / "table")
    stream = source.stream(spark)
    with_checkpoint = stream.writeStream.format("delta").option("checkpointLocation", str(tmp_path / "checkpoint"))
    with pytest.raises(AnalysisException, match="checkpointLocation must be specified") as missing:
        stream.writeStream.format("delta").start(path)
    assert path in str(missing.value)
    with pytest.raises(AnalysisException, match="does not support Update output mode") as update:
        with_checkpoint.outputMode("update").start(path)
    assert path in str(update.value)
    with pytest.raises(AnalysisException, match="NullTypes"):
        stream.withColumn("nothing", F.lit(None)).writeStream.format("delta").option("checkpointLocation", "c").start(path)
    with pytest.raises(IllegalArgumentException, match="'path' is not specified"):
        stream.writeStream.format("delta").option("checkpointLocation", "c").start()
    with pytest.raises(AnalysisException, match="There is a 'path' option set"):
        stream.writeStream.format("delta").option("path", path).option("checkpointLocation", "c").start(path)
    assert not Path(path).exists()
    assert not (tmp_path / "checkpoint").exists()


def test_other_sinks_are_spark_s_own(spark: SparkSession, source: Source, tmp_path: Path) -> None:
    source.add(range(4))
    seen: list[int] = []
    # foreachBatch after format("delta") replaces the sink, as in Spark.
    delta_then_function = source.stream(spark).writeStream.format("delta").partitionBy("p")
    writer = delta_then_function.foreachBatch(lambda batch, _: seen.append(batch.count()))
    with pytest.raises(AnalysisException, match="foreachBatch"):  # Spark: no partitionBy with foreachBatch
        writer.option("checkpointLocation", str(tmp_path / "c0")).start()
    function = source.stream(spark).writeStream.foreachBatch(lambda batch, _: seen.append(batch.count()))
    run(function.option("checkpointLocation", str(tmp_path / "c1")).trigger(availableNow=True).start())
    assert seen == [4]
    parquet = str(tmp_path / "parquet")
    writer = source.stream(spark).writeStream.format("parquet").partitionBy("p")
    run(writer.option("checkpointLocation", str(tmp_path / "c2")).trigger(availableNow=True).start(parquet))
    assert sorted(p.name for p in Path(parquet).glob("p=*")) == ["p=0", "p=1"]
    assert not (Path(parquet) / "_delta_log").exists()


DELTA_SPARK_STREAM = """
import glob, json, os

df = spark.readStream.schema("id long, p long").json(source)
for n in range(2):
    q = (df.writeStream.format("delta").partitionBy("p").option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start(path))
    q.awaitTermination()
    if n == 0:
        open(source + "/part-900.json", "w").write('{"id": 100, "p": 0}\\n')
result = [[json.loads(line) for line in open(f)] for f in sorted(glob.glob(path + "/_delta_log/*.json"))]
"""


def test_log_has_delta_spark_s_shape(spark: SparkSession, deltaspark: DeltaSpark, source: Source, tmp_path: Path) -> None:
    source.add(range(6))
    theirs_path, theirs_checkpoint = str(tmp_path / "theirs"), str(tmp_path / "theirs_checkpoint")
    theirs = deltaspark.run(DELTA_SPARK_STREAM, source=str(source.folder), path=theirs_path, checkpoint=theirs_checkpoint)
    os.remove(source.folder / "part-900.json")
    ours_path, ours_checkpoint = str(tmp_path / "ours"), tmp_path / "ours_checkpoint"
    for n in range(2):
        writer = source.stream(spark).writeStream.format("delta").partitionBy("p")
        run(writer.option("checkpointLocation", str(ours_checkpoint)).trigger(availableNow=True).start(ours_path))
        if n == 0:
            (source.folder / "part-900.json").write_text('{"id": 100, "p": 0}\n')
    ours = commits(ours_path)

    def shape(log: list[list[dict[str, Any]]]) -> list[tuple[Any, ...]]:
        return [
            (
                sorted({next(iter(a)) for a in commit}),
                commit_info(commit)["operation"],
                sorted(commit_info(commit)["operationParameters"]),
                commit_info(commit)["operationParameters"]["epochId"],
                sorted(commit_info(commit)["operationMetrics"]),
                commit_info(commit)["isBlindAppend"],
                [v for _, v in txns(commit)],
            )
            for commit in log
        ]

    assert shape(ours) == shape(theirs)
    assert [txns(c)[0][0] for c in ours] == [query_id(ours_checkpoint)] * 2
    assert [commit_info(c)["operationMetrics"]["numOutputRows"] for c in ours] == ["6", "1"]
    everything = expected([*range(6), 100])
    assert rs_rows(ours_path) == rs_rows(theirs_path) == everything
    read_by_them = deltaspark.run("result = rows(spark.read.format('delta').load(path))", path=ours_path)
    assert Counter(read_by_them) == everything
