"""Write-side Delta features through PySpark: protocol upgrades, table properties, column
mapping, generated columns, invariants and the DeltaTableBuilder.

Rows are checked against a Python model and against delta-rs (its DataFusion reader,
which resolves column-mapped files); protocols against the JSON in the log; every failure
must leave the table as it was (same version, same files on disk).
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from sparkdelta.builder import DeltaTableBuilder
from sparkdelta.exceptions import (
    DeltaAnalysisException,
    DeltaInvariantViolationException,
    InvalidTableOperationError,
    InvalidTablePropertyError,
    UnsupportedFeatureError,
)
from sparkdelta.kernel import Metadata, Protocol, Table
from sparkdelta.spark.commands.create_table import TableSpec, create_table

ID = "delta.columnMapping.id"
PHYSICAL = "delta.columnMapping.physicalName"


# --------------------------------------------------------------------------- helpers


def _state(path: str) -> tuple[int | None, list[str]]:
    """The table's version and every file under it outside the log."""
    root = Path(path)
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts)
    return (Table(path).latest_version() if (root / "_delta_log").exists() else None), files


def _actions(path: str, version: int) -> list[dict]:
    return [json.loads(line) for line in (Path(path) / "_delta_log" / f"{version:020d}.json").read_text().splitlines()]


def _action(path: str, version: int, kind: str) -> list[dict]:
    return [a[kind] for a in _actions(path, version) if kind in a]


def _rows(df: DataFrame, order: str) -> list[dict]:
    return [r.asDict(recursive=True) for r in df.orderBy(order).collect()]


def _rs_rows(path: str, order: str) -> list[dict]:
    """delta-rs's rows (DataFusion reads column-mapped files by their physical names)."""
    table = deltalake.DeltaTable(path)
    result = deltalake.QueryBuilder().register("t", table).execute(f'SELECT * FROM t ORDER BY "{order}"')
    return pa.table(result.read_all()).to_pylist()


def _read(spark: SparkSession, path: str, order: str) -> list[dict]:
    return _rows(spark.read.format("delta").load(path), order)


def _fields(schema: dict):
    """Every field of a schema JSON, nested ones included."""
    for field in schema.get("fields", []):
        yield field
        node = field["type"]
        while isinstance(node, dict) and node.get("type") in ("array", "map"):
            node = node.get("elementType") or node.get("valueType")
        if isinstance(node, dict) and node.get("type") == "struct":
            yield from _fields(node)


def _metadata_json(path: str) -> tuple[dict, dict]:
    snapshot = Table(path).snapshot()
    return json.loads(snapshot.metadata.schema_string), dict(snapshot.configuration)


# --------------------------------------------------------------------------- protocol and table properties

# As delta-spark 4.4 writes them: table features unless a legacy protocol has exactly the features.
CDF_PROTOCOL = [{"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "changeDataFeed", "invariants"]}]
MAPPED_PROTOCOL = [
    {"minReaderVersion": 2, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "columnMapping", "invariants"]}
]


def test_delta_options_become_properties_of_a_table_the_write_creates(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = spark.range(3)
    df.write.format("delta").option("delta.enableChangeDataFeed", "true").option(
        "delta.logRetentionDuration", "interval 2 weeks"
    ).save(path)
    assert _action(path, 0, "protocol") == CDF_PROTOCOL  # delta-spark 4.4's protocol
    expected = {"delta.enableChangeDataFeed": "true", "delta.logRetentionDuration": "interval 2 weeks"}
    assert _action(path, 0, "metaData")[0]["configuration"] == expected
    assert deltalake.DeltaTable(path).metadata().configuration == expected
    # On an existing table, delta.* options change nothing (as in delta-spark).
    df.write.format("delta").mode("append").option("delta.appendOnly", "true").save(path)
    assert Table(path).snapshot().configuration == expected and _action(path, 1, "metaData") == []


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("delta.appendOnly", "yes", "invalid value 'yes' for table property delta.appendOnly: it needs to be a boolean"),
        ("delta.enableChangeDataFeeds", "true", "unknown configuration was specified: delta.enableChangeDataFeeds"),
        ("delta.checkpointInterval", "-1", "delta.checkpointInterval: it needs to be a positive integer"),
    ],
)
def test_bad_table_properties_are_refused_before_anything_is_written(
    spark: SparkSession, tmp_path: Path, key: str, value: str, words: str
) -> None:
    path = str(tmp_path / "t")
    with pytest.raises(InvalidTablePropertyError, match=words):
        spark.range(3).write.format("delta").option(key, value).save(path)
    assert not Path(path).exists() or _state(path) == (None, [])
    spark.range(3).write.format("delta").save(path)
    before = _state(path)
    with pytest.raises(InvalidTablePropertyError, match=words):
        spark.range(3).write.format("delta").mode("append").option(key, value).save(path)
    assert _state(path) == before


