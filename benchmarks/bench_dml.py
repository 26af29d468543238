#!/usr/bin/env python
"""Benchmark sparkdelta's MERGE and DELETE against delta-rs (the ``deltalake`` package).

Why: row-level DML is where a Delta engine spends its time in a lakehouse (upserts of a
day's changes, GDPR-style deletes). What makes it cheap is touching few files: finding
the files that hold matching rows from the log's stats and a join, then rewriting only
those (copy-on-write) or only marking rows deleted in them (deletion vectors). This
measures both modes of ours on the shape where that matters, a small change concentrated
in few files of a large table, against delta-rs's copy-on-write on an identical table.

What it does, in one run (defaults: 20M-row target in 200 files, 1M-row source):

1. Target: ``spark.range(rows)`` with 5 deterministic columns derived from the id by
   hashing (``id``, ``grp`` int, ``amount`` double, ``name`` string, ``batch`` = 0),
   ``repartitionByRange(files, "id")`` so each file holds one key range. Persisted, then
   written twice by ours: ``base/cow`` (plain) and ``base/dv``
   (``delta.enableDeletionVectors=true``). The DV table must have the deletionVectors
   feature and the plain one must not (delta-rs can then only rewrite files).
2. Source (``--source-rows``): 10% updates, keys drawn evenly from 5% of the files
   (10 of 200, chosen evenly spaced by key range from the log's stats, each key's row
   at a fixed stride through its file), and 90% inserts (new keys above the table's);
   its other columns are hashed with another seed and ``batch`` = 1. Generated in Spark,
   persisted, and collected with ``toArrow()`` for delta-rs: all three get the same rows.
3. MERGE, one timed run per contender, each on its own fresh copy (``shutil.copytree``)
   of a base table: ours copy-on-write (``base/cow``), ours with deletion vectors
   (``base/dv``), delta-rs (``base/cow``):
     ours:     ``DeltaTable.forPath(spark, p).alias("t").merge(src.alias("s"), "t.id = s.id")
               .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()``
     delta-rs: ``deltalake.DeltaTable(p).merge(arrow_src, "t.id = s.id", source_alias="s",
               target_alias="t", streamed_exec=False).when_matched_update_all()
               .when_not_matched_insert_all().execute()``
   (``streamed_exec=False``: the source is an in-memory Arrow table, so delta-rs may use
   its stats for early file pruning, its best case; its default streams the source.)
4. DELETE of 1% of the rows, a key range ``id >= X AND id < Y`` starting at 40% of the
   keys (a few adjacent files; at the defaults files hold ~0.5% each, so usually one lies
   wholly inside it, and deletion vectors just remove that one), on fresh copies again:
   ours ``DeltaTable.forPath(spark, p).delete(pred)`` in both modes, delta-rs
   ``deltalake.DeltaTable(p).delete(pred)``.
5. Wall time covers opening the table through the end of the commit (the source is
   already materialized on both sides). Files removed / added, DVs added and row
   counts come from each commit's own metrics (ours: the commit's ``operationMetrics``;
   delta-rs: the dict it returns). Which files a run removed or gave a DV is also read
   from the log (base snapshot vs the one after), and compared with the files touched:
   those whose ``id`` stats range holds an updated key or meets the deleted range
   (key ranges are disjoint, so stats decide it exactly).
6. Checks after every run: row count (read by ours), rows with ``batch`` = 1 (the
   source's rows), and a hash checksum over all columns must equal the expected values
   and be the same on all three contenders; the reported row counts must be the
   expected ones; delta-rs's own reader must count the same rows as ours on the tables
   without DVs. A failed check prints ``FAIL: ...`` and the script exits 2.
7. Prints machine info, a table of timings, files and rows per operation, ratios
   ours/delta-rs and PASS/FAIL per target.

Targets: ours faster than delta-rs (ratio ours/delta-rs < 1.0) for MERGE and DELETE in
both modes; files rewritten no more than those touched: copy-on-write removes only
touched files; with deletion vectors MERGE removes no file, DELETE removes only files
it empties, and DVs go only to touched files.

An untimed warm-up (the same steps on a 200,000-row table, all contenders) runs first,
so the first Spark jobs' code generation and class loading are not charged to ours.

Run:  python benchmarks/bench_dml.py            (add --help for options)
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import Any

import deltalake
import numpy as np
import pyarrow as pa
from machine import bench_session, load_average, quiesce, remove_run_dirs, spark_machine_rows
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from sparkdelta.kernel import Table
from sparkdelta.kernel.protocol import is_feature_enabled
from sparkdelta.tables import DeltaTable

RATIO_TARGET = 1.0
TOUCHED_FRACTION = 0.05  # of the files, holding every updated key
UPDATE_FRACTION = 0.10  # of the source rows; the rest are inserts
DELETE_FRACTION = 0.01  # of the rows
DELETE_START = 0.40  # the deleted key range starts at this fraction of the keys
SOURCE_SEED = 100  # hash seed offset of the source's non-key columns
WARMUP = (200_000, 4, 10_000)  # rows, files, source rows of the warm-up
CONTENDERS = ("ours CoW", "ours DV", "delta-rs")
OPERATIONS = ("merge", "delete")
RUN_DIRS = ("warmup", "run")
MERGE_CONDITION = "t.id = s.id"

# Each engine's metric names for the columns of the report.
METRICS: dict[tuple[str, str], dict[str, str]] = {
    ("ours", "merge"): {
        "removed": "numTargetFilesRemoved",
        "added": "numTargetFilesAdded",
        "dvs": "numTargetDeletionVectorsAdded",
        "updated": "numTargetRowsUpdated",
        "inserted": "numTargetRowsInserted",
        "deleted": "numTargetRowsDeleted",
        "copied": "numTargetRowsCopied",
    },
    ("ours", "delete"): {
        "removed": "numRemovedFiles",
        "added": "numAddedFiles",
        "dvs": "numDeletionVectorsAdded",
        "deleted": "numDeletedRows",
        "copied": "numCopiedRows",
    },
    ("delta-rs", "merge"): {
        "removed": "num_target_files_removed",
        "added": "num_target_files_added",
        "updated": "num_target_rows_updated",
        "inserted": "num_target_rows_inserted",
        "deleted": "num_target_rows_deleted",
        "copied": "num_target_rows_copied",
    },
    ("delta-rs", "delete"): {
        "removed": "num_removed_files",
        "added": "num_added_files",
        "deleted": "num_deleted_rows",
        "copied": "num_copied_rows",
    },
}
METRIC_COLUMNS = ("removed", "added", "dvs", "updated", "inserted", "deleted", "copied")


# --------------------------------------------------------------------------- machine


# --------------------------------------------------------------------------- data


def with_columns(ids: DataFrame, seed: int, batch: int) -> DataFrame:
    """The table's columns for an ``id`` column: values hashed from the id (``seed`` varies them), and ``batch``."""

    def h(offset: int, modulus: int) -> Column:
        return F.pmod(F.xxhash64(F.col("id"), F.lit(seed + offset)), F.lit(modulus))

    return ids.select(
        F.col("id"),
        h(1, 1000).cast("int").alias("grp"),
        (h(2, 100_000_000) / 100.0).alias("amount"),
        F.concat(F.lit("customer_"), F.lpad(h(3, 1_000_000).cast("string"), 7, "0")).alias("name"),
        F.lit(batch).alias("batch"),
    )


