"""Add and remove actions for rows of a snapshot's file table (``Snapshot.files``).

One place turns the columnar file state into the actions a commit writes: removes keep
their add's partition values, size, stats, tags and deletion vector (the spec allows it
and delta-spark does it), so a remove is keyed exactly like the add it cancels.
"""

from __future__ import annotations

import time
from typing import Any, cast
from urllib.parse import unquote, urlparse

import pyarrow as pa

from .actions import AddFile, RemoveFile


def _vector(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    return {k: v for k, v in raw.items() if v is not None} if raw else None


def file_paths(files: pa.Table) -> list[str]:
    """The ``path`` of each row of ``files``, as written in the log (never null: every file action has one)."""
    return cast(list[str], files.column("path").to_pylist())


def add_actions(files: pa.Table, data_change: bool = True) -> list[AddFile]:
    """Adds re-adding ``files`` as they are (stats, tags, deletion vectors and row ids kept)."""
    return [
        AddFile(
            f["path"],
            dict(f["partitionValues"] or []),
            f["size"],
            f["modificationTime"],
            data_change,
            f.get("stats"),
            dict(f["tags"]) if f.get("tags") else None,
            _vector(f.get("deletionVector")),
            f.get("baseRowId"),
            f.get("defaultRowCommitVersion"),
            f.get("clusteringProvider"),
        )
        for f in files.to_pylist()
    ]


def remove_actions(files: pa.Table, data_change: bool, now_ms: int | None = None) -> list[RemoveFile]:
    """Removes of ``files``, each keyed like its add (path and deletion vector), stats kept."""
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    return [
        RemoveFile(
            f["path"],
            now,
            data_change,
            True,
            dict(f["partitionValues"] or []),
            f["size"],
            f.get("stats"),
            dict(f["tags"]) if f.get("tags") else None,
            _vector(f.get("deletionVector")),
            f.get("baseRowId"),
            f.get("defaultRowCommitVersion"),
        )
        for f in files.to_pylist()
    ]


def storage_path(table_root: str, path: str) -> str:
    """Where the store finds a file an action names: relative to the root, or an absolute (``file:``) URI."""
    parsed = urlparse(path)
    if parsed.scheme:
        return unquote(parsed.path) if parsed.scheme == "file" else path
    return unquote(path) if path.startswith("/") else f"{table_root}/{unquote(path)}"
