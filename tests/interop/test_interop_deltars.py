"""Interoperability with delta-rs (the ``deltalake`` package) as an independent oracle.

1. Tables written by delta-rs replay in sparkdelta to the same state at every version.
2. Logs written by sparkdelta open in delta-rs with the same files and the same rows.
3. Timestamp time travel resolves to the same version in both.
"""

from __future__ import annotations

import datetime as dt
import glob
import os
import time
from urllib.parse import unquote

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, QueryBuilder, write_deltalake
from deltalake import Transaction as DeltaRsTransaction
from deltalake.exceptions import DeltaError
from interop_helpers import (
    URI_PATH_SAFE,
    SparkdeltaWriter,
    assert_frames_equal,
    assert_same_state,
    deltars_state,
    sparkdelta_state,
)

from sparkdelta.exceptions import VersionNotFoundError
from sparkdelta.kernel import RemoveFile, SetTransaction, Table

# Partition values that need escaping somewhere: in directory names, in the URL-encoded
# log path, or both.
AWKWARD = [
    None,
    "a b",
    "x=y",
    "s/l",
    "p%25",
    "%",
    "ünï",
    "日本",
    "#?&",
    "a:b",
    "q'\"",
    "back\\slash",
    "{[^]}*",
    " lead",
    "tab\there",
    "a+b",
]


def _utc(ms: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)


def _versions(path: str) -> range:
    return range(DeltaTable(path).version() + 1)


def _checkpoint_versions(path: str) -> list[int]:
    return sorted(int(os.path.basename(p)[:20]) for p in glob.glob(os.path.join(path, "_delta_log", "*.checkpoint*.parquet")))


def _read_deltars(path: str, version: int) -> pa.Table:
    return DeltaTable(path, version=version).to_pyarrow_table()


# =========================================================================== 1. delta-rs writes


def _awkward_rows(start: int, values: list) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + len(values)), pa.int64()),
            "p": pa.array(values, pa.string()),
            "v": pa.array([float(i) / 4 for i in range(len(values))], pa.float64()),
        }
    )


def test_deltars_partitioned_history_replays_identically(tmp_path):
    """Appends, deletes, replaceWhere, schema evolution, overwrite and checkpoints by delta-rs."""
    path = str(tmp_path / "rs table ü")
    values = AWKWARD + [""]
    write_deltalake(path, _awkward_rows(0, values + values), partition_by=["p"])  # v0: 2 rows a file
    write_deltalake(path, _awkward_rows(100, values[::2]), mode="append", partition_by=["p"])  # v1
    DeltaTable(path).delete("id = 2")  # v2: rewrites the x=y file without that row
    DeltaTable(path).delete("p = 's/l'")  # v3: drops a whole partition
    DeltaTable(path).create_checkpoint()  # checkpoint at 3
    write_deltalake(  # v4: replaceWhere on one awkward partition
        path, _awkward_rows(200, ["a b", "a b"]), mode="overwrite", predicate="p = 'a b'", partition_by=["p"]
    )
    evolved = _awkward_rows(300, ["p%25", None, "日本"]).append_column("extra", pa.array(["e1", None, "e3"]))
    write_deltalake(path, evolved, mode="append", schema_mode="merge", partition_by=["p"])  # v5: new column
    DeltaTable(path).delete("p IS NULL")  # v6: drop the null partition
    DeltaTable(path).create_checkpoint()  # checkpoint at 6
    late = _awkward_rows(400, ["%", "q'\""]).append_column("extra", pa.array(["x", None], pa.string()))
    write_deltalake(path, late, mode="append", partition_by=["p"])  # v7

    assert DeltaTable(path).version() == 7
    assert _checkpoint_versions(path) == [3, 6]
    sizes = []
    for version in _versions(path):
        state = assert_same_state(path, version)
        sizes.append(len(state))
    # The history really changed the file set (so equal-at-every-version means something).
    assert len(set(sizes)) > 2
    # delta-rs moves partition columns last when it evolves the schema.
    assert Table(path).snapshot().schema.names == ["id", "v", "p", "extra"]
    assert Table(path).snapshot(4).schema.names == ["id", "p", "v"]
    # Latest snapshot without a version goes through the checkpoint and agrees too.
    assert sorted(Table(path).snapshot().file_paths()) == sorted(f["raw_path"] for f in deltars_state(path, 7).values())


