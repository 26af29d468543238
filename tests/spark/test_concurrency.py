"""Concurrent writers: real multi-process commits, and each conflict rule deterministically.

The deterministic tests open transactions A and B on the same read version, commit B,
then commit A, and check A either rebases onto B (and lands at B's version + 1) or fails
with the exception delta-spark raises, leaving the table exactly as B left it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from kernel_helpers import (
    SCHEMA_STRING,
    Child,
    add,
    added_paths_by_version,
    assert_log_intact,
    commit_versions,
    create_table,
    deltalake_state,
    log_dir,
    read_commit,
    remove,
    replayed_paths,
    table_state,
    temp_files,
)

from sparkdelta.kernel import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentTransactionException,
    InvalidTableOperationError,
    IsolationLevel,
    Metadata,
    MetadataChangedException,
    Protocol,
    ProtocolChangedException,
    SetTransaction,
    Table,
)

SER = IsolationLevel.SERIALIZABLE
WSER = IsolationLevel.WRITE_SERIALIZABLE
A0 = "p=a/a0.parquet"
B0 = "p=b/b0.parquet"


# --------------------------------------------------------------------------- many processes


@pytest.mark.timeout(120)
def test_parallel_processes_blind_appends_lose_nothing(tmp_path: Path) -> None:
    root = tmp_path / "table"
    create_table(root)
    workers, per_worker = 4, 25
    go = tmp_path / "go"
    levels = [SER, WSER, SER, WSER]
    children = [
        Child("append-worker", str(root), f"w{k}", str(per_worker), str(go), levels[k].value, stderr_path=tmp_path / f"w{k}.err")
        for k in range(workers)
    ]
    try:
        for child in children:
            child.wait_for('{"event": "ready"', timeout=60)
        go.touch()  # start all writers at once
        reports = {}
        for k, child in enumerate(children):
            events = [json.loads(line) for line in child.drain(timeout=90)]
            reports[f"w{k}"] = [e for e in events if e["event"] == "committed"]
    finally:
        for child in children:
            child.close()

    total = workers * per_worker
    by_version = {}
    for worker, events in reports.items():
        assert len(events) == per_worker, f"{worker} reported {len(events)} commits"
        for e in events:
            assert e["version"] not in by_version, f"two writers were told they own version {e['version']}"
            by_version[e["version"]] = (worker, e["path"])
    # every commit got its own version, and together they fill 1..N exactly
    assert sorted(by_version) == list(range(1, total + 1))

    # the log: contiguous 0..N, each N.json parses, and holds exactly the add its writer reported
    assert assert_log_intact(root) == list(range(total + 1))
    adds = added_paths_by_version(root)
    for version, (_, path) in by_version.items():
        assert adds[version] == [path], f"version {version} holds {adds[version]}, its writer committed {path}"
    infos = [read_commit(root, v)[0]["commitInfo"] for v in range(1, total + 1)]
    assert len({i["txnId"] for i in infos}) == total
    assert all(i["readVersion"] < v for v, i in zip(range(1, total + 1), infos, strict=False))
    assert temp_files(root) == []

    # the writers really ran concurrently: ownership of consecutive versions alternates
    owners = [by_version[v][0] for v in range(1, total + 1)]
    switches = sum(1 for x, y in zip(owners, owners[1:], strict=False) if x != y)
    assert switches > workers, f"writers ran one after the other (owners: {owners})"

    # no commit lost: the kernel's snapshot, a naive JSON replay and delta-rs all agree
    expected = frozenset(path for _, path in by_version.values())
    assert table_state(root) == (total, expected)
    assert replayed_paths(root) == expected
    assert deltalake_state(root) == (total, expected)

    # checkpoints written under contention are complete for their version
    hint = json.loads((log_dir(root) / "_last_checkpoint").read_text())
    assert isinstance(hint["version"], int) and hint["version"] % 10 == 0
    for cp in sorted(log_dir(root).glob("*.checkpoint.parquet")):
        version = int(cp.name[:20])
        rows = pq.read_table(cp, columns=["add"]).column("add").drop_null()
        assert len(rows) == version, f"checkpoint {version} holds {len(rows)} adds, expected {version}"
    assert (log_dir(root) / f"{total:020d}.checkpoint.parquet").exists()
    assert Table(str(root)).snapshot().segment.checkpoint_version is not None


# --------------------------------------------------------------------------- two transactions


@pytest.fixture
def table(tmp_path: Path) -> str:
    """Partitioned by ``p``; version 1 holds p=a/a0 and p=b/b0."""
    root = str(tmp_path / "table")
    create_table(root)
    Table(root).transaction().commit([add(A0, "a"), add(B0, "b")], "WRITE")
    return root


def open_pair(root: str, a_level: IsolationLevel = SER, b_level: IsolationLevel = SER):
    a = Table(root).transaction(a_level)
    b = Table(root).transaction(b_level)
    assert a.read_version == b.read_version == 1
    return a, b


def commit_b(b, actions, operation: str = "WRITE"):
    result = b.commit(actions, operation)
    assert (result.version, result.attempts) == (2, 1)
    return result


def assert_refused(root: str, a, actions, exc: type[Exception]) -> Exception:
    """A's commit fails with exactly ``exc`` and the table stays exactly as before."""
    before = table_state(root)
    versions = commit_versions(root)
    with pytest.raises(exc) as info:
        a.commit(actions, "WRITE")
    assert type(info.value) is exc
    assert table_state(root) == before
    assert commit_versions(root) == versions
    assert temp_files(root) == []
    return info.value


