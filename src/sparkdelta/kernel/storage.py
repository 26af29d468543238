"""The storage interface the kernel talks to, and its local-disk implementation.

Delta needs only four primitives from a store; atomic commits rest entirely on
``put_if_absent``. How each cloud store provides it:

- **S3**: ``PutObject`` with ``If-None-Match: *`` (conditional write, 2024+); a 412
  answer means the version exists. ``list_from`` is ``ListObjectsV2`` with ``StartAfter``.
- **GCS**: upload with ``ifGenerationMatch=0``; 412 means it exists. Listing is
  lexicographic with ``startOffset``.
- **Azure Blob / ADLS Gen2**: ``Put Blob`` with ``If-None-Match: *`` (409/412 on
  conflict), or ADLS ``rename`` without overwrite. Listing is lexicographic.
- **HDFS**: ``FileSystem.create(path, overwrite=false)`` is atomic; or write a temp file
  and ``rename`` (fails if the target exists). ``listStatus`` then sort.

Paths given to a store are plain strings: the kernel builds them by joining the table
root with ``/``. ``list_from`` returns entries of the same directory whose names sort at
or after the given name, in lexicographic order.
"""

from __future__ import annotations

import os
import shutil
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class FileStatus:
    """One listed file: full path, size in bytes, modification time in epoch millis, and what
    tells it apart from another file written at the same path with the same size and time
    (``identity``: the store's ETag or version, a local file's inode and change time; None
    where the store gives neither)."""

    path: str
    size: int
    modification_time: int
    identity: str | None = None

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def _local_status(path: str, stat: os.stat_result) -> FileStatus:
    # A modification time can be set back to anything; the change time cannot, and a file
    # written anew (even into a reused inode) gets a new one.
    return FileStatus(path, stat.st_size, int(stat.st_mtime * 1000), f"{stat.st_ino}:{stat.st_ctime_ns}")


