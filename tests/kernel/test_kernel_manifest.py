"""Symlink format manifests on the kernel alone: commands that run without Spark (RESTORE,
the CLI) keep them, and they are written on object stores with the URLs Hadoop reads.

Oracles: the files each test commits itself (so the lines a manifest must hold are known
in advance), Spark's partition-directory escaping as its source spells it, and boto3 for
what lands in the bucket. ``tests/spark/commands/test_manifest.py`` and
``tests/interop/test_manifest_deltaspark.py`` check them against Spark and delta-spark.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from kernel_helpers import SCHEMA_STRING, create_table, now_ms, remove, write_data_file
from object_stores import MotoServer

from sparkdelta.cli import main as cli
from sparkdelta.kernel import AddFile, Metadata, Protocol, Table
from sparkdelta.kernel.errors import InvalidTablePropertyError, UnsupportedModeError
from sparkdelta.kernel.manifest import escape_path_name, generate
from sparkdelta.kernel.restore import restore
from sparkdelta.kernel.vacuum import vacuum

ENABLED = "delta.compatibility.symlinkFormatManifest.enabled"


def manifests(root: Path) -> dict[str, list[str]]:
    base = root / "_symlink_format_manifest"
    found = {}
    for manifest in base.rglob("manifest"):
        relative = manifest.parent.relative_to(base).as_posix()
        found["" if relative == "." else relative] = manifest.read_text().splitlines()
    return found


def test_partition_names_escape_as_spark_escapes_them() -> None:
    """``ExternalCatalogUtils.escapePathName``: control characters and ``"#%'*/:=?\\{[]^`` and DEL."""
    assert escape_path_name("a b-é_$0$.") == "a b-é_$0$."
    assert escape_path_name("\"#%'*/:=?\\{[]^}") == "%22%23%25%27%2A%2F%3A%3D%3F%5C%7B%5B%5D%5E}"
    assert escape_path_name("tab\there\x01\x7f") == "tab%09here%01%7F"


def test_commits_without_spark_keep_the_manifests(tmp_path: Path) -> None:
    """Writes, a DELETE emptying a partition, RESTORE (a kernel command) and VACUUM (no file
    actions: untouched), each followed by the manifests it must leave."""
    root = tmp_path / "t"
    create_table(root, configuration={ENABLED: "true"})
    table = Table(str(root))
    assert not (root / "_symlink_format_manifest").exists()  # the creation commit has no files

    a = write_data_file(root, "p=a/a.parquet", [1])
    b = write_data_file(root, "p=b b/b.parquet", [2], p="b b")
    odd = write_data_file(root, "p=x%3Ay/c.parquet", [3], p="x:y")
    odd = dataclasses.replace(odd, path="p=x%253Ay/c.parquet")  # the log encodes the folder's "%"
    table.transaction().commit([a, b, odd], "WRITE")
    line = f"file:{root}/{{}}".format
    v1 = {"p=a": [line("p=a/a.parquet")], "p=b b": [line("p=b b/b.parquet")], "p=x%3Ay": [line("p=x%3Ay/c.parquet")]}
    assert manifests(root) == v1
    assert all(Path(lines[0].removeprefix("file:")).is_file() for lines in v1.values())

    d = write_data_file(root, "p=a/d.parquet", [4])
    table.transaction().commit([remove(b.path, "b b"), d], "WRITE")
    assert "p=b b" not in manifests(root) and not (root / "_symlink_format_manifest" / "p=b b").exists()
    assert manifests(root)["p=a"] == [line("p=a/a.parquet"), line("p=a/d.parquet")]

    restore(table, version=1)
    assert manifests(root) == v1
    vacuum(table, 0, check_retention=False)
    assert manifests(root) == v1 and table.history(1)[0].commit_info["operation"] == "VACUUM END"


