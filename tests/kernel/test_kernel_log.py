"""Kernel behaviour on tables we write: time travel, checkpoints, log cleanup, gates."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sparkdelta.kernel import (
    AddFile,
    DomainMetadata,
    InvalidTableOperationError,
    Metadata,
    Protocol,
    RemoveFile,
    SetTransaction,
    Table,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from sparkdelta.kernel.checkpoint import cleanup_expired_logs, parse_interval_ms

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
DAY_MS = 86_400_000


DEFAULT_PROTOCOL = Protocol(1, 2)


def create(path: Path, configuration: dict[str, str] | None = None, protocol: Protocol = DEFAULT_PROTOCOL) -> Table:
    table = Table(str(path))
    table.transaction().commit([protocol, Metadata("tid", SCHEMA, ("p",), configuration or {}, created_time=1)], "CREATE TABLE")
    return table


def append(table: Table, name: str, partition: str = "a") -> int:
    add = AddFile(f"p={partition}/{name}.parquet", {"p": partition}, 100, 1)
    return table.transaction().commit([add], "WRITE", {"mode": "Append"}).version


def set_commit_mtime(table: Table, version: int, millis: int) -> None:
    os.utime(f"{table.log_dir}/{version:020d}.json", ns=(millis * 1_000_000, millis * 1_000_000))


def test_each_version_sees_its_own_files(tmp_path: Path) -> None:
    table = create(tmp_path)
    for i in range(5):
        append(table, f"f{i}")
    for version in range(6):
        assert table.snapshot(version).num_files == version
    with pytest.raises(VersionNotFoundError, match="latest version is 5"):
        table.snapshot(6)


def test_timestamp_travel_picks_last_commit_at_or_before(tmp_path: Path) -> None:
    table = create(tmp_path)
    append(table, "f1")
    append(table, "f2")
    base = 1_700_000_000_000
    for version in range(3):
        set_commit_mtime(table, version, base + version * 60_000)
    assert table.version_at_timestamp(base + 60_000) == 1
    assert table.version_at_timestamp(base + 90_000) == 1
    assert table.snapshot(timestamp="2023-11-14T22:15:20Z").version == 2
    assert table.snapshot(timestamp="2023-11-14 22:15:19.999").version == 1
    with pytest.raises(VersionNotFoundError, match="before the earliest"):
        table.version_at_timestamp(base - 1)
    with pytest.raises(VersionNotFoundError, match="after the latest"):
        table.version_at_timestamp(base + 10 * 60_000)


def test_non_monotonic_file_times_are_adjusted(tmp_path: Path) -> None:
    table = create(tmp_path)
    append(table, "f1")
    set_commit_mtime(table, 0, 2_000_000)
    set_commit_mtime(table, 1, 1_000_000)
    assert table.commit_timestamps() == [(0, 2_000_000), (1, 2_000_001)]


def test_in_commit_timestamps_are_written_and_used(tmp_path: Path) -> None:
    protocol = Protocol(3, 7, frozenset(), frozenset({"inCommitTimestamp"}))
    table = create(
        tmp_path,
        {"delta.enableInCommitTimestamps": "true", "delta.inCommitTimestampEnablementVersion": "0"},
        protocol,
    )
    append(table, "f1")
    infos = [table.read_commit_info(v) for v in range(2)]
    assert all("inCommitTimestamp" in i for i in infos)
    assert infos[1]["inCommitTimestamp"] > infos[0]["inCommitTimestamp"]
    first_line = (Path(table.log_dir) / f"{1:020d}.json").read_text().splitlines()[0]
    assert first_line.startswith('{"commitInfo"'), "the spec puts commitInfo first with ICT"
    set_commit_mtime(table, 1, 1)  # file times no longer matter
    assert table.commit_timestamps() == [(0, infos[0]["inCommitTimestamp"]), (1, infos[1]["inCommitTimestamp"])]
    assert table.snapshot().timestamp == infos[1]["inCommitTimestamp"]


def test_checkpoint_layout_matches_delta_spark(tmp_path: Path) -> None:
    protocol = Protocol(1, 7, None, frozenset({"domainMetadata", "appendOnly", "invariants"}))
    table = create(tmp_path, {"delta.checkpointInterval": "2"}, protocol)
    append(table, "f1")
    tx = table.transaction()
    result = tx.commit(
        [
            AddFile("p=b/f2.parquet", {"p": "b"}, 7, 1, stats='{"numRecords":3}', tags={"INSERTION_TIME": "1"}),
            SetTransaction("app", 4, 5),
            DomainMetadata("myapp.settings", '{"owner":"ops"}'),
        ],
        "WRITE",
    )
    assert result.checkpointed
    last = json.loads((Path(table.log_dir) / "_last_checkpoint").read_text())
    assert last["version"] == 2 and last["numOfAddFiles"] == 2
    checkpoint = pq.read_table(f"{table.log_dir}/{2:020d}.checkpoint.parquet")
    assert checkpoint.column_names == ["txn", "add", "remove", "metaData", "protocol", "domainMetadata"]
    assert last["size"] == checkpoint.num_rows == 6
    adds = [a for a in checkpoint.column("add").to_pylist() if a]
    added = next(a for a in adds if a["path"] == "p=b/f2.parquet")
    assert added["stats"] == '{"numRecords":3}' and added["tags"] == [("INSERTION_TIME", "1")]
    assert added["partitionValues"] == [("p", "b")]
    snapshot = table.snapshot()
    assert snapshot.segment.checkpoint_version == 2 and snapshot.segment.deltas == ()
    assert snapshot.app_transactions["app"].version == 4
    assert set(snapshot.domain_metadata) == {"myapp.settings"}


def test_tombstones_expire_from_checkpoints(tmp_path: Path) -> None:
    table = create(tmp_path, {"delta.checkpointInterval": "3", "delta.deletedFileRetentionDuration": "interval 1 day"})
    append(table, "old")
    append(table, "recent")
    now = int(time.time() * 1000)
    tx = table.transaction()
    tx.mark_files_read(["p=a/old.parquet", "p=a/recent.parquet"])
    tx.commit(
        [
            RemoveFile("p=a/old.parquet", now - 2 * DAY_MS),
            RemoveFile("p=a/recent.parquet", now - 1000),
        ],
        "DELETE",
    )
    checkpoint = pq.read_table(f"{table.log_dir}/{3:020d}.checkpoint.parquet")
    removed = [r["path"] for r in checkpoint.column("remove").to_pylist() if r]
    assert removed == ["p=a/recent.parquet"]
    assert table.snapshot().num_files == 0


def test_log_cleanup_keeps_every_version_inside_retention(tmp_path: Path) -> None:
    table = create(tmp_path, {"delta.checkpointInterval": "5", "delta.logRetentionDuration": "interval 10 days"})
    for i in range(14):
        append(table, f"f{i}")
    now = int(time.time() * 1000)
    for version in range(15):
        set_commit_mtime(table, version, now - (30 - version) * DAY_MS if version <= 7 else now - DAY_MS)
    deleted = cleanup_expired_logs(table.storage, table.snapshot(), now)
    remaining = sorted(p.name for p in Path(table.log_dir).iterdir())
    assert deleted == 5, remaining  # versions 0-4, below the expired checkpoint at 5
    assert f"{5:020d}.checkpoint.parquet" in remaining
    assert f"{4:020d}.json" not in remaining
    for version in range(5, 15):
        assert table.snapshot(version).num_files == version
    with pytest.raises(VersionNotFoundError, match="cannot be reconstructed"):
        table.snapshot(3)


def test_intervals_parse_like_delta_properties() -> None:
    assert parse_interval_ms("interval 30 days") == 30 * DAY_MS
    assert parse_interval_ms("interval 1 week") == 7 * DAY_MS
    assert parse_interval_ms("168 hours") == 7 * DAY_MS
    with pytest.raises(ValueError, match="cannot parse"):
        parse_interval_ms("soon")


def test_unknown_writer_feature_is_refused_by_name(tmp_path: Path) -> None:
    protocol = Protocol(3, 7, frozenset(), frozenset({"icebergCompatV2", "futureFeature"}))
    with pytest.raises(UnsupportedFeatureError, match="futureFeature, icebergCompatV2"):
        create(tmp_path, protocol=protocol)
    assert not Table(str(tmp_path)).exists()


def test_unknown_reader_feature_blocks_reads_by_name(tmp_path: Path) -> None:
    log_dir = tmp_path / "_delta_log"
    log_dir.mkdir()
    (log_dir / f"{0:020d}.json").write_text(
        json.dumps(
            {
                "protocol": {
                    "minReaderVersion": 3,
                    "minWriterVersion": 7,
                    "readerFeatures": ["quantumFiles"],
                    "writerFeatures": ["quantumFiles"],
                }
            }
        )
        + "\n"
        + json.dumps({"metaData": Metadata("x", SCHEMA).to_dict()})
        + "\n"
    )
    snapshot = Table(str(tmp_path)).snapshot()
    with pytest.raises(UnsupportedFeatureError, match="quantumFiles"):
        snapshot.require_readable()


def test_append_only_refuses_deletes(tmp_path: Path) -> None:
    table = create(tmp_path, {"delta.appendOnly": "true"})
    append(table, "f1")
    with pytest.raises(InvalidTableOperationError, match="append-only"):
        table.transaction().commit([RemoveFile("p=a/f1.parquet", 1)], "DELETE")
    assert table.latest_version() == 1


def test_append_only_is_the_table_as_read(tmp_path: Path) -> None:
    """As delta-spark's ``assertRemovable``: the snapshot a commit read decides, so a commit that
    turns the property on may still remove (a REPLACE TABLE ... appendOnly), and one that turns
    it off may not remove in the same commit."""
    table = create(tmp_path)
    append(table, "f1")
    snapshot = table.snapshot()
    turned_on = replace(snapshot.metadata, configuration={"delta.appendOnly": "true"})
    table.transaction().commit([turned_on, RemoveFile("p=a/f1.parquet", 1)], "REPLACE TABLE AS SELECT")
    append(table, "f2")
    turned_off = replace(table.snapshot().metadata, configuration={"delta.appendOnly": "false"})
    with pytest.raises(InvalidTableOperationError, match="append-only"):
        table.transaction().commit([turned_off, RemoveFile("p=a/f2.parquet", 1)], "WRITE")
    assert table.latest_version() == 3 and table.snapshot().configuration == {"delta.appendOnly": "true"}


def test_operation_parameters_are_json_strings_but_a_missing_value_is_null(tmp_path: Path) -> None:
    """delta-spark writes a CTAS's missing ``description`` as JSON null, not ``"null"``."""
    table = create(tmp_path)
    table.transaction().commit([], "CREATE TABLE AS SELECT", {"description": None, "isManaged": "false", "n": 3})
    assert table.read_commit_info(1)["operationParameters"] == {"description": None, "isManaged": "false", "n": "3"}


