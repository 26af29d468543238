#!/usr/bin/env python
"""Benchmark an insert-only MERGE of an unmaterialized source: pruning by its key ranges, or not.

Why: "insert the new keys" (``whenNotMatchedInsertAll`` only) is the common MERGE of a
day's rows. In ``auto`` mode its source is not materialized, and its anti join reads
every candidate target file unless the source's key ranges prune them; the ranges are
sound for an unmaterialized source only when the anti join's read is checked to have
seen the keys the pruning read (a fingerprint, ``commands/dml/merge_reads.py``).

What it does, in one run (defaults: 3M-row target in 40 files, 200k-row source):

1. Target: even keys ``0, 2, ...`` with three derived columns, ``repartitionByRange(files, "id")``
   (one key range per file). Source: a Parquet file of ``source_rows`` keys in a narrow
   window at the middle of the table's keys, 90% odd (new) and 10% even (existing),
   read with ``spark.read.parquet`` (not materialized: MERGE reads it per job).
2. ``DeltaTable.forPath(..).alias("t").merge(src.alias("s"), "t.id = s.id").whenNotMatchedInsertAll()``,
   on a fresh copy of the target for each run, three ways, alternating, ``--repeat`` times:
   - ``no ranges``: the source's key ranges not used, as main did before this change
     (``candidate_files(.., source_ranges=False)``);
   - ``fingerprinted``: this change's default (``materializeSource=auto``);
   - ``materialized``: ``materializeSource=all`` (the source checkpointed, then pruned).
3. Wall time of ``execute()``; target files the anti join read (counted at ``read_files``);
   inserted rows from the commit's metrics, checked equal to the odd keys' count, and the
   table's row count after, checked equal for all three.

Run:  python benchmarks/bench_merge_insert_only.py   (add --help for options)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from machine import bench_session, load_average, spark_machine_rows
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from sparkdelta.kernel import Table
from sparkdelta.spark.commands.dml import merge_execute
from sparkdelta.tables import DeltaTable

WAYS = ("no ranges", "fingerprinted", "materialized")
MATERIALIZE = "spark.databricks.delta.merge.materializeSource"


def prepare(spark: SparkSession, root: Path, rows: int, files: int, source_rows: int) -> tuple[str, str, int]:
    """The target table, the source's Parquet path, and how many of its keys are new."""
    target = str(root / "target")
    columns = ["2 * id AS id", "CAST(id % 7 AS INT) AS grp", "id * 0.5 AS amount", "CONCAT('n', id) AS name"]
    spark.range(rows).selectExpr(*columns).repartitionByRange(files, "id").write.format("delta").save(target)
    start = rows - source_rows  # the window's first key: the middle of the table's keys
    source = str(root / "source.parquet")
    ids = spark.range(source_rows).select(
        F.when(F.col("id") % 10 == 0, start + 2 * F.col("id")).otherwise(start + 2 * F.col("id") + 1).alias("id")
    )
    ids.selectExpr(*[c.replace("2 * id AS id", "id") for c in columns]).coalesce(1).write.parquet(source)
    return target, source, source_rows - (source_rows + 9) // 10


def run_once(spark: SparkSession, way: str, base: str, source: str, work: Path) -> tuple[float, int, int, int]:
    """(seconds, target files read, rows inserted, rows after) of one MERGE on a fresh copy of ``base``."""
    path = str(work / way.replace(" ", "_"))
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(base, path)
    read: list[int] = []
    prune, read_files = merge_execute.candidate_files, merge_execute.read_files

    def reading(spark: SparkSession, snapshot: Any, files: Any, *args: Any, **kwargs: Any) -> Any:
        read.append(files.num_rows)
        return read_files(spark, snapshot, files, *args, **kwargs)

    def without_ranges(plan: Any, snapshot: Any, source_ranges: bool, verify: bool = False) -> Any:
        return prune(plan, snapshot, source_ranges=False)

    merge_execute.read_files = reading  # type: ignore[assignment]
    if way == "no ranges":
        merge_execute.candidate_files = without_ranges  # type: ignore[assignment]
    spark.conf.set(MATERIALIZE, "all" if way == "materialized" else "auto")
    try:
        src = spark.read.parquet(source)
        started = time.perf_counter()
        DeltaTable.forPath(spark, path).alias("t").merge(src.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
        seconds = time.perf_counter() - started
    finally:
        merge_execute.read_files, merge_execute.candidate_files = read_files, prune  # type: ignore[assignment]
        spark.conf.unset(MATERIALIZE)
    inserted = int((Table(path).snapshot().commit_info or {})["operationMetrics"]["numTargetRowsInserted"])
    after = spark.read.format("delta").load(path).count()
    shutil.rmtree(path)
    return seconds, sum(read), inserted, after


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--source-rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="3g")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="sparkdelta-bench-merge-insert-", dir="/tmp"))
    spark = bench_session("sparkdelta-bench-merge-insert-only", args.master, args.driver_memory)
    try:
        print("# insert-only MERGE of an unmaterialized source: pruning by its key ranges\n")
        for key, value in spark_machine_rows(spark):
            print(f"{key:<11} {value}")
        print(f"{'params':<11} rows={args.rows:,} files={args.files} source rows={args.source_rows:,}\n", flush=True)
        warm_target, warm_source, _ = prepare(spark, root / "warmup", 200_000, 4, 10_000)
        for way in WAYS:  # untimed: code generation and class loading
            run_once(spark, way, warm_target, warm_source, root / "warmup")
        target, source, new_keys = prepare(spark, root, args.rows, args.files, args.source_rows)
        results: dict[str, list[tuple[float, int, int, int]]] = {way: [] for way in WAYS}
        for _ in range(args.repeat):
            for way in WAYS:
                results[way].append(run_once(spark, way, target, source, root))
        failures = []
        print(f"{'way':<15} {'median s':>9} {'runs s':<24} {'files read':>10} {'inserted':>9} {'rows after':>11}")
        for way, runs in results.items():
            times = ", ".join(f"{r[0]:.2f}" for r in runs)
            files_read = {r[1] for r in runs}
            print(
                f"{way:<15} {statistics.median(r[0] for r in runs):>9.2f} {times:<24} "
                f"{'/'.join(map(str, sorted(files_read))):>10} {runs[0][2]:>9,} {runs[0][3]:>11,}"
            )
            failures += [f"{way}: inserted {r[2]:,}, not {new_keys:,}" for r in runs if r[2] != new_keys]
            failures += [
                f"{way}: {r[3]:,} rows after, not {args.rows + new_keys:,}" for r in runs if r[3] != args.rows + new_keys
            ]
        for failure in failures:
            print(f"FAIL: {failure}")
        print(f"\nload avg at end: {load_average()}")
        return 2 if failures else 0
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
