"""Which log files make up the table state at a version.

A log segment is the newest complete checkpoint at or below the version plus the
commits after it, contiguous up to the version. ``_last_checkpoint`` only says where to
start listing; when it is missing, stale or corrupt the listing starts at version 0.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidLogError, TableNotFoundError, VersionNotFoundError
from .log_files import LAST_CHECKPOINT, LogFile, LogFileKind, parse_log_file, version_prefix
from .storage import Storage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LogSegment:
    table_root: str
    version: int
    checkpoint: tuple[LogFile, ...]
    """Every part of the checkpoint used (empty when replay starts at version 0)."""
    deltas: tuple[LogFile, ...]
    """Commits (or compactions) after the checkpoint, oldest first."""
    commit_timestamps: dict[int, int] = field(default_factory=dict, compare=False)
    """File modification time of each listed commit (epoch millis)."""

    @property
    def checkpoint_version(self) -> int | None:
        return self.checkpoint[0].version if self.checkpoint else None


def read_last_checkpoint(storage: Storage, log_dir: str) -> dict[str, Any] | None:
    """The ``_last_checkpoint`` hint, or ``None`` when missing or unreadable."""
    try:
        hint = json.loads(storage.read(f"{log_dir}/{LAST_CHECKPOINT}"))
    except FileNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError):
        log.warning("ignoring corrupt %s/%s", log_dir, LAST_CHECKPOINT)
        return None
    if not isinstance(hint, dict) or not isinstance(hint.get("version"), int):
        log.warning("ignoring malformed %s/%s", log_dir, LAST_CHECKPOINT)
        return None
    return hint


def list_log(storage: Storage, log_dir: str, start_version: int = 0, end_version: int | None = None) -> list[LogFile]:
    """Log files at or after ``start_version``, in name order; with ``end_version``, up to
    the first commit past it.

    Names sort by version, so nothing at or below ``end_version`` can follow that commit:
    on an object store, time travel into a long log fetches only the listing pages up to
    its version. The commit is kept: it tells where the log starts when everything up to
    ``end_version`` was cleaned up.
    """
    files = []
    for status in storage.list_from(f"{log_dir}/{version_prefix(start_version)}"):
        parsed = parse_log_file(status)
        if parsed is None:
            continue
        files.append(parsed)
        if end_version is not None and parsed.kind is LogFileKind.COMMIT and parsed.version > end_version:
            break
    return files


def _complete_checkpoints(files: list[LogFile], max_version: int | None) -> dict[int, tuple[LogFile, ...]]:
    """Checkpoints by version, only those with every part present; V2 preferred."""
    by_version: dict[int, dict[str, list[LogFile]]] = {}
    for f in files:
        if f.is_checkpoint and (max_version is None or f.version <= max_version):
            by_version.setdefault(f.version, {}).setdefault(f.kind.value + str(f.num_parts), []).append(f)
    complete: dict[int, tuple[LogFile, ...]] = {}
    for version, groups in by_version.items():
        for key in sorted(groups, key=lambda k: not k.startswith(LogFileKind.V2_CHECKPOINT.value)):
            parts = groups[key]
            if parts[0].kind is LogFileKind.MULTIPART_CHECKPOINT:
                numbered = {p.part: p for p in parts}
                if set(numbered) == set(range(1, parts[0].num_parts + 1)):
                    complete[version] = tuple(numbered[i] for i in sorted(numbered))
                    break
            else:
                complete[version] = (parts[0],)
                break
    return complete


def build_log_segment(
    storage: Storage,
    table_root: str,
    version: int | None = None,
    skip_checkpoints_from: int | None = None,
) -> LogSegment:
    """The segment for ``version`` (latest when ``None``).

    ``skip_checkpoints_from`` ignores checkpoints at or above that version: the fallback
    when a checkpoint proves unreadable.
    """
    log_dir = f"{table_root}/_delta_log"
    hint = read_last_checkpoint(storage, log_dir)
    start = 0
    if hint is not None and (version is None or hint["version"] <= version):
        if skip_checkpoints_from is None or hint["version"] < skip_checkpoints_from:
            start = hint["version"]
    files = list_log(storage, log_dir, start, version)
    if start > 0 and not any(f.is_checkpoint and f.version == start for f in files):
        log.warning("%s names checkpoint %d, which is missing; listing from 0", LAST_CHECKPOINT, start)
        files = list_log(storage, log_dir, 0, version)
    if not files:
        if not storage.exists(table_root):
            raise TableNotFoundError(f"{table_root} is not a Delta table: the path does not exist")
        if not storage.exists(log_dir):
            raise TableNotFoundError(f"{table_root} is not a Delta table: it has no _delta_log directory")
        raise TableNotFoundError(f"{table_root} is not a Delta table: no commits in {log_dir}")

    commits = {f.version: f for f in files if f.kind is LogFileKind.COMMIT}
    ceiling = version
    if skip_checkpoints_from is not None:
        ceiling = min(skip_checkpoints_from - 1, version if version is not None else skip_checkpoints_from - 1)
    checkpoints = _complete_checkpoints(files, ceiling)
    latest = max([*commits, *checkpoints]) if (commits or checkpoints) else None
    if latest is None:
        raise TableNotFoundError(f"{table_root} is not a Delta table: no commits in {log_dir}")
    target = latest if version is None else version
    if version is not None and version > latest:
        raise VersionNotFoundError(f"{table_root}: cannot time travel to version {version}; the latest version is {latest}")
    if version is not None and version < 0:
        raise VersionNotFoundError(f"{table_root}: version {version} is negative")

    checkpoint_version = max((v for v in checkpoints if v <= target), default=None)
    first_delta = 0 if checkpoint_version is None else checkpoint_version + 1
    if checkpoint_version is None and start > 0:
        return build_log_segment(storage, table_root, version, skip_checkpoints_from=start)
    if checkpoint_version is None and 0 not in commits:
        earliest = min(commits, default=None)
        raise VersionNotFoundError(
            f"{table_root}: version {target} cannot be reconstructed: no checkpoint at or before it and "
            f"the log starts at version {earliest} (earlier commits were cleaned up)"
        )
    deltas = _contiguous_deltas(files, commits, first_delta, target, table_root)
    return LogSegment(
        table_root,
        target,
        checkpoints[checkpoint_version] if checkpoint_version is not None else (),
        tuple(deltas),
        {v: f.status.modification_time for v, f in commits.items()},
    )


def _contiguous_deltas(
    files: list[LogFile], commits: dict[int, LogFile], first: int, last: int, table_root: str
) -> list[LogFile]:
    """Commits ``first..last``, using log compactions that fit wholly inside the range."""
    for v in range(first, last + 1):
        if v not in commits:
            raise InvalidLogError(
                f"{table_root}: the log is missing version {v} (versions must be contiguous; "
                f"found {v - 1} and then {min((c for c in commits if c > v), default='nothing')})"
            )
    compactions = {
        f.version: f
        for f in files
        if f.kind is LogFileKind.COMPACTION and f.version >= first and f.end_version is not None and f.end_version <= last
    }
    deltas: list[LogFile] = []
    v = first
    while v <= last:
        compaction = compactions.get(v)
        if compaction is not None and compaction.end_version is not None and compaction.end_version > v:
            deltas.append(compaction)
            v = compaction.end_version + 1
        else:
            deltas.append(commits[v])
            v += 1
    return deltas
