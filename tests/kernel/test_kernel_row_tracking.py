"""Row ids and row commit versions as the kernel's commits assign them (PROTOCOL.md, "Row Tracking").

What delta-spark does with the same tables is checked in ``tests/interop`` (row ids read
through its ``_metadata``); these pin the kernel's own rules: ids above the high-water
mark, per commit attempt, kept on re-committed and removed files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkdelta.kernel import AddFile, InvalidTableOperationError, Metadata, Protocol, Table
from sparkdelta.kernel.file_actions import add_actions, remove_actions
from sparkdelta.kernel.row_tracking import COMMIT_VERSION_COLUMN, DOMAIN, ROW_ID_COLUMN, high_water_mark

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})


def create(path: Path, config: dict[str, str]) -> Table:
    table = Table(str(path))
    table.transaction().commit([Protocol(1, 2), Metadata("tid", SCHEMA, (), config, created_time=1)], "CREATE TABLE")
    return table


def add(path: str, rows: int | None) -> AddFile:
    return AddFile(path, {}, 10, 1, stats=None if rows is None else json.dumps({"numRecords": rows}))


def ids(table: Table) -> dict[str, tuple[int, int]]:
    files = table.snapshot().files.to_pylist()
    return {f["path"]: (f["baseRowId"], f["defaultRowCommitVersion"]) for f in files}


def test_a_new_table_with_row_tracking_names_its_columns_and_supports_the_feature(tmp_path: Path) -> None:
    table = create(tmp_path, {"delta.enableRowTracking": "true"})
    snapshot = table.snapshot()
    assert {"rowTracking", "domainMetadata"} <= (snapshot.protocol.writer_features or frozenset())
    names = snapshot.configuration[ROW_ID_COLUMN], snapshot.configuration[COMMIT_VERSION_COLUMN]
    assert names[0].startswith("_row-id-col-") and names[1].startswith("_row-commit-version-col-")
    table.transaction().commit([Metadata("tid", SCHEMA, (), {**snapshot.configuration, "x": "1"})], "SET TBLPROPERTIES")
    assert (table.snapshot().configuration[ROW_ID_COLUMN], table.snapshot().configuration[COMMIT_VERSION_COLUMN]) == names


def test_commits_give_new_files_ids_above_the_mark_and_their_version(tmp_path: Path) -> None:
    table = create(tmp_path, {"delta.enableRowTracking": "true"})
    table.transaction().commit([add("a", 3), add("b", 2)], "WRITE")
    table.transaction().commit([add("c", 0), add("d", 4)], "WRITE")
    assert ids(table) == {"a": (0, 1), "b": (3, 1), "c": (5, 2), "d": (5, 2)}
    assert high_water_mark(table.snapshot().domain_metadata) == 8
    domain = table.snapshot().domain_metadata[DOMAIN]
    assert json.loads(domain.configuration) == {"rowIdHighWaterMark": 8, "domainName": DOMAIN}


def test_a_commit_that_loses_its_version_takes_ids_above_the_winners(tmp_path: Path) -> None:
    table = create(tmp_path, {"delta.enableRowTracking": "true"})
    first, second = table.transaction(), table.transaction()
    first.commit([add("a", 3)], "WRITE")
    result = second.commit([add("b", 2)], "WRITE")
    assert result.version == 2 and result.attempts == 2
    assert ids(table) == {"a": (0, 1), "b": (3, 2)}
    assert high_water_mark(table.snapshot().domain_metadata) == 4


def test_recommitted_and_removed_files_keep_their_ids(tmp_path: Path) -> None:
    table = create(tmp_path, {"delta.enableRowTracking": "true"})
    table.transaction().commit([add("a", 3), add("b", 2)], "WRITE")
    files = table.snapshot().files
    table.transaction().commit([*remove_actions(files.slice(0, 1), data_change=True), *add_actions(files.slice(0, 1))], "DELETE")
    assert ids(table) == {"a": (0, 1), "b": (3, 1)}
    log = (Path(table.log_dir) / f"{2:020d}.json").read_text().splitlines()
    remove = next(json.loads(line)["remove"] for line in log if '"remove"' in line)
    assert (remove["baseRowId"], remove["defaultRowCommitVersion"]) == (0, 1)
    assert not any('"domainMetadata"' in line for line in log), "the mark does not move"


def test_an_add_with_ids_of_its_own_raises_the_mark_past_them(tmp_path: Path) -> None:
    table = create(tmp_path, {"delta.enableRowTracking": "true"})
    table.transaction().commit([AddFile("cloned", {}, 10, 1, stats='{"numRecords":5}', base_row_id=10)], "CLONE")
    table.transaction().commit([add("new", 1)], "WRITE")
    assert ids(table) == {"cloned": (10, 1), "new": (15, 2)}


def test_files_without_a_row_count_are_refused_and_suspension_stops_assignment(tmp_path: Path) -> None:
    table = create(tmp_path, {"delta.enableRowTracking": "true"})
    with pytest.raises(InvalidTableOperationError, match="stats lack numRecords"):
        table.transaction().commit([add("a", None)], "WRITE")
    assert table.latest_version() == 0
    suspended = create(tmp_path / "s", {"delta.feature.rowTracking": "supported", "delta.rowTrackingSuspended": "true"})
    suspended.transaction().commit([add("a", None), add("b", 2)], "WRITE")
    assert ids(suspended) == {"a": (None, None), "b": (None, None)}
    assert DOMAIN not in suspended.snapshot().domain_metadata
