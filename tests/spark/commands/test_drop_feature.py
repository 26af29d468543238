"""ALTER TABLE ... DROP FEATURE and ``DeltaTable.dropFeatureSupport``: the protocol goes down,
the data stays, and delta-rs (which refuses deletion vectors) reads the table afterwards."""

from __future__ import annotations

import os
import time
from pathlib import Path

import deltalake
import pytest
from pyspark.sql import SparkSession

from sparkdelta.exceptions import InvalidTableOperationError, UnsupportedFeatureError
from sparkdelta.kernel import Table
from sparkdelta.kernel.actions import Protocol
from sparkdelta.kernel.log_files import LogFileKind
from sparkdelta.kernel.log_segment import list_log
from sparkdelta.tables import DeltaTable

DAY_SECONDS = 86_400


def _ids_spark(spark: SparkSession, path: str, version: int | None = None) -> list[int]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(r.id for r in reader.load(path).collect())


def _ids_deltalake(path: str) -> list[int]:
    return sorted(deltalake.DeltaTable(path).to_pyarrow_table().column("id").to_pylist())


def _operations(path: str) -> list[str]:
    return [r.commit_info["operation"] for r in Table(path).history()][::-1]


def _checkpoint_versions(path: str) -> set[int]:
    return {f.version for f in list_log(Table(path).storage, Table(path).log_dir) if f.kind is LogFileKind.CHECKPOINT}


def _age_log(path: str, days: int = 2) -> None:
    """Make every log file look ``days`` old, as if the retention period had passed."""
    then = time.time() - days * DAY_SECONDS
    for name in sorted(os.listdir(Path(path) / "_delta_log")):
        os.utime(Path(path) / "_delta_log" / name, (then, then))
        then += 1


@pytest.fixture
def dv_table(spark: SparkSession, tmp_path: Path) -> str:
    path = str(tmp_path / "dv")
    spark.range(0, 100, numPartitions=2).write.format("delta").option("delta.enableDeletionVectors", "true").save(path)
    DeltaTable.forPath(spark, path).delete("id % 10 = 3")
    assert Table(path).snapshot().files.column("deletionVector").null_count < 2
    with pytest.raises(Exception, match="deletionVectors"):
        deltalake.DeltaTable(path).to_pyarrow_table()
    return path


def test_dropping_deletion_vectors_purges_them_behind_protected_checkpoints(spark: SparkSession, dv_table: str) -> None:
    expected = [i for i in range(100) if i % 10 != 3]
    before = Table(dv_table).latest_version()
    spark.sql(f"ALTER TABLE delta.`{dv_table}` DROP FEATURE deletionVectors")
    snapshot = Table(dv_table).snapshot()
    dropped_at = snapshot.version
    assert snapshot.protocol == Protocol(1, 7, None, frozenset({"appendOnly", "invariants", "checkpointProtection"}))
    assert snapshot.configuration == {"delta.requireCheckpointProtectionBeforeVersion": str(dropped_at)}
    assert snapshot.files.column("deletionVector").null_count == snapshot.num_files
    assert _operations(dv_table)[before + 1 :] == [
        "SET TBLPROPERTIES",
        "REORG",
        "Empty Commit",
        "Empty Commit",
        "Empty Commit",
        "DROP FEATURE",
    ]
    assert {dropped_at - 3, dropped_at - 2, dropped_at - 1, dropped_at} <= _checkpoint_versions(dv_table)
    assert _ids_deltalake(dv_table) == expected == _ids_spark(spark, dv_table)
    assert _ids_spark(spark, dv_table, before) == expected  # history with DVs still reads here
    DeltaTable.forPath(spark, dv_table).delete("id = 0")  # now copy-on-write
    assert Table(dv_table).snapshot().files.column("deletionVector").null_count == Table(dv_table).snapshot().num_files
    assert _ids_deltalake(dv_table) == expected[1:]


def test_truncate_history_waits_for_retention_then_downgrades_fully(spark: SparkSession, dv_table: str) -> None:
    table = DeltaTable.forPath(spark, dv_table)
    with pytest.raises(InvalidTableOperationError, match=r"partly done.*TRUNCATE HISTORY"):
        table.dropFeatureSupport("deletionVectors", truncateHistory=True)
    assert "deletionVectors" in Table(dv_table).snapshot().protocol.reader_features
    with pytest.raises(InvalidTableOperationError, match=r"cannot drop deletionVectors yet: version \d+ uses it"):
        table.dropFeatureSupport("deletionVectors", truncateHistory=True)
    _age_log(dv_table)
    table.dropFeatureSupport("deletionVectors", truncateHistory=True)
    snapshot = Table(dv_table).snapshot()
    assert snapshot.protocol == Protocol(1, 2)
    assert min(f.version for f in list_log(Table(dv_table).storage, Table(dv_table).log_dir)) > 0
    assert _ids_deltalake(dv_table) == [i for i in range(100) if i % 10 != 3]


