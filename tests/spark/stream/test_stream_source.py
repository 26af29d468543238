"""``readStream.format("delta")``: micro-batches, offsets and options, against delta-spark and delta-rs.

The same stream snippet runs in sparkdelta's session and in delta-spark's (the oracle, in
its own process) over one table; their batches (rows per micro-batch) or their error
classes must match. delta-rs reads the tables for the checks delta-spark is not needed for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from sparkdelta.tables import DeltaTable

# Delta streams run sparkdelta in the Spark server's Python (``spark/stream/server.py``); the
# tests' Connect server has none, so there they are refused by name (test_stream_connect.py).
pytestmark = pytest.mark.classic_only


ERROR_CLASSES = (
    "DELTA_SOURCE_IGNORE_DELETE",
    "DELTA_SOURCE_TABLE_IGNORE_CHANGES",
    "DELTA_SCHEMA_CHANGED_WITH_VERSION",
    "DELTA_SCHEMA_CHANGED",
    "DELTA_STARTING_VERSION_AND_TIMESTAMP_BOTH_SET",
    "DELTA_MISSING_CHANGE_DATA",
)

# Runs in both sessions: an availableNow stream into foreachBatch, its batches or error class.
STREAM = """
batches = []

def collect(df, batch_id):
    rows = sorted(tuple(row) for row in df.collect())
    if rows:  # a Python source's query runs a first batch even when it is empty
        batches.append((batch_id, rows))

reader = spark.readStream.format("delta")
for key, value in options.items():
    reader = reader.option(key, value)
try:
    query = (
        reader.load(path).writeStream.foreachBatch(collect)
        .option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    )
    query.awaitTermination()
    result = ("ok", sorted(batches))
except Exception as error:
    text = str(error)
    result = ("error", next((c for c in classes if c in text), text[:500]))
"""


def run_stream(spark: SparkSession, path: str, checkpoint: str, options: dict[str, str]) -> tuple[str, Any]:
    scope: dict[str, Any] = {"spark": spark, "path": path, "checkpoint": checkpoint, "options": options, "classes": ERROR_CLASSES}
    exec(STREAM, scope)  # noqa: S102 - the snippet delta-spark runs too
    return scope["result"]  # type: ignore[no-any-return]


def _delta_rs_rows(path: str) -> list[dict[str, Any]]:
    return pa.table(deltalake.DeltaTable(path).to_pyarrow_table()).to_pylist()


def _rows(spark: SparkSession, start: int, end: int, part: str | None = None) -> Any:
    p = f"'{part}'" if part else "element_at(array('a', 'b', 'c'), cast(id % 3 as int) + 1)"
    return spark.range(start, end).selectExpr("id", f"{p} as p", "id * 10 as v")


@pytest.fixture(scope="module")
def history(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A table whose log has every kind of commit a source meets, written by sparkdelta:
    v0 create (3 partitions), v1 append, v2 a whole-partition DELETE (removes only), v3 an
    UPDATE (removes and adds), v4 OPTIMIZE (dataChange=false), v5 append."""
    path = str(tmp_path_factory.mktemp("stream") / "history")
    _rows(spark, 0, 30).repartition(3).write.format("delta").partitionBy("p").save(path)
    _rows(spark, 30, 36).write.format("delta").mode("append").save(path)
    table = DeltaTable.forPath(spark, path)
    table.delete("p = 'a'")
    table.update("p = 'b'", {"v": "v + 1"})
    table.optimize().executeCompaction()
    _rows(spark, 36, 40, "c").write.format("delta").mode("append").save(path)
    assert [h["operation"] for h in table.history().orderBy("version").collect()] == [
        "WRITE",
        "WRITE",
        "DELETE",
        "UPDATE",
        "OPTIMIZE",
        "WRITE",
    ]
    return path


OPTION_MATRIX: list[dict[str, str]] = [
    {},
    {"ignoreDeletes": "true"},
    {"ignoreChanges": "true"},
    {"skipChangeCommits": "true"},
    {"skipChangeCommits": "true", "maxFilesPerTrigger": "1"},
    {"skipChangeCommits": "true", "maxBytesPerTrigger": "1"},
    {"startingVersion": "3", "ignoreChanges": "true"},
    {"startingVersion": "4"},
    {"startingVersion": "latest"},
    {"excludeRegex": "p=c", "skipChangeCommits": "true"},
]


