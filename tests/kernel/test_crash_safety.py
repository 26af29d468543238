"""Crash safety: killed writers, half-written checkpoints, stray temp files, bad hints.

What a crash may leave behind, and what the kernel must make of it:

- data files never committed (orphans): invisible, the table reads its last commit;
- a commit's temp file (``.<v>.json.<uuid>.tmp``): invisible; ``<v>.json`` either exists
  whole or not at all (temp file + hard link);
- a truncated checkpoint (a store without atomic writes) or a ``_last_checkpoint`` that
  is garbage or points at one: replay falls back to JSON commits or an older checkpoint.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from kernel_helpers import (
    Child,
    add,
    assert_log_intact,
    commit_versions,
    create_table,
    deltalake_state,
    log_dir,
    replayed_paths,
    table_state,
    temp_files,
    write_data_file,
)

from sparkdelta.kernel import Table
from sparkdelta.kernel.checkpoint import checkpoint_table
from sparkdelta.kernel.storage import LocalStorage

_TEMPLATES: dict[tuple, Path] = {}


@pytest.fixture(scope="module")
def template_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("templates")


@pytest.fixture
def build_table(template_dir: Path):
    """``build(root, commits, configuration)``: version 0 plus ``commits`` appends of f<i>.parquet.

    Each distinct table is committed once (through the kernel) and then copied.
    """

    def build(root: Path, commits: int, configuration: dict[str, str] | None = None) -> None:
        key = (commits, tuple(sorted((configuration or {}).items())))
        if key not in _TEMPLATES:
            template = template_dir / f"t{len(_TEMPLATES)}"
            create_table(template, configuration=configuration)
            for i in range(1, commits + 1):
                Table(str(template)).transaction().commit([add(f"p=a/f{i:03d}.parquet")], "WRITE")
            _TEMPLATES[key] = template
        shutil.copytree(_TEMPLATES[key], root)

    return build


def files_at(version: int) -> frozenset[str]:
    return frozenset(f"p=a/f{i:03d}.parquet" for i in range(1, version + 1))


def checkpoint_file(root: Path, version: int) -> Path:
    return log_dir(root) / f"{version:020d}.checkpoint.parquet"


def assert_reads_and_accepts_commits(root: Path, latest: int) -> None:
    """Every version reads correctly, then the table takes further commits (incl. a checkpoint)."""
    for v in sorted({0, 1, 9, 10, 11, 19, 20, 21, latest - 1, latest} & set(range(latest + 1))):
        assert table_state(root, v) == (v, files_at(v)), f"version {v} reads wrong"
    result = Table(str(root)).transaction().commit([add("p=a/after-crash.parquet")], "WRITE")
    assert result.version == latest + 1
    assert table_state(root) == (latest + 1, files_at(latest) | {"p=a/after-crash.parquet"})


# --------------------------------------------------------------------------- killed writers


@pytest.mark.timeout(60)
def test_writer_killed_between_data_files_and_commit(tmp_path: Path) -> None:
    root = tmp_path / "table"
    create_table(root)
    committed_ids = []
    for i in range(2):
        ids = [10 * i + k for k in range(3)]
        action = write_data_file(root, f"p=a/committed-{i}.parquet", ids)
        Table(str(root)).transaction().commit([action], "WRITE")
        committed_ids += ids

    orphan = "p=a/orphan.parquet"
    child = Child("orphan-writer", str(root), orphan, stderr_path=tmp_path / "child.err")
    try:
        event = json.loads(child.wait_for('{"event": "written"', timeout=30))
        assert event["read_version"] == 2
        assert child.kill() == -signal.SIGKILL
    finally:
        child.close()

    assert (root / orphan).exists(), "the child did not get as far as writing its data file"
    assert commit_versions(root) == [0, 1, 2]
    committed = frozenset({"p=a/committed-0.parquet", "p=a/committed-1.parquet"})
    assert table_state(root) == (2, committed)
    assert deltalake_state(root) == (2, committed)
    import deltalake

    ids = deltalake.DeltaTable(str(root)).to_pyarrow_table().column("id").to_pylist()
    assert sorted(ids) == sorted(committed_ids), "rows of the orphan data file are visible"

    result = Table(str(root)).transaction().commit([add("p=a/next.parquet")], "WRITE")
    assert result.version == 3
    assert table_state(root) == (3, committed | {"p=a/next.parquet"})
    assert orphan not in table_state(root)[1]


@pytest.mark.timeout(60)
def test_writer_killed_inside_put_if_absent_leaves_no_commit(tmp_path: Path, build_table) -> None:
    """Killed after writing the commit's bytes but before publishing them: no <v>.json at all."""
    root = tmp_path / "table"
    build_table(root, 2)
    child = Child("stall-at-fsync", str(root), "p=a/never.parquet", ".json.", stderr_path=tmp_path / "child.err")
    try:
        event = json.loads(child.wait_for('{"event": "stalled"', timeout=30))
        # the commit bytes are on disk, but only under the temp name
        assert Path(event["temp"]).parent == log_dir(root)
        assert Path(event["temp"]).name.startswith(".00000000000000000003.json.")
        assert not (log_dir(root) / f"{3:020d}.json").exists(), "commit visible before it was published"
        assert table_state(root) == (2, files_at(2))  # readers meanwhile see the old version
        assert child.kill() == -signal.SIGKILL
    finally:
        child.close()

    leftover = temp_files(root)
    assert len(leftover) == 1 and leftover[0].startswith(".00000000000000000003.json.")
    assert b'"p=a/never.parquet"' in (log_dir(root) / leftover[0]).read_bytes()
    assert commit_versions(root) == [0, 1, 2]
    assert_log_intact(root)
    assert Table(str(root)).latest_version() == 2
    assert_reads_and_accepts_commits(root, 2)  # version 3 is free despite the temp file
    assert deltalake_state(root)[0] == 3


