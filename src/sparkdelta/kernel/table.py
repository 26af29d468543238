"""The entry point to a Delta table's log: snapshots, time travel, history, transactions."""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from .errors import TableNotFoundError, VersionNotFoundError
from .locations import resolve_table_root
from .log_files import LOG_DIR, LogFileKind, commit_name
from .log_segment import list_log
from .snapshot import Snapshot
from .storage import Storage

if TYPE_CHECKING:
    from .conflicts import IsolationLevel
    from .transaction import Transaction


@dataclass(frozen=True)
class CommitRecord:
    """One version's commit: its number, timestamp (millis) and commitInfo."""

    version: int
    timestamp: int
    commit_info: dict[str, Any]


class Table:
    """A Delta table at a location. Cheap to create; every call reads the log afresh."""

    def __init__(self, location: str, storage: Storage | None = None, storage_options: Mapping[str, str] | None = None) -> None:
        """``location``: a local path, ``file:`` URI or object-store URL (``s3://``, ``gs://``,
        ``az://``...). ``storage_options`` configure an object store (keys as delta-rs takes
        them, e.g. ``aws_access_key_id``); what they leave out comes from the environment.
        """
        resolved_storage, root = resolve_table_root(location, storage_options)
        self.storage = storage or resolved_storage
        self.root = root
        self.log_dir = f"{root}/{LOG_DIR}"

    def __repr__(self) -> str:
        return f"Table({self.root!r})"

    def exists(self) -> bool:
        """Whether the location holds a Delta table (at least one commit or checkpoint)."""
        return any(f.kind is LogFileKind.COMMIT or f.is_checkpoint for f in list_log(self.storage, self.log_dir))

    def untracked_data_file(self) -> str | None:
        """A visible file under a location that holds no table yet (a Parquet folder), if any.

        Creating a table over such files would hide them from readers and let VACUUM
        delete them as unreferenced, so creators refuse (CONVERT TO DELTA adopts them).
        Hidden names (``_``, ``.``: ``_SUCCESS``, checksums) are not data.
        """
        visible = (
            f.path
            for f in self.storage.list_tree(self.root, lambda name: not name.startswith(("_", ".")))
            if not f.name.startswith(("_", "."))
        )
        return next(visible, None)

    def snapshot(self, version: int | None = None, timestamp: datetime | str | int | None = None) -> Snapshot:
        """The latest snapshot, or the one at ``version`` or as of ``timestamp``."""
        if version is not None and timestamp is not None:
            raise ValueError("give a version or a timestamp, not both")
        if timestamp is not None:
            version = self.version_at_timestamp(timestamp)
        return Snapshot.load(self.storage, self.root, version)

    def transaction(self, isolation_level: IsolationLevel | None = None, read_snapshot: Snapshot | None = None) -> Transaction:
        """A transaction on the latest snapshot (or ``read_snapshot``); on a new table, none.

        The isolation level defaults to the table's ``delta.isolationLevel``, else
        Serializable, as in delta-spark.
        """
        # Imported here: a program that only reads (the CLI's files, history, describe) never loads the writer.
        from .conflicts import IsolationLevel
        from .transaction import Transaction

        if read_snapshot is None:
            try:
                read_snapshot = self.snapshot()
            except TableNotFoundError:
                read_snapshot = None
        if isolation_level is None:
            configured = read_snapshot.configuration.get("delta.isolationLevel") if read_snapshot else None
            isolation_level = IsolationLevel(configured) if configured else IsolationLevel.SERIALIZABLE
        return Transaction(self.storage, self.root, read_snapshot, isolation_level)

    def latest_version(self) -> int:
        files = list_log(self.storage, self.log_dir)
        versions = [f.version for f in files if f.kind is LogFileKind.COMMIT or f.is_checkpoint]
        if not versions:
            raise TableNotFoundError(f"{self.root} is not a Delta table: no commits in {self.log_dir}")
        return max(versions)

    def commit_timestamps(self) -> list[tuple[int, int]]:
        """(version, timestamp millis) of every commit still in the log, oldest first.

        File modification times are made strictly increasing, as delta-spark does; from
        the version in-commit timestamps were enabled at, ``inCommitTimestamp`` is used.
        """
        return self._timeline(self._in_commit_timestamp_enablement())

    def _timeline(self, enablement: tuple[int, int] | None) -> list[tuple[int, int]]:
        commits = [
            (f.version, f.status.modification_time) for f in list_log(self.storage, self.log_dir) if f.kind is LogFileKind.COMMIT
        ]
        if not commits:
            raise TableNotFoundError(f"{self.root} is not a Delta table: no commits in {self.log_dir}")
        ict_from = enablement[0] if enablement else None
        adjusted: list[tuple[int, int]] = []
        previous = -1
        for version, ts in commits:
            if ict_from is not None and version >= ict_from:
                ts = self._in_commit_timestamp(version)
            else:
                ts = max(ts, previous + 1)
            previous = ts
            adjusted.append((version, ts))
        return adjusted

    def _in_commit_timestamp_enablement(self) -> tuple[int, int] | None:
        """(version, timestamp) from which commits carry in-commit timestamps, if they do."""
        latest = self.snapshot()
        if not latest.in_commit_timestamps_enabled:
            return None
        config = latest.configuration
        version = int(config.get("delta.inCommitTimestampEnablementVersion", "0"))
        timestamp = config.get("delta.inCommitTimestampEnablementTimestamp")
        return version, int(timestamp) if timestamp is not None else self._in_commit_timestamp(version)

    def _in_commit_timestamp(self, version: int) -> int:
        info = self.read_commit_info(version)
        return int(info.get("inCommitTimestamp", info.get("timestamp", 0)))

    def read_commit_info(self, version: int) -> dict[str, Any]:
        """The commitInfo action of one commit ({} when it has none).

        Only the lines naming commitInfo are cut out and decoded: ``history`` reads every
        commit, and splitting each into lines would copy all their file actions.
        """
        data = self.storage.read(f"{self.log_dir}/{commit_name(version)}")
        at = data.find(b'"commitInfo"')
        while at != -1:
            start, end = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
            end = len(data) if end == -1 else end
            action = json.loads(data[start:end])
            if "commitInfo" in action:
                return cast(dict[str, Any], action["commitInfo"])
            at = data.find(b'"commitInfo"', end)
        return {}

    def version_at_timestamp(self, timestamp: datetime | str | int) -> int:
        """The last version committed at or before ``timestamp`` (as delta-spark resolves it).

        With in-commit timestamps, a timestamp at or after their enablement is looked up
        only among the versions that carry them, and an earlier one only among the others.
        """
        millis = to_millis(timestamp)
        enablement = self._in_commit_timestamp_enablement()
        full_timeline = timeline = self._timeline(enablement)
        last_segment = True
        if enablement is not None:
            ict_version, ict_timestamp = enablement
            if millis >= ict_timestamp:
                timeline = [(v, t) for v, t in timeline if v >= ict_version] or timeline
            else:
                timeline = [(v, t) for v, t in timeline if v < ict_version] or timeline
                last_segment = not any(v < ict_version for v, _ in full_timeline)
        times = [ts for _, ts in timeline]
        position = bisect_right(times, millis)
        if position == 0:
            first = datetime.fromtimestamp(times[0] / 1000, UTC)
            raise VersionNotFoundError(
                f"{self.root}: timestamp {timestamp} is before the earliest available version "
                f"{timeline[0][0]} ({first.isoformat()})",
                error_class="DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION",
            )
        if last_segment and position == len(times) and millis > times[-1]:
            last = datetime.fromtimestamp(times[-1] / 1000, UTC)
            raise VersionNotFoundError(
                f"{self.root}: timestamp {timestamp} is after the latest version {timeline[-1][0]} "
                f"({last.isoformat()}); use a timestamp at or before it",
                error_class="DELTA_TIMESTAMP_GREATER_THAN_COMMIT",
            )
        return timeline[position - 1][0]

    def history(self, limit: int | None = None) -> list[CommitRecord]:
        """Commits newest first, as ``DESCRIBE HISTORY`` lists them."""
        timeline = self.commit_timestamps()
        selected = list(reversed(timeline))[: limit if limit else None]
        return [CommitRecord(v, ts, self.read_commit_info(v)) for v, ts in selected]


def parse_timestamp(text: str) -> datetime:
    """An ISO-like timestamp (``YYYY-MM-DD[ HH:MM:SS[.fff]][offset]``); naive when it has no offset."""
    try:
        return datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"cannot parse timestamp {text!r}: use 'YYYY-MM-DD[ HH:MM:SS[.fff]]'") from exc


def to_millis(timestamp: datetime | str | int) -> int:
    """Epoch millis from a datetime, ISO-like string (UTC unless it has an offset) or millis."""
    if isinstance(timestamp, int):
        return timestamp
    if isinstance(timestamp, str):
        timestamp = parse_timestamp(timestamp)
    if timestamp.tzinfo is None:
        timestamp = timestamp.replace(tzinfo=UTC)
    return int(timestamp.timestamp() * 1000)
