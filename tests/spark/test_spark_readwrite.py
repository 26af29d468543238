"""format("delta") reads and writes through PySpark, checked against delta-rs and the log."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F

from sparkdelta.exceptions import DeltaAnalysisException
from sparkdelta.kernel import Table
from sparkdelta.tables import DeltaTable

ALL_TYPES = (
    "b boolean, i8 tinyint, i16 smallint, i32 int, i64 bigint, f32 float, f64 double, "
    "dec decimal(12,3), s string, bin binary, d date, ts timestamp, ntz timestamp_ntz, "
    "st struct<x: int, y: struct<z: string>>, arr array<int>, m map<string, int>, p string"
)
PARTITIONS = ["a b", "x=y", "p/q", "100%", "ünï", None, "#?&"]


def _row(i: int) -> tuple:
    return (
        i % 2 == 0,
        i % 100,
        i * 7,
        i,
        i * 1_000_000_007,
        i / 3.0,
        i / 7.0,
        Decimal(f"{i}.125"),
        f"s{i}" * (i % 3),
        bytes([i % 256]),
        dt.date(2024, 1, 1) + dt.timedelta(days=i),
        dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC) + dt.timedelta(seconds=i * 3601, microseconds=i),
        dt.datetime(2024, 2, 1) + dt.timedelta(minutes=i),
        (i, (f"z{i}",)),
        [i, i + 1],
        {f"k{i}": i},
        PARTITIONS[i % len(PARTITIONS)],
    )


def _rows(n: int, start: int = 0) -> list[tuple]:
    return [_row(i) for i in range(start, start + n)]


def _sorted(rows: list[Row]) -> list[tuple]:
    return sorted((tuple(r) for r in rows), key=repr)


def test_all_types_round_trip_partitioned_and_delta_rs_reads_them(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "types")
    df = spark.createDataFrame(_rows(30), ALL_TYPES)
    df.write.format("delta").partitionBy("p").save(path)
    back = spark.read.format("delta").load(path)
    assert back.schema.simpleString() == df.schema.simpleString()
    assert _sorted(back.collect()) == _sorted(df.collect())

    theirs = deltalake.DeltaTable(path).to_pyarrow_table()
    assert _normalized_rows(theirs.to_pylist()) == _normalized_rows(back.collect())


ARROW_TYPES = pa.schema(
    [
        ("b", pa.bool_()),
        ("i8", pa.int8()),
        ("i16", pa.int16()),
        ("i32", pa.int32()),
        ("i64", pa.int64()),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("dec", pa.decimal128(12, 3)),
        ("s", pa.string()),
        ("bin", pa.binary()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("st", pa.struct([("x", pa.int32()), ("y", pa.struct([("z", pa.string())]))])),
        ("arr", pa.list_(pa.int32())),
        ("m", pa.map_(pa.string(), pa.int32())),
        ("p", pa.string()),
    ]
)


def _normalized(value: object) -> object:
    """One spelling for a value from Spark or from pyarrow: structs as dicts, maps as sorted pairs, instants in UTC."""
    if isinstance(value, Row):
        return {k: _normalized(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {k: _normalized(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC)
    return value


def _normalized_rows(rows: list) -> list[tuple]:
    columns = ARROW_TYPES.names
    result = []
    for row in rows:
        values = row.asDict() if isinstance(row, Row) else dict(row)
        if values["m"] is not None:
            values["m"] = sorted(dict(values["m"]).items())
        if values["ts"] is not None and values["ts"].tzinfo is None:  # Spark: session-local wall time
            values["ts"] = values["ts"].astimezone(dt.UTC)
        result.append(tuple(_normalized(values[c]) for c in columns))
    return sorted(result, key=repr)


def test_every_type_delta_rs_writes_reads_identically(spark, tmp_path: Path) -> None:
    """delta-rs writes every type and awkward partition values (spaces, '=', '/', '%', unicode, null)."""
    path = str(tmp_path / "rs-types")
    columns = list(zip(*_rows(28), strict=True))
    data = pa.table([pa.array(values, field.type) for values, field in zip(columns, ARROW_TYPES, strict=True)], ARROW_TYPES)
    deltalake.write_deltalake(path, data, partition_by=["p"])
    deltalake.write_deltalake(path, data.slice(0, 5), mode="append", partition_by=["p"])
    ours = spark.read.format("delta").load(path)
    assert [f.name for f in ours.schema.fields] == ARROW_TYPES.names
    assert ours.schema.simpleString() == spark.createDataFrame([], ALL_TYPES).schema.simpleString()
    theirs = deltalake.DeltaTable(path).to_pyarrow_table().to_pylist()
    assert len(theirs) == 33
    assert _normalized_rows(ours.collect()) == _normalized_rows(theirs)
    assert _normalized_rows(ours.where("p = 'p/q' OR p IS NULL").collect()) == _normalized_rows(
        [r for r in theirs if r["p"] in ("p/q", None)]
    )


def test_tables_written_by_delta_rs_read_identically(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "rs")
    data = pa.table(
        {
            "id": pa.array(range(12), pa.int64()),
            "p": pa.array(["a b", None, "x=y", "ü"] * 3),
            "d": pa.array([dt.date(2024, 1, i + 1) for i in range(12)]),
            "v": pa.array([1.5, None] * 6),
        }
    )
    deltalake.write_deltalake(path, data, partition_by=["p", "d"])
    deltalake.write_deltalake(path, data.slice(0, 4), mode="append", partition_by=["p", "d"])
    deltalake.DeltaTable(path).delete("id = 3")
    ours = spark.read.format("delta").load(path)
    expected = deltalake.DeltaTable(path).to_pyarrow_table().to_pylist()
    assert sorted((r.id, r.p, r.d, r.v) for r in ours.collect()) == sorted((r["id"], r["p"], r["d"], r["v"]) for r in expected)
    assert spark.read.format("delta").option("versionAsOf", 0).load(path).count() == 12


def test_default_mode_refuses_an_existing_table_and_ignore_does_nothing(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = spark.range(5)
    df.write.format("delta").save(path)
    with pytest.raises(DeltaAnalysisException, match="already exists"):
        df.write.format("delta").save(path)
    df.write.format("delta").mode("ignore").save(path)
    assert Table(path).latest_version() == 0


def test_append_and_overwrite_with_time_travel(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(0, 5).write.format("delta").save(path)
    spark.range(5, 8).write.format("delta").mode("append").save(path)
    spark.range(100, 102).write.format("delta").mode("overwrite").save(path)
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == [100, 101]
    assert spark.read.format("delta").option("versionAsOf", 1).load(path).count() == 8
    snapshot = Table(path).snapshot()
    assert all(p.endswith(".snappy.parquet") and p.startswith("part-") for p in snapshot.file_paths())
    info = Table(path).read_commit_info(2)
    assert info["operationParameters"]["mode"] == "Overwrite"
    assert int(info["operationMetrics"]["numOutputRows"]) == 2 and int(info["operationMetrics"]["numRemovedFiles"]) >= 1
    v1_time = Table(path).commit_timestamps()[1][1]
    at_v1 = dt.datetime.fromtimestamp(v1_time / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    assert spark.read.format("delta").option("timestampAsOf", at_v1).load(path).count() == 8


def test_schema_mismatch_is_refused_with_the_columns_named_and_nothing_committed(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.createDataFrame([(1, "a")], "id long, name string").write.format("delta").save(path)
    with pytest.raises(DeltaAnalysisException, match="extra int") as raised:
        spark.createDataFrame([(2, "b", 3)], "id long, name string, extra int").write.format("delta").mode("append").save(path)
    assert "mergeSchema" in str(raised.value)
    with pytest.raises(DeltaAnalysisException, match="Column name: the table has string, the data has int"):
        spark.createDataFrame([(2, 3)], "id long, name int").write.format("delta").mode("append").save(path)
    assert Table(path).latest_version() == 0
    assert sorted(p.name for p in Path(path).glob("*.parquet")) == sorted(Table(path).snapshot().file_paths())


def test_merge_schema_adds_columns_at_the_end(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.createDataFrame([(1, "a")], "id long, name string").write.format("delta").save(path)
    more = spark.createDataFrame([("b", 2, 2.5)], "name string, id long, CongestionSurcharge double")
    more.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    back = spark.read.format("delta").load(path)
    assert back.columns == ["id", "name", "CongestionSurcharge"]
    assert _sorted(back.collect()) == _sorted([Row(1, "a", None), Row(2, "b", 2.5)])
    assert deltalake.DeltaTable(path).to_pyarrow_table().column_names == ["id", "name", "CongestionSurcharge"]


def test_overwrite_schema_changes_columns_and_partitioning(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.createDataFrame([(1, "a")], "id long, name string").write.format("delta").save(path)
    new = spark.createDataFrame([(1.5, 7)], "amount double, VendorId int")
    with pytest.raises(DeltaAnalysisException, match="partition columns"):
        new.write.format("delta").mode("overwrite").partitionBy("VendorId").save(path)
    new.write.format("delta").mode("overwrite").partitionBy("VendorId").option("overwriteSchema", "true").save(path)
    snapshot = Table(path).snapshot()
    assert snapshot.partition_columns == ("VendorId",) and snapshot.schema.names == ["amount", "VendorId"]
    assert [tuple(r) for r in spark.read.format("delta").load(path).collect()] == [(1.5, 7)]


def test_idempotent_writes_with_txn_app_id(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = spark.range(3)
    for _ in range(2):
        df.write.format("delta").mode("append").option("txnAppId", "job-1").option("txnVersion", 1).save(path)
    df.write.format("delta").mode("append").option("txnAppId", "job-1").option("txnVersion", 2).save(path)
    assert spark.read.format("delta").load(path).count() == 6
    assert Table(path).snapshot().app_transactions["job-1"].version == 2
    assert deltalake.DeltaTable(path).transaction_version("job-1") == 2


def test_user_metadata_and_data_change_are_recorded(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").option("userMetadata", "nightly load").save(path)
    spark.range(3).write.format("delta").mode("overwrite").option("dataChange", "false").save(path)
    assert Table(path).read_commit_info(0)["userMetadata"] == "nightly load"
    lines = [json.loads(line) for line in (Path(path) / "_delta_log" / f"{1:020d}.json").read_text().splitlines()]
    file_actions = [a.get("add") or a.get("remove") for a in lines if "add" in a or "remove" in a]
    assert file_actions and all(action["dataChange"] is False for action in file_actions)


def test_stats_match_the_data(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    long_text = "x" * 40
    df = spark.createDataFrame(
        [(1, "b", long_text, (5, "q"), dt.date(2024, 1, 2)), (7, None, "a", (None, "r"), dt.date(2024, 3, 4))],
        "id int, s string, t string, st struct<n: int, w: string>, d date",
    ).coalesce(1)
    df.write.format("delta").save(path)
    (stats,) = [json.loads(s) for s in Table(path).snapshot().files.column("stats").to_pylist()]
    assert stats["numRecords"] == 2
    assert stats["minValues"]["id"] == 1 and stats["maxValues"]["id"] == 7
    assert stats["nullCount"] == {"id": 0, "s": 1, "t": 0, "st": {"n": 1, "w": 0}, "d": 0}
    assert stats["minValues"]["st"] == {"n": 5, "w": "q"} and stats["maxValues"]["d"] == "2024-03-04"
    assert stats["minValues"]["t"] == "a" and stats["maxValues"]["t"] == "x" * 32 + "\x7f"
    rs = pa.table(deltalake.DeltaTable(path).get_add_actions(flatten=True)).to_pylist()[0]
    assert rs["num_records"] == 2 and rs["min.id"] == 1 and rs["max.id"] == 7


def test_long_strings_and_decimals_keep_exact_bounds(spark, tmp_path: Path) -> None:
    """Cut string maxima stay upper bounds in UTF-8 order (delta-spark's tie-breakers, UTF-16 lengths);
    decimals are exact JSON numbers; a query for the longest value still finds it."""
    path = str(tmp_path / "t")
    emoji = "x" * 31 + "\U0001f600" + "tail"  # the pair straddles the 32-unit cut
    after_max = "y" * 32 + "\U0010ffff" + "z"  # the cut character is the largest code point
    values = [("a", emoji, Decimal("12345678901234567890.123")), ("b", after_max, Decimal("-0.001"))]
    spark.createDataFrame(values, "k string, t string, d decimal(23,3)").coalesce(1).write.format("delta").save(path)
    (raw,) = Table(path).snapshot().files.column("stats").to_pylist()
    assert '"d":12345678901234567890.123' in raw and '"d":-0.001' in raw
    stats = json.loads(raw)
    assert stats["minValues"]["t"] == "x" * 31
    assert stats["maxValues"]["t"] == "y" * 32 + "\U0010ffff" + "\x7f"
    assert all(stats["maxValues"]["t"].encode() >= v.encode() for _, v, _ in values)
    for _, value, _ in values:
        assert spark.read.format("delta").load(path).where(F.col("t") == value).count() == 1


def test_stats_columns_follow_the_table_properties(spark, tmp_path: Path) -> None:
    df = spark.createDataFrame([(1, "a", (2, 3), 4.0)], "a int, b string, s struct<x: int, y: int>, c double").coalesce(1)

    def stats_of(properties: dict[str, str]) -> dict:
        path = str(tmp_path / str(len(list(tmp_path.iterdir()))))
        writer = df.write.format("delta")
        for key, value in properties.items():
            writer = writer.option(key, value)
        writer.save(path)
        (raw,) = Table(path).snapshot().files.column("stats").to_pylist()
        return json.loads(raw)

    assert stats_of({})["minValues"] == {"a": 1, "b": "a", "s": {"x": 2, "y": 3}, "c": 4.0}
    assert stats_of({"delta.dataSkippingNumIndexedCols": "3"})["minValues"] == {"a": 1, "b": "a", "s": {"x": 2}}
    assert stats_of({"delta.dataSkippingNumIndexedCols": "0"})["nullCount"] == {}
    chosen = stats_of({"delta.dataSkippingStatsColumns": "c,s.y"})
    assert chosen["minValues"] == {"s": {"y": 3}, "c": 4.0} and chosen["numRecords"] == 1


def test_delta_table_api(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(4).withColumn("p", F.col("id") % 2).write.format("delta").partitionBy("p").save(path)
    spark.range(4, 6).withColumn("p", F.col("id") % 2).write.format("delta").mode("append").save(path)
    table = DeltaTable.forPath(spark, path)
    assert sorted(r.id for r in table.toDF().collect()) == list(range(6))
    history = table.history().collect()
    assert [h.version for h in history] == [1, 0] and [h.operation for h in history] == ["WRITE", "WRITE"]
    assert history[0].operationParameters["mode"] == "Append" and history[0].readVersion == 0
    assert len(table.history(1).collect()) == 1
    (detail,) = table.detail().collect()
    assert (detail.format, detail.partitionColumns, detail.numFiles) == ("delta", ["p"], Table(path).snapshot().num_files)
    assert DeltaTable.isDeltaTable(spark, path) and not DeltaTable.isDeltaTable(spark, str(tmp_path))


def _add_constraint(path: str, name: str, expression: str) -> None:
    from sparkdelta.kernel import Metadata

    table = Table(path)
    metadata = table.snapshot().metadata
    configuration = {**metadata.configuration, f"delta.constraints.{name}": expression}
    changed = Metadata(
        metadata.id, metadata.schema_string, metadata.partition_columns, configuration, created_time=metadata.created_time
    )
    table.transaction().commit([changed], "ADD CONSTRAINT", {"name": name, "expr": expression})


def test_replace_where_on_partitions_replaces_only_matching_files(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(0, 120).withColumn("m", (F.col("id") % 12 + 1).cast("int")).write.format("delta").partitionBy("m").save(path)
    december = spark.range(1000, 1010).withColumn("m", F.lit(12))
    december.write.format("delta").mode("overwrite").option("replaceWhere", "m = 12").save(path)
    rows = spark.read.format("delta").load(path)
    assert sorted(r.id for r in rows.where("m = 12").collect()) == list(range(1000, 1010))
    assert rows.count() == 120 - 10 + 10
    with pytest.raises(Exception, match="does not match replaceWhere 'm = 12'.*1005|does not match replaceWhere 'm = 12'.*id"):
        spark.range(5, 6).withColumn("m", F.lit(5)).write.format("delta").mode("overwrite").option("replaceWhere", "m = 12").save(
            path
        )
    assert Table(path).latest_version() == 1


def test_replace_where_on_a_data_column_rewrites_only_those_rows(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(0, 100).withColumn("v", F.lit("old")).write.format("delta").save(path)
    spark.range(10, 20).withColumn("v", F.lit("new")).write.format("delta").mode("overwrite").option(
        "replaceWhere", "id >= 10 AND id < 20"
    ).save(path)
    rows = {r.id: r.v for r in spark.read.format("delta").load(path).collect()}
    assert len(rows) == 100 and all(v == ("new" if 10 <= i < 20 else "old") for i, v in rows.items())
    assert sorted(deltalake.DeltaTable(path).to_pyarrow_table().column("id").to_pylist()) == list(range(100))


def test_dynamic_partition_overwrite_replaces_only_written_partitions(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(0, 40).withColumn("p", F.col("id") % 4).write.format("delta").partitionBy("p").save(path)
    spark.range(100, 103).withColumn("p", F.lit(2).cast("long")).write.format("delta").mode("overwrite").option(
        "partitionOverwriteMode", "dynamic"
    ).save(path)
    rows = spark.read.format("delta").load(path)
    assert sorted(r.id for r in rows.where("p = 2").collect()) == [100, 101, 102]
    assert rows.count() == 30 + 3


def test_check_and_not_null_constraints_are_enforced_with_the_row_shown(spark, tmp_path: Path) -> None:
    from sparkdelta.exceptions import DeltaInvariantViolationException

    path = str(tmp_path / "t")
    spark.createDataFrame([(1, 5.0)], "id int, fare double").write.format("delta").save(path)
    _add_constraint(path, "positive_fare", "fare >= 0")
    with pytest.raises(DeltaInvariantViolationException, match=r"CHECK constraint positive_fare \(fare >= 0\) violated.*-1\.0"):
        spark.createDataFrame([(2, -1.0)], "id int, fare double").write.format("delta").mode("append").save(path)
    assert Table(path).latest_version() == 1
    assert not any(
        p.name.startswith("part-") and p.name not in Table(path).snapshot().file_paths() for p in Path(path).glob("*.parquet")
    )

    strict = str(tmp_path / "strict")
    from sparkdelta.kernel import Metadata, Protocol

    schema = '{"type":"struct","fields":[{"name":"id","type":"integer","nullable":false,"metadata":{}}]}'
    Table(strict).transaction().commit([Protocol(1, 2), Metadata("m", schema, (), {}, created_time=1)], "CREATE TABLE")
    with pytest.raises(DeltaInvariantViolationException, match="NOT NULL constraint violated for column: id"):
        spark.createDataFrame([(None,)], "id int").write.format("delta").mode("append").save(strict)
    spark.createDataFrame([(3,)], "id int").write.format("delta").mode("append").save(strict)
    assert [r.id for r in spark.read.format("delta").load(strict).collect()] == [3]


def test_session_defaults_become_properties_of_new_tables(spark, tmp_path: Path) -> None:
    key = "spark.databricks.delta.properties.defaults.checkpointInterval"
    spark.conf.set(key, "3")
    try:
        spark.range(2).write.format("delta").save(str(tmp_path / "t"))
    finally:
        spark.conf.unset(key)
    assert Table(str(tmp_path / "t")).snapshot().configuration == {"delta.checkpointInterval": "3"}


def test_rows_can_be_addressed_by_file_and_row_index(spark, tmp_path: Path) -> None:
    """DML finds rows by (file, row index): both must be exact, per file, from zero."""
    import pyarrow.parquet as pq

    from sparkdelta.spark.read.parquet import ROW_INDEX_COLUMN, read_files

    path = str(tmp_path / "addressed")
    spark.range(0, 300, 1, 3).selectExpr("id", "id % 2 AS p").write.format("delta").partitionBy("p").save(path)
    snapshot = Table(path).snapshot()
    files = snapshot.scan().files
    files = files.append_column("__file", files.column("path"))
    rows = read_files(spark, snapshot, files, file_columns=["__file"], with_row_index=True).collect()
    assert len(rows) == 300
    for file in {r["__file"] for r in rows}:
        on_disk = pq.read_table(f"{path}/{file}").column("id").to_pylist()
        ours = sorted((r[ROW_INDEX_COLUMN], r["id"]) for r in rows if r["__file"] == file)
        assert ours == list(enumerate(on_disk))


def test_timestamp_text_is_read_in_the_session_time_zone(spark, tmp_path: Path) -> None:
    import os

    path = str(tmp_path / "t")
    spark.range(1).write.format("delta").option("delta.enableChangeDataFeed", "true").save(path)
    spark.range(5).write.format("delta").mode("append").save(path)
    for version, hour in ((0, 12), (1, 14)):  # commit times, as their files' mtimes
        moment = dt.datetime(2024, 1, 1, hour, tzinfo=dt.UTC).timestamp()
        os.utime(Path(path) / "_delta_log" / f"{version:020d}.json", (moment, moment))
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        at = spark.read.format("delta").option("timestampAsOf", "2024-01-01 08:30:00").load(path)  # 13:30 UTC
        assert at.count() == 1
        changes = spark.read.format("delta").option("readChangeFeed", "true")
        assert changes.option("startingTimestamp", "2024-01-01 08:30:00").load(path).count() == 5  # version 1 only
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert spark.read.format("delta").option("timestampAsOf", "2024-01-01 13:30:00").load(path).count() == 1


def test_partition_column_with_a_leading_underscore(spark, tmp_path: Path) -> None:
    """Spark names its folders ``_p=1``; they are data, not hidden (its file index reads them too)."""
    path = str(tmp_path / "t")
    rows = [(i, f"v{i % 2}") for i in range(6)]
    spark.createDataFrame(rows, "id long, _p string").write.format("delta").partitionBy("_p").save(path)
    assert sorted(tuple(r) for r in spark.read.format("delta").load(path).select("id", "_p").collect()) == rows
    dt = deltalake.DeltaTable(path)
    assert sorted(zip(*dt.to_pyarrow_table().select(["id", "_p"]).to_pydict().values(), strict=True)) == rows


def test_large_local_scans_list_their_folders_and_read_exactly_the_logs_files(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scans of many local files list the folders holding them (one listing, not a lookup
    per file); the rows are the log's whatever else lies in those folders: older files after
    an UPDATE (picked by name, or named one by one above the name-list limit), and a file
    the log names but storage lacks fails loudly. Thresholds lowered to keep the table small."""
    import sparkdelta.spark.read.parquet as read_module

    monkeypatch.setattr(read_module, "_LISTED_SCAN_MIN_LOCAL_FILES", 4)
    monkeypatch.setattr(read_module, "_FILES_PER_LISTED_FOLDER", 2)
    listings: list[list[str]] = []
    scan_listed = read_module._scan_listed

    def recording(session, reader, snapshot, folders, locations, keys):  # type: ignore[no-untyped-def]
        listings.append([f.rpartition("/")[2] for f in folders])
        return scan_listed(session, reader, snapshot, folders, locations, keys)

    monkeypatch.setattr(read_module, "_scan_listed", recording)
    path = str(tmp_path / "t")
    spark.range(0, 800, 1, 8).selectExpr("id", "IF(id % 2 = 0, 'a', 'b') AS p").write.format("delta").partitionBy("p").save(path)

    def rows(frame) -> list[tuple]:  # type: ignore[no-untyped-def]
        return sorted(tuple(r) for r in frame.collect())

    def oracle() -> list[tuple]:
        return sorted(tuple(r.values()) for r in deltalake.DeltaTable(path).to_pyarrow_table(columns=["id", "p"]).to_pylist())

    assert rows(spark.read.format("delta").load(path)) == oracle() and listings[-1] == ["p=a", "p=b"]
    assert rows(spark.read.format("delta").load(path).where("p = 'b'")) == [r for r in oracle() if r[1] == "b"]
    assert listings[-1] == ["p=b"]
    DeltaTable.forPath(spark, path).update("id % 10 = 1", {"id": "id + 1000"})  # leaves the old files beside the new
    expected = oracle()
    assert len(expected) == 800 and rows(spark.read.format("delta").load(path)) == expected
    monkeypatch.setattr(read_module, "_LISTED_SCAN_MAX_FILES", 4)  # too many names to pick: each file named
    assert rows(spark.read.format("delta").load(path)) == expected
    victim = Path(path) / Table(path).snapshot().file_paths()[0]
    victim.unlink()
    with pytest.raises(Exception, match=f"{Path(path).name} version 1: 1 data file"):
        spark.read.format("delta").load(path).collect()


def test_input_files_of_a_delta_read_come_from_the_log_as_spark_spells_them(spark, tmp_path: Path) -> None:
    """``inputFiles()`` answers from the scan's files, the same strings Spark's own gives
    (awkward partition values included), and only the files a filter keeps."""
    from sparkdelta.spark.read.scan import scan_info

    path = str(tmp_path / "t [x] é")
    spark.createDataFrame([(i, PARTITIONS[i % len(PARTITIONS)]) for i in range(40)], "id long, p string").write.format(
        "delta"
    ).partitionBy("p").save(path)
    whole = spark.read.format("delta").load(path)
    filtered = whole.where("p = 'a b'")
    for frame in (whole, filtered):
        info = scan_info(frame)
        assert info is not None and len(frame.inputFiles()) == info.files_read
        spark_own = type(frame).inputFiles.__wrapped__(frame)  # Spark's own answer, unwrapped
        assert sorted(frame.inputFiles()) == sorted(spark_own)
    assert len(filtered.inputFiles()) < len(whole.inputFiles())