def target_rows(spark: SparkSession, rows: int, files: int) -> DataFrame:
    return with_columns(spark.range(0, rows, 1, numPartitions=files), 0, 0).repartitionByRange(files, "id")


@dataclass(frozen=True)
class FileRange:
    """A data file of a table and the ``id`` range its stats give (inclusive)."""

    path: str
    low: int
    high: int


def file_ranges(table: str) -> list[FileRange]:
    """The table's files by ``id`` range, from the log's stats."""
    files = Table(table).snapshot().files
    ranges: list[FileRange] = []
    for path, stats in zip(files.column("path").to_pylist(), files.column("stats").to_pylist(), strict=True):
        parsed = json.loads(stats)
        ranges.append(FileRange(path, int(parsed["minValues"]["id"]), int(parsed["maxValues"]["id"])))
    return sorted(ranges, key=lambda r: r.low)


def update_files(ranges: list[FileRange]) -> list[FileRange]:
    """``TOUCHED_FRACTION`` of the files (at least one), evenly spaced through the key order."""
    count = max(1, round(len(ranges) * TOUCHED_FRACTION))
    step = len(ranges) / count
    return [ranges[int(step * i + step / 2)] for i in range(count)]


def source_rows(spark: SparkSession, chosen: list[FileRange], updates: int, inserts: int, first_new: int) -> DataFrame:
    """``updates`` existing keys spread evenly over ``chosen`` (a fixed stride through each), then ``inserts`` new keys."""
    parts: list[DataFrame] = []
    for i, f in enumerate(chosen):
        n = updates // len(chosen) + (1 if i < updates % len(chosen) else 0)
        stride = (f.high - f.low + 1) // n
        if stride < 1:
            raise SystemExit(f"{n:,} updated keys do not fit in a file of {f.high - f.low + 1:,} keys: lower --source-rows")
        parts.append(spark.range(n).select((F.lit(f.low) + F.col("id") * stride).alias("id")))
    parts.append(spark.range(first_new, first_new + inserts))
    return with_columns(reduce(DataFrame.unionByName, parts), SOURCE_SEED, 1)


