"""Symlink format manifests from Spark: ``DeltaTable.generate``, ``GENERATE ... FOR TABLE`` and
``delta.compatibility.symlinkFormatManifest.enabled`` (every commit updates them).

Oracle: delta-rs's reading of the log (the active files) grouped by the directories Spark's
own writer put them in (Spark names partition directories as a manifest's are named), so a
manifest must list exactly, as ``file:`` paths, the active files of its partition. Refusals
are checked against delta-spark's error classes; ``tests/interop/test_manifest_deltaspark.py``
compares the manifests with delta-spark's own.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

import pytest
from oracles import delta_rs_files
from pyspark.sql import SparkSession

from sparkdelta.exceptions import (
    DeltaAnalysisException,
    DeltaIllegalArgumentException,
    DeltaRuntimeException,
    DeltaUnsupportedOperationException,
    PostCommitHookError,
)
from sparkdelta.kernel import Table
from sparkdelta.kernel.storage import LocalStorage
from sparkdelta.tables import DeltaTable

ENABLED = "delta.compatibility.symlinkFormatManifest.enabled"


def manifests(path: str) -> dict[str, list[str]]:
    """Relative manifest directory ("" for the root) -> the manifest's lines, as written."""
    root = Path(path) / "_symlink_format_manifest"
    found = {}
    for manifest in root.rglob("manifest"):
        relative = manifest.parent.relative_to(root).as_posix()
        found["" if relative == "." else relative] = manifest.read_text().splitlines()
    return found


def expected(path: str) -> dict[str, list[str]]:
    """What the manifests must be: delta-rs's active files, grouped by the folder Spark wrote each in."""
    partitioned = bool(Table(path).snapshot().partition_columns)
    groups: dict[str, list[str]] = {} if partitioned else {"": []}
    for relative in delta_rs_files(path):
        groups.setdefault(posixpath.dirname(relative), []).append(f"file:{path}/{relative}")
    return {d: sorted(lines) for d, lines in groups.items()}


def enable(spark: SparkSession, path: str, on: bool = True) -> None:
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('{ENABLED}' = '{str(on).lower()}')")


def _partitioned(spark: SparkSession, path: str, parallelism: int, parts1: int, parts2: int, mode: str = "overwrite") -> None:
    rows = spark.range(0, 100 if parallelism else 0, 1, max(parallelism, 1)).selectExpr(
        "CAST(id AS INT) AS value", f"CAST(id % {parts1} AS INT) AS part1", f"CAST(id % {parts2} AS INT) AS part2"
    )
    rows.write.format("delta").partitionBy("part1", "part2").mode(mode).save(path)


def test_generate_lists_every_active_file_and_commits_nothing(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "path with space" / "t")
    spark.range(100).repartition(7).write.format("delta").save(path)
    assert not (Path(path) / "_symlink_format_manifest").exists()
    history = DeltaTable.forPath(spark, path).history().count()

    DeltaTable.forPath(spark, path).generate("symlink_format_manifest")

    found = manifests(path)
    assert found == expected(path) and len(found[""]) == 7
    assert all(Path(line.removeprefix("file:")).is_file() for line in found[""])
    assert Table(path).latest_version() == 0 and DeltaTable.forPath(spark, path).history().count() == history
    assert (Path(path) / "_symlink_format_manifest" / "manifest").read_text().endswith("\n")


