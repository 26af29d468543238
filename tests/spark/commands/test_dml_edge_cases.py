"""DML edge cases: empty inputs (MERGE, UPDATE, DELETE) and delta-spark's column keys in ``set`` / ``values``.

Empty inputs: a MERGE whose source has no rows (an empty DataFrame, or one filtered to
nothing) succeeds with zero metrics; its not-matched-by-source clauses still apply, to
every target row, as in delta-spark. Every outcome is checked against the MERGE model of
``dml_model`` and the table read back by delta-rs.

Column keys: delta-spark parses each key of ``update(set=...)``, ``updateExpr``,
``whenMatchedUpdate(set=...)`` and ``whenNotMatchedInsert(values=...)`` as a SQL
identifier (``UnresolvedAttribute.quotedString``): backquotes quote a part (dots, commas
and dashes included), an unquoted dot separates nested fields, names resolve ignoring case.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest
from dml_model import CASES, SCHEMA, Clause, Row, counts_as_metrics, model_merge, run_ours
from dml_model import frame as _frame
from dml_model import sorted_rows as _sorted
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sparkdelta.exceptions import DeltaAnalysisException
from sparkdelta.kernel import Table
from sparkdelta.tables import DeltaTable

# --------------------------------------------------------------------------- helpers


def _target_rows() -> list[Row]:
    """12 rows in partitions p = 0..2, a null n and a null v among them."""
    return [{"id": i, "p": i % 3, "n": None if i == 4 else i * 10, "v": None if i == 7 else f"t{i}"} for i in range(12)]


def _write(spark: SparkSession, path: str, rows: list[Row], partitioned: bool) -> None:
    writer = _frame(spark, rows).repartition(3).write.format("delta")
    (writer.partitionBy("p") if partitioned else writer).save(path)


def _table_rows(spark: SparkSession, path: str) -> list[tuple]:
    return _sorted([r.asDict() for r in spark.read.format("delta").load(path).collect()])


def _delta_rs_rows(path: str) -> list[tuple]:
    return _sorted(deltalake.DeltaTable(path).to_pyarrow_table().to_pylist())


def _metrics(path: str) -> dict[str, int]:
    info = Table(path).snapshot().commit_info or {}
    return {k: int(v) for k, v in info["operationMetrics"].items() if not k.endswith("TimeMs")}


def _check_merge(
    spark: SparkSession, path: str, target: list[Row], source: list[Row], source_frame: DataFrame, clauses: list[Clause]
) -> None:
    """Run the merge; the table, delta-rs's reading of it, execute()'s row and the commit's metrics match the model."""
    before = Table(path).latest_version()
    result = run_ours(spark, path, source_frame, clauses).collect()[0]
    expected, counts = model_merge(target, source, clauses)
    assert _table_rows(spark, path) == _sorted(expected)
    assert _delta_rs_rows(path) == _sorted(expected)
    updated = counts["matched_updated"] + counts["notMatchedBySource_updated"]
    deleted = counts["matched_deleted"] + counts["notMatchedBySource_deleted"]
    assert result.asDict() == {
        "num_affected_rows": updated + deleted + counts["inserted"],
        "num_updated_rows": updated,
        "num_deleted_rows": deleted,
        "num_inserted_rows": counts["inserted"],
    }
    if updated + deleted + counts["inserted"] == 0:
        assert Table(path).latest_version() == before  # nothing changed: nothing committed
    else:
        assert Table(path).latest_version() == before + 1
        metrics = _metrics(path)
        wanted = counts_as_metrics(counts, len(source))
        assert {k: metrics[k] for k in wanted} == wanted
        assert metrics["numTargetRowsCopied"] == counts["copied"] - _untouched(path, before, counts)


def _untouched(path: str, before: int, counts: Counter) -> int:
    """Copied rows the merge never rewrote: rows of files that stayed (only rewritten rows count as copied)."""
    kept = set(Table(path).snapshot().file_paths()) & set(Table(path).snapshot(before).file_paths())
    files = Table(path).snapshot().files.to_pylist()
    return sum(json.loads(f["stats"])["numRecords"] for f in files if f["path"] in kept)


# --------------------------------------------------------------------------- finding 8: empty inputs


@pytest.mark.parametrize("case", list(CASES))
def test_merge_with_an_empty_source_into_a_partitioned_table(spark: SparkSession, tmp_path: Path, case: str) -> None:
    """Every clause kind: matched and insert clauses do nothing, not-matched-by-source clauses act on every row."""
    path = str(tmp_path / "t")
    target = _target_rows()
    _write(spark, path, target, partitioned=True)
    _check_merge(spark, path, target, [], spark.createDataFrame([], SCHEMA), CASES[case])