@pytest.mark.parametrize("options", OPTION_MATRIX, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults")
def test_source_options_match_delta_spark(
    spark: SparkSession, deltaspark: Any, history: str, tmp_path: Path, options: dict[str, str]
) -> None:
    ours = run_stream(spark, history, str(tmp_path / "ours"), options)
    theirs = deltaspark.run(STREAM, path=history, checkpoint=str(tmp_path / "theirs"), options=options, classes=ERROR_CLASSES)
    assert ours == theirs


def test_change_feed_stream_matches_delta_spark(spark: SparkSession, deltaspark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "cdf")
    _rows(spark, 0, 12).write.format("delta").option("delta.enableChangeDataFeed", "true").save(path)
    table = DeltaTable.forPath(spark, path)
    table.update("id < 3", {"v": "-v"})
    table.delete("id > 9")
    _rows(spark, 12, 14).write.format("delta").mode("append").save(path)
    for options in ({"readChangeFeed": "true"}, {"readChangeFeed": "true", "startingVersion": "1"}):
        ours = run_stream(spark, path, str(tmp_path / f"ours{len(options)}"), options)
        theirs = deltaspark.run(
            STREAM, path=path, checkpoint=str(tmp_path / f"theirs{len(options)}"), options=options, classes=ERROR_CLASSES
        )
        assert ours[0] == "ok"
        assert ours == theirs


def test_batches_bounded_by_files_and_bytes(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _rows(spark, 0, 60).repartition(6).write.format("delta").save(path)
    sizes = pa.table(deltalake.DeltaTable(path).get_add_actions(flatten=True)).column("size_bytes").to_pylist()
    status, batches = run_stream(spark, path, str(tmp_path / "c1"), {"maxFilesPerTrigger": "4"})
    assert status == "ok" and [len(rows) > 0 for _, rows in batches] == [True, True]
    status, batches = run_stream(spark, path, str(tmp_path / "c2"), {"maxBytesPerTrigger": "1"})
    assert status == "ok" and len(batches) == len(sizes) == 6  # a soft limit: a file a batch at least
    status, whole = run_stream(spark, path, str(tmp_path / "c3"), {"maxBytesPerTrigger": str(sum(sizes))})
    assert status == "ok" and len(whole) == 1
    assert sorted(r for _, rows in batches for r in rows) == sorted(tuple(r.values()) for r in _delta_rs_rows(path))


def test_deletion_vectors_and_column_mapping(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "dv")
    (
        _rows(spark, 0, 50)
        .repartition(2)
        .write.format("delta")
        .option("delta.enableDeletionVectors", "true")
        .option("delta.columnMapping.mode", "name")
        .save(path)
    )
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN v TO value")
    DeltaTable.forPath(spark, path).delete("id % 5 = 0")
    status, batches = run_stream(spark, path, str(tmp_path / "c"), {})
    assert status == "ok"
    # delta-rs cannot read deletion vectors with column mapping: the batch read (checked
    # against delta-spark elsewhere) is the oracle.
    expected = spark.read.format("delta").load(path).collect()
    assert sorted(r for _, rows in batches for r in rows) == sorted(tuple(r) for r in expected)
    assert len(expected) == 40


def test_schema_change_stops_stream_and_restart_reads_on(spark: SparkSession, tmp_path: Path) -> None:
    path, checkpoint = str(tmp_path / "t"), str(tmp_path / "c")
    _rows(spark, 0, 5).write.format("delta").save(path)
    seen: list[tuple[Any, ...]] = []
    query = (
        spark.readStream.format("delta")
        .load(path)
        .writeStream.foreachBatch(lambda df, _: seen.extend(tuple(r) for r in df.collect()))
        .option("checkpointLocation", checkpoint)
        .start()
    )
    try:
        query.processAllAvailable()
        assert len(seen) == 5
        extra = _rows(spark, 5, 7).selectExpr("*", "'x' as extra")
        extra.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
        with pytest.raises(StreamingQueryException, match="DELTA_SCHEMA_CHANGED_WITH_VERSION"):
            query.awaitTermination(120)
    finally:
        query.stop()
    assert len(seen) == 5
    status, batches = run_stream(spark, path, checkpoint, {})
    assert status == "ok"
    assert sorted(r for _, rows in batches for r in rows) == [(5, "c", 50, "x"), (6, "a", 60, "x")]


def test_schema_change_between_load_and_start_is_refused_not_dropped(spark: SparkSession, tmp_path: Path) -> None:
    """A stream defined before a column was added and started after it once read the new
    rows without the column, silently (its planner started from the table as it was then)."""
    path, checkpoint = str(tmp_path / "t"), str(tmp_path / "c")
    _rows(spark, 0, 2).write.format("delta").save(path)
    defined = spark.readStream.format("delta").load(path)
    _rows(spark, 2, 3).selectExpr("*", "'x' as extra").write.format("delta").mode("append").option("mergeSchema", "true").save(
        path
    )
    query = defined.writeStream.foreachBatch(lambda df, _: None).option("checkpointLocation", checkpoint)
    with pytest.raises(StreamingQueryException, match="DELTA_SCHEMA_CHANGED"):
        query.trigger(availableNow=True).start().awaitTermination(120)
    status, batches = run_stream(spark, path, checkpoint, {})  # defined again: every column
    assert status == "ok"
    assert sorted(r for _, rows in batches for r in rows) == [(0, "a", 0, None), (1, "b", 10, None), (2, "c", 20, "x")]


def test_optimize_and_vacuum_do_not_replay(spark: SparkSession, tmp_path: Path) -> None:
    path, checkpoint = str(tmp_path / "t"), str(tmp_path / "c")
    for start in range(0, 40, 10):
        _rows(spark, start, start + 10).write.format("delta").mode("append").save(path)
    assert run_stream(spark, path, checkpoint, {})[0] == "ok"
    table = DeltaTable.forPath(spark, path)
    table.optimize().executeCompaction()
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        table.vacuum(0)
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    _rows(spark, 40, 42).write.format("delta").mode("append").save(path)
    status, batches = run_stream(spark, path, checkpoint, {})
    assert status == "ok" and sorted(r[0] for _, rows in batches for r in rows) == [40, 41]


def test_starting_timestamp_and_bad_options(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _rows(spark, 0, 3).write.format("delta").save(path)
    _rows(spark, 3, 5).write.format("delta").mode("append").save(path)
    second = DeltaTable.forPath(spark, path).history().where("version = 1").collect()[0]["timestamp"]
    status, batches = run_stream(spark, path, str(tmp_path / "c"), {"startingTimestamp": str(second)})
    assert status == "ok" and sorted(r[0] for _, rows in batches for r in rows) == [3, 4]
    with pytest.raises(Exception, match="DELTA_STARTING_VERSION_AND_TIMESTAMP_BOTH_SET|startingTimestamp"):
        spark.readStream.format("delta").option("startingVersion", 0).option("startingTimestamp", str(second)).load(path)
    with pytest.raises(Exception, match="maxFilesPerTrigger"):
        spark.readStream.format("delta").option("maxFilesPerTrigger", "0").load(path)


def test_read_stream_table_by_name(spark: SparkSession, tmp_path: Path) -> None:
    _rows(spark, 0, 4).write.format("delta").saveAsTable("stream_source_named")
    try:
        query = (
            spark.readStream.table("stream_source_named")
            .writeStream.format("memory")
            .queryName("stream_source_named_out")
            .option("checkpointLocation", str(tmp_path / "c"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        assert sorted(r[0] for r in spark.table("stream_source_named_out").collect()) == [0, 1, 2, 3]
    finally:
        spark.sql("DROP TABLE IF EXISTS stream_source_named")


def test_missing_table_fails_at_load(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="not a Delta table|DELTA_TABLE_NOT_FOUND|no commits"):
        spark.readStream.format("delta").load(str(tmp_path / "nothing"))


def test_with_event_time_order_reads_the_snapshot_by_event_time(spark: SparkSession, tmp_path: Path) -> None:
    """Commits land newest events first; with ``withEventTimeOrder`` the initial snapshot is
    read oldest events first, and files whose event times overlap come in one batch."""
    path = str(tmp_path / "t")
    for day in (3, 2, 1):
        spark.range(day * 10, day * 10 + 3).selectExpr(
            "id", f"timestamp'2026-01-0{day} 00:00:00' + make_interval(0, 0, 0, 0, 0, id % 10) as ts"
        ).coalesce(1).write.format("delta").mode("append").save(path)
    spanning = "timestamp'2026-01-04 00:00:00' as ts"
    spark.range(100, 101).selectExpr("id", spanning).union(
        spark.range(101, 102).selectExpr("id", "timestamp'2026-01-05 00:00:00' as ts")
    ).coalesce(1).write.format("delta").mode("append").save(path)
    spark.range(200, 201).selectExpr("id", "timestamp'2026-01-04 12:00:00' as ts").coalesce(1).write.format("delta").mode(
        "append"
    ).save(path)

    def batches(ordered: bool) -> list[list[int]]:
        seen: list[list[int]] = []
        reader = spark.readStream.format("delta").option("maxFilesPerTrigger", 1)
        if ordered:
            reader = reader.option("withEventTimeOrder", "true")
        query = (
            reader.load(path)
            .withWatermark("ts", "1 hour")
            .writeStream.foreachBatch(lambda df, _: seen.append(sorted(r[0] for r in df.collect())))
            .option("checkpointLocation", str(tmp_path / f"c{ordered}"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        return [b for b in seen if b]

    assert batches(ordered=False) == [[30, 31, 32], [20, 21, 22], [10, 11, 12], [100, 101], [200]]
    assert batches(ordered=True) == [[10, 11, 12], [20, 21, 22], [30, 31, 32], [100, 101, 200]]


def test_rename_under_column_mapping_stops_with_delta_spark_error(spark: SparkSession, tmp_path: Path) -> None:
    path, checkpoint = str(tmp_path / "t"), str(tmp_path / "c")
    _rows(spark, 0, 4).write.format("delta").option("delta.columnMapping.mode", "name").save(path)
    assert run_stream(spark, path, checkpoint, {})[0] == "ok"
    query = (
        spark.readStream.format("delta").load(path).writeStream.format("noop").option("checkpointLocation", checkpoint).start()
    )
    try:
        query.processAllAvailable()
        spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN v TO value")
        _rows(spark, 4, 5).withColumnRenamed("v", "value").write.format("delta").mode("append").save(path)
        with pytest.raises(StreamingQueryException, match="DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG"):
            query.awaitTermination(120)
    finally:
        query.stop()
    with pytest.raises(Exception, match="schemaTrackingLocation"):
        spark.readStream.format("delta").option("schemaTrackingLocation", str(tmp_path / "s")).load(path)


def test_tables_delta_spark_wrote_stream_as_delta_spark_streams_them(
    spark: SparkSession, deltaspark: Any, tmp_path: Path
) -> None:
    """delta-spark writes the table (deletion vectors on, a DELETE and an UPDATE); both streams read it alike."""
    path = str(tmp_path / "theirs")
    deltaspark.run(
        """
spark.range(0, 20).selectExpr("id", "cast(id % 4 as string) as p").repartition(2).write.format("delta") \\
    .option("delta.enableDeletionVectors", "true").save(path)
DeltaTable.forPath(spark, path).delete("id % 5 = 0")
spark.range(20, 24).selectExpr("id", "cast(id % 4 as string) as p").write.format("delta").mode("append").save(path)
DeltaTable.forPath(spark, path).update("id = 21", {"p": "'x'"})
""",
        path=path,
    )
    for n, options in enumerate(({}, {"ignoreChanges": "true"}, {"skipChangeCommits": "true", "maxFilesPerTrigger": "1"})):
        ours = run_stream(spark, path, str(tmp_path / f"ours{n}"), options)
        theirs = deltaspark.run(
            STREAM, path=path, checkpoint=str(tmp_path / f"theirs{n}"), options=options, classes=ERROR_CLASSES
        )
        assert ours == theirs, options
