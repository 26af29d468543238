"""Symlink format manifests: delta-spark's ``GenerateSymlinkManifest``, for engines that read a
Delta table through a list of its data files (Presto, Trino, Athena, Hive, Redshift Spectrum).

``_symlink_format_manifest/manifest`` (unpartitioned) or
``_symlink_format_manifest/<col=value/...>/manifest`` (one per partition, the directory
named as Hive names partitions) lists the absolute paths of the data files, one a line,
as Hadoop spells them (``file:/t/part-0.parquet``, ``s3a://bucket/t/...``, decoded): the
form those engines open. A full generation (``GENERATE symlink_format_manifest``,
``DeltaTable.generate``) writes every partition's manifest from the latest snapshot and
deletes the manifests of partitions the table no longer has; it writes no commit, so the
history does not show it. With ``delta.compatibility.symlinkFormatManifest.enabled`` every
commit with file actions updates the manifests of the partitions it touched, as
delta-spark's post-commit hook does (``update_after_commit``, run by the transaction, so
Spark writes and kernel commands such as RESTORE alike keep them current).

External readers know neither deletion vectors nor column mapping: a manifest would hand
them deleted rows or physical column names, so both are refused as delta-spark refuses
them, and a table cannot turn on both deletion vectors and automatic manifests
(``check_properties``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import unquote

from .actions import Action, AddCDCFile, AddFile, Metadata, RemoveFile
from .column_mapping import mapping_mode
from .errors import InvalidTableOperationError, InvalidTablePropertyError, UnsupportedModeError
from .file_actions import file_paths
from .file_paths import file_path
from .snapshot import Snapshot
from .storage import Storage
from .table import Table

MANIFEST_DIR = "_symlink_format_manifest"
MANIFEST_NAME = "manifest"
ENABLED_PROPERTY = "delta.compatibility.symlinkFormatManifest.enabled"
SYMLINK_FORMAT_MANIFEST = "symlink_format_manifest"
MODES = (SYMLINK_FORMAT_MANIFEST,)
HOOK_NAME = "Generate Symlink Format Manifest"
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

_DELETION_VECTORS_PROPERTY = "delta.enableDeletionVectors"
_PARALLELISM = 8
# Spark's ExternalCatalogUtils.escapePathName: what a Hive partition directory name escapes.
_ESCAPED = frozenset(chr(c) for c in range(1, 0x20)) | frozenset("\"#%'*/:=?\\\x7f{[]^")


@dataclass(frozen=True)
class ManifestStats:
    """What one generation did (delta-spark's ``SymlinkManifestStats``)."""

    files_written: int
    files_deleted: int
    partitioned: bool


def enabled(metadata: Metadata) -> bool:
    """Whether commits keep the manifests current (the table property)."""
    return _flag(metadata.configuration, ENABLED_PROPERTY)


def check_mode(mode: str) -> None:
    """Refuse a mode ``GENERATE`` does not have (names compare in any case), as delta-spark
    does before it looks at the table."""
    if mode.lower() not in MODES:
        raise UnsupportedModeError(f"Specified mode '{mode}' is not supported. Supported modes are: {', '.join(MODES)}")


def generate(table: Table, mode: str) -> ManifestStats:
    """``GENERATE <mode> FOR TABLE`` and ``DeltaTable.generate``: a full generation on the
    latest snapshot. Files only: no commit, so no version and no history entry."""
    check_mode(mode)
    return generate_full_manifest(table.snapshot())


def generate_full_manifest(snapshot: Snapshot) -> ManifestStats:
    """Every partition's manifest from ``snapshot``; manifests of partitions it lacks are deleted."""
    _require_no_deletion_vectors(snapshot)
    _require_no_column_mapping(snapshot.metadata)
    storage, root = snapshot.storage, _manifest_root(snapshot.table_root)
    partitioned = bool(snapshot.partition_columns)
    written = _write_manifests(snapshot, _groups(snapshot))
    # The root's own manifest (relative directory "") is never stale, as in delta-spark.
    stale = {d for d in _existing_manifest_dirs(storage, root) if d} - written
    _delete_manifest_dirs(storage, root, stale, keep=written)
    return ManifestStats(len(written), len(stale), partitioned)


def update_after_commit(
    storage: Storage, table_root: str, read_snapshot: Snapshot | None, version: int, actions: Sequence[Action]
) -> ManifestStats:
    """The manifests of the partitions the commit at ``version`` (its ``actions``) touched.

    With no manifest yet, a full generation on the latest snapshot (which then refuses
    deletion vectors); else the touched partitions are rewritten from the new snapshot and
    those the commit emptied lose their manifest, as delta-spark's post-commit hook does.
    """
    snapshot = Snapshot.load(storage, table_root, version)
    _require_no_column_mapping(snapshot.metadata)
    root = _manifest_root(table_root)
    if not _directory_exists(storage, root):
        return generate_full_manifest(Snapshot.load(storage, table_root))
    columns = snapshot.partition_columns
    groups = _groups(snapshot)
    if not columns:
        return ManifestStats(len(_write_manifests(snapshot, groups)), 0, False)
    added = [a.partition_values for a in actions if isinstance(a, AddFile)]
    removed = [_partition_dir(columns, v) for v in _partition_values_of_removed(read_snapshot, actions)]
    touched = {_partition_dir(columns, v) for v in added} | set(removed)
    written = _write_manifests(snapshot, {d: paths for d, paths in groups.items() if d in touched})
    emptied = set(removed) - set(groups)
    _delete_manifest_dirs(storage, root, emptied, keep=written)
    return ManifestStats(len(written), len(emptied), True)


def has_file_actions(actions: Iterable[Action]) -> bool:
    """Whether a commit adds or removes files (delta-spark runs the manifest hook only then)."""
    return any(isinstance(a, (AddFile, RemoveFile, AddCDCFile)) for a in actions)


def check_properties(metadata: Metadata, read_snapshot: Snapshot | None) -> None:
    """delta-spark's property constraints on new metadata: automatic manifests and deletion
    vectors exclude each other, and manifests cannot be turned on while files have DVs."""
    if not enabled(metadata):
        return
    table = metadata.name or metadata.id
    violation = "DELTA_VIOLATE_TABLE_PROPERTY_VALIDATION_FAILED"
    if _flag(metadata.configuration, _DELETION_VECTORS_PROPERTY):
        raise InvalidTablePropertyError(
            f"The validation of the properties of table {table} has been violated: Persistent deletion vectors and "
            "incremental symlink manifest generation are mutually exclusive.",
            error_class=f"{violation}.PERSISTENT_DELETION_VECTORS_WITH_INCREMENTAL_MANIFEST_GENERATION",
        )
    if read_snapshot is not None and _files_with_deletion_vectors(read_snapshot):
        raise InvalidTablePropertyError(
            f"The validation of the properties of table {table} has been violated: Symlink manifest generation is "
            "unsupported while deletion vectors are present in the table. In order to produce a version of the table "
            f"without deletion vectors, run 'REORG TABLE {table} APPLY (PURGE)'.",
            error_class=f"{violation}.EXISTING_DELETION_VECTORS_WITH_INCREMENTAL_MANIFEST_GENERATION",
        )


def escape_path_name(name: str) -> str:
    """Spark's ``escapePathName``: how a partition directory spells a column name or value."""
    if not any(c in _ESCAPED for c in name):
        return name
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in name)


