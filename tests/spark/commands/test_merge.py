"""MERGE (``DeltaTable.merge`` and ``DeltaMergeBuilder``), copy-on-write and with deletion vectors.

Every merge is checked against a pandas model of MERGE's semantics (clauses of a kind in
order, the first whose condition is true acts, NULL is not true); copy-on-write merges are
also run by delta-rs's own merge on an identical copy of the table, and both tables must
then hold the same rows. Metrics, history parameters, the change data feed, which files
are rewritten, the multiple-match error, schema evolution and the shared scenarios'
merges are checked exactly.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from dml_model import (
    ARROW_SCHEMA,
    CASES,
    COLUMNS,
    UPSERT,
    Clause,
    Row,
    counts_as_metrics,
    model_merge,
    model_merge_with_changes,
    run_ours,
)
from dml_model import frame as _frame
from dml_model import sorted_rows as _sorted
from interloper import interloper
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from sparkdelta.exceptions import (
    ConcurrentDeleteReadException,
    DeltaAnalysisException,
    DeltaInvariantViolationException,
    DeltaUnsupportedOperationException,
)
from sparkdelta.kernel import Table
from sparkdelta.tables import DeltaTable

# --------------------------------------------------------------------------- data


def _target_rows() -> list[Row]:
    """40 rows in partitions p = 0..3; a null key, null n and null v here and there."""
    rows = [{"id": i, "p": i % 4, "n": None if i % 9 == 4 else i, "v": None if i % 7 == 3 else f"t{i}"} for i in range(40)]
    return [*rows, {"id": None, "p": 1, "n": 100, "v": "tnull"}]


def _source_rows() -> list[Row]:
    """Keys 30..49 (10 match), a null key, null n here and there: no key twice."""
    rows = [{"id": i, "p": i % 4, "n": None if i % 6 == 1 else i * 2, "v": f"s{i}"} for i in range(30, 50)]
    return [*rows, {"id": None, "p": 2, "n": 7, "v": "snull"}]


def _write(spark: SparkSession, path: str, rows: list[Row], partitioned: bool, properties: dict[str, str] | None = None) -> None:
    """The rows as a table of several files (four per partition when partitioned)."""
    writer = _frame(spark, rows).repartition(4).write.format("delta")
    if partitioned:
        writer = writer.partitionBy("p")
    for key, value in (properties or {}).items():
        writer = writer.option(key, value)
    writer.save(path)


def _table_rows(spark: SparkSession, path: str, columns: list[str] = COLUMNS) -> list[tuple]:
    return _sorted([r.asDict() for r in spark.read.format("delta").load(path).collect()], columns)


def _delta_rs_rows(path: str, columns: list[str] = COLUMNS) -> list[tuple]:
    frame = deltalake.DeltaTable(path).to_pandas()
    frame = frame.astype(object).where(frame.notna(), None)
    return _sorted(frame.to_dict("records"), columns)


def _last_commit(path: str) -> dict[str, Any]:
    return Table(path).snapshot().commit_info or {}


def _metrics(path: str) -> dict[str, int]:
    return {k: int(v) for k, v in _last_commit(path)["operationMetrics"].items() if not k.endswith("TimeMs")}


def run_delta_rs(path: str, source: list[Row], clauses: list[Clause]) -> dict[str, int]:
    table = pa.Table.from_pylist(source, schema=ARROW_SCHEMA)
    merger = deltalake.DeltaTable(path).merge(table, "t.id = s.id", source_alias="s", target_alias="t")
    for c in clauses:
        if c.kind == "matched" and c.action == "update":
            merger = (
                merger.when_matched_update_all(c.condition) if c.sets is None else merger.when_matched_update(c.sets, c.condition)
            )
        elif c.kind == "matched":
            merger = merger.when_matched_delete(c.condition)
        elif c.kind == "notMatched":
            merger = (
                merger.when_not_matched_insert_all(c.condition)
                if c.sets is None
                else merger.when_not_matched_insert(c.sets, c.condition)
            )
        elif c.action == "update":
            assert c.sets is not None
            merger = merger.when_not_matched_by_source_update(c.sets, c.condition)
        else:
            merger = merger.when_not_matched_by_source_delete(c.condition)
    return merger.execute()


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
@pytest.mark.parametrize("case", list(CASES))
def test_copy_on_write_against_the_model_and_delta_rs(spark: SparkSession, tmp_path: Path, case: str, partitioned: bool) -> None:
    clauses = CASES[case]
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "delta-rs")
    target, source = _target_rows(), _source_rows()
    _write(spark, ours, target, partitioned)
    shutil.copytree(ours, theirs)
    before = Table(ours).snapshot()

    result = run_ours(spark, ours, _frame(spark, source), clauses).collect()[0]
    their_metrics = run_delta_rs(theirs, source, clauses)

    expected, counts = model_merge(target, source, clauses)
    assert _table_rows(spark, ours) == _sorted(expected)
    assert _delta_rs_rows(ours) == _sorted(expected)
    assert _delta_rs_rows(theirs) == _sorted(expected)
    metrics = _metrics(ours)
    assert {k: metrics[k] for k in counts_as_metrics(counts, len(source))} == counts_as_metrics(counts, len(source))
    assert their_metrics["num_target_rows_inserted"] == counts["inserted"]
    assert their_metrics["num_target_rows_deleted"] == metrics["numTargetRowsDeleted"]
    assert their_metrics["num_target_rows_updated"] == metrics["numTargetRowsUpdated"]
    assert tuple(result) == (
        metrics["numTargetRowsUpdated"] + metrics["numTargetRowsDeleted"] + metrics["numTargetRowsInserted"],
        metrics["numTargetRowsUpdated"],
        metrics["numTargetRowsDeleted"],
        metrics["numTargetRowsInserted"],
    )
    # Untouched files stay where they were; the rewritten ones are exactly those removed.
    after = Table(ours).snapshot()
    old, new = set(before.file_paths()), set(after.file_paths())
    assert metrics["numTargetFilesRemoved"] == len(old - new)
    assert metrics["numTargetFilesAdded"] == len(new - old)
    assert (
        metrics["numOutputRows"]
        == metrics["numTargetRowsInserted"] + metrics["numTargetRowsUpdated"] + metrics["numTargetRowsCopied"]
    )
    assert metrics["numTargetRowsCopied"] + metrics["numTargetRowsUpdated"] + metrics["numTargetRowsDeleted"] == _rows_in(
        before, old - new
    )


def _rows_in(snapshot: Any, paths: set[str]) -> int:
    files = snapshot.files.to_pylist()
    return sum(json.loads(f["stats"])["numRecords"] for f in files if f["path"] in paths)


# --------------------------------------------------------------------------- deletion vectors and the change feed


def _change_rows(spark: SparkSession, path: str, version: int) -> list[tuple]:
    changes = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", version).load(path)
    return sorted((tuple(r[c] for c in [*COLUMNS, "_change_type"]) for r in changes.collect()), key=repr)


@pytest.mark.parametrize("vectors", [False, True], ids=["copy-on-write", "deletion-vectors"])
@pytest.mark.parametrize("case", ["all-kinds", "ordered-matched-clauses", "not-matched-by-source"])
def test_change_feed_and_deletion_vectors_against_the_model(
    spark: SparkSession, tmp_path: Path, case: str, vectors: bool
) -> None:
    clauses = CASES[case]
    path = str(tmp_path / "t")
    target, source = _target_rows(), _source_rows()
    properties = {"delta.enableChangeDataFeed": "true", "delta.enableDeletionVectors": str(vectors).lower()}
    _write(spark, path, target, partitioned=True, properties=properties)
    snapshot = Table(path).snapshot()
    before = set(snapshot.file_paths())

    run_ours(spark, path, _frame(spark, source), clauses)

    expected, counts, changes = model_merge_with_changes(target, source, clauses)
    assert _table_rows(spark, path) == _sorted(expected)
    assert _change_rows(spark, path, Table(path).latest_version()) == changes
    metrics = _metrics(path)
    assert metrics["numTargetChangeFilesAdded"] > 0
    changed = metrics["numTargetRowsUpdated"] + metrics["numTargetRowsDeleted"]
    if vectors:
        # Nothing is copied: changed rows are marked deleted where they are.
        assert metrics["numTargetRowsCopied"] == 0
        assert metrics["numTargetDeletionVectorsAdded"] + metrics["numTargetFilesRemoved"] > 0
        with_dv = [f["path"] for f in Table(path).snapshot().files.to_pylist() if f["deletionVector"] is not None]
        assert set(with_dv) <= before
        assert metrics["numTargetDeletionVectorsAdded"] == len(with_dv)
        assert metrics["numOutputRows"] == metrics["numTargetRowsInserted"] + metrics["numTargetRowsUpdated"]
    else:
        removed = before - set(Table(path).snapshot().file_paths())
        assert metrics["numTargetRowsCopied"] + changed == _rows_in(snapshot, removed)
    assert (
        changed
        == counts["matched_updated"]
        + counts["notMatchedBySource_updated"]
        + counts["matched_deleted"]
        + counts["notMatchedBySource_deleted"]
    )


# --------------------------------------------------------------------------- errors, blind appends, constraints


def _files_on_disk(path: str) -> set[str]:
    return {p.relative_to(path).as_posix() for p in Path(path).rglob("*.parquet") if "_delta_log" not in p.parts}


def test_several_source_rows_updating_one_target_row_is_an_error_and_commits_nothing(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    target = _target_rows()
    _write(spark, path, target, partitioned=True)
    version, files = Table(path).latest_version(), _files_on_disk(path)
    twice = _frame(spark, [{"id": 5, "p": 1, "n": 1, "v": "a"}, {"id": 5, "p": 1, "n": 2, "v": "b"}])
    with pytest.raises(DeltaUnsupportedOperationException, match="MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE.*t.id = s.id"):
        run_ours(spark, path, twice, UPSERT)
    assert Table(path).latest_version() == version
    assert _files_on_disk(path) == files
    assert _table_rows(spark, path) == _sorted(target)

    # An unconditional delete may match a row several times: the row is deleted once.
    run_ours(spark, path, twice, [Clause("matched", "delete")])
    assert _table_rows(spark, path) == _sorted([r for r in target if r["id"] != 5])
    assert _metrics(path)["numTargetRowsDeleted"] == 1


def test_insert_only_merge_is_a_blind_append(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    target, source = _target_rows(), _source_rows()
    _write(spark, path, target, partitioned=True)
    before = set(Table(path).snapshot().file_paths())
    run_ours(spark, path, _frame(spark, source), [Clause("notMatched", "insert")])
    expected, _ = model_merge(target, source, [Clause("notMatched", "insert")])
    assert _table_rows(spark, path) == _sorted(expected)
    commit = _last_commit(path)
    assert commit["operation"] == "MERGE" and commit["isBlindAppend"] is True
    assert before <= set(Table(path).snapshot().file_paths())
    assert _metrics(path)["numTargetFilesRemoved"] == 0


def test_constraints_and_generated_columns_hold_for_merged_rows(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("id", "BIGINT", nullable=False)
        .addColumn("v", "INT")
        .addColumn("double_v", "INT", generatedAlwaysAs="v * 2")
        .property("delta.constraints.small", "v < 1000")
        .execute()
    )
    spark.createDataFrame([(i, i) for i in range(5)], "id BIGINT, v INT").write.format("delta").mode("append").save(path)
    t = DeltaTable.forPath(spark, path)
    source = spark.createDataFrame([(1, 10), (7, 70)], "id BIGINT, v INT")
    t.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsert(
        values={"id": "s.id", "v": "s.v"}
    ).execute()
    expected = sorted([(0, 0, 0), (1, 10, 20), (2, 2, 4), (3, 3, 6), (4, 4, 8), (7, 70, 140)])
    assert sorted(tuple(r) for r in t.toDF().collect()) == expected

    version = Table(path).latest_version()
    too_big = spark.createDataFrame([(2, 5000)], "id BIGINT, v INT")
    with pytest.raises(DeltaInvariantViolationException, match="small"):
        t.alias("t").merge(too_big.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
    no_id = spark.createDataFrame([(None, 5)], "id BIGINT, v INT")
    with pytest.raises(DeltaInvariantViolationException, match="NOT NULL"):
        t.alias("t").merge(no_id.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
    with pytest.raises(AnalysisException):
        t.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"v": "s.nope"}).execute()
    with pytest.raises(DeltaAnalysisException, match="WHEN clause"):
        t.alias("t").merge(source.alias("s"), "t.id = s.id").execute()
    with pytest.raises(DeltaAnalysisException, match="only the last MATCHED clause can omit the condition"):
        t.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedDelete().whenMatchedUpdateAll().execute()
    assert Table(path).latest_version() == version
    assert sorted(tuple(r) for r in t.toDF().collect()) == expected


def test_schema_evolution_adds_source_columns_at_the_end(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, v STRING").write.format("delta").save(path)
    source = spark.createDataFrame([(2, "B", 2.5), (3, "C", 3.5)], "id BIGINT, v STRING, extra DOUBLE")

    def merge(evolve: bool) -> None:
        builder = DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
        run = builder.whenMatchedUpdateAll().whenNotMatchedInsertAll()
        (run.withSchemaEvolution() if evolve else run).execute()

    merge(evolve=False)  # the source's extra column is left out, as in delta-spark
    assert spark.read.format("delta").load(path).columns == ["id", "v"]
    merge(evolve=True)
    table = spark.read.format("delta").load(path)
    assert table.columns == ["id", "v", "extra"]
    assert sorted(tuple(r) for r in table.collect()) == [(1, "a", None), (2, "B", 2.5), (3, "C", 3.5)]
    assert deltalake.DeltaTable(path).to_pyarrow_table().sort_by("id").to_pylist() == [
        {"id": 1, "v": "a", "extra": None},
        {"id": 2, "v": "B", "extra": 2.5},
        {"id": 3, "v": "C", "extra": 3.5},
    ]


# --------------------------------------------------------------------------- concurrency


def test_concurrent_writers(spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "t")
    target = _target_rows()
    _write(spark, path, target, partitioned=True)
    t = DeltaTable.forPath(spark, path)
    in_partition_0 = _frame(spark, [{"id": 4, "p": 0, "n": 1, "v": "new"}, {"id": 500, "p": 0, "n": 5, "v": "ins"}])
    other = {"id": 900, "p": 3, "n": 9, "v": "other"}

    # An append into another partition does not conflict with a merge confined to partition 0.
    interloper(monkeypatch, lambda: _frame(spark, [other]).write.format("delta").mode("append").save(path))
    t.alias("t").merge(in_partition_0.alias("s"), "t.id = s.id AND t.p = 0 AND s.p = 0").whenMatchedUpdateAll().execute()
    expected = [{**r, "n": 1, "v": "new"} if r["id"] == 4 else r for r in target] + [other]
    assert _table_rows(spark, path) == _sorted(expected)
    assert _last_commit(path)["operation"] == "MERGE"

    # A concurrent delete of files the merge reads fails it, leaving the table as the delete left it.
    version = Table(path).latest_version()
    interloper(monkeypatch, lambda: t.delete("p = 0"))
    with pytest.raises(ConcurrentDeleteReadException):
        t.alias("t").merge(in_partition_0.alias("s"), "t.id = s.id AND t.p = 0").whenMatchedUpdateAll().execute()
    assert Table(path).latest_version() == version + 1
    assert _table_rows(spark, path) == _sorted([r for r in expected if r["p"] != 0])


# --------------------------------------------------------------------------- the shared scenarios


def test_scenario_merges(spark: SparkSession, tmp_path: Path) -> None:
    """The three merges of ../shared/examples/scenarios.py, as written there, with exact rows and metrics."""
    import datetime as dt

    from pyspark.sql.functions import lit

    path = str(tmp_path / "trips")
    now = dt.datetime.now().replace(microsecond=0)
    recent, old = now - dt.timedelta(days=1), now - dt.timedelta(days=30)
    schema = "RideId INT, VendorId INT, PickupTime TIMESTAMP, PaymentType INT, TotalAmount DOUBLE"
    trips = [(1, 1, recent, 1, 10.0), (2, 2, old, 1, 20.0), (3, 1, recent, 2, 30.0), (4, 2, old, 2, 40.0)]
    spark.createDataFrame(trips, schema).write.format("delta").save(path)
    t = DeltaTable.forPath(spark, path)

    def rows() -> list[tuple]:
        return sorted(tuple(r) for r in t.toDF().collect())

    def counts() -> tuple[int, int, int]:
        m = _metrics(path)
        return m["numTargetRowsUpdated"], m["numTargetRowsDeleted"], m["numTargetRowsInserted"]

    corrections = spark.createDataFrame([(2, 9, old, 1, 20.0), (5, 1, recent, 1, 50.0)], schema)
    (t.alias("target").merge(corrections.alias("source"), "target.RideId = source.RideId")
      .whenMatchedUpdate(set={"VendorId": "source.VendorId"})
      .whenNotMatchedInsertAll()
      .execute())  # fmt: skip
    assert counts() == (1, 0, 1)
    assert rows() == [(1, 1, recent, 1, 10.0), (2, 9, old, 1, 20.0), (3, 1, recent, 2, 30.0), (4, 2, old, 2, 40.0),
                      (5, 1, recent, 1, 50.0)]  # fmt: skip

    snapshot = spark.createDataFrame([(1, 1, recent, 3, 11.0), (3, 1, recent, 2, 30.0), (6, 2, old, 1, 60.0)], schema)
    (t.alias("target").merge(snapshot.alias("source"), "target.RideId = source.RideId")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .whenNotMatchedBySourceDelete()
      .execute())  # fmt: skip
    assert counts() == (2, 3, 1)
    assert rows() == [(1, 1, recent, 3, 11.0), (3, 1, recent, 2, 30.0), (6, 2, old, 1, 60.0)]

    snapshot = spark.createDataFrame(
        [(1, 1, recent, 3, -5.0, 0.0), (6, 2, old, 4, 61.0, 1.0), (7, 2, recent, 1, 70.0, 2.5)],
        f"{schema}, CongestionSurcharge DOUBLE",
    )
    (t.alias("target").merge(snapshot.alias("source"), "target.RideId = source.RideId")
      .whenMatchedDelete(condition="source.TotalAmount < 0")
      .whenMatchedUpdateAll()
      .whenNotMatchedBySourceUpdate(condition="target.PickupTime >= current_date() - INTERVAL 5 DAYS",
                                    set={"PaymentType": lit(0)})
      .withSchemaEvolution()
      .execute())  # fmt: skip
    assert counts() == (2, 1, 0)
    assert t.toDF().columns[-1] == "CongestionSurcharge"
    assert rows() == [(3, 1, recent, 0, 30.0, None), (6, 2, old, 4, 61.0, 1.0)]
    history = t.history().collect()
    assert [r.operation for r in history] == ["MERGE", "MERGE", "MERGE", "WRITE"]
    parameters = history[0].operationParameters
    assert json.loads(parameters["predicate"]) == ["(target.RideId = source.RideId)"]
    assert [c["actionType"] for c in json.loads(parameters["matchedPredicates"])] == ["delete", "update"]
    assert [c["actionType"] for c in json.loads(parameters["notMatchedBySourcePredicates"])] == ["update"]
    assert json.loads(parameters["notMatchedPredicates"]) == []
    assert deltalake.DeltaTable(path).to_pandas().sort_values("RideId").RideId.tolist() == [3, 6]


def test_an_upsert_reads_only_the_files_holding_its_keys(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inserts stretch the source's key range over every file; the file-level key join still finds the one to read."""
    from sparkdelta.spark.commands.dml import merge_execute

    path = str(tmp_path / "t")
    spark.range(0, 1000).selectExpr("id", "id % 4 AS p", "id AS n", "'t' AS v").repartitionByRange(10, "id").write.format(
        "delta"
    ).save(path)
    read: list[int] = []
    original = merge_execute.candidate_files

    def recorded(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        read.append(result.files.num_rows)
        return result

    monkeypatch.setattr(merge_execute, "candidate_files", recorded)
    source = spark.range(150, 160).union(spark.range(5000, 5010)).selectExpr("id", "id % 4 AS p", "-id AS n", "'s' AS v")
    DeltaTable.forPath(spark, path).alias("t").merge(
        source.alias("s"), "t.id = s.id"
    ).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert read == [1]
    rows = {r.id: r.n for r in spark.read.format("delta").load(path).collect()}
    assert len(rows) == 1010 and rows[155] == -155 and rows[5005] == -5005 and rows[100] == 100
    assert _metrics(path)["numTargetFilesRemoved"] == 1


# ------------------------------------------------- insert-only merges: pruning an unmaterialized source

_INSERT = [Clause("notMatched", "insert")]


def _even_keys_target(spark: SparkSession, path: str) -> list[Row]:
    """Keys 0, 2, ..., 1998 in 10 files, each holding one key range."""
    rows = [{"id": 2 * i, "p": i % 4, "n": i, "v": "t"} for i in range(1000)]
    _frame(spark, rows).repartitionByRange(10, "id").write.format("delta").save(path)
    return rows


def _recording_reads(monkeypatch: pytest.MonkeyPatch, after_pruning: Any = None) -> tuple[list[int], list[int]]:
    """The candidate files each pruning kept and each read of target files got, as the merge runs;
    ``after_pruning()`` runs once, after the first pruning (with its source reads) is done."""
    from sparkdelta.spark.commands.dml import merge_execute

    kept: list[int] = []
    read: list[int] = []
    prune, read_files = merge_execute.candidate_files, merge_execute.read_files

    def pruned(*args: Any, **kwargs: Any) -> Any:
        result = prune(*args, **kwargs)
        kept.append(result.files.num_rows)
        if after_pruning is not None and len(kept) == 1:
            after_pruning()
        return result

    def reading(spark: SparkSession, snapshot: Any, files: pa.Table, *args: Any, **kwargs: Any) -> Any:
        read.append(files.num_rows)
        return read_files(spark, snapshot, files, *args, **kwargs)

    monkeypatch.setattr(merge_execute, "candidate_files", pruned)
    monkeypatch.setattr(merge_execute, "read_files", reading)
    return kept, read


def test_an_insert_only_merge_of_an_unmaterialized_source_reads_only_the_files_its_keys_reach(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    target = _even_keys_target(spark, path)
    # Two clusters of keys: their overall range spans files that the key join leaves out.
    keys = [*range(700, 731), *range(1500, 1531)]
    # The oracle: files whose own key range holds a source key, as Spark reads them.
    per_file = spark.read.format("delta").load(path).groupBy(F.input_file_name()).agg(F.min("id"), F.max("id")).collect()
    reached = sum(1 for _, low, high in per_file if any(low <= k <= high for k in keys))
    spanned = sum(1 for _, low, high in per_file if low <= 1530 and high >= 700)
    assert len(per_file) == 10 and reached < spanned
    source = [{"id": i, "p": i % 4, "n": -i, "v": "s"} for i in keys]
    kept, read = _recording_reads(monkeypatch)
    run_ours(spark, path, _frame(spark, source), _INSERT)
    assert read == [reached] and kept == [reached]
    expected, counts = model_merge(target, source, _INSERT)
    assert _table_rows(spark, path) == _sorted(expected)
    assert _metrics(path)["numSourceRows"] == len(source)
    assert _metrics(path)["numTargetRowsInserted"] == counts["inserted"] == 30


def test_an_insert_only_merge_whose_source_changes_after_the_pruning_inserts_no_duplicate(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pruning reads keys past the table's (no file to read); the anti join's read then gets keys that
    match target rows: its files are deleted, and the rows appended again against every file."""
    path = str(tmp_path / "t")
    target = _even_keys_target(spark, path)
    csv = tmp_path / "source.csv"
    first = [{"id": 5000 + i, "p": 1, "n": 1, "v": "s"} for i in range(10)]
    then = [{"id": 100 + i, "p": 1, "n": 1, "v": "s"} for i in range(10)]  # as wide: the file's length stays

    def put(rows: list[Row]) -> None:
        csv.write_text("".join(f"{r['id']:04d},{r['p']},{r['n']},{r['v']}\n" for r in rows))

    put(first)
    source = spark.read.schema("id LONG, p LONG, n LONG, v STRING").csv(str(csv))
    kept, read = _recording_reads(monkeypatch, after_pruning=lambda: put(then))
    run_ours(spark, path, source, _INSERT)
    expected, _ = model_merge(target, then, _INSERT)
    assert _table_rows(spark, path) == _sorted(expected)
    assert kept == [0, 10] and read == [10]  # pruned to nothing, then every file
    metrics = _metrics(path)
    assert metrics["numTargetRowsInserted"] == 5 and metrics["numSourceRows"] == 10
    assert metrics["numTargetFilesAdded"] == len(_files_on_disk(path)) - 10
    assert _files_on_disk(path) == set(Table(path).snapshot().file_paths())  # the discarded files are gone


@pytest.mark.parametrize("draw", ["rand", "udf"])
def test_an_insert_only_merge_of_random_keys_inserts_only_new_keys(spark: SparkSession, tmp_path: Path, draw: str) -> None:
    """Random keys: ``rand()`` (its seed fixed in the plan: each read draws the same keys) and a
    non-deterministic Python UDF (each read draws new ones, so the pruning's reads never match the
    anti join's). Every inserted key is new, each target key is there once, the counts are the rows written."""
    import random

    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    _even_keys_target(spark, path)
    drawn = F.udf(lambda: random.randrange(2000), "long").asNondeterministic()() if draw == "udf" else F.rand() * 2000
    source = spark.range(0, 300, 1, 3).select(
        drawn.cast("long").alias("id"), F.lit(1).cast("long").alias("p"), F.col("id").alias("n"), F.lit("s").alias("v")
    )
    run_ours(spark, path, source, _INSERT)
    rows = spark.read.format("delta").load(path).collect()
    inserted = [r.id for r in rows if r.v == "s"]
    assert sorted(r.id for r in rows if r.v == "t") == list(range(0, 2000, 2))
    assert inserted and all(key % 2 == 1 for key in inserted)
    metrics = _metrics(path)
    assert metrics["numTargetRowsInserted"] == len(inserted) and metrics["numSourceRows"] == 300