def _multi_partition_table(path: str, with_date: bool) -> list[str]:
    n = len(AWKWARD)
    columns = {
        "id": pa.array(range(n), pa.int64()),
        "p": pa.array(AWKWARD, pa.string()),
        "k": pa.array([None if i % 3 == 0 else i % 2 for i in range(n)], pa.int64()),
    }
    if with_date:
        columns["d"] = pa.array([None if i % 4 == 0 else dt.date(2024, 1, 1 + i % 3) for i in range(n)], pa.date32())
    rows = pa.table(columns)
    partition_by = [c for c in rows.column_names if c != "id"]
    write_deltalake(path, rows, partition_by=partition_by, configuration={"delta.checkpointInterval": "2"})
    for i in range(1, 5):
        write_deltalake(path, rows.slice(i, 3), mode="append", partition_by=partition_by)
        if i == 2:
            DeltaTable(path).delete("k = 1")
    assert DeltaTable(path).version() == 5
    # delta-rs checkpoints itself when (version + 1) is a multiple of the interval.
    assert _checkpoint_versions(path) == [1, 3, 5]
    return partition_by


def test_deltars_multi_column_partitions_with_auto_checkpoints(tmp_path):
    """String and long partition columns, nulls in each, delta-rs checkpointing itself."""
    path = str(tmp_path / "multi")
    partition_by = _multi_partition_table(path, with_date=False)
    for version in _versions(path):
        assert_same_state(path, version)
    assert Table(path).snapshot().partition_columns == tuple(partition_by) == ("p", "k")


def test_deltars_date_partitions_replay(tmp_path):
    """A date partition column (with nulls) next to string and long ones.

    Regression: Arrow's JSON type inference used to turn date-like partition values read
    from JSON commits into timestamps ('2024-01-02' -> '2024-01-02 00:00:00').
    """
    path = str(tmp_path / "multi-date")
    _multi_partition_table(path, with_date=True)
    for version in _versions(path):
        assert_same_state(path, version)
        raw = Table(path).snapshot(version).files.column("partitionValues").to_pylist()
        assert {v for pairs in raw for k, v in pairs if k == "d"} <= {None, "2024-01-01", "2024-01-02", "2024-01-03"}