class Storage(ABC):
    """What the kernel needs from a file system or object store."""

    engine_options: Mapping[str, str] = MappingProxyType({})
    """Settings the engine's own file readers and writers need to reach this storage
    (for Spark, the Hadoop ``fs.*`` options a table was opened with); the kernel ignores them."""

    @abstractmethod
    def read(self, path: str) -> bytes:
        """Whole contents of ``path``; raises ``FileNotFoundError`` if absent."""

    @abstractmethod
    def list_from(self, path: str) -> Iterator[FileStatus]:
        """Files in ``path``'s directory whose names sort >= its name, sorted by name.

        A missing directory yields nothing.
        """

    @abstractmethod
    def put_if_absent(self, path: str, data: bytes) -> None:
        """Create ``path`` with ``data`` atomically; raise ``FileExistsError`` if it exists.

        Readers never see a partially written file.
        """

    @abstractmethod
    def write(self, path: str, data: bytes) -> None:
        """Create or replace ``path`` atomically (checkpoints, ``_last_checkpoint``)."""

    @abstractmethod
    def delete(self, path: str) -> None:
        """Remove ``path``; a missing file is not an error."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """Whether ``path`` exists."""

    @abstractmethod
    def list_tree(self, directory: str, descend: Callable[[str], bool]) -> Iterator[FileStatus]:
        """Every file under ``directory`` at any depth, unordered; only into subdirectories whose
        name ``descend`` accepts (object stores list the prefix and filter).
        """

    def delete_many(self, paths: Iterable[str], parallelism: int = 8) -> Iterator[str]:
        """Delete ``paths`` (missing ones are no error), yielding each once it is gone.

        Lazy: nothing is deleted until the iterator is consumed, so a caller can show
        progress. This default runs ``delete`` on ``parallelism`` threads; object stores
        override it with bulk requests.
        """
        with ThreadPoolExecutor(max_workers=parallelism) as pool:
            yield from pool.map(self._delete_returning, paths)

    def _delete_returning(self, path: str) -> str:
        self.delete(path)
        return path

    def delete_empty_directory(self, path: str) -> bool:
        """Remove ``path`` if it is an empty directory; whether it did. Object stores have none."""
        return False

    def copy(self, source: str, destination: str) -> None:
        """Copy a file (object stores: a server-side copy); this default streams it through memory."""
        self.write(destination, self.read(source))

    def read_range(self, path: str, start: int, end: int) -> bytes:
        """Bytes ``start`` to ``end`` (exclusive) of a file: a Parquet footer without the data."""
        return self.read(path)[start:end]

    def move(self, source: str, destination: str) -> None:
        """Give a file a new name, replacing any file there (object stores: copy, then delete)."""
        self.copy(source, destination)
        self.delete(source)

    def local_path(self, path: str) -> str | None:
        """A local file name for ``path``, when the store is a local disk (fast paths)."""
        return None

    @property
    def failed_writes_are_final(self) -> bool:
        """Whether a write that raised cannot take effect later. On an object store a
        request whose answer was lost may still be applied afterwards, so a commit found
        absent after a failed write is not proof that it will never land."""
        return False


class LocalStorage(Storage):
    """Local disk. ``put_if_absent`` writes a temp file then hard-links it into place.

    ``link`` fails with ``EEXIST`` atomically, so two writers never both win, and a crash
    mid-write leaves only an invisible temp file, never a truncated commit.
    """

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def list_from(self, path: str) -> Iterator[FileStatus]:
        directory, _, start = path.rpartition("/")
        try:
            entries = [e for e in os.scandir(directory or "/") if e.name >= start and e.is_file()]
        except FileNotFoundError:
            return
        entries.sort(key=lambda e: e.name)
        for entry in entries:
            stat = entry.stat()
            yield _local_status(entry.path, stat)

    def list_tree(self, directory: str, descend: Callable[[str], bool]) -> Iterator[FileStatus]:
        """Level by level, each level's directories scanned in parallel (``scandir`` releases the GIL)."""
        with ThreadPoolExecutor(max_workers=_LISTING_THREADS) as pool:
            level = [directory]
            while level:
                below: list[str] = []
                for files, subdirectories in pool.map(_scan, level):
                    yield from files
                    below.extend(path for name, path in subdirectories if descend(name))
                level = below

    def copy(self, source: str, destination: str) -> None:
        os.makedirs(os.path.dirname(destination) or "/", exist_ok=True)
        temp = self._temp_path(destination)
        shutil.copyfile(source, temp)
        os.replace(temp, destination)

    def read_range(self, path: str, start: int, end: int) -> bytes:
        with open(path, "rb") as f:
            f.seek(start)
            return f.read(end - start)

    def move(self, source: str, destination: str) -> None:
        os.makedirs(os.path.dirname(destination) or "/", exist_ok=True)
        os.replace(source, destination)

    def delete_empty_directory(self, path: str) -> bool:
        try:
            os.rmdir(path)
        except OSError:
            return False
        return True

    def _temp_path(self, path: str) -> str:
        directory, _, name = path.rpartition("/")
        return f"{directory}/.{name}.{uuid.uuid4().hex}.tmp"

    def _write_temp(self, path: str, data: bytes) -> str:
        os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
        temp = self._temp_path(path)
        with open(temp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return temp

    def put_if_absent(self, path: str, data: bytes) -> None:
        temp = self._write_temp(path, data)
        try:
            os.link(temp, path)
        finally:
            os.unlink(temp)

    def write(self, path: str, data: bytes) -> None:
        temp = self._write_temp(path, data)
        os.replace(temp, path)

    def delete(self, path: str) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def local_path(self, path: str) -> str | None:
        return path

    @property
    def failed_writes_are_final(self) -> bool:
        return True  # link() either made the name or not, before it returned


_LISTING_THREADS = 8


def _scan(directory: str) -> tuple[list[FileStatus], list[tuple[str, str]]]:
    """The files of one directory and its subdirectories' (name, path); a missing directory has none."""
    files: list[FileStatus] = []
    subdirectories: list[tuple[str, str]] = []
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return files, subdirectories
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            subdirectories.append((entry.name, entry.path))
        elif entry.is_file(follow_symlinks=False):
            stat = entry.stat()
            files.append(_local_status(entry.path, stat))
    return files, subdirectories