def test_merge_schema_with_a_timestamp_ntz_column_upgrades_the_protocol_in_the_same_commit(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    spark.createDataFrame([(1,)], "id long").write.format("delta").save(path)
    later = spark.createDataFrame([(2, dt.datetime(2024, 5, 6, 7, 8, 9))], "id long, at timestamp_ntz")
    later.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    assert _action(path, 1, "protocol") == [
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["timestampNtz"],
            "writerFeatures": ["appendOnly", "invariants", "timestampNtz"],
        }
    ]
    assert [f["name"] for f in json.loads(_action(path, 1, "metaData")[0]["schemaString"])["fields"]] == ["id", "at"]
    expected = [{"id": 1, "at": None}, {"id": 2, "at": dt.datetime(2024, 5, 6, 7, 8, 9)}]
    assert _read(spark, path, "id") == expected
    assert deltalake.DeltaTable(path).to_pyarrow_table().sort_by("id").to_pylist() == expected


@pytest.mark.parametrize(("key", "feature"), [("delta.enableIcebergCompatV2", "icebergCompatV2")])
def test_features_we_cannot_write_are_refused_by_name(spark: SparkSession, tmp_path: Path, key: str, feature: str) -> None:
    path = str(tmp_path / "t")
    with pytest.raises(UnsupportedFeatureError, match=f"table feature\\(s\\) {feature}"):
        spark.range(3).write.format("delta").option(key, "true").save(path)
    assert _state(path) == (None, [])


