"""Names of the files in ``_delta_log`` and what each one is.

The spec fixes the names: ``<v>.json`` commits, ``<v>.checkpoint.parquet`` classic
checkpoints, ``<v>.checkpoint.<part>.<parts>.parquet`` multi-part ones,
``<v>.checkpoint.<uuid>.(json|parquet)`` V2 ones (with sidecars under ``_sidecars/``),
``<x>.<y>.compacted.json`` log compactions, and ``_last_checkpoint``. Versions are
zero-padded to 20 digits, so lexicographic order is version order.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from .storage import FileStatus

LOG_DIR = "_delta_log"
SIDECAR_DIR = "_sidecars"
LAST_CHECKPOINT = "_last_checkpoint"

_COMMIT = re.compile(r"(\d{20})\.json")
_CLASSIC = re.compile(r"(\d{20})\.checkpoint\.parquet")
_MULTIPART = re.compile(r"(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet")
_V2 = re.compile(r"(\d{20})\.checkpoint\.([0-9a-fA-F-]{36})\.(json|parquet)")
_COMPACTION = re.compile(r"(\d{20})\.(\d{20})\.compacted\.json")


class LogFileKind(enum.Enum):
    COMMIT = "commit"
    CHECKPOINT = "checkpoint"
    MULTIPART_CHECKPOINT = "multipart-checkpoint"
    V2_CHECKPOINT = "v2-checkpoint"
    COMPACTION = "compaction"


@dataclass(frozen=True, slots=True)
class LogFile:
    status: FileStatus
    kind: LogFileKind
    version: int
    part: int = 1
    num_parts: int = 1
    end_version: int | None = None

    @property
    def path(self) -> str:
        return self.status.path

    @property
    def is_checkpoint(self) -> bool:
        return self.kind in (LogFileKind.CHECKPOINT, LogFileKind.MULTIPART_CHECKPOINT, LogFileKind.V2_CHECKPOINT)


def parse_log_file(status: FileStatus) -> LogFile | None:
    """Classify a listed file; ``None`` for anything that is not part of the log."""
    name = status.name
    if m := _COMMIT.fullmatch(name):
        return LogFile(status, LogFileKind.COMMIT, int(m.group(1)))
    if m := _CLASSIC.fullmatch(name):
        return LogFile(status, LogFileKind.CHECKPOINT, int(m.group(1)))
    if m := _MULTIPART.fullmatch(name):
        return LogFile(status, LogFileKind.MULTIPART_CHECKPOINT, int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if m := _V2.fullmatch(name):
        return LogFile(status, LogFileKind.V2_CHECKPOINT, int(m.group(1)))
    if m := _COMPACTION.fullmatch(name):
        return LogFile(status, LogFileKind.COMPACTION, int(m.group(1)), end_version=int(m.group(2)))
    return None


def version_prefix(version: int) -> str:
    return f"{version:020d}"


def commit_name(version: int) -> str:
    return f"{version:020d}.json"


def classic_checkpoint_name(version: int) -> str:
    return f"{version:020d}.checkpoint.parquet"