# --------------------------------------------------------------------------- internals


def _flag(configuration: Mapping[str, str], key: str) -> bool:
    return configuration.get(key, "false").lower() == "true"


def _manifest_root(table_root: str) -> str:
    return f"{table_root}/{MANIFEST_DIR}"


def _files_with_deletion_vectors(snapshot: Snapshot) -> int:
    files = snapshot.active_files(["deletionVector"])
    return files.num_rows - files.column("deletionVector").null_count


def _require_no_deletion_vectors(snapshot: Snapshot) -> None:
    if _files_with_deletion_vectors(snapshot):
        raise InvalidTableOperationError(
            "The 'GENERATE symlink_format_manifest' command is not supported on table versions with deletion vectors. "
            "If you need to generate manifests, consider disabling deletion vectors on this table using 'ALTER TABLE "
            f"table SET TBLPROPERTIES (delta.enableDeletionVectors = false)' (table {snapshot.table_root}, version "
            f"{snapshot.version}).",
            error_class="DELTA_UNSUPPORTED_GENERATE_WITH_DELETION_VECTORS",
        )


def _require_no_column_mapping(metadata: Metadata) -> None:
    if mapping_mode(metadata.configuration) != "none":
        raise InvalidTableOperationError(
            "Manifest generation is not supported for tables that leverage column mapping, as external readers cannot "
            "read these Delta tables. See Delta documentation for more details.",
            error_class="DELTA_UNSUPPORTED_MANIFEST_GENERATION_WITH_COLUMN_MAPPING",
        )


def _partition_dir(columns: Sequence[str], values: Mapping[str, str | None]) -> str:
    """``col1=v1/col2=v2`` as Spark's ``getPartitionPathString`` builds it (null and "" are Hive's default)."""
    parts = []
    for column in columns:
        value = values.get(column)
        text = HIVE_DEFAULT_PARTITION if value is None or value == "" else escape_path_name(value)
        parts.append(f"{escape_path_name(column)}={text}")
    return "/".join(parts)