@pytest.mark.timeout(60)
def test_writer_killed_while_writing_its_checkpoint(tmp_path: Path, build_table) -> None:
    """Killed after committing version 20, halfway through writing checkpoint 20."""
    root = tmp_path / "table"
    build_table(root, 19)  # checkpoint 10 exists; the next commit is due a checkpoint
    old_checkpoint = checkpoint_file(root, 10).read_bytes()
    child = Child("stall-at-fsync", str(root), "p=a/f020.parquet", ".checkpoint.parquet.", stderr_path=tmp_path / "child.err")
    try:
        event = json.loads(child.wait_for('{"event": "stalled"', timeout=30))
        assert Path(event["temp"]).name.startswith(f".{20:020d}.checkpoint.parquet.")
        assert child.kill() == -signal.SIGKILL
    finally:
        child.close()

    assert commit_versions(root) == list(range(21))  # the commit itself was published
    assert not checkpoint_file(root, 20).exists(), "a checkpoint became visible before it was complete"
    assert checkpoint_file(root, 10).read_bytes() == old_checkpoint
    assert json.loads((log_dir(root) / "_last_checkpoint").read_text())["version"] == 10
    assert [n for n in temp_files(root) if ".checkpoint.parquet." in n]
    snapshot = Table(str(root)).snapshot()
    assert snapshot.segment.checkpoint_version == 10
    assert (snapshot.version, frozenset(snapshot.file_paths())) == (20, files_at(20))
    assert deltalake_state(root) == (20, files_at(20))
    assert_reads_and_accepts_commits(root, 20)


@pytest.mark.timeout(90)
def test_randomly_killed_commit_loops_never_leave_a_partial_commit(tmp_path: Path) -> None:
    root = tmp_path / "table"
    # checkpoint often, so some kills land while a checkpoint is being written too
    create_table(root, configuration={"delta.checkpointInterval": "3"})
    rng = random.Random(20240607)
    reported: set[str] = set()
    kills = 0
    for round_ in range(5):
        child = Child("commit-loop", str(root), f"r{round_}", "40", stderr_path=tmp_path / f"loop{round_}.err")
        try:
            for _ in range(rng.randint(1, 4)):
                event = json.loads(child.wait_for('{"event": "committed"', timeout=30))
                reported.update(f"{event['first'][:-12]}-{j:03d}.parquet" for j in range(event["count"]))
            # kill at a random point of a later commit (or its checkpoint)
            deadline_ms = rng.uniform(0, 40)
            try:
                child.next_line(timeout=deadline_ms / 1000)
            except AssertionError:
                pass
            assert child.kill() == -signal.SIGKILL
            kills += 1
        finally:
            child.close()
        for line in child.lines:
            try:
                event = json.loads(line)
            except ValueError:  # a line cut short by the kill
                continue
            if event["event"] == "committed":
                reported.update(f"{event['first'][:-12]}-{j:03d}.parquet" for j in range(event["count"]))

    assert kills == 5
    versions = assert_log_intact(root)  # every N.json whole, 0..N without gaps
    latest = versions[-1]
    assert latest >= 5
    # what a JSON replay says, the kernel (which also reads checkpoints) and delta-rs say too
    expected = frozenset(replayed_paths(root))
    assert reported <= expected, "a commit reported as done is missing"
    assert len(expected - reported) <= 40 * kills, "more unreported commits than kills"
    assert table_state(root) == (latest, expected)
    assert deltalake_state(root) == (latest, expected)
    hint = log_dir(root) / "_last_checkpoint"
    if hint.exists():
        assert isinstance(json.loads(hint.read_bytes())["version"], int)
    for cp in log_dir(root).glob("*.checkpoint.parquet"):  # written whole or not at all
        adds = pq.read_table(cp, columns=["add"]).column("add").drop_null()
        assert len(adds) == 40 * int(cp.name[:20]), f"{cp.name} is incomplete"
    result = Table(str(root)).transaction().commit([add("p=a/survivor.parquet")], "WRITE")
    assert result.version == latest + 1
    assert table_state(root) == (latest + 1, expected | {"p=a/survivor.parquet"})