@pytest.mark.parametrize("case", ["all-kinds", "upsert", "not-matched-by-source-delete-only"])
def test_merge_with_an_empty_source_into_an_unpartitioned_table(spark: SparkSession, tmp_path: Path, case: str) -> None:
    path = str(tmp_path / "t")
    target = _target_rows()
    _write(spark, path, target, partitioned=False)
    _check_merge(spark, path, target, [], spark.createDataFrame([], SCHEMA), CASES[case])


@pytest.mark.parametrize("materialize", ["auto", "none"])
@pytest.mark.parametrize("case", ["update-all-insert-all", "conditional-inserts-in-order", "not-matched-by-source"])
def test_merge_with_a_source_empty_after_filtering(spark: SparkSession, tmp_path: Path, case: str, materialize: str) -> None:
    """A source that has rows until a filter drops them all (Spark cannot see it is empty before running it)."""
    path = str(tmp_path / "t")
    target = _target_rows()
    _write(spark, path, target, partitioned=True)
    source = _frame(spark, [{"id": i, "p": i % 3, "n": i, "v": "s"} for i in range(5, 15)]).repartition(2).where("n > 1000")
    spark.conf.set("spark.databricks.delta.merge.materializeSource", materialize)
    try:
        _check_merge(spark, path, target, [], source, CASES[case])
    finally:
        spark.conf.unset("spark.databricks.delta.merge.materializeSource")


def test_merge_into_an_empty_table_with_an_empty_source(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(spark, path, [], partitioned=True)
    _check_merge(spark, path, [], [], spark.createDataFrame([], SCHEMA), CASES["all-kinds"])


def test_merge_deleting_every_row_of_the_files_it_touches_counts_the_deletes(spark: SparkSession, tmp_path: Path) -> None:
    """The rewrite writes no row at all: the deleted rows are still counted."""
    path = str(tmp_path / "t")
    target = _target_rows()
    _write(spark, path, target, partitioned=True)
    source = [dict(r) for r in target if r["p"] == 1]
    _check_merge(spark, path, target, source, _frame(spark, source), [Clause("matched", "delete")])


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_update_and_delete_matching_nothing_commit_nothing(spark: SparkSession, tmp_path: Path, partitioned: bool) -> None:
    path = str(tmp_path / "t")
    target = _target_rows()
    _write(spark, path, target, partitioned)
    table = DeltaTable.forPath(spark, path)
    table.update("n > 1000", {"v": "'x'"})
    table.update("p > 5", {"v": "'x'"})  # partition columns only
    table.delete("n > 1000")
    table.delete("p > 5")
    assert Table(path).latest_version() == 0
    assert _table_rows(spark, path) == _sorted(target)


def test_update_and_delete_of_an_empty_table(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(spark, path, [], partitioned=True)
    table = DeltaTable.forPath(spark, path)
    table.update(set={"v": "'x'"})
    table.delete("n > 1")
    table.delete()
    assert _table_rows(spark, path) == []
    assert _delta_rs_rows(path) == []


# --------------------------------------------------------------------------- finding 9: column keys

KEYED_SCHEMA = "id long, `x-y,z` long, `a.b` string, a struct<b: string, c: long>, V string"


def _keyed_rows() -> list[Row]:
    return [{"id": i, "x-y,z": i * 10, "a.b": f"top{i}", "a": {"b": f"in{i}", "c": i}, "V": f"v{i}"} for i in range(5)]


def _keyed_table(spark: SparkSession, path: str, rows: list[Row]) -> None:
    """A column-mapped table (delta-spark needs mapping for a comma in a name): ``a.b`` the column, ``a`` the struct."""
    data = [(r["id"], r["x-y,z"], r["a.b"], (r["a"]["b"], r["a"]["c"]), r["V"]) for r in rows]
    frame = spark.createDataFrame(data, KEYED_SCHEMA).repartition(2)
    frame.write.format("delta").option("delta.columnMapping.mode", "name").save(path)


def _keyed_read(rows: list[Row]) -> list[str]:
    columns = ["id", "x-y,z", "a.b", "a", "V"]
    return sorted(json.dumps([r[c] for c in columns]) for r in rows)


def _check_keyed(spark: SparkSession, path: str, expected: list[Row]) -> None:
    ours = [r.asDict(recursive=True) for r in spark.read.format("delta").load(path).collect()]
    reader = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path)).execute("SELECT * FROM t")
    theirs = pa.table(reader.read_all()).to_pylist()  # to_pyarrow_table() reads mapped columns as nulls
    assert _keyed_read(ours) == _keyed_read(expected)
    assert _keyed_read(theirs) == _keyed_read(expected)