def test_deltars_maintenance_operations_replay(tmp_path):
    """OPTIMIZE (dataChange=false), UPDATE, MERGE, RESTORE (re-adds old files) and a log
    compaction file written by delta-rs."""
    path = str(tmp_path / "maint")
    rows = _awkward_rows(0, ["a b", "x=y", "a b", None])
    write_deltalake(path, rows, partition_by=["p"])  # v0
    for i in range(1, 4):
        write_deltalake(path, _awkward_rows(10 * i, ["a b", "x=y", None]), mode="append", partition_by=["p"])  # v1-3
    DeltaTable(path).optimize.compact()  # v4
    DeltaTable(path).update(updates={"v": "v + 100"}, predicate="p = 'x=y'")  # v5
    (
        DeltaTable(path)
        .merge(_awkward_rows(0, ["a b", "ünï"]), predicate="t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_delete()
        .when_not_matched_insert_all()
        .execute()
    )  # v6
    DeltaTable(path).restore(2)  # v7: files of version 2 come back
    DeltaTable(path).compact_logs(1, 6)  # 00..01.00..06.compacted.json
    write_deltalake(path, _awkward_rows(90, ["%"]), mode="append", partition_by=["p"])  # v8
    assert DeltaTable(path).version() == 8
    assert any(name.endswith(".compacted.json") for name in os.listdir(os.path.join(path, "_delta_log")))
    operations = {h["version"]: h["operation"] for h in DeltaTable(path).history()}
    assert [operations[v] for v in (4, 5, 6, 7)] == ["OPTIMIZE", "UPDATE", "MERGE", "RESTORE"]
    assert {r.version: r.commit_info["operation"] for r in Table(path).history()} == operations
    for version in _versions(path):
        assert_same_state(path, version)
    assert sorted(sparkdelta_state(path, 7)) == sorted(sparkdelta_state(path, 2))


def test_deltars_checkpoint_with_struct_stats_only(tmp_path):
    """A delta-rs checkpoint with only ``stats_parsed`` (no JSON stats).

    Regression: the kernel used to ignore ``add.stats_parsed``, so its files had no stats and
    its next checkpoint wrote ``stats=null``, losing them for delta-rs too.
    """
    path = str(tmp_path / "stats-struct")
    config = {
        "delta.checkpointInterval": "3",
        "delta.checkpoint.writeStatsAsStruct": "true",
        "delta.checkpoint.writeStatsAsJson": "false",
    }
    write_deltalake(path, _awkward_rows(0, ["a", "b", "a"]), partition_by=["p"], configuration=config)
    write_deltalake(path, _awkward_rows(10, ["a", "c"]), mode="append", partition_by=["p"])
    write_deltalake(path, _awkward_rows(20, ["d"]), mode="append", partition_by=["p"])  # delta-rs checkpoints v2
    assert _checkpoint_versions(path) == [2]
    assert Table(path).transaction().commit([], "NOOP").checkpointed  # sparkdelta checkpoints v3
    # delta-rs still knows every file's row count after sparkdelta's checkpoint...
    assert [f["num_records"] for f in deltars_state(path, 3).values()] == [
        f["num_records"] for f in deltars_state(path, 2).values()
    ]
    # ...and sparkdelta agrees with delta-rs at every version.
    for version in _versions(path):
        assert_same_state(path, version)


def test_deltars_app_transactions_match(tmp_path):
    path = str(tmp_path / "txn")
    rows = _awkward_rows(0, ["a", "b"])
    write_deltalake(path, rows, commit_properties=CommitProperties(app_transactions=[DeltaRsTransaction("app-1", 7)]))
    write_deltalake(
        path,
        rows,
        mode="append",
        commit_properties=CommitProperties(app_transactions=[DeltaRsTransaction("app-1", 8), DeltaRsTransaction("app-2", 1)]),
    )
    DeltaTable(path).create_checkpoint()
    properties = CommitProperties(app_transactions=[DeltaRsTransaction("app-2", 5)])
    write_deltalake(path, rows, mode="append", commit_properties=properties)
    oracle = DeltaTable(path)
    ours = Table(path).snapshot().app_transactions
    assert sorted(ours) == ["app-1", "app-2"]
    assert (
        {app: txn.version for app, txn in ours.items()}
        == {app: oracle.transaction_version(app) for app in ("app-1", "app-2")}
        == {"app-1": 8, "app-2": 5}
    )
    first = Table(path).snapshot(0).app_transactions
    assert sorted(first) == ["app-1"]
    assert first["app-1"].version == DeltaTable(path, version=0).transaction_version("app-1") == 7


def test_deltars_cleaned_up_log_replays_from_checkpoint(tmp_path):
    """After delta-rs deletes expired commits, both start from the checkpoint and agree."""
    path = str(tmp_path / "cleanup")
    config = {"delta.logRetentionDuration": "interval 1 days"}
    write_deltalake(path, _awkward_rows(0, ["a", "b"]), partition_by=["p"], configuration=config)
    for i in range(1, 4):
        write_deltalake(path, _awkward_rows(10 * i, ["a", "c"]), mode="append", partition_by=["p"])
    DeltaTable(path).create_checkpoint()  # at 3
    write_deltalake(path, _awkward_rows(90, ["d"]), mode="append", partition_by=["p"])  # v4
    old = (dt.datetime.now(dt.UTC) - dt.timedelta(days=10)).timestamp()
    for version in range(4):
        os.utime(os.path.join(path, "_delta_log", f"{version:020d}.json"), (old + version, old + version))
    DeltaTable(path).cleanup_metadata()
    remaining = sorted(os.listdir(os.path.join(path, "_delta_log")))
    assert f"{0:020d}.json" not in remaining, remaining
    for version in (3, 4):
        assert_same_state(path, version)
    for version in (0, 1, 2):
        with pytest.raises(DeltaError):
            DeltaTable(path, version=version)
        with pytest.raises(VersionNotFoundError, match="cannot be reconstructed"):
            Table(path).snapshot(version)


# =========================================================================== 2. sparkdelta writes

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()), ("p", pa.string())])
PARTITIONS = [None, "a b", "x=y", "s/l", "p%25", "%", "ünï", "日本", "#?&", "a:b", "q'\"", " lead"]


