"""File paths in the log, however spelled, name the files VACUUM keeps; none leads out of the table.

The spec (PROTOCOL.md, "Add File and Remove File"): ``path`` is "a relative path to a
data file from the root of the table or an absolute path", "a URI as specified by RFC
2396, which needs to be decoded to get the data file path". So every spelling of one
file -- relative, absolute, ``file:/p``, ``file:///p``, encoded as java.net.URI /
Hadoop ``Path`` or as delta-rs's ``url`` crate write it -- decodes to the same file.
The logs here are written by hand, so the expected outcome is known by construction;
the encodings the spellings use are pinned to what the JVM and delta-rs actually write.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkdelta.exceptions import PathOutsideTableError
from sparkdelta.kernel import Table
from sparkdelta.kernel.clone import clone
from sparkdelta.kernel.file_paths import canonical_paths
from sparkdelta.kernel.snapshot import clear_log_cache
from sparkdelta.kernel.storage import FileStatus, LocalStorage
from sparkdelta.kernel.vacuum import VacuumPlan, execute_vacuum, plan_vacuum
from sparkdelta.spark.paths import absolute_path, absolute_paths, spark_file_uri, spark_file_uris

DAY_MS = 86_400_000
SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
ROOT_CHARS = ["=", "+", ",", "%", " ", "é", "#"]

# How each writer percent-encodes the root characters in a path; other characters of the
# test paths ([A-Za-z0-9/_.-]) stay as they are for all of them.
# java.net.URI (Hadoop Path.toUri().toString(), delta-spark): punctuation and non-ASCII kept.
JAVA = {"=": "=", "+": "+", ",": ",", "%": "%25", " ": "%20", "é": "é", "#": "%23"}
# java.net.URI.toASCIIString(): the same, non-ASCII as UTF-8 escapes.
JAVA_ASCII = {**JAVA, "é": "%C3%A9"}
# delta-rs (the url crate's Url::from_file_path): as toASCIIString for these characters.
URL_CRATE = {"=": "=", "+": "+", ",": ",", "%": "%25", " ": "%20", "é": "%C3%A9", "#": "%23"}
# Everything but unreserved characters escaped (Python's quote(path, safe="/")).
FULL = {"=": "%3D", "+": "%2B", ",": "%2C", "%": "%25", " ": "%20", "é": "%C3%A9", "#": "%23"}


def _encode(path: str, table: dict[str, str]) -> str:
    plain = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_.-")
    assert set(path) <= plain | set(table), f"test path {path!r} has characters the encoding tables do not cover"
    return "".join(table.get(c, c) for c in path)


# Each spelling: (table root, file path relative to it) -> the string a writer puts in the log.
SPELLINGS: dict[str, Callable[[str, str], str]] = {
    "relative (delta-spark)": lambda root, rel: _encode(rel, JAVA),
    "relative (delta-rs)": lambda root, rel: _encode(rel, URL_CRATE),
    "absolute": lambda root, rel: _encode(f"{root}/{rel}", JAVA),
    "absolute, all escaped": lambda root, rel: _encode(f"{root}/{rel}", FULL),
    "file:/ (Hadoop Path)": lambda root, rel: "file:" + _encode(f"{root}/{rel}", JAVA),
    "file:/ (URI.toASCIIString)": lambda root, rel: "file:" + _encode(f"{root}/{rel}", JAVA_ASCII),
    "file:/// (java)": lambda root, rel: "file://" + _encode(f"{root}/{rel}", JAVA),
    "file:/// (delta-rs)": lambda root, rel: "file://" + _encode(f"{root}/{rel}", URL_CRATE),
    "file:/// all escaped": lambda root, rel: "file://" + _encode(f"{root}/{rel}", FULL),
    "file://localhost/": lambda root, rel: "file://localhost" + _encode(f"{root}/{rel}", JAVA_ASCII),
}


def _write_parquet(path: Path, ids: list[int], age_ms: int) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), path)
    moment = (time.time() * 1000 - age_ms) / 1000
    os.utime(path, (moment, moment))
    return path.stat().st_size


def _commit(root: Path, version: int, actions: list[dict[str, Any]], timestamp_ms: int) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    commit = log / f"{version:020d}.json"
    info = {"commitInfo": {"timestamp": timestamp_ms, "operation": "MANUAL"}}
    commit.write_text("".join(json.dumps(a) + "\n" for a in [info, *actions]))
    os.utime(commit, (timestamp_ms / 1000, timestamp_ms / 1000))


def _table_start(path: str, size: int, timestamp_ms: int) -> list[dict[str, Any]]:
    return [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "00000000-0000-0000-0000-000000000001",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": SCHEMA,
                "partitionColumns": [],
                "configuration": {},
                "createdTime": timestamp_ms,
            }
        },
        _add(path, size, timestamp_ms),
    ]


def _add(path: str, size: int, timestamp_ms: int) -> dict[str, Any]:
    return {"add": {"path": path, "partitionValues": {}, "size": size, "modificationTime": timestamp_ms, "dataChange": True}}


def _remove(path: str, timestamp_ms: int) -> dict[str, Any]:
    return {"remove": {"path": path, "deletionTimestamp": timestamp_ms, "dataChange": True}}


def _ids(files: list[Path]) -> list[int]:
    return sorted(i for f in files for i in pq.read_table(f).column("id").to_pylist())


# ---------------------------------------------------------------- finding 2: VACUUM


def test_vacuum_keeps_files_delta_spark_names_by_file_uri_under_a_partition_like_root(tmp_path: Path) -> None:
    """Regression: the root was quoted ``dt%3D...`` while delta-spark writes ``file:/.../dt=...``."""
    root = tmp_path / "dt=2024-01-01" / "t"
    now = int(time.time() * 1000)
    size = _write_parquet(root / "part-0.parquet", [1, 2], age_ms=30 * DAY_MS)
    _commit(root, 0, _table_start(f"file:{root}/part-0.parquet", size, now - 30 * DAY_MS), now - 30 * DAY_MS)

    table = Table(str(root))
    execute_vacuum(table, plan_vacuum(table))

    assert (root / "part-0.parquet").exists()
    assert _ids([root / "part-0.parquet"]) == [1, 2]


@pytest.mark.parametrize("spelling", list(SPELLINGS))
@pytest.mark.parametrize("char", ROOT_CHARS, ids=lambda c: f"root{c!r}")
def test_vacuum_keeps_every_file_a_version_in_the_window_reads(tmp_path: Path, char: str, spelling: str) -> None:
    """Live and recently removed files survive VACUUM at the default (7 day) retention, however spelled.

    v0 (30 days ago) adds a, b, c; v1 (20 days ago) removes c, spelled relative; v2 (a day
    ago) removes b. VACUUM must keep a (live) and b (v1 reads it: the last version before
    the window) and delete only c (tombstone expired) and an old orphan.
    """
    root = tmp_path / f"dt{char}2024" / "tbl"
    spell = SPELLINGS[spelling]
    now = int(time.time() * 1000)
    names = {"a": f"d{char}1/a.parquet", "b": "b.parquet", "c": f"d{char}1/c.parquet", "orphan": f"d{char}1/orphan.parquet"}
    sizes = {k: _write_parquet(root / n, [i], age_ms=30 * DAY_MS) for i, (k, n) in enumerate(names.items())}
    a, b, c = (spell(str(root), names[k]) for k in "abc")
    month_ago = now - 30 * DAY_MS
    _commit(root, 0, [*_table_start(a, sizes["a"], month_ago), _add(b, sizes["b"], now), _add(c, sizes["c"], now)], month_ago)
    _commit(root, 1, [_remove(SPELLINGS["relative (delta-spark)"](str(root), names["c"]), now - 20 * DAY_MS)], now - 20 * DAY_MS)
    _commit(root, 2, [_remove(b, now - DAY_MS)], now - DAY_MS)
    clear_log_cache()

    table = Table(str(root))
    assert table.snapshot(1).num_files == 2, "a remove spelled relative cancels the add spelled otherwise"
    plan = plan_vacuum(table)
    execute_vacuum(table, plan)

    assert {os.path.relpath(f.path, root) for f in plan.files} == {names["c"], names["orphan"]}
    assert not (root / names["c"]).exists() and not (root / names["orphan"]).exists()
    assert _ids([root / names["a"]]) == [0]  # the latest version
    assert _ids([root / names["a"], root / names["b"]]) == [0, 1]  # version 1, the last before the window
    assert [Table(str(root)).snapshot(v).num_files for v in (1, 2, 4)] == [2, 1, 1]


def _age_commits(root: Path, days_ago: list[float]) -> None:
    """Move version v (commit time, its removes' deletionTimestamp, its new files' mtime) to ``days_ago[v]``."""
    now = time.time() * 1000
    for version, days in enumerate(days_ago):
        moment = int(now - days * DAY_MS)
        commit = root / "_delta_log" / f"{version:020d}.json"
        actions = [json.loads(line) for line in commit.read_text().splitlines()]
        for action in actions:
            if "commitInfo" in action:
                action["commitInfo"]["timestamp"] = moment
            if "remove" in action:
                action["remove"]["deletionTimestamp"] = moment
            if "add" in action:
                target = absolute_path(str(root), action["add"]["path"])
                os.utime(target, (moment / 1000, moment / 1000))
        commit.write_text("".join(json.dumps(a) + "\n" for a in actions))
        os.utime(commit, (moment / 1000, moment / 1000))
    clear_log_cache()


@pytest.mark.parametrize("char", ROOT_CHARS, ids=lambda c: f"root{c!r}")
def test_our_vacuum_of_a_delta_rs_table_deletes_what_delta_rs_would_and_it_reads_the_same_rows(tmp_path: Path, char: str) -> None:
    """delta-rs writes a partitioned history under a root holding ``char`` (partition
    directories escaped its way): v0 20 days ago, an overwrite 10 days ago, an append a
    day ago. Our default VACUUM deletes exactly the files delta-rs's own would, and
    delta-rs reads the versions inside the window alike before and after."""
    root = tmp_path / f"r{char}x" / "tbl"
    root.mkdir(parents=True)
    uri = "file://" + _encode(str(root), URL_CRATE)
    data = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "p": ["a b", f"q{char}", "a b", "z"]})
    deltalake.write_deltalake(uri, data, partition_by=["p"])
    deltalake.write_deltalake(uri, data.slice(1, 2), mode="overwrite", partition_by=["p"])
    deltalake.write_deltalake(uri, data.slice(3), mode="append", partition_by=["p"])
    assert deltalake.DeltaTable(uri).table_uri.rstrip("/") == uri, "URL_CRATE is how delta-rs spells the root"
    _age_commits(root, [20, 10, 1])

    def rows(version: int) -> list[tuple[int, str]]:
        table = deltalake.DeltaTable(uri, version=version).to_pyarrow_table()
        return sorted(zip(table.column("id").to_pylist(), table.column("p").to_pylist(), strict=True))

    before = {v: rows(v) for v in (1, 2)}
    theirs = deltalake.DeltaTable(uri).vacuum(dry_run=True, full=True)
    table = Table(str(root))
    plan = plan_vacuum(table)
    assert sorted(os.path.relpath(f.path, root) for f in plan.files) == sorted(theirs) and len(theirs) == 3
    execute_vacuum(table, plan)
    assert {v: rows(v) for v in (1, 2)} == before


@pytest.mark.classic_only  # the oracle is Hadoop's Path, in the JVM
def test_the_encodings_are_the_ones_the_jvm_writes(spark: Any, tmp_path: Path) -> None:
    """Pins JAVA and JAVA_ASCII to java.net.URI as Hadoop's qualified ``Path`` produces it."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for char in ROOT_CHARS:
        local = f"{tmp_path}/r{char}x"
        path = jvm.org.apache.hadoop.fs.Path(local)
        uri = path.getFileSystem(conf).makeQualified(path).toUri()  # file:/p or file:///p, by Hadoop version
        assert uri.toString().removeprefix("file:").removeprefix("//") == _encode(local, JAVA)
        assert uri.toASCIIString().removeprefix("file:").removeprefix("//") == _encode(local, JAVA_ASCII)