def test_commit_info_carries_delta_spark_fields(tmp_path: Path) -> None:
    table = create(tmp_path)
    tx = table.transaction()
    tx.commit([AddFile("p=a/x.parquet", {"p": "a"}, 1, 1)], "WRITE", {"mode": "Append", "partitionBy": ["p"]}, {"numFiles": 1})
    info = table.read_commit_info(1)
    assert info["operation"] == "WRITE" and info["readVersion"] == 0 and info["isBlindAppend"] is True
    assert info["operationParameters"] == {"mode": "Append", "partitionBy": '["p"]'}
    assert info["operationMetrics"] == {"numFiles": "1"} and info["isolationLevel"] == "Serializable"
    assert info["txnId"] == tx.txn_id and info["engineInfo"].startswith("sparkdelta/")
    assert "readVersion" not in table.read_commit_info(0)


def test_compacted_log_files_are_used(tmp_path: Path) -> None:
    table = create(tmp_path)
    for i in range(3):
        append(table, f"f{i}")
    lines = []
    for version in range(1, 4):
        lines += [ln for ln in (Path(table.log_dir) / f"{version:020d}.json").read_text().splitlines() if '"add"' in ln]
    compacted = Path(table.log_dir) / f"{1:020d}.{3:020d}.compacted.json"
    compacted.write_text("\n".join(lines) + "\n")
    snapshot = table.snapshot()
    assert [d.kind.value for d in snapshot.segment.deltas] == ["commit", "compaction"]
    assert snapshot.num_files == 3
    assert table.snapshot(2).num_files == 2, "a compaction reaching past the version is not used"


def test_a_table_built_again_at_the_same_path_is_never_read_from_the_log_cache(tmp_path: Path) -> None:
    """Commits of the same sizes and (backdated) times at the same path: the second table's own are read."""
    path = tmp_path / "t"
    first = create(path)
    append(first, "one")
    stamps = (1_600_000_000_000, 1_600_000_001_000)
    for version, millis in enumerate(stamps):
        set_commit_mtime(first, version, millis)
    sizes = [os.path.getsize(f"{first.log_dir}/{v:020d}.json") for v in range(2)]
    assert first.snapshot().file_paths() == ["p=a/one.parquet"]
    shutil.rmtree(path)
    second = create(path)
    append(second, "two")
    for version, millis in enumerate(stamps):
        set_commit_mtime(second, version, millis)
    assert [os.path.getsize(f"{second.log_dir}/{v:020d}.json") for v in range(2)] == sizes, "the same sizes, or no test"
    assert Table(str(path)).snapshot().file_paths() == ["p=a/two.parquet"]
