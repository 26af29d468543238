"""The Change Data Feed's view of the log: which files describe each version's row changes.

PROTOCOL.md, "Change Data Files": a commit with ``cdc`` actions describes its changes only
through them (their rows carry ``_change_type``). A commit without them changed rows only
by whole files: its ``add`` actions with ``dataChange`` are inserts and its ``remove``
actions with ``dataChange`` are deletes. Every version in the range must have had
``delta.enableChangeDataFeed`` on, and its commit must still be in the log.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from datetime import datetime
from typing import cast

import pyarrow as pa

from .errors import ChangeDataFeedError, VersionNotFoundError
from .file_actions import storage_path
from .log_files import commit_name
from .parsing import parse_json_actions
from .snapshot import Snapshot
from .table import Table, to_millis

CDF_PROPERTY = "delta.enableChangeDataFeed"


@dataclass(frozen=True)
class ChangeCommit:
    """One version's changes: ``cdc`` files, or else the data-changing adds and removes."""

    version: int
    timestamp: int
    cdc: pa.StructArray
    added: pa.StructArray
    removed: pa.StructArray


@dataclass(frozen=True)
class ChangeRange:
    """The commits of a change-feed read, and the snapshot whose schema the rows take."""

    commits: list[ChangeCommit]
    snapshot: Snapshot


def _cdf_enabled(configuration: dict[str, str]) -> bool:
    return configuration.get(CDF_PROPERTY, "false").lower() == "true"


def resolve_versions(
    table: Table,
    starting_version: int | None = None,
    ending_version: int | None = None,
    starting_timestamp: datetime | str | int | None = None,
    ending_timestamp: datetime | str | int | None = None,
) -> tuple[int, int]:
    """The inclusive version range for delta-spark's startingVersion/Timestamp and endingVersion/Timestamp options.

    A starting timestamp means the first commit at or after it; an ending timestamp, the
    last commit at or before it. A range ending past the latest version ends there.
    """
    if (starting_version is None) == (starting_timestamp is None):
        raise ChangeDataFeedError(f"{table.root}: a change feed read needs startingVersion or startingTimestamp (one of them)")
    if ending_version is not None and ending_timestamp is not None:
        raise ChangeDataFeedError(f"{table.root}: give endingVersion or endingTimestamp, not both")
    latest = table.latest_version()
    timeline = table.commit_timestamps() if starting_timestamp is not None or ending_timestamp is not None else []
    times = [t for _, t in timeline]
    if starting_timestamp is not None:
        position = bisect_left(times, to_millis(starting_timestamp))
        if position == len(times):
            raise ChangeDataFeedError(
                f"{table.root}: startingTimestamp {starting_timestamp} is after the latest commit "
                f"(version {latest} at {datetime.fromtimestamp(times[-1] / 1000):%Y-%m-%d %H:%M:%S})"
            )
        start = timeline[position][0]
    else:
        start = int(starting_version)  # type: ignore[arg-type]
    if ending_timestamp is not None:
        position = bisect_right(times, to_millis(ending_timestamp))
        if position == 0:
            raise ChangeDataFeedError(
                f"{table.root}: endingTimestamp {ending_timestamp} is before the first commit still in the log"
            )
        end = timeline[position - 1][0]
    else:
        end = latest if ending_version is None else min(int(ending_version), latest)
    if start < 0:
        raise ChangeDataFeedError(f"{table.root}: startingVersion {start} is negative")
    if start > latest:
        raise ChangeDataFeedError(f"{table.root}: startingVersion {start} is after the latest version {latest}")
    if end < start:
        raise ChangeDataFeedError(
            f"{table.root}: the change feed range ends (version {end}) before it starts (version {start})",
            error_class="DELTA_INVALID_CDC_RANGE",
        )
    return start, end


def _data_changing(actions: pa.StructArray) -> pa.StructArray:
    if len(actions) == 0:
        return actions
    return actions.filter(cast(pa.BooleanArray, actions.field("dataChange").fill_null(True)))


def table_changes(table: Table, start: int, end: int) -> ChangeRange:
    """The change commits of versions ``start``..``end`` (inclusive), checked as the spec requires."""
    try:
        snapshot = table.snapshot(start)
    except VersionNotFoundError as error:
        raise ChangeDataFeedError(f"{table.root}: cannot read changes from version {start}: {error}") from error
    configuration = dict(snapshot.configuration)
    timestamps = dict(table.commit_timestamps())
    commits: list[ChangeCommit] = []
    for version in range(start, end + 1):
        try:
            raw = table.storage.read(f"{table.log_dir}/{commit_name(version)}")
        except FileNotFoundError as error:
            raise ChangeDataFeedError(
                f"{table.root}: the commit of version {version} is no longer in the log (cleaned up after a checkpoint); "
                "read changes from a later version"
            ) from error
        batch = parse_json_actions(raw, version)
        if batch.metadata is not None:
            configuration = dict(batch.metadata.get("configuration") or {})
        if not _cdf_enabled(configuration):
            raise ChangeDataFeedError(
                f"{table.root}: the change data feed was not enabled at version {version} "
                f"({CDF_PROPERTY} is not true); read a range where it was on",
                error_class="DELTA_MISSING_CHANGE_DATA",
            )
        cdc = batch.cdcs
        has_cdc = len(cdc) > 0
        commits.append(
            ChangeCommit(
                version,
                timestamps.get(version, int((batch.commit_info or {}).get("timestamp", 0))),
                cdc,
                batch.adds[:0] if has_cdc else _data_changing(batch.adds),
                batch.removes[:0] if has_cdc else _data_changing(batch.removes),
            )
        )
    _require_files_present(table, commits)
    return ChangeRange(commits, table.snapshot(end))


def _require_files_present(table: Table, commits: list[ChangeCommit]) -> None:
    """Refuse a range whose files VACUUM deleted, naming the first one missing."""
    for commit in commits:
        for actions in (commit.cdc, commit.added, commit.removed):
            for path in cast(list[str], actions.field("path").to_pylist()) if len(actions) else []:
                if not table.storage.exists(storage_path(table.root, path)):
                    raise ChangeDataFeedError(
                        f"{table.root}: the changes of version {commit.version} are in file {path}, which no longer "
                        "exists (removed by VACUUM?); read a later range"
                    )
