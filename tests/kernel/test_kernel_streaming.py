"""The stream planner (``kernel/streaming.py``) without Spark: what a restarted query reads.

Spark records only where each micro-batch ends; a query restarted before its first batch
finished asks the source for its initial offset again and reads that batch once more. The
planner of the restart (a new one, over the table as it is then, with more commits) must
plan the same files for it as the first run did, whatever the options; and a change-feed
commit of ``cdc`` files must not be split between batches (delta-spark's whole-commit
admission). The log is written directly, with files that need not exist: planning reads
only the log.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kernel_helpers import SCHEMA_STRING, now_ms

from sparkdelta.kernel import AddCDCFile, AddFile, Metadata, Protocol, RemoveFile, Table
from sparkdelta.kernel.streaming import Admission, SourceOffset, StreamOptions, StreamPlanner

CDF = {"delta.enableChangeDataFeed": "true"}


def _table(root: Path, configuration: dict[str, str] | None = None, commits: int = 3) -> Table:
    table = Table(str(root))
    metadata = Metadata(str(uuid.uuid4()), SCHEMA_STRING, ("p",), dict(configuration or {}), created_time=now_ms())
    table.transaction().commit([Protocol(1, 4), metadata], "CREATE TABLE")
    for _ in range(commits):
        _append(table)
    return table


def _append(table: Table, files: int = 1) -> None:
    adds = [AddFile(f"p=a/{uuid.uuid4().hex}.parquet", {"p": "a"}, 100, now_ms()) for _ in range(files)]
    table.transaction().commit(adds, "WRITE")


def _paths(planner: StreamPlanner, start: SourceOffset, end: SourceOffset) -> list[tuple[int, str]]:
    files = planner.files_between(start, end)
    return list(zip(files.column("version").to_pylist(), files.column("path").to_pylist(), strict=True))


def _first_batch(table: Table, options: StreamOptions) -> tuple[SourceOffset, list[tuple[int, str]]]:
    """The first run: the first batch's recorded end, and the files it read."""
    planner = StreamPlanner(table, options, table.snapshot())
    start = planner.initial_offset()
    end = planner.latest_offset(start, options.admission)
    return end, _paths(planner, start, end)


OPTIONS = {
    "default": StreamOptions(),
    "one file a batch": StreamOptions(admission=Admission(1)),
    "all at once": StreamOptions(admission=Admission(None, None)),
    "bytes": StreamOptions(admission=Admission(None, 250)),
    "startingVersion": StreamOptions(starting_version=2),
    "startingVersion, one file": StreamOptions(starting_version=1, admission=Admission(1)),
    "excludeRegex": StreamOptions(exclude_regex="^$"),
    "skipChangeCommits": StreamOptions(skip_change_commits=True, admission=Admission(1)),
    "withEventTimeOrder": StreamOptions(event_time_column="id", admission=Admission(1)),
    "change feed": StreamOptions(read_change_feed=True),
    "change feed, one file": StreamOptions(read_change_feed=True, admission=Admission(1)),
}


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
def test_a_replayed_first_batch_reads_what_the_first_run_planned(tmp_path: Path, options: StreamOptions) -> None:
    table = _table(tmp_path / "t", CDF)
    end, planned = _first_batch(table, options)
    assert planned
    for _ in range(3):  # other writers move the table on before the restart
        _append(table, files=2)
    restarted = StreamPlanner(Table(table.root), options, Table(table.root).snapshot())
    assert _paths(restarted, restarted.initial_offset(), end) == planned


def test_a_replayed_first_batch_after_a_starting_timestamp(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    since = datetime.fromtimestamp(table.commit_timestamps()[2][1] / 1000, UTC)
    options = StreamOptions(starting_timestamp=since.isoformat(), admission=Admission(1))
    end, planned = _first_batch(table, options)
    assert [version for version, _ in planned] == [2]
    _append(table)
    restarted = StreamPlanner(Table(table.root), options, Table(table.root).snapshot())
    assert _paths(restarted, restarted.initial_offset(), end) == planned


def test_a_first_batch_that_went_past_its_snapshot_replays_from_the_version_before_its_end(tmp_path: Path) -> None:
    """A batch planned from the snapshot of version 3 that took the commits after it too is
    read again from the snapshot of the version before its end (delta-spark's rule): the
    same files, the later ones now part of that snapshot."""
    table = _table(tmp_path / "t")
    planner = StreamPlanner(table, StreamOptions(), table.snapshot())
    _append(table)
    _append(table)
    end = planner.latest_offset(planner.initial_offset(), Admission(None, None))
    assert end == SourceOffset(6, -1)
    planned = {path for _, path in _paths(planner, planner.initial_offset(), end)}
    _append(table)
    restarted = StreamPlanner(Table(table.root), StreamOptions(), Table(table.root).snapshot())
    assert {path for _, path in _paths(restarted, restarted.initial_offset(), end)} == planned
    assert len(planned) == 5


def test_starting_version_latest_pins_its_start_in_an_empty_first_batch(tmp_path: Path) -> None:
    """With ``latest`` the first batch ends where it starts (the version after the latest at
    the first run), so a restart knows the start from the checkpoint, never from its own latest."""
    table = _table(tmp_path / "t")
    options = StreamOptions(starting_latest=True)
    planner = StreamPlanner(table, options, table.snapshot())
    _append(table)  # lands before the first batch is planned
    end = planner.latest_offset(planner.initial_offset(), options.admission)
    assert end == SourceOffset(4, -1)
    assert not _paths(planner, planner.initial_offset(), end)
    _append(table)
    restarted = StreamPlanner(Table(table.root), options, Table(table.root).snapshot())
    assert not _paths(restarted, restarted.initial_offset(), end)
    following = restarted.latest_offset(end, options.admission)
    assert [version for version, _ in _paths(restarted, end, following)] == [4, 5]


def _cdc_commit(table: Table, cdc_files: int) -> None:
    """An UPDATE as a change-feed writer commits it: the file rewritten, and its changes in ``cdc`` files."""
    old = table.snapshot().files.column("path")[0].as_py()
    actions: list[object] = [RemoveFile(old, now_ms(), partition_values={"p": "a"})]
    actions.append(AddFile(f"p=a/{uuid.uuid4().hex}.parquet", {"p": "a"}, 100, now_ms()))
    actions += [AddCDCFile(f"_change_data/p=a/{uuid.uuid4().hex}.parquet", {"p": "a"}, 100) for _ in range(cdc_files)]
    table.transaction().commit(actions, "UPDATE")


def test_a_commit_of_change_files_goes_into_one_batch_whole(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", CDF, commits=1)
    start = SourceOffset(2, -1)
    _cdc_commit(table, cdc_files=2)  # version 2
    _append(table)  # version 3
    planner = StreamPlanner(table, StreamOptions(read_change_feed=True), table.snapshot())
    # The batch's first commit goes in whole, though it holds more files than the limit...
    end = planner.latest_offset(start, Admission(1))
    assert end == SourceOffset(3, -1)
    assert len(_paths(planner, start, end)) == 2
    # ...a later one only when it fits in what the batch has left.
    before = SourceOffset(1, -1)
    assert planner.latest_offset(before, Admission(2)) == SourceOffset(2, -1)
    assert planner.latest_offset(before, Admission(3)) == SourceOffset(3, -1)
    # Without the change feed, files are admitted one by one as before.
    plain = StreamPlanner(table, StreamOptions(ignore_changes=True), table.snapshot())
    assert plain.latest_offset(SourceOffset(3, -1), Admission(1)) == SourceOffset(4, -1)