# ------------------------------------------------ VACUUM never deletes outside the root


def test_vacuum_refuses_a_plan_naming_a_file_outside_the_table(tmp_path: Path) -> None:
    root, outside = tmp_path / "t", tmp_path / "t-other" / "x.parquet"
    now = int(time.time() * 1000)
    size = _write_parquet(root / "a.parquet", [1], age_ms=0)
    _write_parquet(outside, [2], age_ms=30 * DAY_MS)
    _commit(root, 0, _table_start("a.parquet", size, now), now)
    table = Table(str(root))
    plan = plan_vacuum(table)
    for foreign in (str(outside), f"{root}/../t-other/x.parquet", f"{root}/_delta_log/00000000000000000000.json"):
        bad = VacuumPlan(**{**plan.__dict__, "files": (FileStatus(foreign, 1, 0),)})
        with pytest.raises(PathOutsideTableError, match="x.parquet|_delta_log"):
            execute_vacuum(table, bad)
    elsewhere = VacuumPlan(**{**plan.__dict__, "table_root": str(outside.parent), "files": (FileStatus(str(outside), 1, 0),)})
    with pytest.raises(PathOutsideTableError, match="another table"):
        execute_vacuum(table, elsewhere)
    assert outside.exists() and (root / "_delta_log" / "00000000000000000000.json").exists()
    assert table.latest_version() == 0, "refused before VACUUM START is recorded"


