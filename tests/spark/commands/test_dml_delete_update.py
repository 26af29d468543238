"""DELETE and UPDATE (``DeltaTable.delete`` / ``update`` / ``updateExpr``), copy-on-write and with deletion vectors.

Every result is compared with a pandas model of the rows the table must hold; copy-on-write
tables are also read back by delta-rs (rows, history names and metrics). The change data
feed of each command must equal the model's diff, only touched files may be rewritten,
concurrent writers are told apart as delta-spark tells them apart, and a failed command
leaves the table (and its directory) exactly as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import deltalake
import pandas as pd
import pyarrow.parquet as pq
import pytest
from interloper import interloper
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from sparkdelta.exceptions import (
    ConcurrentAppendException,
    ConcurrentDeleteReadException,
    DeltaAnalysisException,
    DeltaInvariantViolationException,
)
from sparkdelta.kernel import Table
from sparkdelta.kernel.deletion_vectors import DeletionVectorDescriptor
from sparkdelta.spark.paths import absolute_path
from sparkdelta.tables import DeltaTable

COLUMNS = ["id", "p", "v", "s"]
SCHEMA = StructType(
    [
        StructField("id", LongType(), False),
        StructField("p", IntegerType()),
        StructField("v", IntegerType()),
        StructField("s", StringType()),
    ]
)
MODES = ["copy-on-write", "deletion-vectors"]


def _model() -> pd.DataFrame:
    """120 rows in partitions p = 0, 1, 2 (and a few with a null p); every tenth v is null."""
    rows = [(i, None if i % 40 == 7 else i % 3, None if i % 10 == 0 else i * 2, f"s{i}") for i in range(120)]
    return pd.DataFrame(rows, columns=COLUMNS).astype({"id": "Int64", "p": "Int64", "v": "Int64", "s": "object"})


def _rows(frame: pd.DataFrame) -> list[tuple]:
    """The rows as sorted tuples, NULL as None (NaN and pd.NA alike)."""
    values = frame[COLUMNS].astype(object).where(frame[COLUMNS].notna(), None)
    return sorted((tuple(r) for r in values.itertuples(index=False)), key=repr)


def _properties(mode: str, cdf: bool = True) -> dict[str, str]:
    return {
        "delta.enableDeletionVectors": str(mode == "deletion-vectors").lower(),
        "delta.enableChangeDataFeed": str(cdf).lower(),
    }


def _write(spark: SparkSession, path: str, model: pd.DataFrame, properties: dict[str, str]) -> None:
    """The model as a table partitioned by ``p``, two files per partition."""
    frame = spark.createDataFrame(_rows(model), SCHEMA).repartition(2, "id")
    writer = frame.write.format("delta").partitionBy("p")
    for key, value in properties.items():
        writer = writer.option(key, value)
    writer.save(path)


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def table(spark: SparkSession, tmp_path: Path, mode: str) -> Iterator[tuple[str, pd.DataFrame]]:
    path = str(tmp_path / "t")
    model = _model()
    _write(spark, path, model, _properties(mode))
    yield path, model


def _ours(spark: SparkSession, path: str) -> list[tuple]:
    return _rows(spark.read.format("delta").load(path).toPandas())


def _theirs(path: str) -> list[tuple]:
    return _rows(deltalake.DeltaTable(path).to_pandas())


def _check(spark: SparkSession, path: str, model: pd.DataFrame, mode: str) -> None:
    """Our reader holds exactly the model; so does delta-rs, which cannot open DV tables."""
    assert _ours(spark, path) == _rows(model)
    if mode == "copy-on-write":
        assert _theirs(path) == _rows(model)


def _last_commit(path: str) -> dict[str, Any]:
    return Table(path).history(1)[0].commit_info


def _metrics(path: str) -> dict[str, int]:
    return {k: int(v) for k, v in _last_commit(path)["operationMetrics"].items()}


def _changes(spark: SparkSession, path: str, version: int) -> list[tuple]:
    frame = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", version)
        .option("endingVersion", version)
        .load(path)
        .toPandas()
    )
    values = frame[[*COLUMNS, "_change_type"]].astype(object).where(frame[[*COLUMNS, "_change_type"]].notna(), None)
    return sorted((tuple(r) for r in values.itertuples(index=False)), key=repr)


def _labelled(frame: pd.DataFrame, change_type: str) -> list[tuple]:
    return [(*row, change_type) for row in _rows(frame)]


def _true(mask: pd.Series) -> pd.Series:
    """SQL's WHERE: a NULL condition is not true."""
    return mask.fillna(False).astype(bool)