@pytest.mark.parametrize("api", ["update", "updateExpr"])
def test_update_parses_keys_as_delta_spark_does(spark: SparkSession, tmp_path: Path, api: str) -> None:
    """Backquoted names with commas and dashes, ```a.b``` the column vs ``a.b`` the struct field, any case."""
    path = str(tmp_path / "t")
    rows = _keyed_rows()
    _keyed_table(spark, path, rows)
    assignments = {"`x-y,z`": "`x-y,z` + 1", "`a.b`": "'set top'", "a.b": "'set in'", "v": "upper(V)", "A.`c`": "-id"}
    table = DeltaTable.forPath(spark, path)
    if api == "update":
        table.update(F.col("id") >= 2, {k: F.expr(v) for k, v in assignments.items()})
    else:
        table.updateExpr("id >= 2", assignments)
    for r in rows:
        if r["id"] >= 2:
            r.update({"x-y,z": r["x-y,z"] + 1, "a.b": "set top", "a": {"b": "set in", "c": -r["id"]}, "V": r["V"].upper()})
    _check_keyed(spark, path, rows)


def test_update_key_without_backquotes_is_a_name_too(spark: SparkSession, tmp_path: Path) -> None:
    """delta-spark's keys are names, not SQL: ``x-y,z`` needs no quoting (only dots do)."""
    path = str(tmp_path / "t")
    rows = _keyed_rows()
    _keyed_table(spark, path, rows)
    DeltaTable.forPath(spark, path).update("id = 1", {"x-y,z": "0"})
    rows[1]["x-y,z"] = 0
    _check_keyed(spark, path, rows)


def test_merge_parses_keys_as_delta_spark_does(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    rows = _keyed_rows()
    _keyed_table(spark, path, rows)
    source = spark.createDataFrame([(1, 7), (3, 8), (9, 9)], "id long, `x-y,z` long")
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"`x-y,z`": "s.`x-y,z`", "t.`a.b`": "'merged'", "a.c": F.col("s.`x-y,z`") * 2})
        .whenNotMatchedInsert(
            values={"ID": "s.id", "x-y,z": "s.`x-y,z`", "`A.B`": "'new'", "`a`": "named_struct('b', 'n', 'c', 0)"}
        )
        .execute()
    )
    for r in rows:
        if r["id"] in (1, 3):
            s = 7 if r["id"] == 1 else 8
            r.update({"x-y,z": s, "a.b": "merged", "a": {"b": r["a"]["b"], "c": s * 2}})
    rows.append({"id": 9, "x-y,z": 9, "a.b": "new", "a": {"b": "n", "c": 0}, "V": None})
    _check_keyed(spark, path, rows)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("`x-y,z", "INVALID_ATTRIBUTE_NAME_SYNTAX"),
        ("`a`b", "INVALID_ATTRIBUTE_NAME_SYNTAX"),
        ("a..b", "INVALID_ATTRIBUTE_NAME_SYNTAX"),
        ("`nope`", "Cannot resolve `nope`"),
        ("a.nope", "no such struct field nope in a"),
        ("id.x", "id is not a struct"),
    ],
)
def test_bad_update_keys_fail_naming_the_table(spark: SparkSession, tmp_path: Path, key: str, message: str) -> None:
    path = str(tmp_path / "t")
    _keyed_table(spark, path, _keyed_rows())
    with pytest.raises(DeltaAnalysisException, match=re.escape(message)) as error:
        DeltaTable.forPath(spark, path).update(set={key: "1"})
    assert Table(path).root in str(error.value)
    assert Table(path).latest_version() == 0


def test_conflicting_keys_fail(spark: SparkSession, tmp_path: Path) -> None:
    """A struct and one of its fields, or one column spelled twice: delta-spark's DELTA_CONFLICT_SET_COLUMN."""
    path = str(tmp_path / "t")
    _keyed_table(spark, path, _keyed_rows())
    table = DeltaTable.forPath(spark, path)
    for keys in (["a", "a.b"], ["`x-y,z`", "X-Y,Z"]):
        with pytest.raises(DeltaAnalysisException, match="DELTA_CONFLICT_SET_COLUMN"):
            table.update(set=dict.fromkeys(keys, "null"))
    source = spark.createDataFrame([(1,)], "id long")
    with pytest.raises(DeltaAnalysisException, match="DELTA_CONFLICT_SET_COLUMN"):
        table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"a.c": "1", "t.a": "null"}).execute()