def touched(ranges: list[FileRange], keys: np.ndarray) -> set[str]:
    """Paths of the files holding any of ``keys`` (file key ranges are disjoint and cover every key)."""
    lows = np.array([r.low for r in ranges])
    highs = np.array([r.high for r in ranges])
    index = np.searchsorted(lows, keys, side="right") - 1
    inside = (index >= 0) & (keys <= highs[np.maximum(index, 0)])
    return {ranges[i].path for i in np.unique(index[inside])}


# --------------------------------------------------------------------------- runs


@dataclass(frozen=True)
class Setup:
    """One measured configuration: the base tables and what the operations should do to them."""

    rows: int
    base: dict[str, str]  # "cow" / "dv" -> base table path
    source: DataFrame
    arrow_source: pa.Table
    updates: int
    inserts: int
    delete_low: int
    delete_high: int
    touched: dict[tuple[str, str], set[str]]  # (operation, base) -> touched file paths
    emptied: dict[str, set[str]]  # base -> files wholly inside the deleted range

    @property
    def predicate(self) -> str:
        return f"id >= {self.delete_low} AND id < {self.delete_high}"


@dataclass(frozen=True)
class TableCheck:
    """What the table holds after a run: rows, rows from the source, checksum; delta-rs's own count."""

    rows: int
    from_source: int
    checksum: int
    rows_by_delta_rs: int | None


@dataclass(frozen=True)
class Outcome:
    contender: str
    seconds: float
    metrics: dict[str, int | None]
    check: TableCheck
    gone: set[str]  # base files no longer in the table
    with_dv: set[str]  # base files now carrying a deletion vector


def base_of(contender: str) -> str:
    return "dv" if contender == "ours DV" else "cow"


def check_table(spark: SparkSession, path: str, with_delta_rs: bool) -> TableCheck:
    """Row count, source rows and an order-independent checksum over all columns, read by ours."""
    df = spark.read.format("delta").load(path)
    row = df.agg(
        F.count(F.lit(1)),
        F.sum((F.col("batch") == 1).cast("long")),
        F.sum(F.xxhash64(*df.columns).cast("decimal(38,0)")),
    ).collect()[0]
    by_delta_rs = deltalake.DeltaTable(path).to_pyarrow_dataset().count_rows() if with_delta_rs else None
    return TableCheck(int(row[0]), int(row[1] or 0), int(row[2] or 0), by_delta_rs)