def test_invariants_in_the_schema_are_enforced(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    invariant = json.dumps({"expression": {"expression": "x > 3"}})
    schema = json.dumps(
        {
            "type": "struct",
            "fields": [{"name": "x", "type": "integer", "nullable": True, "metadata": {"delta.invariants": invariant}}],
        }
    )
    Table(path).transaction().commit([Protocol(1, 2), Metadata("m", schema, (), {}, created_time=1)], "CREATE TABLE")
    spark.createDataFrame([(4,), (5,)], "x int").write.format("delta").mode("append").save(path)
    before = _state(path)
    for bad in (2, None):
        with pytest.raises(DeltaInvariantViolationException, match=r"invariant \(x > 3\) violated for column: x"):
            spark.createDataFrame([(9,), (bad,)], "x int").write.format("delta").mode("append").save(path)
        assert _state(path) == before
    assert sorted(r.x for r in spark.read.format("delta").load(path).collect()) == [4, 5]


# --------------------------------------------------------------------------- column mapping

MAPPED_SCHEMA = (
    "id int, `my col` string, st struct<x: int, y: string>, arr array<struct<z: int>>, m map<string, struct<v: double>>, p string"
)


def _mapped_rows(start: int, count: int) -> list[tuple]:
    return [
        (i, f"n{i}" if i % 3 else None, (i * 10, f"y{i}"), [(i,), (i + 1,)], {f"k{i}": (i / 2,)}, ["a", "b b", None][i % 3])
        for i in range(start, start + count)
    ]


def _model(rows: list[tuple]) -> list[dict]:
    return [
        {
            "id": r[0],
            "my col": r[1],
            "st": {"x": r[2][0], "y": r[2][1]},
            "arr": [{"z": z[0]} for z in r[3]],
            "m": {k: {"v": v[0]} for k, v in r[4].items()},
            "p": r[5],
        }
        for r in sorted(rows)
    ]


def _rs_model(model: list[dict]) -> list[dict]:
    """delta-rs gives maps as lists of pairs."""
    return [{**row, "m": list(row["m"].items())} for row in model]


def _check_mapped_files(path: str) -> None:
    """Data files, partition values and stats use physical names; Parquet field ids are the column ids."""
    schema, configuration = _metadata_json(path)
    fields = list(_fields(schema))
    ids = {f["metadata"][PHYSICAL]: f["metadata"][ID] for f in fields}
    assert len(ids) == len(fields) and int(configuration["delta.columnMapping.maxColumnId"]) >= max(ids.values())
    logical = {f["name"] for f in fields}
    snapshot = Table(path).snapshot()
    p_physical = snapshot.schema.field("p").physical_name
    for add in snapshot.files.to_pylist():
        assert [k for k, _ in add["partitionValues"]] == [p_physical]
        stats = json.loads(add["stats"])
        assert set(stats["nullCount"]) <= set(ids) and not set(stats["nullCount"]) & logical
        parquet = pq.ParquetFile(Path(path) / add["path"].replace("%20", " "))
        arrow = parquet.schema_arrow
        for column in arrow:
            assert column.name in ids and int(column.metadata[b"PARQUET:field_id"]) == ids[column.name]
        st = arrow.field(snapshot.schema.field("st").physical_name)
        assert [int(c.metadata[b"PARQUET:field_id"]) for c in st.type] == [ids[c.name] for c in st.type]


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapped_tables_are_written_with_physical_names_and_field_ids(
    spark: SparkSession, tmp_path: Path, mode: str
) -> None:
    path = str(tmp_path / "t")
    first = _mapped_rows(0, 6)
    spark.createDataFrame(first, MAPPED_SCHEMA).write.format("delta").option("delta.columnMapping.mode", mode).partitionBy(
        "p"
    ).save(path)
    assert _action(path, 0, "protocol") == MAPPED_PROTOCOL
    _check_mapped_files(path)
    assert _read(spark, path, "id") == _model(first)
    assert _rs_rows(path, "id") == _rs_model(_model(first))

    more = _mapped_rows(6, 4)
    spark.createDataFrame(more, MAPPED_SCHEMA).write.format("delta").mode("append").save(path)
    _check_mapped_files(path)
    assert _read(spark, path, "id") == _model(first + more)
    assert _rs_rows(path, "id") == _rs_model(_model(first + more))


def test_merge_schema_on_a_mapped_table_gives_new_columns_new_ids(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.createDataFrame([(1, (2, "a"))], "id int, st struct<x: int, y: string>").write.format("delta").option(
        "delta.columnMapping.mode", "name"
    ).save(path)
    schema, configuration = _metadata_json(path)
    before_ids = {f["name"]: f["metadata"][ID] for f in _fields(schema)}
    assert configuration["delta.columnMapping.maxColumnId"] == "4"
    wider = spark.createDataFrame([(5, (6, "b", 7.5), "new")], "id int, st struct<x: int, y: string, w: double>, extra string")
    wider.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    schema, configuration = _metadata_json(path)
    after_ids = {f["name"]: f["metadata"][ID] for f in _fields(schema)}
    assert {k: v for k, v in after_ids.items() if k in before_ids} == before_ids
    assert sorted(v for k, v in after_ids.items() if k not in before_ids) == [5, 6]
    assert configuration["delta.columnMapping.maxColumnId"] == "6"
    expected = [
        {"id": 1, "st": {"x": 2, "y": "a", "w": None}, "extra": None},
        {"id": 5, "st": {"x": 6, "y": "b", "w": 7.5}, "extra": "new"},
    ]
    assert _read(spark, path, "id") == expected
    assert _rs_rows(path, "id") == expected


def test_overwrite_replace_where_and_dynamic_overwrite_on_a_mapped_table(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    rows = _mapped_rows(0, 9)
    spark.createDataFrame(rows, MAPPED_SCHEMA).write.format("delta").option("delta.columnMapping.mode", "name").partitionBy(
        "p"
    ).save(path)

    # replaceWhere on the partition column replaces whole files.
    new_a = _mapped_rows(100, 2)
    new_a = [(*r[:5], "a") for r in new_a]
    spark.createDataFrame(new_a, MAPPED_SCHEMA).write.format("delta").mode("overwrite").option("replaceWhere", "p = 'a'").save(
        path
    )
    model = [r for r in rows if r[5] != "a"] + new_a
    assert _read(spark, path, "id") == _model(model)

    # replaceWhere on a data column rewrites only the matching rows.
    new_ids = [(4, "new", (0, "n"), [], {}, "b b")]
    spark.createDataFrame(new_ids, MAPPED_SCHEMA).write.format("delta").mode("overwrite").option(
        "replaceWhere", "id >= 3 AND id < 6"
    ).save(path)
    model = [r for r in model if not 3 <= r[0] < 6] + new_ids
    assert _read(spark, path, "id") == _model(model)

    # Dynamic partition overwrite replaces only the partitions written.
    new_b = [(*r[:5], "b b") for r in _mapped_rows(300, 2)]
    spark.createDataFrame(new_b, MAPPED_SCHEMA).write.format("delta").mode("overwrite").option(
        "partitionOverwriteMode", "dynamic"
    ).save(path)
    model = [r for r in model if r[5] != "b b"] + new_b
    assert _read(spark, path, "id") == _model(model)
    assert _rs_rows(path, "id") == _rs_model(_model(model))
    _check_mapped_files(path)

    # A plain overwrite keeps the mapping; overwriteSchema keeps ids of columns kept as they were.
    schema, _ = _metadata_json(path)
    id_before = next(f["metadata"] for f in schema["fields"] if f["name"] == "id")
    spark.createDataFrame([(7, 1.5)], "id int, score double").write.format("delta").mode("overwrite").option(
        "overwriteSchema", "true"
    ).save(path)
    schema, configuration = _metadata_json(path)
    fields = {f["name"]: f["metadata"] for f in schema["fields"]}
    assert fields["id"] == id_before and fields["score"][ID] > 9 and configuration["delta.columnMapping.mode"] == "name"
    assert _read(spark, path, "id") == [{"id": 7, "score": 1.5}] == _rs_rows(path, "id")


def test_turning_name_mapping_on_keeps_old_files_readable(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    old = _mapped_rows(0, 4)
    spark.createDataFrame(old, MAPPED_SCHEMA).write.format("delta").partitionBy("p").save(path)
    table = Table(path)
    metadata = table.snapshot().metadata
    # What ALTER TABLE ... SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name') commits.
    enabled = Metadata(metadata.id, metadata.schema_string, metadata.partition_columns, {"delta.columnMapping.mode": "name"})
    table.transaction().commit([enabled], "SET TBLPROPERTIES")
    assert _action(path, 1, "protocol") == MAPPED_PROTOCOL
    schema, _ = _metadata_json(path)
    assert all(f["metadata"][PHYSICAL] == f["name"] for f in _fields(schema))
    new = _mapped_rows(10, 3)
    spark.createDataFrame(new, MAPPED_SCHEMA).write.format("delta").mode("append").save(path)
    assert _read(spark, path, "id") == _model(old + new)
    assert _rs_rows(path, "id") == _rs_model(_model(old + new))


@pytest.mark.parametrize(
    ("zone", "utc"),
    [("America/New_York", "2024-03-10T16:30:00.250000Z"), ("+02:00", "2024-03-10T10:30:00.250000Z")],
)
def test_timestamp_partition_values_are_written_in_utc_whatever_the_session_time_zone(
    spark: SparkSession, tmp_path: Path, zone: str, utc: str
) -> None:
    path = str(tmp_path / "t")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        df = spark.createDataFrame([(1, "2024-03-10 12:30:00.25")], "id int, s string").select(
            "id", F.to_timestamp("s").alias("at")
        )
        df.write.format("delta").partitionBy("at").save(path)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    (add,) = _action(path, 0, "add")
    assert add["partitionValues"] == {"at": utc}
    expected = dt.datetime.fromisoformat(utc.replace("Z", "")).replace(tzinfo=None)
    assert spark.read.format("delta").load(path).collect()[0].at == expected
    (theirs,) = deltalake.DeltaTable(path).to_pyarrow_table().to_pylist()
    assert theirs["at"].replace(tzinfo=None) == expected


def test_checkpoints_of_written_tables_honour_the_stats_properties(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    options = {
        "delta.checkpointInterval": "2",
        "delta.checkpoint.writeStatsAsStruct": "true",
        "delta.checkpoint.writeStatsAsJson": "false",
    }
    df = spark.createDataFrame([(1, "a", dt.date(2024, 1, 1))], "id int, s string, d date")
    df.write.format("delta").options(**options).partitionBy("d").save(path)
    spark.createDataFrame([(9, "z", dt.date(2024, 1, 2))], "id int, s string, d date").write.format("delta").mode("append").save(
        path
    )
    spark.createDataFrame([(5, "m", dt.date(2024, 1, 2))], "id int, s string, d date").write.format("delta").mode("append").save(
        path
    )
    checkpoint = pq.read_table(Path(path) / "_delta_log" / f"{2:020d}.checkpoint.parquet").column("add").to_pylist()
    adds = [a for a in checkpoint if a]
    assert len(adds) == 3 and all(a["stats"] is None for a in adds)
    assert sorted((a["stats_parsed"]["minValues"]["id"], a["partitionValues_parsed"]["d"]) for a in adds) == [
        (1, dt.date(2024, 1, 1)),
        (5, dt.date(2024, 1, 2)),
        (9, dt.date(2024, 1, 2)),
    ]
    # Skipping still works from the checkpoint's typed stats, for us and for delta-rs.
    assert [r.id for r in spark.read.format("delta").load(path).where("id > 6").collect()] == [9]
    rs = pa.table(deltalake.DeltaTable(path).get_add_actions(flatten=True)).to_pylist()
    assert sorted(r["max.id"] for r in rs) == [1, 5, 9]


# --------------------------------------------------------------------------- generated columns and the builder


def _drivers(spark: SparkSession, path: str, mode: str = "create") -> DeltaTableBuilder:
    return (
        DeltaTableBuilder(spark, mode)
        .location(path)
        .addColumn("DriverId", "INT", nullable=False)
        .addColumn("Name", "STRING", comment="display name")
        .addColumn("JoinYear", "INT", generatedAlwaysAs="YEAR(JoinDate)")
        .addColumn("JoinDate", "DATE")
        .partitionedBy("JoinYear")
        .property("delta.enableChangeDataFeed", "true")
        .comment("taxi drivers")
    )


def test_the_builder_creates_a_table_as_delta_spark_does(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "drivers")
    table = _drivers(spark, path).execute()
    (info,) = [a["commitInfo"] for a in _actions(path, 0) if "commitInfo" in a]
    assert info["operation"] == "CREATE TABLE"
    assert info["operationParameters"] == {
        "isManaged": "false",
        "description": "taxi drivers",
        "partitionBy": '["JoinYear"]',
        "clusterBy": "[]",
        "properties": '{"delta.enableChangeDataFeed":"true"}',
    }
    features = ["appendOnly", "changeDataFeed", "generatedColumns", "invariants"]
    assert _action(path, 0, "protocol") == [{**CDF_PROTOCOL[0], "writerFeatures": features}]
    (metadata,) = _action(path, 0, "metaData")
    assert metadata["description"] == "taxi drivers" and metadata["partitionColumns"] == ["JoinYear"]
    fields = json.loads(metadata["schemaString"])["fields"]
    assert [(f["name"], f["type"], f["nullable"]) for f in fields] == [
        ("DriverId", "integer", False),
        ("Name", "string", True),
        ("JoinYear", "integer", True),
        ("JoinDate", "date", True),
    ]
    assert fields[1]["metadata"] == {"comment": "display name"}
    assert fields[2]["metadata"] == {"delta.generationExpression": "YEAR(JoinDate)"}
    assert table.toDF().count() == 0
    assert deltalake.DeltaTable(path).schema().to_arrow().names == ["DriverId", "Name", "JoinYear", "JoinDate"]


def test_generated_columns_are_computed_and_checked_on_every_write(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "drivers")
    _drivers(spark, path).execute()
    without = spark.createDataFrame(
        [(1, "Ada", dt.date(2019, 5, 1)), (2, "Bo", None)], "DriverId INT, Name STRING, JoinDate DATE"
    )
    without.write.format("delta").mode("append").save(path)
    provided = spark.createDataFrame(
        [(3, "Cy", 2021, dt.date(2021, 1, 9)), (4, "Di", None, None)], "DriverId INT, Name STRING, JoinYear INT, JoinDate DATE"
    )
    provided.write.format("delta").mode("append").save(path)
    expected = [
        {"DriverId": 1, "Name": "Ada", "JoinYear": 2019, "JoinDate": dt.date(2019, 5, 1)},
        {"DriverId": 2, "Name": "Bo", "JoinYear": None, "JoinDate": None},
        {"DriverId": 3, "Name": "Cy", "JoinYear": 2021, "JoinDate": dt.date(2021, 1, 9)},
        {"DriverId": 4, "Name": "Di", "JoinYear": None, "JoinDate": None},
    ]
    assert _read(spark, path, "DriverId") == expected
    assert deltalake.DeltaTable(path).to_pyarrow_table().sort_by("DriverId").to_pylist() == expected
    assert {a["partitionValues"]["JoinYear"] for a in _action(path, 1, "add")} == {"2019", None}

    before = _state(path)
    wrong = spark.createDataFrame(
        [(5, "Ed", 1999, dt.date(2020, 2, 2))], "DriverId INT, Name STRING, JoinYear INT, JoinDate DATE"
    )
    with pytest.raises(
        DeltaInvariantViolationException,
        match=r"generated column JoinYear does not match its generation expression \(YEAR\(JoinDate\)\).*\"JoinYear\":1999",
    ) as raised:
        wrong.write.format("delta").mode("append").save(path)
    assert "Nothing was committed" in str(raised.value)
    missing_date = spark.createDataFrame([(6, "Fa", 2020, None)], "DriverId INT, Name STRING, JoinYear INT, JoinDate DATE")
    with pytest.raises(DeltaInvariantViolationException, match="generated column JoinYear"):
        missing_date.write.format("delta").mode("append").save(path)
    with pytest.raises(DeltaInvariantViolationException, match="NOT NULL constraint violated for column: DriverId"):
        spark.createDataFrame([(None, "Gus", None)], "DriverId INT, Name STRING, JoinDate DATE").write.format("delta").mode(
            "append"
        ).save(path)
    assert _state(path) == before


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("YEAR(Missing)", "must use only the table's non-generated columns"),
        ("rand() > 0.5", "must be deterministic"),
        ("JoinYear + 1", "must use only the table's non-generated columns"),
        ("CONCAT('y', JoinDate)", "type string does not fit the column's type int"),
        ("(SELECT 1)", "subqueries are not allowed"),
    ],
)
def test_generation_expressions_delta_cannot_use_are_refused(
    spark: SparkSession, tmp_path: Path, expression: str, words: str
) -> None:
    path = str(tmp_path / "t")
    builder = (
        DeltaTableBuilder(spark, "create")
        .location(path)
        .addColumn("JoinYear", "INT", generatedAlwaysAs="YEAR(JoinDate)")
        .addColumn("Other", "INT", generatedAlwaysAs=expression)
        .addColumn("JoinDate", "DATE")
    )
    with pytest.raises(DeltaAnalysisException, match=words):
        builder.execute()
    assert _state(path) == (None, [])


def test_builder_types_column_lists_and_properties(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    extra = StructType(
        [StructField("tags", StringType(), True, {"comment": "free text"}), StructField("n", IntegerType(), False)]
    )
    (
        DeltaTableBuilder(spark, "createOrReplace")
        .location(path)
        .addColumn("amount", "DECIMAL(10,2)")
        .addColumn("names", "ARRAY<STRING>")
        .addColumn("attrs", "MAP<STRING, INT>")
        .addColumn("pos", "STRUCT<x: DOUBLE, y: DOUBLE>")
        .addColumns(extra)
        .property("delta.columnMapping.mode", "name")
        .property("owner", "ops")
        .execute()
    )
    (info,) = [a["commitInfo"] for a in _actions(path, 0) if "commitInfo" in a]
    assert info["operation"] == "CREATE OR REPLACE TABLE"
    schema, configuration = _metadata_json(path)
    assert [f["type"] if isinstance(f["type"], str) else f["type"]["type"] for f in schema["fields"]] == [
        "decimal(10,2)",
        "array",
        "map",
        "struct",
        "string",
        "integer",
    ]
    assert configuration["owner"] == "ops" and configuration["delta.columnMapping.mode"] == "name"
    assert all(ID in f["metadata"] for f in _fields(schema)) and schema["fields"][4]["metadata"]["comment"] == "free text"
    rows = [(Decimal("1.50"), ["a"], {"k": 1}, (1.0, 2.0), "t", 3)]
    spark.createDataFrame(
        rows,
        "amount decimal(10,2), names array<string>, attrs map<string,int>, pos struct<x: double, y: double>, tags string, n int",
    ).write.format("delta").mode("append").save(path)
    expected = [{"amount": Decimal("1.50"), "names": ["a"], "attrs": {"k": 1}, "pos": {"x": 1.0, "y": 2.0}, "tags": "t", "n": 3}]
    assert _read(spark, path, "n") == expected
    assert _rs_rows(path, "n") == [{**expected[0], "attrs": [("k", 1)]}]


def test_create_replace_and_create_if_not_exists_on_existing_and_missing_tables(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "drivers")
    with pytest.raises(DeltaAnalysisException, match=r"Table delta.`.*drivers` cannot be replaced as it does not exist"):
        _drivers(spark, path, "replace").execute()
    assert _state(path) == (None, [])
    _drivers(spark, path).execute()
    spark.createDataFrame([(1, "Ada", dt.date(2019, 5, 1))], "DriverId INT, Name STRING, JoinDate DATE").write.format(
        "delta"
    ).mode("append").save(path)
    before = _state(path)
    with pytest.raises(DeltaAnalysisException, match=r"TABLE_OR_VIEW_ALREADY_EXISTS.*delta.`.*drivers`"):
        _drivers(spark, path).execute()
    assert DeltaTableBuilder(spark, "createIfNotExists").location(path).addColumn("x", "INT").execute().toDF().count() == 1
    assert _state(path) == before
    old_id = Table(path).snapshot().metadata.id

    # A path table is replaced only by a table of its own schema (delta-spark 4.4's check).
    with pytest.raises(DeltaAnalysisException, match="DELTA_CREATE_TABLE_SCHEME_MISMATCH"):
        DeltaTableBuilder(spark, "replace").location(path).addColumn("x", "INT").addColumn("y", "STRING").execute()
    assert _state(path) == before
    columns = [("DriverId", "INT"), ("Name", "STRING"), ("JoinYear", "INT"), ("JoinDate", "DATE")]
    builder = DeltaTableBuilder(spark, "replace").location(path)
    for name, data_type in columns:
        builder = builder.addColumn(name, data_type)
    replaced = builder.execute()
    assert replaced.toDF().count() == 0
    snapshot = Table(path).snapshot()
    (info,) = [a["commitInfo"] for a in _actions(path, 2) if "commitInfo" in a]
    assert info["operation"] == "REPLACE TABLE" and info["operationParameters"]["partitionBy"] == "[]"
    assert snapshot.metadata.id != old_id and snapshot.schema.names == [c for c, _ in columns] and snapshot.num_files == 0
    assert [r["path"] for r in _action(path, 2, "remove")] == [r["path"] for r in _action(path, 1, "add")]
    # The protocol is never lowered by a replace, and history stays reachable.
    assert snapshot.protocol.writer_features == {"appendOnly", "changeDataFeed", "generatedColumns", "invariants"}
    assert spark.read.format("delta").option("versionAsOf", 1).load(path).count() == 1
    assert [h.operation for h in replaced.history().collect()] == ["REPLACE TABLE", "WRITE", "CREATE TABLE"]
    assert deltalake.DeltaTable(path).to_pyarrow_table().num_rows == 0


def test_the_create_table_command_reports_its_commit(spark: SparkSession, tmp_path: Path) -> None:
    """The command both DeltaTableBuilder and SQL's CREATE TABLE run returns the table's location and its commit."""
    path = str(tmp_path / "t")
    spec = TableSpec("create", location=path, columns=(StructField("x", IntegerType()),))
    created = create_table(spark, spec)
    assert (created.location, created.name, created.version) == (Table(path).root, None, 0)
    existing = create_table(spark, replace(spec, mode="createIfNotExists"))
    assert (existing.location, existing.commit) == (Table(path).root, None)
    assert create_table(spark, replace(spec, mode="createOrReplace")).version == 1
    with pytest.raises(ValueError, match="unknown create mode"):
        TableSpec("overwrite", location=path)


def test_builder_refusals(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    with pytest.raises(InvalidTableOperationError, match="both partitioned and clustered"):
        DeltaTableBuilder(spark, "create").location(path).addColumn("id", "INT").addColumn("v", "INT").partitionedBy(
            "v"
        ).clusterBy("id").execute()
    with pytest.raises(DeltaAnalysisException, match="schema is not given"):
        DeltaTableBuilder(spark, "create").location(path).execute()
    with pytest.raises(DeltaAnalysisException, match="partition column\\(s\\) q are not columns"):
        DeltaTableBuilder(spark, "create").location(path).addColumn("id", "INT").addColumn("v", "INT").partitionedBy(
            "q"
        ).execute()
    with pytest.raises(DeltaAnalysisException, match="column ID is added twice"):
        DeltaTableBuilder(spark, "create").location(path).addColumn("id", "INT").addColumn("ID", "INT")
    with pytest.raises(InvalidTablePropertyError, match="delta.appendOnly"):
        DeltaTableBuilder(spark, "create").location(path).addColumn("id", "INT").property("delta.appendOnly", "maybe").execute()
    with pytest.raises(UnsupportedFeatureError, match="icebergCompatV2"):
        DeltaTableBuilder(spark, "create").location(path).addColumn("id", "INT").property(
            "delta.enableIcebergCompatV2", "true"
        ).execute()
    with pytest.raises(TypeError, match="nullable must be a bool"):
        DeltaTableBuilder(spark, "create").location(path).addColumn("id", "INT", nullable="no")  # type: ignore[arg-type]
    with pytest.raises(DeltaAnalysisException, match="needs a tableName or a location"):
        DeltaTableBuilder(spark, "create").addColumn("id", "INT").execute()
    assert _state(path) == (None, [])


def test_overwrite_schema_refuses_to_keep_rows_of_the_old_schema(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(4).withColumn("p", F.col("id") % 2).write.format("delta").partitionBy("p").save(path)
    before = _state(path)
    new = (
        spark.createDataFrame([(1, "x")], "p long, label string")
        .write.format("delta")
        .mode("overwrite")
        .option("overwriteSchema", "true")
    )
    with pytest.raises(DeltaAnalysisException, match="overwriteSchema cannot be combined with replaceWhere"):
        new.option("replaceWhere", "p = 1").save(path)
    with pytest.raises(DeltaAnalysisException, match="overwriteSchema cannot be combined"):
        new.option("partitionOverwriteMode", "dynamic").save(path)
    assert _state(path) == before


def test_the_builder_registers_named_tables(spark: SparkSession, tmp_path: Path) -> None:
    from sparkdelta.spark import catalog

    suffix = uuid.uuid4().hex[:8]
    managed, external = f"default.builder_managed_{suffix}", f"default.builder_external_{suffix}"
    DeltaTableBuilder(spark, "create").tableName(managed).addColumn("id", "INT").comment("managed one").execute()
    entry = catalog.lookup(spark, managed)
    assert entry is not None and entry.managed
    (info,) = [a["commitInfo"] for a in _actions(entry.location, 0) if "commitInfo" in a]
    assert info["operationParameters"]["isManaged"] == "true"
    with pytest.raises(DeltaAnalysisException, match=f"TABLE_OR_VIEW_ALREADY_EXISTS.*{managed}"):
        DeltaTableBuilder(spark, "create").tableName(managed).addColumn("id", "INT").execute()
    # An existing table at a location gets a name when the given schema matches it.
    path = str(tmp_path / "ext")
    spark.createDataFrame([(1, "a")], "id int, s string").write.format("delta").save(path)
    DeltaTableBuilder(spark, "create").tableName(external).location(path).addColumn("id", "INT").addColumn(
        "s", "STRING"
    ).execute()
    entry = catalog.lookup(spark, external)
    assert entry is not None and not entry.managed and Table(entry.location).root == Table(path).root
    assert Table(path).latest_version() == 0
    assert [tuple(r) for r in spark.table(external).collect()] == [(1, "a")]
    replaced = DeltaTableBuilder(spark, "replace").tableName(external).addColumn("x", "DOUBLE").execute()
    assert replaced.toDF().columns == ["x"] and Table(path).latest_version() == 1


def test_properties_and_description_given_by_a_caller_apply_to_a_new_table(spark: SparkSession, tmp_path: Path) -> None:
    from sparkdelta.spark.options import DeltaOptions
    from sparkdelta.spark.write.dataframe import write_dataframe

    path = str(tmp_path / "t")
    properties = {"owner": "ops", "delta.appendOnly": "true"}
    options = DeltaOptions.parse({"delta.checkpointinterval": "5"})
    write_dataframe(spark.range(2), path, "errorifexists", None, options, properties, "ctas table")
    (metadata,) = _action(path, 0, "metaData")
    assert metadata["configuration"] == {"delta.checkpointInterval": "5", "owner": "ops", "delta.appendOnly": "true"}
    assert metadata["description"] == "ctas table"
    before = _state(path)
    with pytest.raises(InvalidTablePropertyError, match="delta.appendOnly"):
        write_dataframe(spark.range(2), path, "append", None, DeltaOptions(), {"delta.appendOnly": "sometimes"})
    assert _state(path) == before


def test_type_changes_are_refused_unless_enabled_and_widening(spark: SparkSession, tmp_path: Path) -> None:
    """PROTOCOL.md's Type Widening: only with ``delta.enableTypeWidening`` and only to a wider
    type; a refused change commits nothing."""
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (i INT, f FLOAT, d DECIMAL(5,2), day DATE) USING delta")
    with pytest.raises(DeltaAnalysisException, match="delta.enableTypeWidening") as refused:
        spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN i TYPE BIGINT")
    assert refused.value.getCondition() == "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP"
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    before = _state(path)
    # Spark refuses what it cannot up-cast; Delta what is no widening (sparkdelta: date -> timestamp_ntz too).
    for column, narrower, condition in (
        ("i", "SMALLINT", "NOT_SUPPORTED_CHANGE_COLUMN"),
        ("f", "INT", "NOT_SUPPORTED_CHANGE_COLUMN"),
        ("d", "DECIMAL(6,1)", "NOT_SUPPORTED_CHANGE_COLUMN"),
        ("i", "DECIMAL(9,0)", "NOT_SUPPORTED_CHANGE_COLUMN"),
        ("day", "TIMESTAMP_NTZ", "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP"),
    ):
        with pytest.raises(DeltaAnalysisException) as refused:
            spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN {column} TYPE {narrower}")
        assert refused.value.getCondition() == condition
    assert _state(path) == before
    for column, wider in (("i", "DOUBLE"), ("f", "DOUBLE"), ("d", "DECIMAL(8,3)")):
        spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN {column} TYPE {wider}")
    changes = {f.name: f.metadata.get("delta.typeChanges") for f in Table(path).snapshot().schema.fields}
    assert changes["i"] == [{"toType": "double", "fromType": "integer"}]
    assert changes["d"] == [{"toType": "decimal(8,3)", "fromType": "decimal(5,2)"}]