def assert_rebased(root: str, a, actions, expected_version: int = 3) -> None:
    result = a.commit(actions, "WRITE")
    assert result.version == expected_version
    assert result.attempts == 2
    assert result.commit_info["readVersion"] == 1
    assert commit_versions(root) == list(range(expected_version + 1))
    assert temp_files(root) == []


def test_whole_table_read_conflicts_with_blind_append_under_serializable(table: str) -> None:
    a, b = open_pair(table, SER)
    a.mark_read_whole_table()
    commit_b(b, [add("p=b/b1.parquet", "b")])
    assert_refused(table, a, [add("p=a/a1.parquet", "a")], ConcurrentAppendException)
    assert table_state(table) == (2, frozenset({A0, B0, "p=b/b1.parquet"}))


def test_whole_table_read_rebases_past_blind_append_under_write_serializable(table: str) -> None:
    a, b = open_pair(table, WSER)
    a.mark_read_whole_table()
    result = commit_b(b, [add("p=b/b1.parquet", "b")])
    assert result.commit_info["isBlindAppend"] is True
    assert_rebased(table, a, [add("p=a/a1.parquet", "a")])
    assert table_state(table) == (3, frozenset({A0, B0, "p=b/b1.parquet", "p=a/a1.parquet"}))


def test_whole_table_read_conflicts_with_non_blind_append_under_write_serializable(table: str) -> None:
    a, b = open_pair(table, WSER)
    a.mark_read_whole_table()
    b.mark_read_predicate(pc.field("p") == "b")  # B read something: its append is not blind
    result = commit_b(b, [add("p=b/b1.parquet", "b")])
    assert result.commit_info["isBlindAppend"] is False
    assert_refused(table, a, [add("p=a/a1.parquet", "a")], ConcurrentAppendException)


@pytest.mark.parametrize("level", [SER, WSER], ids=lambda lv: lv.value)
def test_disjoint_partition_predicate_rebases(table: str, level: IsolationLevel) -> None:
    a, b = open_pair(table, level)
    a.mark_read_predicate(pc.field("p") == "a")
    b.mark_read_predicate(pc.field("p") == "b")
    commit_b(b, [add("p=b/b1.parquet", "b")])
    assert_rebased(table, a, [add("p=a/a1.parquet", "a")])
    assert table_state(table)[1] == {A0, B0, "p=b/b1.parquet", "p=a/a1.parquet"}


@pytest.mark.parametrize(
    "level, b_blind",
    [(SER, True), (SER, False), (WSER, False)],
    ids=["serializable-blind-winner", "serializable-reading-winner", "write-serializable-reading-winner"],
)
def test_overlapping_partition_predicate_conflicts(table: str, level: IsolationLevel, b_blind: bool) -> None:
    a, b = open_pair(table, level)
    a.mark_read_predicate(pc.field("p") == "a")
    if not b_blind:
        b.mark_read_predicate(pc.field("p") == "a")
    commit_b(b, [add("p=a/a1.parquet", "a")])
    assert_refused(table, a, [add("p=a/a2.parquet", "a")], ConcurrentAppendException)


def test_overlapping_predicate_rebases_past_blind_append_under_write_serializable(table: str) -> None:
    a, b = open_pair(table, WSER)
    a.mark_read_predicate(pc.field("p") == "a")
    commit_b(b, [add("p=a/a1.parquet", "a")])
    assert_rebased(table, a, [add("p=a/a2.parquet", "a")])


def test_winner_adding_without_data_change_does_not_conflict_with_predicate(table: str) -> None:
    """A compaction-style add (dataChange=false) is not new data for a reader of p='a'."""
    a, b = open_pair(table, SER)
    a.mark_read_predicate(pc.field("p") == "a")
    commit_b(b, [add("p=a/a0-copy.parquet", "a", data_change=False)])
    assert_rebased(table, a, [add("p=a/a1.parquet", "a")])