def log_changes(base: str, path: str) -> tuple[set[str], set[str]]:
    """Base files gone from the table at ``path``, and base files it now reads through a deletion vector."""
    before = set(Table(base).snapshot().files.column("path").to_pylist())
    files = Table(path).snapshot().files
    after = set(files.column("path").to_pylist())
    with_dv = files.filter(files.column("deletionVector").is_valid()).column("path").to_pylist()
    return before - after, set(with_dv) & before


def run_ours(spark: SparkSession, operation: str, path: str, setup: Setup) -> tuple[float, dict[str, int]]:
    t0 = time.perf_counter()
    table = DeltaTable.forPath(spark, path)
    if operation == "merge":
        merge = table.alias("t").merge(setup.source.alias("s"), MERGE_CONDITION)
        merge.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    else:
        table.delete(setup.predicate)
    seconds = time.perf_counter() - t0
    (record,) = Table(path).history(1)
    return seconds, {k: int(v) for k, v in record.commit_info["operationMetrics"].items()}


def run_delta_rs(operation: str, path: str, setup: Setup) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    table = deltalake.DeltaTable(path)
    if operation == "merge":
        merge = table.merge(setup.arrow_source, MERGE_CONDITION, source_alias="s", target_alias="t", streamed_exec=False)
        metrics = merge.when_matched_update_all().when_not_matched_insert_all().execute()
    else:
        metrics = table.delete(setup.predicate)
    return time.perf_counter() - t0, metrics


def run(spark: SparkSession, operation: str, contender: str, setup: Setup, root: Path) -> Outcome:
    """One timed run on a fresh copy of the contender's base table, then its checks."""
    base = setup.base[base_of(contender)]
    path = str(root / operation / contender.replace(" ", "-"))
    shutil.copytree(base, path)
    quiesce(spark)
    engine = "delta-rs" if contender == "delta-rs" else "ours"
    raw: dict[str, Any]
    if engine == "ours":
        seconds, raw = run_ours(spark, operation, path, setup)
    else:
        seconds, raw = run_delta_rs(operation, path, setup)
    names = METRICS[(engine, operation)]
    metrics = {column: raw.get(names[column]) if column in names else None for column in METRIC_COLUMNS}
    check = check_table(spark, path, with_delta_rs=contender != "ours DV")
    gone, with_dv = log_changes(base, path)
    return Outcome(contender, seconds, metrics, check, gone, with_dv)


def prepare(spark: SparkSession, rows: int, files: int, source_size: int, root: Path) -> Setup:
    """Write the base tables and build the source; checks the tables' layout and protocol."""
    t0 = time.perf_counter()
    target = target_rows(spark, rows, files).persist(StorageLevel.MEMORY_AND_DISK)
    target.count()
    base = {"cow": str(root / "base" / "cow"), "dv": str(root / "base" / "dv")}
    target.write.format("delta").save(base["cow"])
    target.write.format("delta").option("delta.enableDeletionVectors", "true").save(base["dv"])
    target.unpersist()
    ranges = {name: file_ranges(path) for name, path in base.items()}
    print(f"  target: {rows:,} rows written twice (base/cow, base/dv) in {time.perf_counter() - t0:.1f}s", flush=True)
    for name, path in base.items():
        snapshot = Table(path).snapshot()
        has_dvs = is_feature_enabled(snapshot.protocol, "deletionVectors")
        print(
            f"    base/{name}: {len(ranges[name])} files, {snapshot.size_in_bytes / 2**20:.1f} MiB, protocol "
            f"({snapshot.protocol.min_reader_version}, {snapshot.protocol.min_writer_version}), deletionVectors={has_dvs}"
        )
        if len(ranges[name]) != files or has_dvs != (name == "dv"):
            raise SystemExit(f"FAIL: base/{name} should have {files} files and deletionVectors={name == 'dv'}")

    t0 = time.perf_counter()
    updates = int(source_size * UPDATE_FRACTION)
    chosen = update_files(ranges["cow"])
    source = source_rows(spark, chosen, updates, source_size - updates, rows).persist(StorageLevel.MEMORY_AND_DISK)
    source.count()
    arrow_source = source.toArrow()
    keys = arrow_source.column("id").to_numpy()
    if len(np.unique(keys)) != source_size:
        raise SystemExit(f"FAIL: the source has {source_size - len(np.unique(keys))} repeated keys")
    low = int(rows * DELETE_START)
    high = low + int(rows * DELETE_FRACTION)
    deleted = np.arange(low, high)
    setup = Setup(
        rows=rows,
        base=base,
        source=source,
        arrow_source=arrow_source,
        updates=updates,
        inserts=source_size - updates,
        delete_low=low,
        delete_high=high,
        touched={
            **{("merge", name): touched(r, keys) for name, r in ranges.items()},
            **{("delete", name): touched(r, deleted) for name, r in ranges.items()},
        },
        emptied={name: {f.path for f in r if f.low >= low and f.high < high} for name, r in ranges.items()},
    )
    print(
        f"  source: {source_size:,} rows ({updates:,} updates in {len(chosen)} of {files} files, "
        f"{setup.inserts:,} inserts), built and collected to Arrow in {time.perf_counter() - t0:.1f}s",
        flush=True,
    )
    for name in base:
        print(
            f"    base/{name}: MERGE touches {len(setup.touched[('merge', name)])} files; DELETE {setup.predicate} "
            f"touches {len(setup.touched[('delete', name)])} files, {len(setup.emptied[name])} of them wholly"
        )
    return setup