def _groups(snapshot: Snapshot) -> dict[str, list[str]]:
    """Manifest directory (relative; "" when unpartitioned, which always has its manifest) ->
    the log paths of its files."""
    files = snapshot.active_files(["path", "partitionValues"])
    paths = file_paths(files)
    columns = snapshot.partition_columns
    if not columns:
        return {"": paths}
    groups: dict[str, list[str]] = {}
    directories: dict[tuple[tuple[str, str | None], ...], str] = {}
    for path, raw in zip(paths, files.column("partitionValues").to_pylist(), strict=True):
        key = tuple(raw or ())
        directory = directories.get(key)
        if directory is None:
            directory = directories[key] = _partition_dir(columns, dict(key))
        groups.setdefault(directory, []).append(path)
    return groups


def _absolute(table_root: str, path: str) -> str:
    """A log path as delta-spark writes it in a manifest: Hadoop's decoded absolute path."""
    resolved = file_path(table_root, path)
    if resolved.startswith("/"):
        return f"file:{resolved}"
    if resolved == path:  # file_path keeps an absolute URL as the log has it, percent-encoded
        resolved = unquote(resolved)
    from .object_store import hadoop_url  # object stores only: local tables never load obstore

    try:
        return hadoop_url(resolved)
    except ValueError:  # Azure without its account in the URL: the URL as the table names it
        return resolved


def _write_manifests(snapshot: Snapshot, groups: dict[str, list[str]]) -> set[str]:
    """Write each group's manifest, its files' absolute paths sorted; the relative directories written."""
    root = _manifest_root(snapshot.table_root)

    def write(item: tuple[str, list[str]]) -> str:
        directory, paths = item
        lines = sorted(_absolute(snapshot.table_root, p) for p in paths)
        target = f"{root}/{directory}/{MANIFEST_NAME}" if directory else f"{root}/{MANIFEST_NAME}"
        snapshot.storage.write(target, "".join(f"{line}\n" for line in lines).encode())
        return directory

    return set(_parallel(write, list(groups.items())))


def _parallel(work: Callable[[tuple[str, list[str]]], str], items: list[tuple[str, list[str]]]) -> list[str]:
    if len(items) <= 1:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=_PARALLELISM) as pool:
        return list(pool.map(work, items))


def _listed(name: str) -> bool:
    """Spark's file index skips hidden names (``_x``, ``.x``) but for partition directories (``_c=1``)."""
    return not name.startswith(".") and (not name.startswith("_") or "=" in name) and not name.endswith("._COPYING_")


def _existing_manifest_dirs(storage: Storage, root: str) -> set[str]:
    """The relative directories holding a (visible) file under the manifest root; "" for the root itself."""
    prefix = root + "/"
    found = set()
    for status in storage.list_tree(root, _listed):
        relative = status.path[len(prefix) :] if status.path.startswith(prefix) else status.path
        if not all(_listed(part) for part in relative.split("/")):
            continue  # object stores list every key under the prefix
        found.add(posixpath.dirname(relative))
    return found


def _directory_exists(storage: Storage, directory: str) -> bool:
    """Whether ``directory`` exists: on local disk as a directory (empty or not), on an object store as a prefix."""
    return storage.exists(directory) or next(iter(storage.list_tree(directory, lambda _: True)), None) is not None


def _delete_manifest_dirs(storage: Storage, root: str, directories: set[str], keep: set[str]) -> None:
    """Delete each relative directory under ``root`` with all it holds (delta-spark's recursive
    delete), but for manifests just written below it (a table whose partition columns changed)."""
    if not directories:
        return
    kept = {f"{root}/{d}/{MANIFEST_NAME}" for d in keep}
    doomed: list[str] = []
    folders: list[str] = []
    for directory in sorted(directories):
        base = f"{root}/{directory}"
        folders.append(base)
        for status in storage.list_tree(base, lambda _: True):
            if status.path not in kept:
                doomed.append(status.path)
            folders.append(posixpath.dirname(status.path))
    for _ in storage.delete_many(doomed):
        pass
    # Deepest first, so a folder emptied by its children's removal goes too (local disk only).
    for folder in sorted(set(folders), key=lambda f: f.count("/"), reverse=True):
        storage.delete_empty_directory(folder)


def _partition_values_of_removed(read_snapshot: Snapshot | None, actions: Sequence[Action]) -> list[dict[str, str | None]]:
    """The partition values of the files ``actions`` remove, as the read snapshot has them
    (delta-spark joins on the path); a remove's own values where the snapshot lacks its path."""
    removes = [a for a in actions if isinstance(a, RemoveFile)]
    if not removes:
        return []
    known: dict[str, dict[str, str | None]] = {}
    if read_snapshot is not None:
        files = read_snapshot.active_files(["path", "partitionValues"])
        wanted = {r.path for r in removes}
        for path, raw in zip(file_paths(files), files.column("partitionValues").to_pylist(), strict=True):
            if path in wanted:
                known[path] = dict(raw or ())
    values = []
    for remove in removes:
        found = known.get(remove.path, remove.partition_values)
        if found is not None:
            values.append(found)
    return values