def test_checkpoint_protection_goes_only_with_history_before_it(spark: SparkSession, dv_table: str) -> None:
    table = DeltaTable.forPath(spark, dv_table)
    table.dropFeatureSupport("deletionVectors")
    with pytest.raises(InvalidTableOperationError, match="only be dropped with TRUNCATE HISTORY"):
        table.dropFeatureSupport("checkpointProtection")
    with pytest.raises(InvalidTableOperationError, match="before protected version"):
        spark.sql(f"ALTER TABLE delta.`{dv_table}` DROP FEATURE checkpointProtection TRUNCATE HISTORY")
    _age_log(dv_table)
    spark.sql(f"ALTER TABLE delta.`{dv_table}` DROP FEATURE checkpointProtection TRUNCATE HISTORY")
    snapshot = Table(dv_table).snapshot()
    assert snapshot.protocol == Protocol(1, 2)
    assert snapshot.configuration == {}
    assert _ids_deltalake(dv_table) == _ids_spark(spark, dv_table)


def test_check_constraints_feature_needs_its_constraints_gone(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "c")
    spark.range(5).write.format("delta").save(path)
    spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT positive CHECK (id >= 0)")
    assert Table(path).snapshot().protocol == Protocol(1, 3)
    with pytest.raises(InvalidTableOperationError, match="positive must be dropped first"):
        spark.sql(f"ALTER TABLE delta.`{path}` DROP FEATURE checkConstraints")
    spark.sql(f"ALTER TABLE delta.`{path}` DROP CONSTRAINT positive")
    spark.sql(f"ALTER TABLE delta.`{path}` DROP FEATURE checkConstraints")
    assert Table(path).snapshot().protocol == Protocol(1, 2)  # a writer feature: no barrier, no protection
    assert _operations(path)[-1] == "DROP FEATURE"
    assert _ids_deltalake(path) == list(range(5))


@pytest.mark.parametrize(
    ("feature", "truncate", "error", "words"),
    [
        ("noSuchFeature", False, UnsupportedFeatureError, "not a table feature"),
        ("deletionVectors", False, InvalidTableOperationError, "does not support it"),
        ("appendOnly", False, InvalidTableOperationError, "not removable"),
        ("checkConstraints", True, InvalidTableOperationError, "TRUNCATE HISTORY applies only to reader-writer"),
    ],
)
def test_refusals_name_the_feature_and_change_nothing(
    spark: SparkSession, tmp_path: Path, feature: str, truncate: bool, error: type, words: str
) -> None:
    path = str(tmp_path / "r")
    spark.range(3).write.format("delta").save(path)
    spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT small CHECK (id < 10)")
    version = Table(path).latest_version()
    with pytest.raises(error, match=words):
        DeltaTable.forPath(spark, path).dropFeatureSupport(feature, truncateHistory=truncate)
    assert Table(path).latest_version() == version


def test_column_mapping_drop_is_refused_by_name(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "m")
    spark.range(3).write.format("delta").option("delta.columnMapping.mode", "name").save(path)
    with pytest.raises(UnsupportedFeatureError, match="dropping columnMapping needs a rewrite"):
        spark.sql(f"ALTER TABLE delta.`{path}` DROP FEATURE columnMapping")


def test_a_drop_never_rebases_over_a_concurrent_commit(spark: SparkSession, tmp_path: Path) -> None:
    from sparkdelta.exceptions import ConcurrentWriteException
    from sparkdelta.kernel.drop_feature import REMOVABLE, _downgraded

    path = str(tmp_path / "race")
    spark.range(3).write.format("delta").option("delta.enableDeletionVectors", "true").save(path)
    table = Table(path)
    snapshot = table.snapshot()
    protocol, metadata = _downgraded(snapshot, REMOVABLE["deletionVectors"], protect=True)
    transaction = table.transaction(read_snapshot=snapshot)
    transaction.dropping_feature = "deletionVectors"
    table.transaction().commit([], "Empty Commit")  # even a commit with no actions wins the race
    with pytest.raises(ConcurrentWriteException, match="while dropping deletionVectors"):
        transaction.commit([protocol, metadata], "DROP FEATURE")
    assert "deletionVectors" in Table(path).snapshot().protocol.reader_features