def test_predicate_on_a_data_column_conflicts_conservatively(table: str) -> None:
    a, b = open_pair(table, SER)
    a.mark_read_predicate(pc.field("id") > 10)  # cannot be judged on partition values alone
    commit_b(b, [add("p=b/b1.parquet", "b")])
    assert_refused(table, a, [add("p=a/a1.parquet", "a")], ConcurrentAppendException)


def test_type_mismatched_predicate_conflicts_conservatively(table: str) -> None:
    a, b = open_pair(table, SER)
    a.mark_read_predicate(pc.field("p") == 5)  # p is a string column
    commit_b(b, [add("p=b/b1.parquet", "b")])
    assert_refused(table, a, [add("p=a/a1.parquet", "a")], ConcurrentAppendException)


def test_always_true_predicate_on_unpartitioned_table_conflicts(tmp_path: Path) -> None:
    root = str(tmp_path / "flat")
    create_table(root, partition_columns=())
    Table(root).transaction().commit([add("f0.parquet", None)], "WRITE")
    a, b = open_pair(root, SER)
    a.mark_read_predicate(pc.scalar(True))  # "every row": equivalent to reading the whole table
    commit_b(b, [add("f1.parquet", None)])
    assert_refused(root, a, [add("f2.parquet", None)], ConcurrentAppendException)


@pytest.mark.parametrize("spelling", ["relative", "absolute", "file-uri"])
def test_read_file_removed_concurrently_raises_delete_read(table: str, spelling: str) -> None:
    a, b = open_pair(table, WSER)
    name = {"relative": A0, "absolute": f"{table}/{A0}", "file-uri": f"file://{table}/{A0}"}[spelling]
    a.mark_files_read([name])
    commit_b(b, [remove(A0, "a")])
    assert_refused(table, a, [add("p=a/a1.parquet", "a")], ConcurrentDeleteReadException)
    assert table_state(table) == (2, frozenset({B0}))


def test_whole_table_read_conflicts_with_any_concurrent_remove(table: str) -> None:
    a, b = open_pair(table, WSER)
    a.mark_read_whole_table()
    commit_b(b, [remove(B0, "b")])
    assert_refused(table, a, [add("p=a/a1.parquet", "a")], ConcurrentDeleteReadException)


def test_unrelated_remove_does_not_conflict_with_file_read(table: str) -> None:
    a, b = open_pair(table, SER)
    a.mark_files_read([A0])
    commit_b(b, [remove(B0, "b")])
    assert_rebased(table, a, [remove(A0, "a"), add("p=a/a1.parquet", "a")])
    assert table_state(table) == (3, frozenset({"p=a/a1.parquet"}))


def test_both_remove_same_file_raises_delete_delete(table: str) -> None:
    a, b = open_pair(table, WSER)
    commit_b(b, [remove(A0, "a")])
    assert_refused(table, a, [remove(A0, "a")], ConcurrentDeleteDeleteException)
    assert table_state(table) == (2, frozenset({B0}))


def test_metadata_change_conflicts_even_with_a_blind_append(table: str) -> None:
    a, b = open_pair(table, WSER)
    old = Table(table).snapshot().metadata
    new = Metadata(old.id, old.schema_string, old.partition_columns, {"delta.appendOnly": "true"}, created_time=old.created_time)
    commit_b(b, [new], "SET TBLPROPERTIES")
    assert_refused(table, a, [add("p=a/a1.parquet", "a")], MetadataChangedException)
    assert Table(table).snapshot().configuration == {"delta.appendOnly": "true"}


def test_protocol_change_conflicts(table: str) -> None:
    a, b = open_pair(table, WSER)
    commit_b(b, [Protocol(1, 3)], "UPGRADE PROTOCOL")
    assert_refused(table, a, [add("p=a/a1.parquet", "a")], ProtocolChangedException)
    assert Table(table).snapshot().protocol == Protocol(1, 3)


def test_same_app_id_committed_twice_raises_concurrent_transaction(table: str) -> None:
    a, b = open_pair(table, WSER)
    commit_b(b, [SetTransaction("stream-1", 7, 1), add("p=a/b-batch.parquet", "a")])
    assert_refused(table, a, [SetTransaction("stream-1", 7, 2), add("p=a/a-batch.parquet", "a")], ConcurrentTransactionException)
    assert Table(table).snapshot().app_transactions["stream-1"].last_updated == 1


def test_app_id_read_then_committed_by_winner_raises_concurrent_transaction(table: str) -> None:
    a, b = open_pair(table, WSER)
    a.mark_app_transaction_read("stream-1")
    commit_b(b, [SetTransaction("stream-1", 1)])
    assert_refused(table, a, [add("p=a/a1.parquet", "a")], ConcurrentTransactionException)