def measure(spark: SparkSession, rows: int, files: int, source_size: int, root: Path) -> tuple[Setup, dict[str, list[Outcome]]]:
    """Prepare the tables and source, then run every operation on every contender."""
    setup = prepare(spark, rows, files, source_size, root)
    outcomes: dict[str, list[Outcome]] = {}
    for operation in OPERATIONS:
        outcomes[operation] = []
        for contender in CONTENDERS:
            outcome = run(spark, operation, contender, setup, root)
            outcomes[operation].append(outcome)
            shown = ", ".join(f"{k} {v:,}" for k, v in outcome.metrics.items() if v is not None)
            print(
                f"  {operation.upper():<6} {contender:<9} {outcome.seconds:8.3f}s  {shown}; table {outcome.check.rows:,} rows",
                flush=True,
            )
    setup.source.unpersist()
    return setup, outcomes


# --------------------------------------------------------------------------- checks and report


def expected(setup: Setup, operation: str) -> dict[str, int]:
    """What each operation must report and leave: the rows it changes and the table's rows."""
    if operation == "merge":
        return {"updated": setup.updates, "inserted": setup.inserts, "rows": setup.rows + setup.inserts}
    deleted = setup.delete_high - setup.delete_low
    return {"deleted": deleted, "rows": setup.rows - deleted}


def problems(setup: Setup, outcomes: dict[str, list[Outcome]]) -> list[str]:
    """Every way a run's table or reported counts differ from what the operation must produce."""
    found: list[str] = []
    for operation, runs in outcomes.items():
        want = expected(setup, operation)
        from_source = setup.updates + setup.inserts if operation == "merge" else 0
        for o in runs:
            where = f"{operation.upper()} {o.contender}"
            if o.check.rows != want["rows"] or o.check.from_source != from_source:
                found.append(
                    f"{where}: the table has {o.check.rows:,} rows, {o.check.from_source:,} from the source; "
                    f"expected {want['rows']:,} and {from_source:,}"
                )
            if o.check.rows_by_delta_rs is not None and o.check.rows_by_delta_rs != o.check.rows:
                found.append(f"{where}: delta-rs reads {o.check.rows_by_delta_rs:,} rows, ours {o.check.rows:,}")
            for column, value in want.items():
                if column != "rows" and o.metrics[column] is not None and o.metrics[column] != value:
                    found.append(f"{where}: reports {column} = {o.metrics[column]:,}, expected {value:,}")
            if o.metrics["removed"] != len(o.gone):
                found.append(f"{where}: reports {o.metrics['removed']} files removed, the log shows {len(o.gone)}")
        checksums = {o.contender: o.check.checksum for o in runs}
        if len(set(checksums.values())) != 1:
            found.append(f"{operation.upper()}: the contenders' tables differ (checksums {checksums})")
    return found