def _rows(start: int, count: int, p) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([None if i % 5 == 0 else f"n{i}" for i in ids], pa.string()),
            "score": pa.array([None if i % 7 == 3 else i / 2 for i in ids], pa.float64()),
            "p": pa.array([p] * count, pa.string()),
        },
        schema=SCHEMA,
    )


def _check_sparkdelta_table_in_deltars(writer: SparkdeltaWriter) -> None:
    path = writer.root
    latest = DeltaTable(path).version()
    assert latest == Table(path).latest_version() == max(writer.expected)
    for version in range(latest + 1):
        # Same files: delta-rs vs sparkdelta vs what was written.
        state = assert_same_state(path, version, raw_paths_equal=False)
        assert sorted(state) == sorted(unquote(p) for p in writer.expected[version])
        # sparkdelta hands back the log's paths and partition values verbatim, through its
        # own checkpoints too (delta-rs reads "" and null alike, so check these directly).
        snapshot = Table(path).snapshot(version)
        raw = dict(zip(snapshot.file_paths(), snapshot.files.column("partitionValues").to_pylist(), strict=False))
        assert {p: dict(pv) for p, pv in raw.items()} == {p: writer.partition_values[p] for p in writer.expected[version]}
        # Same rows: delta-rs reads exactly what was written into this version.
        assert_frames_equal(_read_deltars(path, version), writer.expected_rows(version))


@pytest.mark.parametrize("path_safe", [URI_PATH_SAFE, "/"], ids=["uri-quoting", "strict-quoting"])
def test_sparkdelta_partitioned_log_reads_in_deltars(tmp_path, path_safe):
    path = str(tmp_path / "sd table ü")
    w = SparkdeltaWriter(path, SCHEMA, ["p"], {"delta.checkpointInterval": "3"}, path_safe=path_safe)
    next_id = 0

    def add(p, count=3):
        nonlocal next_id
        action = w.new_file(_rows(next_id, count, p))
        next_id += count
        return action

    w.commit([add(p) for p in PARTITIONS], "WRITE", mode="ErrorIfExists", partitionBy=["p"])  # v0
    w.commit([add("a b"), add(None), add("日本")], "WRITE", mode="Append")  # v1
    # v2: DELETE rewriting one file of "x=y" with fewer rows.
    victim = w.paths_with("p", "x=y")[0]
    first_id, kept = w.live[victim].column("id")[0].as_py(), w.live[victim].slice(1)
    w.commit([w.remove(victim), w.new_file(kept)], "DELETE", predicate=f"id = {first_id}")
    w.commit([add("s/l", 2)], "WRITE", mode="Append")  # v3: checkpoint
    w.commit([w.remove(p) for p in w.paths_with("p", None)], "DELETE", predicate="p IS NULL")  # v4
    w.commit([add("%", 4), add(None, 1)], "WRITE", mode="Append")  # v5
    w.commit([w.remove(p) for p in w.paths_with("p", "a b")], "DELETE", predicate="p = 'a b'")  # v6: checkpoint
    # v7: overwrite: remove everything, add fresh files.
    w.commit([*(w.remove(p) for p in list(w.live)), add("p%25", 5), add("ünï", 2), add(None, 2)], "WRITE", mode="Overwrite")
    w.commit([add("q'\"", 3), SetTransaction("sd-app", 3, 1)], "STREAMING UPDATE", outputMode="Append")  # v8
    w.commit([add(" lead", 2), add("#?&", 1)], "WRITE", mode="Append")  # v9: checkpoint
    w.commit([w.remove(w.paths_with("p", "ünï")[0])], "DELETE", predicate="p = 'ünï'")  # v10

    assert [r.version for r in w.results if r.checkpointed] == [3, 6, 9]
    assert _checkpoint_versions(path) == [3, 6, 9]
    _check_sparkdelta_table_in_deltars(w)
    assert DeltaTable(path).transaction_version("sd-app") == 3
    assert DeltaTable(path, version=7).transaction_version("sd-app") is None