def test_different_app_ids_rebase(table: str) -> None:
    a, b = open_pair(table, SER)
    commit_b(b, [SetTransaction("stream-b", 3)])
    assert_rebased(table, a, [SetTransaction("stream-a", 5)])
    txns = Table(table).snapshot().app_transactions
    assert {k: v.version for k, v in txns.items()} == {"stream-a": 5, "stream-b": 3}


def test_two_creators_in_one_empty_directory(tmp_path: Path) -> None:
    root = str(tmp_path / "new")
    a = Table(root).transaction()
    b = Table(root).transaction()
    assert a.read_version == b.read_version == -1

    def create(txn, metadata_id: str):
        return txn.commit([Protocol(1, 2), Metadata(metadata_id, SCHEMA_STRING, ("p",), {})], "CREATE TABLE")

    assert create(b, "winner").version == 0
    with pytest.raises(ProtocolChangedException):
        create(a, "loser")
    assert commit_versions(root) == [0]
    assert temp_files(root) == []
    snapshot = Table(root).snapshot()
    assert (snapshot.version, snapshot.metadata.id) == (0, "winner")


@pytest.mark.parametrize("level", [SER, WSER], ids=lambda lv: lv.value)
def test_blind_append_rebases_past_an_append(table: str, level: IsolationLevel) -> None:
    a, b = open_pair(table, level)
    commit_b(b, [add("p=a/b1.parquet", "a")])
    assert_rebased(table, a, [add("p=a/a1.parquet", "a")])
    assert table_state(table) == (3, frozenset({A0, B0, "p=a/b1.parquet", "p=a/a1.parquet"}))


def test_rebase_checks_every_winner_not_just_the_first(table: str) -> None:
    a, b1 = open_pair(table, SER)
    b2 = Table(table).transaction()
    a.mark_read_predicate(pc.field("p") == "a")
    commit_b(b1, [add("p=b/b1.parquet", "b")])  # harmless winner at version 2
    assert b2.commit([add("p=a/b2.parquet", "a")], "WRITE").version == 3  # conflicting winner at version 3
    assert_refused(table, a, [add("p=a/a1.parquet", "a")], ConcurrentAppendException)
    assert table_state(table)[0] == 3


def test_rebase_past_several_harmless_winners(table: str) -> None:
    a = Table(table).transaction(SER)
    a.mark_read_predicate(pc.field("p") == "a")
    for i in range(3):
        Table(table).transaction().commit([add(f"p=b/w{i}.parquet", "b")], "WRITE")
    result = a.commit([add("p=a/a1.parquet", "a")], "WRITE")
    assert (result.version, result.attempts) == (5, 2)


# --------------------------------------------------------------------------- appendOnly


@pytest.fixture
def append_only(tmp_path: Path) -> str:
    root = str(tmp_path / "append_only")
    create_table(root, configuration={"delta.appendOnly": "true"})
    Table(root).transaction().commit([add(A0, "a"), add(B0, "b")], "WRITE")
    return root


@pytest.mark.parametrize(
    "actions",
    [
        [remove(A0, "a")],
        [remove(A0, "a"), add("p=a/a0-updated.parquet", "a")],
    ],
    ids=["delete", "update"],
)
def test_append_only_refuses_data_changing_removes(append_only: str, actions) -> None:
    before, versions = table_state(append_only), commit_versions(append_only)
    with pytest.raises(InvalidTableOperationError, match="append-only"):
        Table(append_only).transaction().commit(actions, "DELETE")
    assert table_state(append_only) == before
    assert commit_versions(append_only) == versions
    assert temp_files(append_only) == []


def test_append_only_binds_from_the_commit_after_the_one_that_turns_it_on(table: str) -> None:
    """delta-spark's ``assertRemovable`` checks the table as the commit read it: the commit that
    turns appendOnly on may still remove (a REPLACE does); every later one may not."""
    old = Table(table).snapshot().metadata
    new = Metadata(old.id, old.schema_string, old.partition_columns, {"delta.appendOnly": "TRUE"}, created_time=old.created_time)
    Table(table).transaction().commit([new, remove(A0, "a")], "DELETE")
    with pytest.raises(InvalidTableOperationError, match="append-only"):
        Table(table).transaction().commit([remove(B0, "b")], "DELETE")
    assert commit_versions(table) == [0, 1, 2]


def test_append_only_allows_appends_and_rearranging_removes(append_only: str) -> None:
    result = Table(append_only).transaction().commit([add("p=a/a1.parquet", "a")], "WRITE")
    assert result.version == 2
    compact = [remove(A0, "a", data_change=False), add("p=a/compacted.parquet", "a", data_change=False)]
    assert Table(append_only).transaction().commit(compact, "OPTIMIZE").version == 3
    assert table_state(append_only) == (3, frozenset({B0, "p=a/a1.parquet", "p=a/compacted.parquet"}))
