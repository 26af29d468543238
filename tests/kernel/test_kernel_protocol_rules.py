"""Spec rules a writer must keep: protocol shape and features, lost commits, ICT enablement."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sparkdelta.kernel import (
    AddFile,
    ConcurrentAppendException,
    ConcurrentWriteException,
    DomainMetadata,
    InvalidTableOperationError,
    IsolationLevel,
    Metadata,
    Protocol,
    RemoveFile,
    Table,
    UnsupportedFeatureError,
)
from sparkdelta.kernel.checkpoint import cleanup_expired_logs
from sparkdelta.kernel.protocol import lowest_protocol, supported_features

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
            {"name": "q", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
DAY_MS = 86_400_000


def now() -> int:
    return int(time.time() * 1000)


LEGACY_DEFAULT = Protocol(1, 2)


def create(
    path: Path, config: dict[str, str] | None = None, parts: tuple[str, ...] = (), protocol: Protocol = LEGACY_DEFAULT
) -> Table:
    table = Table(str(path))
    table.transaction().commit([protocol, Metadata("tid", SCHEMA, parts, config or {}, created_time=1)], "CREATE TABLE")
    return table


def add(path: str, partition: dict[str, str] | None = None) -> AddFile:
    return AddFile(path, partition or {}, 10, now())


def test_a_transaction_whose_read_version_was_cleaned_up_cannot_commit(tmp_path: Path) -> None:
    table = create(tmp_path, {"delta.checkpointInterval": "2", "delta.logRetentionDuration": "interval 1 second"})
    table.transaction().commit([add("f1.parquet")], "WRITE")
    slow = table.transaction()
    slow.mark_read_whole_table()
    for i in range(2, 5):
        table.transaction().commit([add(f"f{i}.parquet")], "WRITE")
    time.sleep(1.2)
    for i in range(5, 7):
        table.transaction().commit([add(f"f{i}.parquet")], "WRITE")  # checkpoint at 6 cleans up below it
    assert not (Path(table.log_dir) / f"{1:020d}.json").exists()
    with pytest.raises(ConcurrentWriteException, match="no longer in the log"):
        slow.commit([RemoveFile("f1.parquet", now()), add("slow.parquet")], "DELETE")
    assert not (Path(table.log_dir) / f"{2:020d}.json").exists()
    assert "slow.parquet" not in table.snapshot().file_paths()


def test_a_protocol_action_cannot_drop_features_or_dodge_the_gate(tmp_path: Path) -> None:
    features = frozenset({"appendOnly", "invariants", "timestampNtz"})
    table = create(tmp_path, protocol=Protocol(3, 7, frozenset({"timestampNtz"}), features))
    with pytest.raises(InvalidTableOperationError, match="drops .*timestampNtz"):
        table.transaction().commit([Protocol(1, 2), add("b.parquet")], "WRITE")
    log = Path(table.log_dir) / f"{1:020d}.json"
    log.write_text(
        json.dumps(
            {
                "protocol": {
                    "minReaderVersion": 1,
                    "minWriterVersion": 7,
                    "writerFeatures": ["domainMetadata", "icebergCompatV2"],
                }
            }
        )
        + "\n"
    )
    with pytest.raises(UnsupportedFeatureError, match="icebergCompatV2"):
        table.transaction().commit([Protocol(1, 2), add("c.parquet")], "WRITE")


def test_deletion_vector_tables_are_writable(tmp_path: Path) -> None:
    dv = frozenset({"deletionVectors"})
    table = create(tmp_path, protocol=Protocol(3, 7, dv, dv))
    assert table.transaction().commit([add("b.parquet")], "WRITE").version == 1
    assert table.snapshot().protocol.writer_features == dv


@pytest.mark.parametrize(
    ("protocol", "words"),
    [
        (Protocol(3, 2, frozenset(), None), "reader version 3 needs writer version 7"),
        (Protocol(3, 7, frozenset({"timestampNtz"}), frozenset()), "must also be writer features"),
        (Protocol(1, 2, None, frozenset({"appendOnly"})), "writerFeatures need writer version 7"),
    ],
)
def test_malformed_protocols_are_refused(tmp_path: Path, protocol: Protocol, words: str) -> None:
    with pytest.raises(InvalidTableOperationError, match=words):
        create(tmp_path, protocol=protocol)


def test_reader_version_3_writes_empty_feature_lists(tmp_path: Path) -> None:
    table = create(tmp_path, protocol=Protocol(3, 7))
    first = json.loads((Path(table.log_dir) / f"{0:020d}.json").read_text().splitlines()[1])
    assert first["protocol"] == {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": [], "writerFeatures": []}


def test_repartitioning_conflicts_with_a_concurrent_blind_append(tmp_path: Path) -> None:
    table = create(tmp_path, parts=("p",))
    table.transaction().commit([add("p=a/f1.parquet", {"p": "a"})], "WRITE")
    rewrite = table.transaction(IsolationLevel.WRITE_SERIALIZABLE)
    rewrite.mark_read_whole_table()
    table.transaction().commit([add("p=b/f2.parquet", {"p": "b"})], "WRITE")
    with pytest.raises(ConcurrentAppendException):
        rewrite.commit([Metadata("tid", SCHEMA, ("q",), {}, created_time=1), RemoveFile("p=a/f1.parquet", now())], "WRITE")


def test_cleanup_keeps_versions_whose_adjusted_time_is_recent(tmp_path: Path) -> None:
    table = create(tmp_path, {"delta.checkpointInterval": "5", "delta.logRetentionDuration": "interval 10 days"})
    for i in range(11):
        table.transaction().commit([add(f"f{i}.parquet")], "WRITE")
    old, recent = now() - 40 * DAY_MS, now() - DAY_MS
    for version in range(12):
        millis = recent if version == 5 else old
        os.utime(f"{table.log_dir}/{version:020d}.json", ns=(millis * 1_000_000,) * 2)
    cleanup_expired_logs(table.storage, table.snapshot())
    assert table.snapshot(5).num_files == 5, "v5 and later are inside retention on the adjusted timeline"


def test_enabling_in_commit_timestamps_records_where_they_start(tmp_path: Path) -> None:
    table = create(tmp_path)
    table.transaction().commit([add("a.parquet")], "WRITE")
    enabled = Metadata("tid", SCHEMA, (), {"delta.enableInCommitTimestamps": "true"}, created_time=1)
    protocol = Protocol(1, 7, None, frozenset({"inCommitTimestamp", "appendOnly", "invariants"}))
    result = table.transaction().commit([protocol, enabled], "SET TBLPROPERTIES")
    config = table.snapshot().configuration
    assert config["delta.inCommitTimestampEnablementVersion"] == "2"
    assert config["delta.inCommitTimestampEnablementTimestamp"] == str(result.commit_info["inCommitTimestamp"])
    os.utime(f"{table.log_dir}/{0:020d}.json", ns=(1_000_000_000_000,) * 2)
    timeline = table.commit_timestamps()
    assert timeline[0] == (0, 1_000_000) and timeline[2] == (2, result.commit_info["inCommitTimestamp"])
    assert table.version_at_timestamp(1_000_000) == 0
    assert table.version_at_timestamp(result.commit_info["inCommitTimestamp"]) == 2


def test_commit_info_at_a_checkpointed_version_comes_from_its_commit(tmp_path: Path) -> None:
    table = create(tmp_path, {"delta.checkpointInterval": "2"})
    table.transaction().commit([add("a.parquet")], "WRITE")
    table.transaction().commit([add("b.parquet")], "WRITE", {"mode": "Append"})
    snapshot = table.snapshot()
    assert snapshot.segment.deltas == () and snapshot.commit_info["operationParameters"] == {"mode": "Append"}


def test_checkpoint_tombstones_carry_neither_stats_nor_tags(tmp_path: Path) -> None:
    table = create(tmp_path, {"delta.checkpointInterval": "2"})
    table.transaction().commit([AddFile("a.parquet", {}, 1, 1, stats='{"numRecords":1}', tags={"k": "v"})], "WRITE")
    table.transaction().commit([RemoveFile("a.parquet", now(), stats='{"numRecords":1}', tags={"k": "v"})], "DELETE")
    remove_type = pq.read_schema(f"{table.log_dir}/{2:020d}.checkpoint.parquet").field("remove").type
    assert {"stats", "tags"}.isdisjoint(f.name for f in remove_type)


def test_domain_metadata_needs_the_feature_and_system_domains_are_refused(tmp_path: Path) -> None:
    table = create(tmp_path)
    with pytest.raises(InvalidTableOperationError, match="domainMetadata table feature"):
        table.transaction().commit([DomainMetadata("app", "{}")], "SET")
    with_feature = create(tmp_path / "f", protocol=Protocol(1, 7, None, frozenset({"domainMetadata"})))
    with pytest.raises(InvalidTableOperationError, match="delta.rowTracking"):
        with_feature.transaction().commit([DomainMetadata("delta.rowTracking", "{}")], "SET")
    assert table.latest_version() == 0 and with_feature.latest_version() == 0


@pytest.mark.parametrize(
    ("protocol", "column_mapping"),
    [(Protocol(1, 5), False), (Protocol(1, 6), False), (Protocol(2, 5), True), (Protocol(2, 6), True)],
)
def test_a_legacy_writer_version_implies_column_mapping_only_with_reader_version_2(
    protocol: Protocol, column_mapping: bool
) -> None:
    """As delta-spark reads legacy protocols (``implicitlySupportedFeatures``): DESCRIBE DETAIL of a
    (1, 6) table lists identityColumns and no columnMapping, which reader version 1 cannot have."""
    features = supported_features(protocol)
    assert ("columnMapping" in features) == column_mapping
    assert ("identityColumns" in features) == (protocol.min_writer_version == 6)
    assert lowest_protocol(features) == (protocol if protocol.min_writer_version == 6 or column_mapping else Protocol(1, 4))
