"""The kernel learns whether a commit landed when the commit write's outcome is ambiguous.

A writer may delete its data files only when the log proves its commit is absent
(``Transaction.may_discard_files``); these tests drive ``Transaction.commit`` through a
storage that fails at the commit write and check the state it ends in against the log.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from faulty_storage import COMMIT, Fault, FaultyStorage
from kernel_helpers import add, commit_versions, create_table, read_commit

from sparkdelta.kernel import Table
from sparkdelta.kernel.storage import LocalStorage
from sparkdelta.kernel.transaction import CommitState


def _transaction(root: Path, fault: Fault):
    return Table(str(root), storage=FaultyStorage(fault)).transaction()


def _ours(root: Path, version: int, txn_id: str) -> bool:
    info = next(a["commitInfo"] for a in read_commit(root, version) if "commitInfo" in a)
    return info["txnId"] == txn_id


def test_success_is_committed(tmp_path: Path) -> None:
    create_table(tmp_path)
    tx = Table(str(tmp_path)).transaction()
    assert tx.state is CommitState.NOT_ATTEMPTED and tx.may_discard_files
    result = tx.commit([add("a.parquet")], "WRITE")
    assert (tx.state, tx.committed_version, result.version) == (CommitState.COMMITTED, 1, 1)
    assert not tx.may_discard_files


def test_error_before_the_write_is_not_committed(tmp_path: Path) -> None:
    create_table(tmp_path)
    tx = _transaction(tmp_path, Fault("put_if_absent", COMMIT, "before"))
    with pytest.raises(OSError, match="injected"):
        tx.commit([add("a.parquet")], "WRITE")
    assert tx.state is CommitState.NOT_COMMITTED and tx.may_discard_files
    assert commit_versions(tmp_path) == [0]


def test_error_after_the_write_landed_is_a_success(tmp_path: Path) -> None:
    """The store applied the write but its answer was lost: the version is read back as ours."""
    create_table(tmp_path)
    tx = _transaction(tmp_path, Fault("put_if_absent", COMMIT, "after"))
    result = tx.commit([add("a.parquet")], "WRITE")
    assert result.version == 1 and tx.state is CommitState.COMMITTED
    assert _ours(tmp_path, 1, tx.txn_id)


def test_interrupt_after_the_write_landed_is_raised_with_a_note(tmp_path: Path) -> None:
    create_table(tmp_path)
    tx = _transaction(tmp_path, Fault("put_if_absent", COMMIT, "after", error=KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt) as raised:
        tx.commit([add("a.parquet")], "WRITE")
    assert tx.state is CommitState.COMMITTED and tx.committed_version == 1
    assert any("version 1 was committed" in note for note in raised.value.__notes__)


def test_store_down_leaves_the_outcome_unknown(tmp_path: Path) -> None:
    create_table(tmp_path)
    tx = _transaction(tmp_path, Fault("put_if_absent", COMMIT, "store_down", applied=False))
    with pytest.raises(OSError) as raised:
        tx.commit([add("a.parquet")], "WRITE")
    assert tx.state is CommitState.UNKNOWN and not tx.may_discard_files
    assert any("unknown" in note for note in raised.value.__notes__)


class _DelayedStore(FaultyStorage):
    """An object store: a write whose answer was lost may still be applied later."""

    @property
    def failed_writes_are_final(self) -> bool:
        return False


def test_absent_after_a_failed_write_to_an_object_store_is_unknown(tmp_path: Path) -> None:
    """Only local disk proves that a failed write never lands; elsewhere the files are kept."""
    create_table(tmp_path)
    tx = Table(str(tmp_path), storage=_DelayedStore(Fault("put_if_absent", COMMIT, "before"))).transaction()
    with pytest.raises(OSError):
        tx.commit([add("a.parquet")], "WRITE")
    assert tx.state is CommitState.UNKNOWN and not tx.may_discard_files
    assert commit_versions(tmp_path) == [0]


class _RetriedPut(LocalStorage):
    """A store client that retries a write which had landed, and then hears "exists"."""

    def put_if_absent(self, path: str, data: bytes) -> None:
        super().put_if_absent(path, data)
        raise FileExistsError(path)


def test_exists_after_a_retried_write_of_our_own_commit_is_a_success(tmp_path: Path) -> None:
    create_table(tmp_path)
    tx = Table(str(tmp_path), storage=_RetriedPut()).transaction()
    result = tx.commit([add("a.parquet")], "WRITE")
    assert result.version == 1 and tx.state is CommitState.COMMITTED
    assert commit_versions(tmp_path) == [0, 1] and _ours(tmp_path, 1, tx.txn_id)


def test_losing_the_race_is_not_committed_and_retries(tmp_path: Path) -> None:
    create_table(tmp_path)
    tx = Table(str(tmp_path)).transaction()
    Table(str(tmp_path)).transaction().commit([add("b.parquet", p="b")], "WRITE")
    result = tx.commit([add("a.parquet")], "WRITE")
    assert result.version == 2 and tx.state is CommitState.COMMITTED and _ours(tmp_path, 2, tx.txn_id)
    assert not _ours(tmp_path, 1, tx.txn_id)