def file_verdicts(setup: Setup, outcomes: dict[str, list[Outcome]]) -> list[tuple[str, bool, str]]:
    """The files-touched targets: (label, ok, what was seen)."""
    verdicts: list[tuple[str, bool, str]] = []
    for operation in OPERATIONS:
        by = {o.contender: o for o in outcomes[operation]}
        cow, dv = by["ours CoW"], by["ours DV"]
        cow_touched, dv_touched = setup.touched[(operation, "cow")], setup.touched[(operation, "dv")]
        verdicts.append(
            (
                f"{operation.upper()} copy-on-write rewrites only touched files",
                cow.gone <= cow_touched,
                f"removed {len(cow.gone)}, {len(cow.gone & cow_touched)} of them touched; {len(cow_touched)} touched",
            )
        )
        allowed = setup.emptied["dv"] if operation == "delete" else set()
        rule = "removes only emptied files" if operation == "delete" else "removes no file"
        verdicts.append(
            (
                f"{operation.upper()} deletion vectors {rule}, DVs only on touched files",
                dv.gone <= allowed and dv.with_dv <= dv_touched,
                f"removed {len(dv.gone)} ({len(allowed)} emptied), DVs on {len(dv.with_dv)} files, "
                f"{len(dv.with_dv & dv_touched)} of them touched; {len(dv_touched)} touched",
            )
        )
    return verdicts