def test_vacuum_plans_nothing_outside_the_table_whatever_the_listing_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = tmp_path / "t", tmp_path / "t2" / "x.parquet"
    now = int(time.time() * 1000)
    size = _write_parquet(root / "a.parquet", [1], age_ms=0)
    _write_parquet(outside, [2], age_ms=30 * DAY_MS)
    _commit(root, 0, _table_start("a.parquet", size, now), now)
    listing = LocalStorage.list_tree

    def listing_with_strays(self: LocalStorage, directory: str, descend: Any) -> Any:
        yield from listing(self, directory, descend)
        old = now - 30 * DAY_MS
        yield FileStatus(str(outside), 1, old)  # a store that lists a sibling sharing the prefix
        yield FileStatus(f"{root}/../t2/x.parquet", 1, old)

    monkeypatch.setattr(LocalStorage, "list_tree", listing_with_strays)
    table = Table(str(root))
    plan = plan_vacuum(table)
    execute_vacuum(table, plan)
    assert plan.files == () and outside.exists()


# ----------------------------------------------- finding 3: paths that leave the table

ESCAPES = [
    "../outside/x.parquet",
    "%2E%2E/outside/x.parquet",
    "..%2Foutside%2Fx.parquet",
    "sub/../../outside/x.parquet",
    "sub/%2e%2e/%2E%2E/outside/x.parquet",
]