def _file_paths(path: str) -> set[str]:
    return set(Table(path).snapshot().file_paths())


def _files_holding(path: str, predicate: Callable[[pd.DataFrame], pd.Series]) -> set[str]:
    """Active files with at least one live row matching ``predicate`` (read file by file with pyarrow)."""
    snapshot = Table(path).snapshot()
    found = set()
    for row in snapshot.files.to_pylist():
        data = pq.read_table(absolute_path(path, row["path"])).to_pandas()
        data["p"] = None if dict(row["partitionValues"])["p"] is None else int(dict(row["partitionValues"])["p"])
        if row["deletionVector"] is None and _true(predicate(data)).any():
            found.add(row["path"])
    return found


def _unreferenced_data_files(path: str) -> set[str]:
    """Parquet files on disk that no version of the log adds (leftovers of failed commands)."""
    referenced = set()
    for log in sorted((Path(path) / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            for kind in ("add", "cdc"):
                if kind in action:
                    referenced.add(absolute_path(path, action[kind]["path"]))
    on_disk = {str(p) for p in Path(path).rglob("*.parquet") if "_delta_log" not in p.parts}
    return on_disk - referenced


def _unreferenced_dv_files(path: str) -> set[str]:
    """Deletion vector files on disk that no version of the log references."""
    snapshot = Table(path).snapshot()
    referenced = set()
    for log in sorted((Path(path) / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            dv = action.get("add", {}).get("deletionVector")
            if dv is not None:
                referenced.add(DeletionVectorDescriptor.from_dict(dv).absolute_path(snapshot.table_root))
    return {str(p) for p in Path(path).rglob("deletion_vector_*.bin")} - referenced


# --------------------------------------------------------------------------- DELETE


def test_delete_rows_by_sql_and_column_conditions(spark: SparkSession, table: tuple[str, pd.DataFrame], mode: str) -> None:
    path, model = table
    t = DeltaTable.forPath(spark, path)
    assert t.delete("v > 150") is None  # delta-spark's delete returns None
    gone = _true(model.v > 150)
    model = model[~gone]
    _check(spark, path, model, mode)
    metrics = _metrics(path)
    assert metrics["numDeletedRows"] == int(gone.sum()) > 0
    assert metrics["numAddedChangeFiles"] > 0

    t.delete((F.col("id") % 7 == 0) & (F.col("s") != "s14"))
    gone = _true((model.id % 7 == 0) & (model.s != "s14"))
    model = model[~gone]
    _check(spark, path, model, mode)
    assert _metrics(path)["numDeletedRows"] == int(gone.sum())


def test_rows_whose_condition_is_null_are_kept(spark: SparkSession, table: tuple[str, pd.DataFrame], mode: str) -> None:
    path, model = table
    DeltaTable.forPath(spark, path).delete("v < 40 OR v IS NULL AND id < 0")
    model = model[~_true(model.v < 40)]  # v NULL: the condition is NULL, the row stays
    assert model.v.isna().sum() == 12
    _check(spark, path, model, mode)


def test_copy_on_write_rewrites_exactly_the_touched_files(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    model = _model()
    _write(spark, path, model, _properties("copy-on-write", cdf=False))
    before = _file_paths(path)
    touched = _files_holding(path, lambda d: d.id.isin([3, 4, 5]))
    assert 0 < len(touched) < len(before)
    DeltaTable.forPath(spark, path).delete("id IN (3, 4, 5)")
    after = _file_paths(path)
    assert before - after == touched  # only the touched files went ...
    assert after & before == before - touched  # ... every other file stayed, under its own path
    metrics = _metrics(path)
    expected_copied = sum(len(pq.read_table(absolute_path(path, f))) for f in touched) - 3
    assert (metrics["numRemovedFiles"], metrics["numDeletedRows"], metrics["numCopiedRows"]) == (len(touched), 3, expected_copied)
    assert metrics["numAddedFiles"] == len(after - before)
    assert metrics["numAddedChangeFiles"] == 0  # CDF off
    _check(spark, path, model[~model.id.isin([3, 4, 5])], "copy-on-write")


def test_delete_on_partition_columns_only_removes_whole_files(
    spark: SparkSession, table: tuple[str, pd.DataFrame], mode: str
) -> None:
    path, model = table
    version = Table(path).latest_version()
    in_partition = {r["path"] for r in Table(path).snapshot().files.to_pylist() if dict(r["partitionValues"])["p"] == "1"}
    DeltaTable.forPath(spark, path).delete("p = 1")
    model = model[~_true(model.p == 1)]
    _check(spark, path, model, mode)
    actions = [json.loads(line) for line in (Path(path) / "_delta_log" / f"{version + 1:020d}.json").read_text().splitlines()]
    kinds = sorted({next(iter(a)) for a in actions})
    assert kinds == ["commitInfo", "remove"]  # no data read, nothing written
    assert {a["remove"]["path"] for a in actions if "remove" in a} == in_partition
    metrics = _metrics(path)
    assert (metrics["numDeletedRows"], metrics["numCopiedRows"], metrics["numAddedFiles"]) == (40 - 1, 0, 0)
    # The feed reads a commit without cdc actions from its removed files.
    assert _changes(spark, path, version + 1) == _labelled(_model()[_true(_model().p == 1)], "delete")


def test_delete_without_condition_empties_the_table(spark: SparkSession, table: tuple[str, pd.DataFrame], mode: str) -> None:
    path, model = table
    DeltaTable.forPath(spark, path).delete()
    _check(spark, path, model[:0], mode)
    assert Table(path).snapshot().num_files == 0
    assert _metrics(path)["numDeletedRows"] == 120
    assert _last_commit(path)["operationParameters"] == {"predicate": "[]"}


def test_delete_matching_nothing_commits_nothing(spark: SparkSession, table: tuple[str, pd.DataFrame], mode: str) -> None:
    path, model = table
    version = Table(path).latest_version()
    DeltaTable.forPath(spark, path).delete("v = -1")
    assert Table(path).latest_version() == version
    assert _unreferenced_data_files(path) == set()


@pytest.mark.parametrize("mode", MODES)
def test_each_delete_feeds_its_deleted_rows_to_the_change_feed(spark: SparkSession, tmp_path: Path, mode: str) -> None:
    path = str(tmp_path / "t")
    model = _model()
    _write(spark, path, model, _properties(mode))
    t = DeltaTable.forPath(spark, path)
    for version, (sql, mask) in enumerate(
        [("v BETWEEN 20 AND 60", lambda m: m.v.between(20, 60)), ("s LIKE 's1%'", lambda m: m.s.str.startswith("s1"))], start=1
    ):
        gone = _true(mask(model))
        t.delete(sql)
        assert _changes(spark, path, version) == _labelled(model[gone], "delete")
        model = model[~gone]
    _check(spark, path, model, mode)


# --------------------------------------------------------------------------- UPDATE


def test_update_sets_columns_where_the_condition_holds(spark: SparkSession, table: tuple[str, pd.DataFrame], mode: str) -> None:
    path, model = table
    t = DeltaTable.forPath(spark, path)
    assert t.update("v < 30", {"v": "v + 1000", "s": F.concat(F.col("s"), F.lit("!"))}) is None
    hit = _true(model.v < 30)
    model.loc[hit, "s"] = model.loc[hit, "s"] + "!"
    model.loc[hit, "v"] = model.loc[hit, "v"] + 1000
    _check(spark, path, model, mode)
    metrics = _metrics(path)
    assert metrics["numUpdatedRows"] == int(hit.sum()) > 0

    # Assignments read the old values; a NULL condition updates nothing.
    t.update(F.col("v") > 1000, {"v": F.col("id"), "id": F.col("v")})
    hit = _true(model.v > 1000)
    assert hit.sum() > 0
    model.loc[hit, ["v", "id"]] = model.loc[hit, ["id", "v"]].to_numpy()
    _check(spark, path, model, mode)

    # A partition column moves rows to another partition.
    t.updateExpr("id IN (20, 22)", {"p": "p + 10"})
    model.loc[model.id.isin([20, 22]), "p"] = model.loc[model.id.isin([20, 22]), "p"] + 10
    _check(spark, path, model, mode)
    assert {dict(r["partitionValues"])["p"] for r in Table(path).snapshot().files.to_pylist()} >= {"11", "12"}
    t.updateExpr({"s": "upper(s)"})
    model["s"] = model.s.str.upper()
    _check(spark, path, model, mode)
    assert _metrics(path)["numUpdatedRows"] == 120


def test_update_history_and_metrics_as_delta_spark_names_them(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(spark, path, _model(), _properties("copy-on-write", cdf=False))
    touched = _files_holding(path, lambda d: d.id == 5)
    DeltaTable.forPath(spark, path).update(F.col("id") == 5, {"s": F.lit("five")})
    history = deltalake.DeltaTable(path).history(1)[0]
    assert history["operation"] == "UPDATE"
    assert history["operationParameters"] == {"predicate": '["(id = CAST(5 AS BIGINT))"]'}
    metrics = {k: int(v) for k, v in history["operationMetrics"].items()}
    rows_in_touched = sum(len(pq.read_table(absolute_path(path, f))) for f in touched)
    assert metrics == metrics | {
        "numUpdatedRows": 1,
        "numCopiedRows": rows_in_touched - 1,
        "numRemovedFiles": 1,
        "numAddedFiles": 1,
        "numAddedChangeFiles": 0,
        "numDeletionVectorsAdded": 0,
        "numDeletionVectorsRemoved": 0,
        "numDeletionVectorsUpdated": 0,
    }
    assert {"executionTimeMs", "scanTimeMs", "rewriteTimeMs", "numAddedBytes", "numRemovedBytes"} <= set(metrics)
    spark_history = DeltaTable.forPath(spark, path).history(1).collect()[0]
    assert spark_history.operation == "UPDATE" and spark_history.operationMetrics["numUpdatedRows"] == "1"


@pytest.mark.parametrize("mode", MODES)
def test_each_update_feeds_pre_and_post_images(spark: SparkSession, tmp_path: Path, mode: str) -> None:
    path = str(tmp_path / "t")
    model = _model()
    _write(spark, path, model, _properties(mode))
    hit = _true(model.id % 9 == 4)
    before = model[hit].copy()
    DeltaTable.forPath(spark, path).update("id % 9 = 4", {"v": "coalesce(v, 0) * 10", "p": "2"})
    model.loc[hit, "v"] = model.loc[hit, "v"].fillna(0) * 10
    model.loc[hit, "p"] = 2
    assert _changes(spark, path, 1) == sorted(
        _labelled(before, "update_preimage") + _labelled(model[hit], "update_postimage"), key=repr
    )
    _check(spark, path, model, mode)


def test_update_recomputes_generated_columns_and_checks_constraints(spark: SparkSession, tmp_path: Path, mode: str) -> None:
    path = str(tmp_path / "t")
    (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("id", "BIGINT", nullable=False)
        .addColumn("v", "INT")
        .addColumn("double_v", "INT", generatedAlwaysAs="v * 2")
        .property("delta.constraints.small", "v < 1000")
        .property("delta.enableDeletionVectors", str(mode == "deletion-vectors").lower())
        .execute()
    )
    spark.createDataFrame([(i, i) for i in range(10)], "id BIGINT, v INT").write.format("delta").mode("append").save(path)
    t = DeltaTable.forPath(spark, path)
    t.update("id < 3", {"v": "v + 100"})
    expected = sorted((i, i + 100 if i < 3 else i, 2 * (i + 100 if i < 3 else i)) for i in range(10))
    assert sorted(tuple(r) for r in t.toDF().collect()) == expected

    version = Table(path).latest_version()
    with pytest.raises(DeltaInvariantViolationException, match="small"):
        t.update("id = 5", {"v": "v + 5000"})
    with pytest.raises(DeltaInvariantViolationException, match="NOT NULL"):
        t.update("id = 5", {"id": "NULL"})
    with pytest.raises(DeltaInvariantViolationException, match="double_v"):
        t.update("id = 5", {"double_v": "1"})
    with pytest.raises(DeltaAnalysisException, match="nope"):
        t.update("id = 5", {"nope": "1"})
    with pytest.raises(ValueError, match="set"):
        t.update("id = 5")
    assert Table(path).latest_version() == version
    assert sorted(tuple(r) for r in t.toDF().collect()) == expected
    assert _unreferenced_data_files(path) == set()
    assert _unreferenced_dv_files(path) == set()


def test_column_mapped_tables(spark: SparkSession, tmp_path: Path, mode: str) -> None:
    path = str(tmp_path / "t")
    model = _model()
    _write(spark, path, model, {**_properties(mode), "delta.columnMapping.mode": "name"})
    t = DeltaTable.forPath(spark, path)
    t.delete("v > 200")
    t.update("id < 10", {"s": "'low'"})
    model = model[~_true(model.v > 200)].copy()
    model.loc[model.id < 10, "s"] = "low"
    # delta-rs 1.6.6 reads this table's data columns as nulls even before any DML: our reader only.
    assert _ours(spark, path) == _rows(model)
    files = Table(path).snapshot().files.to_pylist()
    assert all(next(iter(dict(f["partitionValues"]))).startswith("col-") for f in files)  # physical names


# --------------------------------------------------------------------------- concurrency and failures


@pytest.mark.parametrize("mode", MODES)
def test_concurrent_writes_into_other_partitions_do_not_conflict(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    path = str(tmp_path / "t")
    model = _model()
    _write(spark, path, model, _properties(mode, cdf=False))
    t = DeltaTable.forPath(spark, path)
    extra = pd.DataFrame([(500, 2, 1, "new")], columns=COLUMNS).astype(model.dtypes.to_dict())

    def append_and_update_partition_2() -> None:
        spark.createDataFrame(_rows(extra), SCHEMA).write.format("delta").mode("append").save(path)
        t.update("p = 2 AND id < 30", {"s": "'other'"})  # not a blind append: it rewrites partition 2

    interloper(monkeypatch, append_and_update_partition_2)
    t.delete("p = 0 AND v > 100")
    model = pd.concat([model, extra], ignore_index=True)
    model.loc[_true((model.p == 2) & (model.id < 30)), "s"] = "other"
    model = model[~_true((model.p == 0) & (model.v > 100))]
    assert Table(path).latest_version() == 3
    assert _last_commit(path)["operation"] == "DELETE"
    _check(spark, path, model, mode)


@pytest.mark.parametrize("mode", MODES)
def test_concurrent_change_to_files_read_fails_and_leaves_nothing(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    path = str(tmp_path / "t")
    model = _model()
    _write(spark, path, model, _properties(mode))
    t = DeltaTable.forPath(spark, path)
    interloper(monkeypatch, lambda: t.delete("p = 1"))  # removes (only) files the next delete reads
    with pytest.raises(ConcurrentDeleteReadException):
        t.delete("v > 100")
    model = model[~_true(model.p == 1)]
    _check(spark, path, model, mode)
    assert Table(path).latest_version() == 1
    assert _unreferenced_data_files(path) == set()
    assert _unreferenced_dv_files(path) == set()

    def append() -> None:
        spark.createDataFrame([(600, 0, 7, "x")], SCHEMA).write.format("delta").mode("append").save(path)

    # A blind append into a partition this update reads conflicts under delta-spark's default
    # isolation level, Serializable ...
    interloper(monkeypatch, append)
    with pytest.raises(ConcurrentAppendException):
        t.update("p = 0 AND v > 100", {"s": "'big'"})
    assert Table(path).latest_version() == 2
    # ... and never under WriteSerializable.
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.isolationLevel' = 'WriteSerializable')")
    interloper(monkeypatch, append)
    t.update("p = 0 AND v > 100", {"s": "'big'"})
    assert Table(path).latest_version() == 5

    # Files another DML rewrites in a partition this one reads conflict whatever the level, as in delta-spark.
    interloper(monkeypatch, lambda: t.update("p = 2 AND id = 5", {"v": "0"}))
    with pytest.raises(ConcurrentAppendException):
        t.update("p = 2 AND v > 100", {"s": "'big'"})
    assert Table(path).latest_version() == 6
    assert _unreferenced_data_files(path) == set()
    assert _unreferenced_dv_files(path) == set()


# --------------------------------------------------------------------------- the shared scenarios


def test_scenario_lines(spark: SparkSession, tmp_path: Path, mode: str) -> None:
    """``t.delete(...)`` and ``t.update(...)`` exactly as ../shared/examples/scenarios.py writes them."""
    from pyspark.sql.functions import col, lit

    path = str(tmp_path / "trips")
    rides = pd.DataFrame(
        {
            "RideId": [1, 2, 3, 4, 5, 100000, 100001],
            "VendorId": [1, 2, 1, 2, 1, 2, 1],
            "PassengerCount": [1, 1, 3, 2, 4, 1, 2],
            "TipAmount": [1.0, 2.0, None, 4.0, 0.5, 3.0, 2.0],
            "TotalAmount": [10.0, -5.0, 12.0, 8.0, -1.0, 30.0, 7.5],
        }
    )
    frame = spark.createDataFrame(rides).selectExpr(
        "CAST(RideId AS INT) AS RideId",
        "CAST(VendorId AS INT) AS VendorId",
        "CAST(PassengerCount AS INT) AS PassengerCount",
        "TipAmount",
        "TotalAmount",
    )
    frame.write.format("delta").partitionBy("VendorId").option(
        "delta.enableDeletionVectors", str(mode != "copy-on-write").lower()
    ).save(path)
    t = DeltaTable.forPath(spark, path)

    t.delete("RideId = 100000")
    assert _metrics(path)["numDeletedRows"] == 1
    t.delete(col("TotalAmount") < 0)
    assert _metrics(path)["numDeletedRows"] == 2
    t.update(condition=col("RideId") == 1, set={"PassengerCount": lit(2)})
    assert _metrics(path)["numUpdatedRows"] == 1
    t.update("VendorId = 1", {"TipAmount": "TipAmount * 1.1"})
    assert _metrics(path)["numUpdatedRows"] == 3  # ride 3's NULL tip stays NULL, but the row is updated

    got = sorted(
        (r.RideId, r.VendorId, r.PassengerCount, None if r.TipAmount is None else round(r.TipAmount, 6), r.TotalAmount)
        for r in t.toDF().collect()
    )
    assert got == [
        (1, 1, 2, 1.1, 10.0),
        (3, 1, 3, None, 12.0),
        (4, 2, 2, 4.0, 8.0),
        (100001, 1, 2, 2.2, 7.5),
    ]
    operations = [(r.operation, r.operationParameters.get("predicate")) for r in t.history().collect()]
    assert operations[:4] == [
        ("UPDATE", '["(VendorId = 1)"]'),
        ("UPDATE", '["(RideId = 1)"]'),
        ("DELETE", '["(TotalAmount < CAST(0 AS DOUBLE))"]'),
        ("DELETE", '["(RideId = 100000)"]'),
    ]
    if mode == "copy-on-write":
        theirs = deltalake.DeltaTable(path).to_pandas().sort_values("RideId")
        assert theirs.RideId.tolist() == [1, 3, 4, 100001]
        assert [h["operation"] for h in deltalake.DeltaTable(path).history(4)] == ["UPDATE", "UPDATE", "DELETE", "DELETE"]
