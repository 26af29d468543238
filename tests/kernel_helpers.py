"""Shared helpers for the concurrency and crash-safety tests, plus a child-process CLI.

The tests start real OS processes with ``python tests/kernel_helpers.py <command> ...``
(run as a script, so it works whatever pytest's import mode). Each child prints one line
per event on stdout, which ``Child`` collects on a thread so the parent can wait for an
event with a timeout and then, for the crash tests, SIGKILL the child by its pid.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sparkdelta.kernel import AddFile, IsolationLevel, Metadata, Protocol, RemoveFile, Table
from sparkdelta.kernel.parsing import parse_json_actions

HELPERS = Path(__file__).resolve()

SCHEMA_STRING = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
COMMIT_RE = re.compile(r"^(\d{20})\.json$")


def now_ms() -> int:
    return int(time.time() * 1000)


# --------------------------------------------------------------------------- tables


def create_table(
    root: str | Path,
    partition_columns: tuple[str, ...] = ("p",),
    configuration: dict[str, str] | None = None,
    metadata_id: str | None = None,
):
    """Commit version 0: protocol (1, 2) and metadata."""
    metadata = Metadata(
        metadata_id or str(uuid.uuid4()),
        SCHEMA_STRING,
        tuple(partition_columns),
        dict(configuration or {}),
        created_time=now_ms(),
    )
    return Table(str(root)).transaction().commit([Protocol(1, 2), metadata], "CREATE TABLE")


def add(path: str, p: str | None = "a", size: int = 100, data_change: bool = True) -> AddFile:
    return AddFile(path, {"p": p} if p is not None else {}, size, now_ms(), data_change=data_change)


def remove(path: str, p: str | None = "a", data_change: bool = True) -> RemoveFile:
    return RemoveFile(path, now_ms(), data_change=data_change, partition_values={"p": p} if p is not None else None)


def write_data_file(root: str | Path, rel_path: str, ids: list[int], p: str | None = "a") -> AddFile:
    """Write a real Parquet data file (``id`` only; ``p`` lives in the path) and its AddFile."""
    full = Path(root) / rel_path
    full.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), full)
    stat = full.stat()
    return AddFile(rel_path, {"p": p} if p is not None else {}, stat.st_size, int(stat.st_mtime * 1000))


# --------------------------------------------------------------------------- log inspection


def log_dir(root: str | Path) -> Path:
    return Path(root) / "_delta_log"


def commit_versions(root: str | Path) -> list[int]:
    return sorted(int(m.group(1)) for n in os.listdir(log_dir(root)) if (m := COMMIT_RE.match(n)))


def commit_path(root: str | Path, version: int) -> Path:
    return log_dir(root) / f"{version:020d}.json"


def temp_files(root: str | Path) -> list[str]:
    return sorted(n for n in os.listdir(log_dir(root)) if n.endswith(".tmp"))


def read_commit(root: str | Path, version: int) -> list[dict]:
    """Every action of a commit, checked line by line with ``json`` (strict, independent)."""
    raw = commit_path(root, version).read_bytes()
    assert raw.endswith(b"\n"), f"version {version}: commit file does not end with a newline (truncated?)"
    actions = []
    for line in raw.decode("utf-8").splitlines():
        action = json.loads(line)
        assert isinstance(action, dict) and len(action) == 1, f"version {version}: bad action line {line!r}"
        actions.append(action)
    return actions


def assert_log_intact(root: str | Path) -> list[int]:
    """Commits are 0..N without gaps and every one parses (json and the kernel's parser)."""
    versions = commit_versions(root)
    assert versions, "no commits at all"
    assert versions == list(range(versions[-1] + 1)), f"versions are not contiguous from 0: {versions}"
    for v in versions:
        actions = read_commit(root, v)
        assert "commitInfo" in actions[0], f"version {v}: first action is not commitInfo"
        parse_json_actions(commit_path(root, v).read_bytes(), v)
    return versions


def added_paths_by_version(root: str | Path) -> dict[int, list[str]]:
    return {v: [a["add"]["path"] for a in read_commit(root, v) if "add" in a] for v in commit_versions(root)}


def replayed_paths(root: str | Path) -> set[str]:
    """Active files by an independent, naive replay of every JSON commit (no checkpoints)."""
    live: set[str] = set()
    for v in commit_versions(root):
        for action in read_commit(root, v):
            if "add" in action:
                live.add(action["add"]["path"])
            elif "remove" in action:
                live.discard(action["remove"]["path"])
    return live


def table_state(root: str | Path, version: int | None = None) -> tuple[int, frozenset[str]]:
    snapshot = Table(str(root)).snapshot(version)
    return snapshot.version, frozenset(snapshot.file_paths())


def deltalake_state(root: str | Path) -> tuple[int, frozenset[str]]:
    """Version and active files as delta-rs sees them (an independent reader)."""
    import deltalake

    dt = deltalake.DeltaTable(str(root))
    files = getattr(dt, "files", None)
    if callable(files):  # deltalake < 1.0
        return dt.version(), frozenset(files())
    actions = pa.table(dt.get_add_actions(flatten=True))
    return dt.version(), frozenset(actions.column("path").to_pylist())


# --------------------------------------------------------------------------- child processes


class Child:
    """A ``kernel_helpers.py`` child process whose stdout lines arrive on a queue."""

    def __init__(self, *args: str, stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(HELPERS), *args],
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def next_line(self, timeout: float) -> str:
        """The next stdout line; fail if none comes within ``timeout`` or the child exits."""
        try:
            line = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"child {self.proc.args[2:]} printed nothing for {timeout}s; {self.stderr()}") from None
        if line is None:
            raise AssertionError(f"child {self.proc.args[2:]} exited (rc={self.proc.wait()}); {self.stderr()}")
        self.lines.append(line)
        return line

    def wait_for(self, prefix: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            line = self.next_line(max(0.01, deadline - time.monotonic()))
            if line.startswith(prefix):
                return line

    def drain(self, timeout: float = 60.0) -> list[str]:
        """All remaining lines until the child exits normally."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"child {self.proc.args[2:]} still running after {timeout}s; {self.stderr()}") from None
            if line is None:
                break
            self.lines.append(line)
        rc = self.proc.wait(timeout=10)
        assert rc == 0, f"child {self.proc.args[2:]} failed with rc={rc}; {self.stderr()}"
        return self.lines

    def kill(self) -> int:
        """SIGKILL this child (by its own pid) and reap it."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        rc = self.proc.wait(timeout=10)
        self._reader.join(timeout=10)
        while True:  # collect whatever it printed before dying
            try:
                line = self._queue.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                self.lines.append(line)
        return rc

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill()
        self._stderr.close()

    def stderr(self) -> str:
        self._stderr.flush()
        return "stderr: " + self.stderr_path.read_text(errors="replace")[-3000:]


def race_appenders(root: str, workers: int, per_worker: int, work_dir: Path, timeout: float = 180) -> list[dict]:
    """Start ``workers`` append-worker processes on ``root``, release them at once, and
    return every ``committed`` event they report (each appends ``per_worker`` files)."""
    go = work_dir / "go"
    children = [
        Child("append-worker", root, f"w{n}", str(per_worker), str(go), "WriteSerializable", stderr_path=work_dir / f"w{n}.err")
        for n in range(workers)
    ]
    try:
        for child in children:
            child.wait_for('{"event": "ready"', timeout=60)
        go.touch()
        return [json.loads(line) for child in children for line in child.drain(timeout=timeout) if '"committed"' in line]
    finally:
        for child in children:
            child.close()


def _emit(**fields) -> None:
    print(json.dumps(fields), flush=True)


def _cmd_append_worker(root: str, worker: str, count: str, go_file: str, isolation: str) -> None:
    """Wait for ``go_file``, then commit ``count`` blind appends with unique paths."""
    level = IsolationLevel(isolation)
    _emit(event="ready")
    while not os.path.exists(go_file):
        time.sleep(0.002)
    for i in range(int(count)):
        path = f"p={worker}/{worker}-{i:03d}.parquet"
        result = Table(root).transaction(level).commit([add(path, worker)], "WRITE", {"mode": "Append"})
        _emit(event="committed", version=result.version, attempts=result.attempts, path=path)


def _cmd_orphan_writer(root: str, name: str) -> None:
    """Open a transaction, write its data file, then hang before committing."""
    txn = Table(root).transaction()
    write_data_file(root, name, [1000, 1001, 1002])
    _emit(event="written", read_version=txn.read_version)
    time.sleep(600)
    txn.commit([add(name)], "WRITE")  # never reached: the parent kills us first


def _cmd_stall_at_fsync(root: str, name: str, marker: str) -> None:
    """Commit, but hang once the bytes of a temp file whose name holds ``marker`` are written.

    ``marker`` ``.json.`` stalls inside ``put_if_absent`` before the commit is linked into
    place; ``.checkpoint.parquet.`` stalls inside the post-commit checkpoint write.
    """
    real_fsync = os.fsync

    def stalling_fsync(fd: int) -> None:
        real_fsync(fd)
        target = os.readlink(f"/proc/self/fd/{fd}") if os.path.exists(f"/proc/self/fd/{fd}") else ""
        if target.endswith(".tmp") and marker in os.path.basename(target):
            _emit(event="stalled", temp=target)
            time.sleep(600)

    os.fsync = stalling_fsync
    Table(root).transaction().commit([add(name)], "WRITE")
    _emit(event="committed")  # never reached


def _cmd_commit_loop(root: str, prefix: str, adds_per_commit: str) -> None:
    """Commit blind appends forever (until killed), reporting each committed version."""
    n = int(adds_per_commit)
    i = 0
    while True:
        paths = [f"p=a/{prefix}-{i:05d}-{j:03d}.parquet" for j in range(n)]
        result = Table(root).transaction().commit([add(p) for p in paths], "WRITE")
        _emit(event="committed", version=result.version, first=paths[0], count=n)
        i += 1


COMMANDS = {
    "append-worker": _cmd_append_worker,
    "orphan-writer": _cmd_orphan_writer,
    "stall-at-fsync": _cmd_stall_at_fsync,
    "commit-loop": _cmd_commit_loop,
}


if __name__ == "__main__":
    COMMANDS[sys.argv[1]](*sys.argv[2:])