def test_partition_folders_are_named_as_spark_names_them(spark: SparkSession, tmp_path: Path) -> None:
    """delta-spark's "special partition column values" and names: each manifest sits in the
    folder Spark's writer made for the same values, and lists that folder's files."""
    path = str(tmp_path / "t")
    values = ["$0$", "_1_", "", " ", "  ", "/", None, "a:b", "100%", "x=y", "库尔 勒", "a#b{c}[d]^e", "tab\there"]
    rows = [(i % 2 if i % 3 else None, v, i) for i, v in enumerate(values)]
    spark.createDataFrame(rows, "part1 INT, `a/b.` STRING, value INT").write.format("delta").partitionBy("part1", "a/b.").save(
        path
    )
    spark.sql(f"GENERATE symlink_format_manifest FOR TABLE delta.`{path}`")
    found = manifests(path)
    assert found == expected(path)
    assert "part1=__HIVE_DEFAULT_PARTITION__/a%2Fb.=__HIVE_DEFAULT_PARTITION__" in found  # null and "" alike
    assert "part1=1/a%2Fb.=a%3Ab" in found and "part1=__HIVE_DEFAULT_PARTITION__/a%2Fb.=tab%09here" in found


def test_full_generation_replaces_stale_partition_manifests(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _partitioned(spark, path, 10, 10, 10)
    DeltaTable.forPath(spark, path).generate("SYMLINK_FORMAT_MANIFEST")
    assert manifests(path) == expected(path) and len(manifests(path)) == 10

    for shape, count in (((1, 1, 1), 1), ((5, 5, 5), 5), ((5, 10, 5), 10)):
        _partitioned(spark, path, *shape)
        assert manifests(path) != expected(path)  # manifests lag until generated
        DeltaTable.forPath(spark, path).generate("symlink_format_manifest")
        assert manifests(path) == expected(path) and len(manifests(path)) == count

    DeltaTable.forPath(spark, path).delete()
    DeltaTable.forPath(spark, path).generate("symlink_format_manifest")
    assert manifests(path) == {}

    plain = str(tmp_path / "plain")
    spark.range(10).write.format("delta").save(plain)
    DeltaTable.forPath(spark, plain).generate("symlink_format_manifest")
    DeltaTable.forPath(spark, plain).delete()
    DeltaTable.forPath(spark, plain).generate("symlink_format_manifest")
    assert manifests(plain) == {"": []} and (Path(plain) / "_symlink_format_manifest" / "manifest").read_bytes() == b""


def test_sql_by_name_and_path_and_its_refusals(spark: SparkSession, tmp_path: Path) -> None:
    spark.sql("DROP TABLE IF EXISTS manifest_named")
    spark.range(10).repartition(3).write.format("delta").saveAsTable("manifest_named")
    location = Table(DeltaTable.forName(spark, "manifest_named").detail().collect()[0].location).root
    assert spark.sql("GENERATE symlink_ForMat_Manifest FOR TABLE manifest_named").collect() == []
    assert manifests(location) == expected(location)

    path = str(tmp_path / "t")
    spark.range(2).write.format("delta").save(path)
    with pytest.raises(DeltaIllegalArgumentException, match="symlink_format_manifest") as refused:
        spark.sql(f"GENERATE xyz FOR TABLE delta.`{path}`")
    assert refused.value.getCondition() == "DELTA_MODE_NOT_SUPPORTED" and "'xyz' is not supported" in str(refused.value)
    with pytest.raises(DeltaIllegalArgumentException, match="DELTA_MODE_NOT_SUPPORTED"):
        DeltaTable.forPath(spark, path).generate("manifest")
    # The mode is checked first, as delta-spark does: even on no table.
    with pytest.raises(DeltaIllegalArgumentException):
        spark.sql(f"GENERATE xyz FOR TABLE delta.`{tmp_path / 'nothing'}`")
    with pytest.raises(DeltaAnalysisException, match="is not a Delta table"):
        spark.sql(f"GENERATE symlink_format_manifest FOR TABLE delta.`{tmp_path / 'nothing'}`")
    # delta-spark's grammar takes a table name or delta.`path` here, not a quoted path.
    with pytest.raises(DeltaAnalysisException) as parse:
        spark.sql(f"GENERATE symlink_format_manifest FOR TABLE '{path}'")
    assert parse.value.getCondition() == "PARSE_SYNTAX_ERROR"
    assert not (Path(path) / "_symlink_format_manifest").exists()


def test_commits_update_the_partitions_they_touch(spark: SparkSession, tmp_path: Path) -> None:
    """delta-spark's "incremental manifest: partitioned table", step by step against the oracle."""
    path = str(tmp_path / "t")
    _partitioned(spark, path, 1, 1, 1)
    enable(spark, path)
    assert manifests(path) == {}  # a commit without file actions writes none

    _partitioned(spark, path, 10, 10, 10)
    assert manifests(path) == expected(path) and len(manifests(path)) == 10

    table = DeltaTable.forPath(spark, path)
    table.update("value = 1", {"part1": "0", "value": "-1"})  # one file out of part1=1, one into part1=0
    assert manifests(path) == expected(path) and len(manifests(path)) == 11
    table.delete("value = -1")
    assert manifests(path) == expected(path) and len(manifests(path)) == 10
    table.delete("part1 = 3")  # the partition empties: its manifest goes
    assert manifests(path) == expected(path) and "part1=3/part2=3" not in manifests(path)
    assert not (Path(path) / "_symlink_format_manifest" / "part1=3" / "part2=3").exists()
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1000, 42, 42)")
    assert manifests(path) == expected(path) and "part1=42/part2=42" in manifests(path)
    table.optimize().executeCompaction()  # dataChange=false rewrites are file actions too
    assert manifests(path) == expected(path)
    table.restoreToVersion(2)  # RESTORE runs on the kernel alone, and updates them as well
    assert manifests(path) == expected(path) and len(manifests(path)) == 10
    _partitioned(spark, path, 0, 1, 1)
    assert manifests(path) == {} and expected(path) == {}

    enable(spark, path, False)
    _partitioned(spark, path, 5, 5, 5)
    assert manifests(path) == {}  # no longer kept up