def test_sparkdelta_unpartitioned_stats_accepted_by_deltars(tmp_path):
    path = str(tmp_path / "stats")
    w = SparkdeltaWriter(path, SCHEMA, [], {"delta.checkpointInterval": "3"})
    # Disjoint id ranges per file so that min/max statistics can tell files apart.
    for version in range(5):
        w.commit([w.new_file(_rows(100 * version + 10 * k, 6, f"g{k}")) for k in range(2)], "WRITE", mode="Append")
    w.commit([w.remove(next(iter(w.live)))], "DELETE", predicate="id < 6")  # v5
    _check_sparkdelta_table_in_deltars(w)

    oracle = DeltaTable(path)
    adds = pa.table(oracle.get_add_actions(flatten=True)).to_pylist()
    assert len(adds) == len(w.live) == 9
    written = {unquote(p): rows for p, rows in w.live.items()}
    for add in adds:
        rows = written[unquote(add["path"])]
        ids = rows.column("id").to_pylist()
        names = [n for n in rows.column("name").to_pylist() if n is not None]
        assert add["num_records"] == rows.num_rows
        assert (add["min.id"], add["max.id"]) == (min(ids), max(ids))
        assert (add["min.name"], add["max.name"]) == (min(names), max(names))
        assert add["null_count.name"] == rows.column("name").null_count
        assert add["null_count.score"] == rows.column("score").null_count
    assert oracle.count() == sum(t.num_rows for t in w.live.values())

    # Filtered reads through delta-rs's DataFusion scan (which may skip files on these
    # stats: wrong stats would drop rows) return exactly the right rows.
    everything = w.expected_rows(max(w.expected))
    for predicate, keep in [
        ("id >= 300 AND id < 312", lambda r: 300 <= r["id"] < 312),
        ("name = 'n211'", lambda r: r["name"] == "n211"),
        ("score IS NULL", lambda r: r["score"] is None),
    ]:
        got = QueryBuilder().register("t", oracle).execute(f"SELECT id, name, score, p FROM t WHERE {predicate}").read_all()
        expected = pa.Table.from_pylist([r for r in everything.to_pylist() if keep(r)], schema=SCHEMA)
        assert expected.num_rows > 0, predicate
        assert_frames_equal(pa.table(got), expected)


def test_sparkdelta_checkpoint_keeps_date_like_partition_values(tmp_path):
    """Regression: date-like string partition values read from JSON commits were rewritten
    ('2024-01-02' -> '2024-01-02 00:00:00') and the kernel's checkpoint persisted that, so
    delta-rs then returned the wrong values."""
    path = str(tmp_path / "datelike")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    w = SparkdeltaWriter(path, schema, ["p"], {"delta.checkpointInterval": "2"})
    for i, p in enumerate(["2024-01-02", "2024-01-03", "x", "1999-12-31T23:59:59"]):
        w.commit([w.new_file(pa.table({"id": [i], "p": [p]}, schema=schema))], "WRITE", mode="Append")
    assert _checkpoint_versions(path) == [2]
    _check_sparkdelta_table_in_deltars(w)


def test_mixed_writers_share_one_log(tmp_path):
    """Commits by both libraries interleave; each reads the other's commits and checkpoints."""
    path = str(tmp_path / "mixed")
    w = SparkdeltaWriter(path, SCHEMA, ["p"], {"delta.checkpointInterval": "3"})
    w.commit([w.new_file(_rows(0, 3, "a b")), w.new_file(_rows(3, 3, None))], "WRITE", mode="ErrorIfExists")  # v0
    write_deltalake(path, _rows(100, 4, "x=y"), mode="append")  # v1 by delta-rs
    w.commit([w.new_file(_rows(10, 2, "日本"))], "WRITE", mode="Append")  # v2
    state = sparkdelta_state(path, 2)
    rs_file = next(info["raw_path"] for info in state.values() if info["partition"]["p"] == "x=y")
    # v3 by sparkdelta: delete delta-rs's file; checkpoint holds both writers' adds.
    rs_remove = w.commit([_remove_foreign(path, rs_file)], "DELETE", predicate="p = 'x=y'")
    assert rs_remove == 3 and w.results[-1].checkpointed
    DeltaTable(path).delete("p = 'a b'")  # v4 by delta-rs, reading sparkdelta's checkpoint
    write_deltalake(path, _rows(200, 2, "s/l"), mode="append")  # v5
    DeltaTable(path).create_checkpoint()  # delta-rs checkpoint at 5
    w.commit([w.new_file(_rows(20, 1, "%"))], "WRITE", mode="Append")  # v6: sparkdelta checkpoint again

    assert _checkpoint_versions(path) == [3, 5, 6]
    for version in _versions(path):
        assert_same_state(path, version)
    expected = pa.concat_tables([_rows(3, 3, None), _rows(10, 2, "日本"), _rows(200, 2, "s/l"), _rows(20, 1, "%")])
    assert_frames_equal(_read_deltars(path, 6), expected)
    # Both list the same history, newest first.
    ours = [(r.version, r.commit_info.get("operation")) for r in Table(path).history()]
    theirs = [(h["version"], h["operation"]) for h in DeltaTable(path).history()]
    assert ours == theirs
    assert ours[:3] == [(6, "WRITE"), (5, "WRITE"), (4, "DELETE")]
    assert [r.version for r in Table(path).history(2)] == [h["version"] for h in DeltaTable(path).history(2)]


