"""OPTIMIZE: compaction and Z-order keep every version's rows, are idempotent, and read back in delta-rs."""

from __future__ import annotations

import json
from pathlib import Path

import deltalake
import pytest
from hilbertcurve.hilbertcurve import HilbertCurve
from interloper import interloper
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from sparkdelta.exceptions import (
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
)
from sparkdelta.kernel import Table
from sparkdelta.spark.commands.optimize import _hilbert_transpose, _interleaved
from sparkdelta.spark.read.scan import scan_info
from sparkdelta.tables import DeltaTable


def _rows(spark: SparkSession, path: str, version: int | None = None) -> list[tuple]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(tuple(r) for r in reader.load(path).collect())


def _actions(path: str, version: int) -> list[dict]:
    return [json.loads(line) for line in (Path(path) / "_delta_log" / f"{version:020d}.json").read_text().splitlines()]


def _small_files_table(spark: SparkSession, path: str, appends: int = 6) -> None:
    for i in range(appends):
        rows = spark.range(i * 100, (i + 1) * 100, 1, 2).selectExpr("id", "id % 2 AS p", "cast(id AS string) AS s")
        rows.write.format("delta").mode("append").partitionBy("p").save(path)


def test_compaction_packs_small_files_per_partition_and_is_idempotent(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _small_files_table(spark, path)
    before = {v: _rows(spark, path, v) for v in range(Table(path).latest_version() + 1)}
    files_before = Table(path).snapshot().num_files
    assert files_before >= 12

    metrics = DeltaTable.forPath(spark, path).optimize().executeCompaction().collect()[0].metrics
    assert metrics.numFilesRemoved == files_before and metrics.numFilesAdded == 2 and metrics.partitionsOptimized == 2
    snapshot = Table(path).snapshot()
    assert snapshot.num_files == 2
    version = snapshot.version
    assert all(_rows(spark, path, v) == rows for v, rows in before.items())
    assert _rows(spark, path) == before[version - 1]
    theirs = deltalake.DeltaTable(path).to_pyarrow_table().to_pylist()
    assert sorted((r["id"], r["p"], r["s"]) for r in theirs) == before[version - 1]
    file_actions = [a.get("add") or a.get("remove") for a in _actions(path, version) if "add" in a or "remove" in a]
    assert len(file_actions) == files_before + 2 and not any(a["dataChange"] for a in file_actions)
    commit = Table(path).read_commit_info(version)
    assert commit["operation"] == "OPTIMIZE" and commit["operationParameters"]["zOrderBy"] == "[]"
    assert int(commit["operationMetrics"]["numRemovedFiles"]) == files_before

    again = DeltaTable.forPath(spark, path).optimize().executeCompaction().collect()[0].metrics
    assert again.numFilesRemoved == 0 and Table(path).latest_version() == version
    changes = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", version)
    with pytest.raises(Exception, match="not enabled"):
        changes.load(path).count()


def test_where_limits_compaction_to_partitions(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _small_files_table(spark, path, appends=4)
    per_partition = {
        p: sum(1 for f in Table(path).snapshot().files.to_pylist() if dict(f["partitionValues"])["p"] == p) for p in "01"
    }
    DeltaTable.forPath(spark, path).optimize().where("p = 1").executeCompaction()
    files = Table(path).snapshot().files.to_pylist()
    assert sum(1 for f in files if dict(f["partitionValues"])["p"] == "1") == 1
    assert sum(1 for f in files if dict(f["partitionValues"])["p"] == "0") == per_partition["0"]
    assert json.loads(Table(path).read_commit_info(Table(path).latest_version())["operationParameters"]["predicate"]) == [
        "('p = 1)"
    ]
    with pytest.raises(
        DeltaAnalysisException, match=r"non-partition column 'id'. Only the partition columns may be referenced: \[p\]"
    ):
        DeltaTable.forPath(spark, path).optimize().where("id > 5").executeCompaction()


def test_compaction_purges_deletion_vectors(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(0, 1000, 1, 1).write.format("delta").option("delta.enableDeletionVectors", "true").save(path)
    DeltaTable.forPath(spark, path).delete("id % 3 = 0")
    assert Table(path).snapshot().files.column("deletionVector").is_valid().to_pylist() == [True]
    metrics = DeltaTable.forPath(spark, path).optimize().executeCompaction().collect()[0].metrics
    assert metrics.deletionVectorStats.numDeletionVectorsRemoved == 1 and metrics.numFilesAdded == 1
    assert metrics.deletionVectorStats.numDeletionVectorRowsRemoved == 334
    files = Table(path).snapshot().files
    assert files.column("deletionVector").is_valid().to_pylist() == [False]
    assert json.loads(files.column("stats")[0].as_py())["numRecords"] == 666
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == [i for i in range(1000) if i % 3]


def test_z_order_lets_a_filter_on_either_column_skip_most_files(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    data = spark.range(0, 40000, 1, 8).selectExpr(
        "id", "cast(pmod(hash(id, 1), 10000) AS int) AS x", "cast(pmod(hash(id, 2), 10000) AS string) AS y"
    )
    data.write.format("delta").option("delta.targetFileSize", str(20 * 1024)).save(path)
    expected = _rows(spark, path)

    def share_read(condition: str) -> float:
        info = scan_info(spark.read.format("delta").load(path).where(condition))
        return info.files_read / info.files_total

    assert share_read("x < 100") == 1.0 and share_read("y = '5000'") == 1.0  # hashed: every file spans everything
    metrics = DeltaTable.forPath(spark, path).optimize().executeZOrderBy("x", "y").collect()[0].metrics
    assert metrics.numFilesAdded >= 8
    assert _rows(spark, path) == expected
    assert share_read("x < 100") <= 0.5 and share_read("y = '5000'") <= 0.5
    assert spark.read.format("delta").load(path).where("x < 100").count() == sum(1 for r in expected if r[1] < 100)
    assert sorted(tuple(r.values()) for r in deltalake.DeltaTable(path).to_pyarrow_table().to_pylist()) == expected
    commit = Table(path).read_commit_info(Table(path).latest_version())
    assert json.loads(commit["operationParameters"]["zOrderBy"]) == ["x", "y"]
    with pytest.raises(DeltaIllegalArgumentException, match="Z-Ordering column nope does not exist in data schema"):
        DeltaTable.forPath(spark, path).optimize().executeZOrderBy("nope")


def test_concurrent_appends_pass_and_concurrent_deletes_of_compacted_files_fail(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "t")
    _small_files_table(spark, path, appends=3)
    interloper(
        monkeypatch,
        lambda: spark.range(1000, 1003).selectExpr("id", "0L AS p", "'new' AS s").write.format("delta").mode("append").save(path),
    )
    expected = sorted([*_rows(spark, path), (1000, 0, "new"), (1001, 0, "new"), (1002, 0, "new")])
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert _rows(spark, path) == expected
    assert Table(path).read_commit_info(Table(path).latest_version())["operation"] == "OPTIMIZE"
    _small_files_table(spark, path, appends=2)
    interloper(monkeypatch, lambda: DeltaTable.forPath(spark, path).delete("p = 1"))
    with pytest.raises((ConcurrentDeleteReadException, ConcurrentDeleteDeleteException)):
        DeltaTable.forPath(spark, path).optimize().executeCompaction()


@pytest.mark.parametrize("column", ["numRecords", "n"])
def test_compaction_keeps_rows_whose_stats_mention_zero_records(spark: SparkSession, tmp_path: Path, column: str) -> None:
    """A column named ``numRecords`` puts ``"numRecords":0`` in the stats' nullCount and minValues;
    only the file's own record count says a rewritten file is empty (``n`` is the control)."""
    path = str(tmp_path / "t")
    for i in range(3):
        spark.createDataFrame([(i, i)], f"{column} LONG, v LONG").write.format("delta").mode("append").save(path)
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert sorted(tuple(r) for r in spark.read.format("delta").load(path).collect()) == [(0, 0), (1, 1), (2, 2)]
    oracle = deltalake.DeltaTable(path).to_pyarrow_table().to_pydict()
    assert sorted(oracle["v"]) == [0, 1, 2]


def _delta_spark_interleave(values: list[int], bits: int) -> int:
    """delta-spark's ``InterleaveBits``: from the top bit down, each column's bit in column order."""
    key = 0
    for bit in reversed(range(bits)):
        for value in values:
            key = (key << 1) | ((value >> bit) & 1)
    return key


@pytest.mark.parametrize(("columns", "bits"), [(2, 3), (3, 2), (2, 8)])
def test_curve_keys_match_reference_z_and_hilbert_curves(spark: SparkSession, columns: int, bits: int) -> None:
    """The Z key interleaves as delta-spark's ``interleave_bits``; the Hilbert key is the
    ``hilbertcurve`` package's distance (Skilling's transpose, an independent implementation)."""
    names = [f"c{i}" for i in range(columns)]
    side = 1 << bits
    points = spark.range(side**columns).select(
        *[F.floor(F.col("id") / side**i).cast("long").bitwiseAND(side - 1).alias(n) for i, n in enumerate(names)]
    )
    z = points.withColumn("z", _interleaved(names, bits))
    hilbert = _hilbert_transpose(points, names, bits).withColumn("h", _interleaved(names, bits))
    curve = HilbertCurve(bits, columns)
    expected_z = {tuple(r[:columns]): _delta_spark_interleave(list(r[:columns]), bits) for r in z.collect()}
    assert {tuple(r[:columns]): r.z for r in z.collect()} == expected_z
    hilbert_of = dict(zip(map(tuple, points.collect()), [r.h for r in hilbert.collect()], strict=True))
    assert hilbert_of == {p: curve.distance_from_point(list(p)) for p in hilbert_of}


def test_liquid_clustering_reads_fewer_files_than_z_order_for_ranges_on_either_column(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The Hilbert curve's files are compact boxes: a 1% range on x, or on y, reads fewer of them."""
    data = spark.range(0, 200_000, 1, 8).selectExpr(
        "cast(pmod(hash(id, 1), 100000) AS int) AS x", "cast(pmod(hash(id, 2), 100000) AS int) AS y"
    )
    shares = {}
    for layout in ("zorder", "liquid"):
        path = str(tmp_path / layout)
        writer = data.write.format("delta").option("delta.targetFileSize", str(16 * 1024))
        if layout == "liquid":
            writer = writer.clusterBy("x", "y")
        writer.save(path)
        table = DeltaTable.forPath(spark, path)
        (table.optimize().executeZOrderBy("x", "y") if layout == "zorder" else table.optimize().executeCompaction())
        files = Table(path).snapshot().files.num_rows
        assert files >= 20, (layout, files)
        reads = []
        for column in ("x", "y"):
            for start in range(0, 100_000, 10_000):
                info = scan_info(spark.read.format("delta").load(path).where(f"{column} BETWEEN {start} AND {start + 999}"))
                reads.append(info.files_read / info.files_total)
        shares[layout] = sum(reads) / len(reads)
    assert shares["liquid"] < shares["zorder"], shares