# --------------------------------------------------------------------------- half-written checkpoints


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


CORRUPTIONS = {
    "truncated-half": _truncated,
    "missing-footer": lambda data: data[:-8],
    "empty": lambda data: b"",
    "garbage": lambda data: random.Random(1).randbytes(len(data)),
    "magic-only": lambda data: b"PAR1",
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_unreadable_checkpoint_falls_back_to_json_commits(tmp_path: Path, build_table, corruption: str) -> None:
    root = tmp_path / "table"
    build_table(root, 12)  # the kernel wrote checkpoint 10 and _last_checkpoint -> 10
    cp = checkpoint_file(root, 10)
    assert json.loads((log_dir(root) / "_last_checkpoint").read_text())["version"] == 10
    cp.write_bytes(CORRUPTIONS[corruption](cp.read_bytes()))
    # and the debris of crashed writers
    (log_dir(root) / f".{13:020d}.json.{uuid.uuid4().hex}.tmp").write_bytes(b'{"commitInfo":{"timest')
    (log_dir(root) / f".{10:020d}.checkpoint.parquet.{uuid.uuid4().hex}.tmp").write_bytes(b"PAR1\x00\x01")

    snapshot = Table(str(root)).snapshot()
    assert (snapshot.version, frozenset(snapshot.file_paths())) == (12, files_at(12))
    assert snapshot.segment.checkpoint_version is None  # it replayed 0..12 from JSON
    assert_reads_and_accepts_commits(root, 12)


def test_next_checkpoint_after_an_unreadable_one_is_whole(tmp_path: Path, build_table) -> None:
    root = tmp_path / "table"
    build_table(root, 12)
    cp = checkpoint_file(root, 10)
    cp.write_bytes(_truncated(cp.read_bytes()))
    Table(str(root)).transaction().commit([add("p=a/after-crash.parquet")], "WRITE")
    for i in range(14, 21):
        Table(str(root)).transaction().commit([add(f"p=a/g{i}.parquet")], "WRITE")
    expected = files_at(12) | {"p=a/after-crash.parquet"} | {f"p=a/g{i}.parquet" for i in range(14, 21)}
    rows = pq.read_table(checkpoint_file(root, 20), columns=["add"]).column("add").drop_null()
    assert {r["path"] for r in rows.to_pylist()} == expected
    snapshot = Table(str(root)).snapshot()
    assert snapshot.segment.checkpoint_version == 20
    assert (snapshot.version, frozenset(snapshot.file_paths())) == (20, expected)


def test_unreadable_newest_checkpoint_falls_back_to_the_previous_one(tmp_path: Path, build_table) -> None:
    root = tmp_path / "table"
    build_table(root, 22)  # checkpoints 10 and 20
    cp20 = checkpoint_file(root, 20)
    cp20.write_bytes(_truncated(cp20.read_bytes()))
    snapshot = Table(str(root)).snapshot()
    assert snapshot.segment.checkpoint_version == 10
    assert (snapshot.version, frozenset(snapshot.file_paths())) == (22, files_at(22))
    assert table_state(root, 20) == (20, files_at(20))
    assert_reads_and_accepts_commits(root, 22)


def test_crash_while_writing_a_checkpoint_with_a_hint_pointing_at_it(tmp_path: Path, build_table) -> None:
    """No earlier checkpoint: a torn checkpoint 12 and a hint naming it."""
    root = tmp_path / "table"
    build_table(root, 12, configuration={"delta.checkpointInterval": "1000"})
    assert not list(log_dir(root).glob("*.checkpoint*"))
    table = checkpoint_table(Table(str(root)).snapshot())
    buffer = pa.BufferOutputStream()
    pq.write_table(table, buffer)
    whole = buffer.getvalue().to_pybytes()
    checkpoint_file(root, 12).write_bytes(whole[: len(whole) * 2 // 3])
    (log_dir(root) / "_last_checkpoint").write_text(json.dumps({"version": 12, "size": table.num_rows}))
    (log_dir(root) / f".{12:020d}.checkpoint.parquet.{uuid.uuid4().hex}.tmp").write_bytes(whole[:100])

    assert table_state(root) == (12, files_at(12))
    assert_reads_and_accepts_commits(root, 12)


def test_incomplete_multipart_checkpoint_is_ignored(tmp_path: Path, build_table) -> None:
    """Part 1 of 2 was written (and is readable), part 2 never was: it must not be used."""
    root = tmp_path / "table"
    build_table(root, 12, configuration={"delta.checkpointInterval": "1000"})
    full = checkpoint_table(Table(str(root)).snapshot(10))
    part1 = full.slice(0, full.num_rows - 5)  # protocol, metadata and only some of the adds
    pq.write_table(part1, log_dir(root) / f"{10:020d}.checkpoint.{1:010d}.{2:010d}.parquet")
    (log_dir(root) / "_last_checkpoint").write_text(json.dumps({"version": 10, "size": full.num_rows, "parts": 2}))

    snapshot = Table(str(root)).snapshot()
    assert snapshot.segment.checkpoint_version is None
    assert (snapshot.version, frozenset(snapshot.file_paths())) == (12, files_at(12))
    assert_reads_and_accepts_commits(root, 12)


class TornWriteStorage(LocalStorage):
    """A store without atomic writes that dies mid-upload of a checkpoint."""

    def write(self, path: str, data: bytes) -> None:
        if path.endswith(".checkpoint.parquet"):
            with open(path, "wb") as f:
                f.write(data[: len(data) // 3])
            raise OSError("connection reset while uploading the checkpoint")
        super().write(path, data)


def test_failed_checkpoint_does_not_undo_the_commit(tmp_path: Path, build_table) -> None:
    root = tmp_path / "table"
    build_table(root, 9)
    torn = Table(str(root), storage=TornWriteStorage())
    result = torn.transaction().commit([add("p=a/f010.parquet")], "WRITE")
    assert (result.version, result.checkpointed) == (10, False)
    assert checkpoint_file(root, 10).exists()  # the torn file is there, unreadable
    assert not (log_dir(root) / "_last_checkpoint").exists()
    assert table_state(root) == (10, files_at(10))
    assert_reads_and_accepts_commits(root, 10)


# --------------------------------------------------------------------------- bad _last_checkpoint


BAD_HINTS = {
    "empty": b"",
    "truncated-json": b'{"version": 1',
    "binary-garbage": bytes(range(256)) * 4,
    "invalid-utf8": b'{"version": 10, "x": "\xff\xfe"}',
    "nul-bytes": b"\x00" * 64,
    "json-null": b"null",
    "json-list": b"[10]",
    "json-string": b'"10"',
    "version-as-string": b'{"version": "10"}',
    "version-as-float": b'{"version": 10.5}',
    "version-missing": b'{"size": 3}',
    "version-negative": b'{"version": -7}',
    "version-without-checkpoint": b'{"version": 5}',
    "version-in-the-future": b'{"version": 999}',
    "version-huge": b'{"version": 100000000000000000000000}',
    "stale-but-valid": b'{"version": 0}',
}


@pytest.mark.parametrize("name", sorted(BAD_HINTS))
def test_corrupt_last_checkpoint_is_ignored(tmp_path: Path, build_table, name: str) -> None:
    root = tmp_path / "table"
    build_table(root, 12)  # checkpoint 10 exists
    (log_dir(root) / "_last_checkpoint").write_bytes(BAD_HINTS[name])

    snapshot = Table(str(root)).snapshot()
    assert (snapshot.version, frozenset(snapshot.file_paths())) == (12, files_at(12))
    assert snapshot.segment.checkpoint_version == 10  # found by listing, despite the hint
    assert Table(str(root)).latest_version() == 12
    assert_reads_and_accepts_commits(root, 12)


def test_corrupt_last_checkpoint_with_no_checkpoint_at_all(tmp_path: Path, build_table) -> None:
    root = tmp_path / "table"
    build_table(root, 4)
    (log_dir(root) / "_last_checkpoint").write_bytes(b"\x89PNG\r\n\x1a\n not json")
    assert table_state(root) == (4, files_at(4))
    assert_reads_and_accepts_commits(root, 4)


def test_last_checkpoint_is_rewritten_whole_by_the_next_checkpoint(tmp_path: Path, build_table) -> None:
    root = tmp_path / "table"
    build_table(root, 9)
    (log_dir(root) / "_last_checkpoint").write_bytes(b'{"version": 1')
    result = Table(str(root)).transaction().commit([add("p=a/f010.parquet")], "WRITE")
    assert (result.version, result.checkpointed) == (10, True)
    hint = json.loads((log_dir(root) / "_last_checkpoint").read_bytes())
    assert hint["version"] == 10 and hint["numOfAddFiles"] == 10
    assert table_state(root) == (10, files_at(10))
    assert deltalake_state(root) == (10, files_at(10))
