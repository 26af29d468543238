"""Interrupted writers never lose committed data (issue 12, finding 1).

Every writing operation is run with a fault injected at the storage interface: before,
during and after the commit write, with the store going down so the outcome cannot be
read back, during the checkpoint and ``_last_checkpoint`` writes, and during log
cleanup; as a store error and as a Ctrl-C (``KeyboardInterrupt``). In every case:

- every version in the log has all its data (and deletion-vector) files on disk, and the
  table reads at its latest version what a model of the operation says it holds, also
  through delta-rs;
- the operation's version landed exactly when the fault came after the commit write;
- the operation raised unless its commit landed and only post-commit work failed with
  an error (an interrupt always propagates);
- files written for a commit the log proves absent are deleted; for an unknown outcome,
  kept.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pytest
from deltalake import DeltaTable as RsTable
from faulty_storage import CHECKPOINT, COMMIT, LAST_CHECKPOINT, LOG_FILE, Fault, inject
from pyspark.sql import SparkSession

from sparkdelta.kernel import Table
from sparkdelta.kernel.deletion_vectors import DeletionVectorDescriptor
from sparkdelta.tables import DeltaTable

Rows = dict[int, str]

_PROPERTIES = {
    "delta.checkpointInterval": "1",  # every commit checkpoints, then cleans up the log
    "delta.logRetentionDuration": "interval 0 seconds",
}


@dataclass(frozen=True)
class Operation:
    """A write to run under a fault, and what it does to the rows ``{id: v}``."""

    run: Callable[[SparkSession, str], object]
    model: Callable[[Rows], Rows]
    deletion_vectors: bool = False


def _append(spark: SparkSession, path: str) -> None:
    spark.createDataFrame([(i, "new", i % 2) for i in range(100, 105)], "id INT, v STRING, p INT").write.format("delta").mode(
        "append"
    ).save(path)


def _overwrite(spark: SparkSession, path: str) -> None:
    spark.createDataFrame([(i, "over", i % 2) for i in range(200, 203)], "id INT, v STRING, p INT").write.format("delta").mode(
        "overwrite"
    ).save(path)


def _merge(spark: SparkSession, path: str) -> None:
    source = spark.createDataFrame([(i, "m", i % 2) for i in range(15, 25)], "id INT, v STRING, p INT")
    DeltaTable.forPath(spark, path).alias("t").merge(
        source.alias("s"), "t.id = s.id"
    ).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()


def _delete(spark: SparkSession, path: str) -> None:
    DeltaTable.forPath(spark, path).delete("id % 3 = 0")


def _optimize(spark: SparkSession, path: str) -> None:
    DeltaTable.forPath(spark, path).optimize().executeCompaction()


OPERATIONS = {
    "append": Operation(_append, lambda rows: {**rows, **{i: "new" for i in range(100, 105)}}),
    "overwrite": Operation(_overwrite, lambda rows: {i: "over" for i in range(200, 203)}),
    "merge": Operation(_merge, lambda rows: {**rows, **{i: "m" for i in range(15, 25)}}),
    "delete_dv": Operation(_delete, lambda rows: {i: v for i, v in rows.items() if i % 3}, deletion_vectors=True),
    "optimize": Operation(_optimize, lambda rows: rows),
}


@dataclass(frozen=True)
class Point:
    """Where the fault fires and what follows: whether the version lands, and whether
    a store error (not an interrupt) still fails the operation."""

    fault: Callable[[], Fault]
    lands: bool
    error_fails: bool
    outcome_known: bool = True


POINTS = {
    "commit_before": Point(lambda: Fault("put_if_absent", COMMIT, "before"), lands=False, error_fails=True),
    "commit_after": Point(lambda: Fault("put_if_absent", COMMIT, "after"), lands=True, error_fails=False),
    "commit_landed_store_down": Point(
        lambda: Fault("put_if_absent", COMMIT, "store_down", applied=True), lands=True, error_fails=True, outcome_known=False
    ),
    "commit_lost_store_down": Point(
        lambda: Fault("put_if_absent", COMMIT, "store_down", applied=False), lands=False, error_fails=True, outcome_known=False
    ),
    "checkpoint": Point(lambda: Fault("write", CHECKPOINT, "before"), lands=True, error_fails=False),
    "last_checkpoint": Point(lambda: Fault("write", LAST_CHECKPOINT, "before"), lands=True, error_fails=False),
    "log_cleanup": Point(lambda: Fault("delete", LOG_FILE, "before"), lands=True, error_fails=False),
}

# The reported losses (commit landed, then an error or Ctrl-C) under both kinds of failure;
# the other points under a store error.
INTERRUPTED_POINTS = ("commit_after", "checkpoint", "log_cleanup")
CASES = [(op, point, "error") for op in OPERATIONS for point in POINTS] + [
    (op, point, "interrupt") for op in OPERATIONS for point in INTERRUPTED_POINTS
]

_TEMPLATES: dict[bool, Path] = {}


def _template(spark: SparkSession, directory: Path, deletion_vectors: bool) -> Path:
    """A partitioned table of ids 0..19 in four appends (small files for OPTIMIZE)."""
    if deletion_vectors not in _TEMPLATES:
        path = directory / f"template_dv{int(deletion_vectors)}"
        properties = {**_PROPERTIES, "delta.enableDeletionVectors": str(deletion_vectors).lower()}
        for start in range(0, 20, 5):
            writer = spark.createDataFrame([(i, "old", i % 2) for i in range(start, start + 5)], "id INT, v STRING, p INT").write
            writer = writer.format("delta").mode("append").partitionBy("p")
            for key, value in properties.items():
                writer = writer.option(key, value)
            writer.save(str(path))
        _TEMPLATES[deletion_vectors] = path
    return _TEMPLATES[deletion_vectors]


@pytest.fixture(scope="module")
def template_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fault_templates")


def _data_files(root: Path) -> set[str]:
    """Every data and deletion-vector file under ``root`` (not the log)."""
    return {str(p) for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts and not p.name.startswith(".")}


def _referenced(root: Path, version: int) -> set[str]:
    """Absolute paths of the data and DV files ``version`` reads."""
    snapshot = Table(str(root)).snapshot(version=version)
    paths = {f"{root}/{unquote(p)}" for p in snapshot.files.column("path").to_pylist()}
    for dv in snapshot.files.column("deletionVector").to_pylist():
        if dv is not None and dv["storageType"] == "u":
            paths.add(str(DeletionVectorDescriptor.from_dict(dv).absolute_path(str(root))))
    return paths


def _versions(root: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in (root / "_delta_log").glob("*.json"))


def _rows(spark: SparkSession, root: Path) -> Rows:
    return {r.id: r.v for r in spark.read.format("delta").load(str(root)).collect()}


@pytest.mark.connect_once_per(
    "operation", "point", reason="a Ctrl-C or a store error at the same point unwinds the kernel's commit alike on both"
)
@pytest.mark.parametrize(("operation", "point", "kind"), CASES)
def test_fault_never_loses_committed_data(
    spark: SparkSession,
    template_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    operation: str,
    point: str,
    kind: str,
) -> None:
    op, where = OPERATIONS[operation], POINTS[point]
    root = tmp_path / "table=1 +é"
    shutil.copytree(_template(spark, template_dir, op.deletion_vectors), root)
    before_version = _versions(root)[-1]
    before_rows = _rows(spark, root)
    before_files = _data_files(root)
    fault = where.fault()
    if kind == "interrupt":
        fault.error = KeyboardInterrupt

    inject(monkeypatch, fault)
    fails = kind == "interrupt" or where.error_fails
    if fails:
        with pytest.raises(KeyboardInterrupt if kind == "interrupt" else OSError):
            op.run(spark, str(root))
    else:
        op.run(spark, str(root))
    monkeypatch.undo()
    assert fault.fired, f"the fault at {point} never fired"

    latest = _versions(root)[-1]
    assert latest == before_version + (1 if where.lands else 0)
    for version in _versions(root):
        missing = _referenced(root, version) - _data_files(root)
        assert not missing, f"version {version} lost files: {sorted(missing)}"
    expected = op.model(before_rows) if where.lands else before_rows
    assert _rows(spark, root) == expected
    if not op.deletion_vectors:  # delta-rs reads no deletion vectors
        oracle = RsTable(str(root)).to_pyarrow_table().to_pydict()
        assert dict(zip(oracle["id"], oracle["v"], strict=True)) == expected
    leftovers = _data_files(root) - before_files - _referenced(root, latest)
    if not where.lands and where.outcome_known:
        assert not leftovers, f"files of a commit that did not land were kept: {sorted(leftovers)}"
    if not where.outcome_known:
        assert _data_files(root) >= before_files  # nothing deleted while the outcome was unknown


def test_auto_compaction_failure_keeps_the_committed_write(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write's commit lands; the auto compaction after it fails: the write succeeds."""
    root = tmp_path / "auto"
    for start in range(0, 20, 5):
        spark.createDataFrame([(i, "old", i % 2) for i in range(start, start + 5)], "id INT, v STRING, p INT").write.format(
            "delta"
        ).mode("append").option("delta.autoOptimize.autoCompact", "true").save(str(root))
    spark.conf.set("spark.databricks.delta.autoCompact.minNumFiles", "2")
    try:
        fault = Fault("put_if_absent", COMMIT, "before", nth=2)  # the compaction's commit
        inject(monkeypatch, fault)
        before = _versions(root)[-1]
        _append(spark, str(root))
        monkeypatch.undo()
    finally:
        spark.conf.unset("spark.databricks.delta.autoCompact.minNumFiles")
    assert fault.fired
    assert _versions(root)[-1] == before + 1
    assert Table(str(root)).history()[0].commit_info["operation"] == "WRITE"
    assert sorted(_rows(spark, root)) == [*range(20), *range(100, 105)]
    assert not (_referenced(root, before + 1) - _data_files(root))