def test_generation_is_no_commit_and_drops_stale_partitions(tmp_path: Path) -> None:
    root = tmp_path / "t"
    create_table(root)
    table = Table(str(root))
    table.transaction().commit([write_data_file(root, "p=a/a.parquet", [1])], "WRITE")
    stale = root / "_symlink_format_manifest" / "p=gone" / "manifest"
    stale.parent.mkdir(parents=True)
    stale.write_text("file:/nowhere\n")

    stats = generate(table, "Symlink_Format_Manifest")

    assert manifests(root) == {"p=a": [f"file:{root}/p=a/a.parquet"]} and not stale.parent.exists()
    assert (stats.files_written, stats.files_deleted, stats.partitioned) == (1, 1, True)
    assert table.latest_version() == 1
    with pytest.raises(UnsupportedModeError, match="'hive' is not supported") as refused:
        generate(table, "hive")
    assert refused.value.getCondition() == "DELTA_MODE_NOT_SUPPORTED"


def test_deletion_vectors_and_automatic_manifests_exclude_each_other(tmp_path: Path) -> None:
    root = tmp_path / "t"
    with pytest.raises(InvalidTablePropertyError) as refused:
        create_table(root, configuration={ENABLED: "true", "delta.enableDeletionVectors": "true"})
    assert refused.value.getCondition() == (
        "DELTA_VIOLATE_TABLE_PROPERTY_VALIDATION_FAILED.PERSISTENT_DELETION_VECTORS_WITH_INCREMENTAL_MANIFEST_GENERATION"
    )
    assert not (root / "_delta_log" / f"{0:020d}.json").exists()


def test_cli_generates_without_spark(tmp_path: Path) -> None:
    root = tmp_path / "t"
    create_table(root, partition_columns=())
    Table(str(root)).transaction().commit([write_data_file(root, "a.parquet", [1], p=None)], "WRITE")
    done = CliRunner().invoke(cli, ["generate", str(root), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output) == {"manifestsWritten": 1, "manifestsDeleted": 0}
    assert manifests(root) == {"": [f"file:{root}/a.parquet"]}
    refused = CliRunner().invoke(cli, ["generate", str(root), "--mode", "xyz"])
    assert refused.exit_code != 0 and "Supported modes are: symlink_format_manifest" in refused.output


def test_manifests_on_s3_name_files_by_their_s3a_urls(moto_s3: MotoServer) -> None:
    """delta-spark writes the table's Hadoop path (``s3a://``) into each line; stale
    partitions and partitions a commit empties lose their manifest objects."""
    bucket = moto_s3.new_bucket("manifest")
    table = Table(f"s3://{bucket}/t é", storage_options=moto_s3.options)
    create_table_on(table)
    files = {}
    for p in ("a", "b"):
        relative = f"p={p}/{p}.parquet"
        table.storage.write(f"{table.root}/{relative}", b"not read")
        files[p] = AddFile(relative, {"p": p}, 8, 0)
    table.transaction().commit(list(files.values()), "WRITE")
    client = moto_s3.client()
    client.put_object(Bucket=bucket, Key="t é/_symlink_format_manifest/p=gone/manifest", Body=b"x\n")

    generate(table, "symlink_format_manifest")

    prefix = "t é/_symlink_format_manifest/"
    assert sorted(moto_s3.keys(bucket, prefix)) == [f"{prefix}p=a/manifest", f"{prefix}p=b/manifest"]
    body = client.get_object(Bucket=bucket, Key=f"{prefix}p=a/manifest")["Body"].read().decode()
    assert body == f"s3a://{bucket}/t é/p=a/a.parquet\n"

    enabled = dataclasses.replace(table.snapshot().metadata, configuration={ENABLED: "true"})
    table.transaction().commit([enabled], "SET TBLPROPERTIES")
    table.transaction().commit([remove(files["b"].path, "b")], "DELETE")
    assert sorted(moto_s3.keys(bucket, prefix)) == [f"{prefix}p=a/manifest"]


def create_table_on(table: Table) -> None:
    """Version 0 of ``table`` (any storage), as ``kernel_helpers.create_table`` makes it locally."""
    metadata = Metadata("manifest-test", SCHEMA_STRING, ("p",), {}, created_time=now_ms())
    table.transaction().commit([Protocol(1, 2), metadata], "CREATE TABLE")