def fmt(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def report(setup: Setup, outcomes: dict[str, list[Outcome]], files: int) -> list[tuple[str, bool]]:
    """Print the results tables; the verdicts."""
    titles = {
        "merge": f"MERGE of {setup.updates + setup.inserts:,} source rows ({setup.updates:,} updates, "
        f"{setup.inserts:,} inserts) into {setup.rows:,} rows in {files} files",
        "delete": f"DELETE WHERE {setup.predicate} ({setup.delete_high - setup.delete_low:,} rows)",
    }
    columns = ("files removed", "files added", "DVs added", "rows updated", "rows inserted", "rows deleted", "rows copied")
    for operation in OPERATIONS:
        print(f"\n## {titles[operation]}\n")
        header = f"| {'contender':<9} | {'time':>9} | " + " | ".join(f"{c:>13}" for c in columns) + f" | {'rows after':>12} |"
        print(header)
        print("|" + "|".join("-" * len(c) for c in header.split("|")[1:-1]) + "|")
        for o in outcomes[operation]:
            cells = " | ".join(f"{fmt(o.metrics[c]):>13}" for c in METRIC_COLUMNS)
            print(f"| {o.contender:<9} | {o.seconds:>8.3f}s | {cells} | {o.check.rows:>12,} |")

    print("\n## Ratios (wall clock, one run each; ratio = ours / delta-rs)\n")
    header = f"| {'operation':<24} | {'ours':>9} | {'delta-rs':>9} | {'ratio':>6} | {'target':>6} | verdict |"
    print(header)
    print("|" + "|".join("-" * len(c) for c in header.split("|")[1:-1]) + "|")
    verdicts: list[tuple[str, bool]] = []
    for operation in OPERATIONS:
        by = {o.contender: o for o in outcomes[operation]}
        for contender, mode in (("ours CoW", "copy-on-write"), ("ours DV", "deletion vectors")):
            ours, theirs = by[contender].seconds, by["delta-rs"].seconds
            ratio = ours / theirs
            ok = ratio < RATIO_TARGET
            label = f"{operation.upper()} {mode}"
            verdicts.append((f"{label}: faster than delta-rs", ok))
            print(
                f"| {label:<24} | {ours:>8.3f}s | {theirs:>8.3f}s | {ratio:>6.3f} | {'< ' + format(RATIO_TARGET, '.1f'):>6} "
                f"| {'PASS' if ok else 'FAIL':<7} |"
            )

    print("\n## Files rewritten vs files touched (from the log; touched = holds an updated key / meets the range)\n")
    for label, ok, seen in file_verdicts(setup, outcomes):
        verdicts.append((label, ok))
        print(f"  {'PASS' if ok else 'FAIL'}  {label}: {seen}")
    for operation in OPERATIONS:
        rs = next(o for o in outcomes[operation] if o.contender == "delta-rs")
        cow_touched = setup.touched[(operation, "cow")]
        print(f"  info  {operation.upper()} delta-rs: removed {len(rs.gone)}, {len(rs.gone & cow_touched)} of them touched")
    return verdicts


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20_000_000, help="rows in the target table (default 20,000,000)")
    parser.add_argument("--files", type=int, default=200, help="data files = key ranges of the target (default 200)")
    parser.add_argument("--source-rows", type=int, default=1_000_000, help="MERGE source rows (default 1,000,000)")
    parser.add_argument(
        "--workdir",
        help="where tables are written, in subdirectories warmup/ and run/ that each run replaces "
        "(default: a new temporary directory under /tmp)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the written tables (default: delete them at the end)")
    parser.add_argument("--no-warmup", dest="warmup", action="store_false", help="skip the untimed warm-up round")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--driver-memory", default="6g", help="spark.driver.memory: holds the cached target (default 6g)")
    args = parser.parse_args(argv)
    if args.files < 1 or args.rows < 100 * args.files or not 10 <= args.source_rows <= args.rows // 2:
        parser.error("need --files >= 1, --rows >= 100 * --files, 10 <= --source-rows <= --rows / 2")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="sparkdelta-bench-dml-", dir="/tmp")).resolve()
    remove_run_dirs(workdir, RUN_DIRS)
    workdir.mkdir(parents=True, exist_ok=True)

    spark = bench_session("sparkdelta-bench-dml", args.master, args.driver_memory, in_memory_catalog=True)
    print("# sparkdelta DML benchmark: MERGE and DELETE, copy-on-write and deletion vectors, vs delta-rs\n")
    for key, value in spark_machine_rows(spark):
        print(f"{key:<11} {value}")
    print(
        f"{'params':<11} rows={args.rows:,} files={args.files} source rows={args.source_rows:,} workdir={workdir}\n", flush=True
    )

    if args.warmup:
        t0 = time.perf_counter()
        print(f"warm-up (untimed; {WARMUP[0]:,} rows, {WARMUP[1]} files, {WARMUP[2]:,} source rows):", flush=True)
        measure(spark, *WARMUP, workdir / "warmup")
        shutil.rmtree(workdir / "warmup")
        print(f"warm-up: done in {time.perf_counter() - t0:.1f}s\n", flush=True)
    t0 = time.perf_counter()
    print("run:", flush=True)
    setup, outcomes = measure(spark, args.rows, args.files, args.source_rows, workdir / "run")
    print(f"run: done in {time.perf_counter() - t0:.1f}s\n", flush=True)

    failures = problems(setup, outcomes)
    print("## Checks\n")
    for failure in failures:
        print(f"FAIL: {failure}")
    if not failures:
        print(
            "  all contenders: expected row counts (read by ours; by delta-rs too on tables without DVs), "
            "the source's rows present, reported row counts as expected, same checksum"
        )

    verdicts = report(setup, outcomes, args.files)
    print("\nverdicts:")
    for label, ok in verdicts:
        print(f"  {'PASS' if ok else 'FAIL'}  {label}")

    print(f"\nload avg at end: {load_average()}")
    print(f"total runtime: {time.perf_counter() - started:.0f}s")
    spark.stop()
    if args.keep:
        print(f"kept: {workdir}")
    else:
        remove_run_dirs(workdir, RUN_DIRS)
        try:
            workdir.rmdir()  # only when empty
        except OSError:
            pass
    return 2 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
