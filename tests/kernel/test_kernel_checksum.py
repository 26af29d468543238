"""Version checksum files (``N.crc``): written with every commit, read, checked.

Each commit's checksum is worked out from the previous one and the commit's actions; the
oracle here is the checksum of the version's replayed state. delta-spark's validation of
sparkdelta's checksums (and the reverse) is in ``tests/interop``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from sparkdelta.kernel import AddFile, DomainMetadata, Metadata, Protocol, RemoveFile, SetTransaction, Table
from sparkdelta.kernel.checkpoint import cleanup_expired_logs
from sparkdelta.kernel.checksum import FILE_SIZE_BINS, checksum_name, of_snapshot, read_checksum
from sparkdelta.kernel.describe import table_detail
from sparkdelta.kernel.file_actions import add_actions

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
PROTOCOL = Protocol(3, 7, frozenset({"deletionVectors"}), frozenset({"deletionVectors", "domainMetadata"}))


def dv(cardinality: int) -> dict:
    path = "ab^-aqEH.-t@S}K{vb[*k^"
    return {"storageType": "u", "pathOrInlineDv": path, "offset": 1, "sizeInBytes": 36, "cardinality": cardinality}


def add(path: str, size: int, rows: int = 10, vector: dict | None = None) -> AddFile:
    return AddFile(path, {}, size, 1, stats=json.dumps({"numRecords": rows}), deletion_vector=vector)


def remove(path: str, size: int, vector: dict | None = None) -> RemoveFile:
    return RemoveFile(path, 1, size=size, deletion_vector=vector)


def test_every_commit_writes_the_checksum_of_its_version(tmp_path: Path) -> None:
    table = Table(str(tmp_path))
    table.transaction().commit([PROTOCOL, Metadata("tid", SCHEMA, (), {}, created_time=1)], "CREATE TABLE")
    commits = [
        [add("a", 100), add("b", 9_000), add("c", 50_000_000)],
        [remove("a", 100), add("a", 100, vector=dv(3))],  # rows deleted by a deletion vector
        [remove("a", 100, dv(3)), add("a", 100, vector=dv(12)), SetTransaction("app", 4, 5)],
        [remove("b", 9_000), DomainMetadata("app.domain", '{"k":1}')],
        [Metadata("tid", SCHEMA, (), {"x": "y"}, created_time=1), DomainMetadata("app.domain", "{}", removed=True)],
        add_actions(Table(str(tmp_path)).snapshot().files.slice(0, 1), data_change=False),  # a live file again
    ]
    for actions in commits:
        table.transaction().commit(actions, "WRITE")
    for version in range(len(commits) + 1):
        written = read_checksum(table.storage, table.root, version)
        assert written is not None, f"version {version} has a checksum"
        expected = of_snapshot(table.snapshot(version), txn_id=written.txn_id)
        assert written == expected, f"version {version}"
    last = read_checksum(table.storage, table.root, len(commits))
    assert last is not None
    assert (last.num_files, last.table_size_bytes, last.num_deletion_vectors, last.num_deleted_records) == (2, 50_000_100, 1, 12)
    assert last.file_counts[0] == 1 and last.file_counts[list(FILE_SIZE_BINS).index(40 << 20)] == 1
    assert last.deleted_record_counts[:3] == (1, 0, 1)
    assert [t.app_id for t in last.set_transactions] == ["app"] and not last.domain_metadata


def test_a_checksum_that_disagrees_with_the_log_is_reported_and_never_fails_a_read(tmp_path: Path) -> None:
    table = Table(str(tmp_path))
    table.transaction().commit([PROTOCOL, Metadata("tid", SCHEMA, (), {}, created_time=1)], "CREATE TABLE")
    table.transaction().commit([add("a", 100), add("b", 200)], "WRITE")
    crc = tmp_path / "_delta_log" / checksum_name(1)
    assert table_detail(table.snapshot()).num_files == 2
    crc.write_text(crc.read_text().replace('"numFiles":2', '"numFiles":5'))
    assert table_detail(table.snapshot()).num_files == 5, "DESCRIBE DETAIL answers from the checksum"
    with pytest.warns(RuntimeWarning, match="version 1 does not match its checksum file \\(num_files 2 \\(checksum: 5\\)"):
        assert table.snapshot().num_files == 2
    crc.write_text("{not json")
    assert table.snapshot().num_files == 2 and table_detail(table.snapshot()).num_files == 2
    crc.unlink()
    assert table_detail(table.snapshot()).size_in_bytes == 300


def test_a_commit_stands_when_its_checksum_cannot_be_written_and_cleanup_removes_old_ones(tmp_path: Path) -> None:
    table = Table(str(tmp_path))
    table.transaction().commit(
        [PROTOCOL, Metadata("tid", SCHEMA, (), {"delta.logRetentionDuration": "interval 1 second"}, created_time=1)],
        "CREATE TABLE",
    )
    (tmp_path / "_delta_log" / checksum_name(1)).mkdir()  # in the way of version 1's checksum
    assert table.transaction().commit([add("a", 100)], "WRITE").version == 1
    assert read_checksum(table.storage, table.root, 1) is None and table.snapshot().num_files == 1
    (tmp_path / "_delta_log" / checksum_name(1)).rmdir()
    for i in range(2, 11):
        table.transaction().commit([add(f"f{i}", 100)], "WRITE")  # a checkpoint at 10
    time.sleep(1.2)
    cleanup_expired_logs(table.storage, table.snapshot())
    assert sorted(p.name for p in (tmp_path / "_delta_log").glob("*.crc")) == [checksum_name(10)], "the checkpoint's state"