def _table_with_escape(tmp_path: Path, path: str) -> tuple[Path, Path]:
    """v0 adds an inside file; v1 adds ``path``, which (decoded) names ``<tmp>/outside/x.parquet``."""
    root, outside = tmp_path / "t", tmp_path / "outside" / "x.parquet"
    now = int(time.time() * 1000)
    size = _write_parquet(root / "a.parquet", [1], age_ms=0)
    outside_size = _write_parquet(outside, [666], age_ms=30 * DAY_MS)
    _commit(root, 0, _table_start("a.parquet", size, now), now)
    _commit(root, 1, [_add(path, outside_size, now)], now)
    clear_log_cache()
    return root, outside


@pytest.mark.parametrize("path", [*ESCAPES, "DECODED-ABSOLUTE"])
def test_a_relative_path_leaving_the_table_is_refused_by_name(tmp_path: Path, path: str) -> None:
    if path == "DECODED-ABSOLUTE":  # a relative URI whose decoded form is absolute
        path = f"{tmp_path}/outside/x.parquet".replace("/", "%2F")
    root, outside = _table_with_escape(tmp_path, path)
    table = Table(str(root))
    with pytest.raises(PathOutsideTableError) as raised:
        table.snapshot().files  # noqa: B018
    message = str(raised.value)
    assert str(root) in message and "version 1" in message and path in message
    with pytest.raises(PathOutsideTableError):
        plan_vacuum(table)
    with pytest.raises(PathOutsideTableError, match="outside"):
        absolute_path(str(root), path)
    assert table.snapshot(0).num_files == 1 and outside.exists()


def test_paths_that_stay_inside_are_not_refused(tmp_path: Path) -> None:
    """Dots and encoded characters that do not climb out are ordinary names."""
    root = tmp_path / "t"
    for name in ("..a.parquet", "a..", "x/.../y.parquet"):
        assert absolute_path(str(root), name) == f"{root}/{name}"
    assert absolute_path(str(root), "a%2Fb.parquet") == f"{root}/a/b.parquet"


# Spellings with ``//``, ``.`` segments or a trailing ``/`` (literal or escaped): readers resolve them
# to the plain relative path, so the log's key for the file must be that path too.
UNNORMALIZED = {
    "./f.parquet": "f.parquet",
    "a//f.parquet": "a/f.parquet",
    "a/./f.parquet": "a/f.parquet",
    "%2E/f.parquet": "f.parquet",
    "a%2F%2Ff.parquet": "a/f.parquet",
    "a/f.parquet/": "a/f.parquet",
    "a/.%2F/f.parquet": "a/f.parquet",
}