def test_first_commit_after_enabling_writes_every_partition(spark: SparkSession, tmp_path: Path) -> None:
    """delta-spark's "generate full manifest if manifest did not exist"."""
    path = str(tmp_path / "t")
    spark.range(0, 100, 1, 1).selectExpr("id", "id % 10 AS part").write.format("delta").partitionBy("part").save(path)
    enable(spark, path)
    spark.range(0, 100, 1, 1).selectExpr("id", "CAST(0 AS BIGINT) AS part").write.format("delta").partitionBy("part").mode(
        "append"
    ).save(path)
    assert manifests(path) == expected(path) and len(manifests(path)) == 10 and len(manifests(path)["part=0"]) == 2


def test_unpartitioned_table_keeps_one_manifest(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(100).repartition(1).write.format("delta").save(path)
    enable(spark, path)
    for files in (7, 5):
        spark.range(100).repartition(files).write.format("delta").mode("overwrite").save(path)
        assert manifests(path) == expected(path) and len(manifests(path)[""]) == files
    spark.sql(f"DELETE FROM delta.`{path}`")
    assert manifests(path) == {"": []}


def test_a_failed_manifest_leaves_the_commit_standing(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """delta-spark's "failure to generate manifest throws exception": DELTA_POST_COMMIT_HOOK_FAILED,
    naming the hook, with the cause; the version is committed and its files kept."""
    path = str(tmp_path / "t")
    spark.range(10).write.format("delta").save(path)
    enable(spark, path)
    write = LocalStorage.write

    def failing(self: LocalStorage, target: str, data: bytes) -> None:
        if "_symlink_format_manifest" in target:
            raise OSError("Test exception")
        write(self, target, data)

    monkeypatch.setattr(LocalStorage, "write", failing)
    with pytest.raises(DeltaRuntimeException, match="Generate Symlink Format Manifest") as failed:
        spark.range(10, 15).write.format("delta").mode("append").save(path)
    assert isinstance(failed.value, PostCommitHookError) and failed.value.version == 2
    assert failed.value.getCondition() == "DELTA_POST_COMMIT_HOOK_FAILED" and "Test exception" in str(failed.value.__cause__)
    monkeypatch.undo()
    assert Table(path).latest_version() == 2 and spark.read.format("delta").load(path).count() == 15
    spark.range(15, 16).write.format("delta").mode("append").save(path)
    assert manifests(path) == expected(path)


def test_deletion_vectors_are_refused(spark: SparkSession, tmp_path: Path) -> None:
    """delta-spark's "block manifest generation with persistent DVs": a table that allows DVs
    but has none generates; one whose files have DVs is refused."""
    path = str(tmp_path / "t")
    spark.range(0, 50, 1, 1).write.format("delta").option("delta.enableDeletionVectors", "true").save(path)
    spark.range(50, 100, 1, 1).write.format("delta").mode("append").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id BETWEEN 0 AND 49")  # a whole file: no DV
    spark.sql(f"GENERATE symlink_format_manifest FOR TABLE delta.`{path}`")
    assert manifests(path) == expected(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id IN (51, 92, 93)")
    assert Table(path).snapshot().files.column("deletionVector").null_count == 0
    with pytest.raises(DeltaUnsupportedOperationException) as refused:
        DeltaTable.forPath(spark, path).generate("symlink_format_manifest")
    assert refused.value.getCondition() == "DELTA_UNSUPPORTED_GENERATE_WITH_DELETION_VECTORS"


def test_automatic_manifests_and_deletion_vectors_exclude_each_other(spark: SparkSession, tmp_path: Path) -> None:
    """delta-spark's "block incremental manifest generation with persistent DVs"."""
    path = str(tmp_path / "t")
    spark.range(0, 100, 1, 1).write.format("delta").save(path)

    def violation(properties: str) -> str | None:
        with pytest.raises(DeltaRuntimeException) as refused:
            spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({properties})")
        return refused.value.getCondition()

    dvs = "'delta.enableDeletionVectors' = '{}'"
    prefix = "DELTA_VIOLATE_TABLE_PROPERTY_VALIDATION_FAILED."
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({dvs.format('true')})")
    assert violation(f"'{ENABLED}' = 'true'") == prefix + "PERSISTENT_DELETION_VECTORS_WITH_INCREMENTAL_MANIFEST_GENERATION"
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({dvs.format('false')})")
    enable(spark, path)
    assert violation(dvs.format("true")) == prefix + "PERSISTENT_DELETION_VECTORS_WITH_INCREMENTAL_MANIFEST_GENERATION"
    enable(spark, path, False)
    both = f"'{ENABLED}' = 'true', {dvs.format('true')}"
    assert violation(both) == prefix + "PERSISTENT_DELETION_VECTORS_WITH_INCREMENTAL_MANIFEST_GENERATION"

    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({dvs.format('true')})")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id IN (1, 42, 43)")
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({dvs.format('false')})")
    assert violation(f"'{ENABLED}' = 'true'") == prefix + "EXISTING_DELETION_VECTORS_WITH_INCREMENTAL_MANIFEST_GENERATION"
    spark.sql(f"REORG TABLE delta.`{path}` APPLY (PURGE)")
    enable(spark, path)
    spark.range(100, 101).write.format("delta").mode("append").save(path)
    assert manifests(path) == expected(path)


def test_column_mapping_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id INT, p STRING) USING delta PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
    )
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a')")
    with pytest.raises(DeltaUnsupportedOperationException) as refused:
        spark.sql(f"GENERATE symlink_format_manifest FOR TABLE delta.`{path}`")
    assert refused.value.getCondition() == "DELTA_UNSUPPORTED_MANIFEST_GENERATION_WITH_COLUMN_MAPPING"
    enable(spark, path)
    with pytest.raises(DeltaUnsupportedOperationException, match="column mapping") as after_commit:
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (2, 'b')")
    assert any("version 3 was committed" in note for note in getattr(after_commit.value, "__notes__", []))
    assert Table(path).latest_version() == 3
    assert not (Path(path) / "_symlink_format_manifest").exists()