def _remove_foreign(path: str, raw_path: str) -> RemoveFile:
    files = Table(path).snapshot().files.to_pylist()
    add = next(f for f in files if f["path"] == raw_path)
    return RemoveFile(
        raw_path, int(time.time() * 1000), data_change=True, partition_values=dict(add["partitionValues"]), size=add["size"]
    )


# =========================================================================== 3. time travel


def _spread_commit_mtimes(path: str, base_ms: int, gaps_ms: list[int]) -> list[int]:
    """Give each commit file a distinct, increasing, millisecond-precise mtime."""
    commits = sorted(glob.glob(os.path.join(path, "_delta_log", "*.json")))
    assert len(commits) == len(gaps_ms) + 1
    times = [base_ms]
    for gap in gaps_ms:
        times.append(times[-1] + gap)
    for commit, ms in zip(commits, times, strict=False):
        os.utime(commit, ns=(ms * 1_000_000, ms * 1_000_000))
    return times


def _probes(times: list[int]) -> list[int]:
    probes = set()
    for i, t in enumerate(times):
        probes.update({t, t + 1})
        if i:
            probes.update({t - 1, (t + times[i - 1]) // 2})
    return sorted(p for p in probes if times[0] <= p <= times[-1])


def _assert_time_travel_agrees(path: str, times: list[int]) -> None:
    table = Table(path)
    resolved = []
    for ms in _probes(times):
        when = _utc(ms)
        oracle = DeltaTable(path)
        oracle.load_as_version(when)
        ours = table.snapshot(timestamp=when)
        assert ours.version == oracle.version(), f"at {when.isoformat()} ({ms})"
        assert table.version_at_timestamp(ms) == oracle.version()
        assert table.version_at_timestamp(when.isoformat()) == oracle.version()
        assert sorted(unquote(p) for p in ours.file_paths()) == sorted(deltars_state(path, oracle.version()))
        resolved.append(oracle.version())
    assert sorted(set(resolved)) == list(range(len(times)))
    assert [t for _, t in table.commit_timestamps()] == times


def test_timestamp_time_travel_on_deltars_table(tmp_path):
    path = str(tmp_path / "tt-rs")
    write_deltalake(path, _awkward_rows(0, ["a", "b"]), partition_by=["p"])
    for i in range(1, 6):
        write_deltalake(path, _awkward_rows(10 * i, ["a", "c"]), mode="append", partition_by=["p"])
        if i == 3:
            DeltaTable(path).delete("p = 'b'")
    times = _spread_commit_mtimes(path, 1_600_000_000_123, [1_000, 1, 59_999, 2, 3_600_000, 7])
    _assert_time_travel_agrees(path, times)


def test_timestamp_time_travel_on_sparkdelta_table(tmp_path):
    path = str(tmp_path / "tt-sd")
    w = SparkdeltaWriter(path, SCHEMA, ["p"], {"delta.checkpointInterval": "3"})
    for i in range(6):
        actions = [w.new_file(_rows(10 * i, 2, "a b" if i % 2 else None))]
        if i == 4:
            actions.append(w.remove(next(iter(w.live))))
        w.commit(actions, "WRITE", mode="Append")
    assert _checkpoint_versions(path) == [3]
    times = _spread_commit_mtimes(path, 1_700_000_000_007, [1, 2, 86_400_000, 999, 3])
    _assert_time_travel_agrees(path, times)