@pytest.mark.parametrize("spelling", list(UNNORMALIZED))
def test_an_unnormalized_relative_path_names_the_file_readers_read(tmp_path: Path, spelling: str) -> None:
    """VACUUM keeps the live file, and a remove of the plain path cancels the add of the other spelling."""
    root, plain = tmp_path / "t", UNNORMALIZED[spelling]
    month_ago = int(time.time() * 1000) - 30 * DAY_MS
    size = _write_parquet(root / plain, [7], age_ms=30 * DAY_MS)
    _commit(root, 0, _table_start(spelling, size, month_ago), month_ago)
    clear_log_cache()
    table = Table(str(root))
    assert absolute_path(str(root), spelling) == f"{root}/{plain}"
    assert canonical_paths(pa.array(["x.parquet", spelling]), str(root)).to_pylist() == ["x.parquet", plain]

    plan = plan_vacuum(table)
    execute_vacuum(table, plan)
    assert plan.files == () and _ids([root / plain]) == [7]

    _commit(root, 1, [_remove(plain, month_ago)], month_ago)
    assert table.snapshot(1).num_files == 0


def test_a_shallow_clone_reads_files_outside_its_root_and_vacuum_never_deletes_them(tmp_path: Path) -> None:
    source, target = tmp_path / "source", tmp_path / "clone"
    now = int(time.time() * 1000)
    size = _write_parquet(source / "p=1" / "a.parquet", [1, 2], age_ms=30 * DAY_MS)
    _commit(source, 0, _table_start("p=1/a.parquet", size, now - 30 * DAY_MS), now - 30 * DAY_MS)
    clone(Table(str(source)), str(target), shallow=True)
    clone_table = Table(str(target))
    (path,) = clone_table.snapshot().files.column("path").to_pylist()
    assert path.startswith("file:") and _ids([Path(absolute_path(str(target), path))]) == [1, 2]
    _commit(target, 1, [_remove(path, now - 30 * DAY_MS)], now - 30 * DAY_MS)  # expired tombstone
    clear_log_cache()
    plan = plan_vacuum(clone_table, 0, check_retention=False)
    execute_vacuum(clone_table, plan)
    assert plan.files == () and (source / "p=1" / "a.parquet").exists()


def test_spark_read_optimize_and_delete_refuse_a_path_leaving_the_table(spark: Any, tmp_path: Path) -> None:
    from sparkdelta.tables import DeltaTable

    root, outside = _table_with_escape(tmp_path, "../outside/x.parquet")
    _commit(root, 2, [_add("b.parquet", _write_parquet(root / "b.parquet", [2], age_ms=0), 0)], int(time.time() * 1000))
    clear_log_cache()
    with pytest.raises(PathOutsideTableError, match="version 1"):
        spark.read.format("delta").load(str(root)).collect()
    table = DeltaTable.forPath(spark, str(root))
    with pytest.raises(PathOutsideTableError, match=r"\.\./outside/x\.parquet"):
        table.optimize().executeCompaction()
    with pytest.raises(PathOutsideTableError):
        table.delete("id = 1")
    assert Table(str(root)).latest_version() == 2 and outside.exists()


@pytest.mark.parametrize(
    "root",
    ["/data/t", "/data//t/", "/data/a b/t", "s3://bucket/t", "s3a://Bucket/a b/t", "abfss://c@acct.dfs.core.windows.net/t"],
)
def test_resolving_many_paths_at_once_resolves_each_as_alone(root: str) -> None:
    """``absolute_paths``' shortcut for plain names agrees with ``absolute_path`` on every spelling."""
    names = [
        "part-0.snappy.parquet",
        "p=1/q=a/part-0.parquet",
        "p=a%20b/part-0.parquet",
        "p=%C3%A9/x.parquet",
        "..a.parquet",
        "x/.../y.parquet",
        ".hidden/x.parquet",
        "a%2Fb.parquet",
        "s3://other/abs.parquet",
        "file:/abs/x.parquet",
        *UNNORMALIZED,
    ]
    assert absolute_paths(root, names) == [absolute_path(root, name) for name in names]
    assert spark_file_uris(root, names) == [spark_file_uri(absolute_path(root, name)) for name in names]
    with pytest.raises(PathOutsideTableError):
        absolute_paths(root, ["ok.parquet", ESCAPES[0]])
