"""Log replay against the reference tables: our snapshots must match delta-rs's.

For every table and version where delta-rs answered, the active file set and the
schema must be equal. Where delta-rs errors, the reference implementation's expectation
(see shared/conformance/README.md) is asserted instead.
"""

from __future__ import annotations

import json
from urllib.parse import unquote

import pytest
from oracles import conformance_root, load_manifest

from sparkdelta.kernel import (
    InvalidLogError,
    Table,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from sparkdelta.kernel.log_segment import build_log_segment
from sparkdelta.kernel.snapshot import Snapshot, load_batches

MANIFEST = load_manifest()

CASES = [
    (name, int(version))
    for name, table in sorted(MANIFEST.items())
    if "error" not in table
    for version, expected in sorted(table["versions"].items(), key=lambda kv: int(kv[0]))
    if "files" in expected
]


def _table(name: str) -> Table:
    return Table(str(conformance_root() / "tables" / name))


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}@v{v}" for n, v in CASES])
def test_file_set_and_schema_match_delta_rs(name: str, version: int) -> None:
    expected = MANIFEST[name]["versions"][str(version)]
    snapshot = _table(name).snapshot(version)
    assert snapshot.version == version
    assert sorted(unquote(p) for p in snapshot.file_paths()) == sorted(unquote(p) for p in expected["files"])
    assert snapshot.schema.to_json() == json.loads(expected["schema"])


@pytest.mark.parametrize("name", sorted(n for n, t in MANIFEST.items() if "error" not in t))
def test_latest_version_and_protocol_match_delta_rs(name: str) -> None:
    expected = MANIFEST[name]
    snapshot = _table(name).snapshot()
    assert snapshot.version == expected["latest"]
    assert list(snapshot.partition_columns) == expected["partition_columns"]
    protocol = expected["protocol"]
    assert snapshot.protocol.min_reader_version == protocol["min_reader_version"]
    assert snapshot.protocol.min_writer_version == protocol["min_writer_version"]
    for ours, theirs in (
        (snapshot.protocol.reader_features, protocol["reader_features"]),
        (snapshot.protocol.writer_features, protocol["writer_features"]),
    ):
        assert sorted(ours or []) == sorted(theirs or []), "delta-rs reports an empty feature list as None"


@pytest.mark.parametrize(
    ("name", "error", "words"),
    [
        ("deltalog-invalid-protocol-version", UnsupportedFeatureError, "minReaderVersion=99"),
        ("deltalog-state-reconstruction-without-metadata", InvalidLogError, "no metaData"),
        ("deltalog-state-reconstruction-without-protocol", InvalidLogError, "no protocol"),
        ("deltalog-state-reconstruction-from-checkpoint-missing-metadata", InvalidLogError, "no metaData"),
        ("deltalog-state-reconstruction-from-checkpoint-missing-protocol", InvalidLogError, "no protocol"),
        ("versions-not-contiguous", InvalidLogError, "missing version 1"),
        ("no-delta-log-folder", TableNotFoundError, "no _delta_log"),
    ],
)
def test_broken_tables_are_refused_with_a_named_cause(name: str, error: type, words: str) -> None:
    with pytest.raises(error, match=words) as raised:
        _table(name).snapshot()
    assert name in str(raised.value)


@pytest.mark.parametrize("variant", ["normal-a", "normal-b", "special-a", "special-b"])
def test_remove_cancels_add_spelled_differently(variant: str) -> None:
    table = _table(f"canonicalized-paths-{variant}")
    assert table.snapshot(0).num_files == 1
    assert table.snapshot(1).num_files == 0
    assert table.snapshot(1).tombstones.num_rows == 1


def test_corrupt_last_checkpoint_is_only_a_hint() -> None:
    table = _table("corrupted-last-checkpoint")
    snapshot = table.snapshot()
    segment = build_log_segment(table.storage, table.root, skip_checkpoints_from=0)
    from_json_only = Snapshot(table.storage, segment, load_batches(table.storage, segment))
    assert snapshot.version == from_json_only.version == 10
    assert sorted(snapshot.file_paths()) == sorted(from_json_only.file_paths())


def test_commit_info_is_read_with_all_fields() -> None:
    (record,) = _table("deltalog-commit-info").history()
    info = record.commit_info
    assert (record.version, info["operation"], info["userName"], info["userMetadata"]) == (0, "WRITE", "username_0", "foo")
    assert info["job"]["jobId"] == "job_id_0" and info["notebook"]["notebookId"] == "notebook_id_0"
    assert _table("deltalog-commit-info").snapshot().file_paths() == ["abc"]


def test_table_whose_checkpoint_lacks_schema_string_reads_from_its_checkpoint() -> None:
    snapshot = _table("update-deleted-directory").snapshot()
    assert snapshot.segment.checkpoint_version == 0
    assert sorted(snapshot.file_paths(), key=int) == [str(i) for i in range(1, 11)]
    assert snapshot.schema.fields == ()


@pytest.mark.parametrize("name", ["v2-checkpoint-json", "v2-checkpoint-parquet"])
def test_v2_checkpoint_with_sidecars_is_used(name: str) -> None:
    snapshot = _table(name).snapshot()
    assert snapshot.segment.checkpoint[0].kind.value == "v2-checkpoint"
    assert snapshot.num_files == len(MANIFEST[name]["versions"]["2"]["files"])


def test_multi_part_checkpoint_is_used() -> None:
    snapshot = _table("multi-part-checkpoint").snapshot()
    assert len(snapshot.segment.checkpoint) == 2
    assert snapshot.num_files == len(MANIFEST["multi-part-checkpoint"]["versions"]["1"]["files"])


@pytest.mark.parametrize(
    ("name", "feature"),
    [("collations-table", "collations"), ("table-with-icebegCompatV2Enabled", "icebergCompatV2")],
)
def test_writes_to_tables_with_unsupported_writer_features_are_refused_by_name(name: str, feature: str) -> None:
    from sparkdelta.kernel import AddFile

    table = _table(name)
    with pytest.raises(UnsupportedFeatureError, match=feature):
        table.transaction().commit([AddFile("x.parquet", {}, 1, 1)], "WRITE")


def test_reader_gate_names_what_an_engine_lacks() -> None:
    snapshot = _table("dv-with-columnmapping").snapshot()
    with pytest.raises(UnsupportedFeatureError, match="deletionVectors") as raised:
        snapshot.require_readable(frozenset({"columnMapping"}))
    assert raised.value.features == frozenset({"deletionVectors"})


def test_checkpoints_we_write_on_v2_checkpoint_tables_carry_checkpoint_metadata(tmp_path) -> None:
    import shutil

    import pyarrow.parquet as pq
    from oracles import delta_rs_files

    from sparkdelta.kernel import AddFile

    path = tmp_path / "v2"
    shutil.copytree(conformance_root() / "tables" / "v2-checkpoint-parquet", path)
    table = Table(str(path))
    results = [table.transaction().commit([AddFile(f"new{i}.parquet", {}, 1, 1)], "WRITE") for i in range(2)]
    assert [r.checkpointed for r in results] == [False, True]  # delta.checkpointInterval=2
    checkpoint = pq.read_table(path / "_delta_log" / f"{4:020d}.checkpoint.parquet")
    assert [m for m in checkpoint.column("checkpointMetadata").to_pylist() if m] == [{"version": 4, "tags": []}]
    assert sorted(table.snapshot().file_paths()) == delta_rs_files(path)
