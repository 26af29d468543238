#!/usr/bin/env python
"""Benchmark sparkdelta's ``format("delta")`` reads and writes against plain Spark Parquet.

What it does, in one run (defaults: 10M rows, 20 columns, 100 files):

1. Generates the data deterministically in Spark: ``spark.range(rows)`` with 20 columns
   (8 longs incl. the sorted key ``k``, 7 doubles, 3 strings, a date, a timestamp), all
   derived from the id with hash functions (no randomness), repartitioned with
   ``repartitionByRange(files, "k")`` so each output file covers one k-range. The result
   is persisted (MEMORY_AND_DISK) and materialized once, so write timings compare the
   writers, not the generator.
2. Write: ``df.write.format("delta").save(p)`` (ours: Spark's Parquet writer, footer
   stats, one kernel commit) vs ``df.write.parquet(p)`` (same DataFrame, same 100
   partitions, snappy), best and median of ``--write-repeats`` interleaved runs, each
   into a fresh path.
3. Read, after ``--warmup`` runs, best and median of ``--repeats`` interleaved runs, each
   forcing full materialization of the selected columns with a ``noop`` write (nothing is
   collected to the driver); timings include building the DataFrame (snapshot load,
   schema inference, filter translation), which is also reported on its own:
     full scan (20 columns), 2-column scan, 1% range query on ``k``;
   ours = ``spark.read.format("delta").load(table)`` + the operation, baseline =
   ``spark.read.parquet(*the table's files)`` (exactly the files the snapshot lists) +
   the same operation. For the range query the baseline still gets Spark's Parquet
   filter pushdown (row-group skipping from footers) but no file skipping.
4. Reports the files the 1% range query reads (``scan_info``), and checks that both
   sides return the same rows (count and checksums) before timing.
5. Prints machine info, a table of timings, ratios ours/baseline and PASS/FAIL per target.

Targets: read ratios <= 1.10, write ratio <= 1.20 (with stats), the 1% range query
reads <= 10% of the files. Verdicts use the best-of-runs ratio; the median ratio is
printed as well.

Run:  python benchmarks/bench_spark_io.py            (add --help for options)
      python benchmarks/bench_spark_io.py --profile  (also break down where ours spends time)
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import io
import os
import pstats
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from machine import bench_session, fmt_bytes, load_average, quiesce, remove_run_dirs, spark_machine_rows
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sparkdelta.kernel import Table
from sparkdelta.spark.read.scan import scan_info

READ_TARGET = 1.10
WRITE_TARGET = 1.20
FILES_READ_TARGET = 0.10
WRITE_WARMUP_ROWS = 500_000
BASE_EPOCH_S = 1_577_836_800  # 2020-01-01T00:00:00Z
TWO_COLUMNS = ("l4", "d2")
COLUMN_NAMES = ["k", *[f"l{i}" for i in range(1, 8)], *[f"d{i}" for i in range(1, 8)], "s1", "s2", "s3", "dt", "ts"]


# --------------------------------------------------------------------------- machine


# --------------------------------------------------------------------------- timing


@dataclass
class Series:
    """Wall-clock seconds of one measured operation, plus the part spent building the plan."""

    name: str
    times: list[float] = field(default_factory=list)
    plan_times: list[float] = field(default_factory=list)

    @property
    def best(self) -> float:
        return min(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def plan_median(self) -> float | None:
        return statistics.median(self.plan_times) if self.plan_times else None


def fmt_s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.3f}s"


# --------------------------------------------------------------------------- data


def generate(spark: SparkSession, rows: int, files: int) -> DataFrame:
    """20 deterministic columns from ``spark.range(rows)``; ``k`` is the id (sorted)."""

    def h(seed: int):
        return F.xxhash64(F.col("id"), F.lit(seed))

    def m(seed: int, modulus: int):
        return F.pmod(h(seed), F.lit(modulus))

    k = F.col("id")
    days = max(1, min(3650, rows // 1000))
    columns = [
        k.alias("k"),
        # longs: correlated with k, low / medium / full cardinality
        (k * 7 + m(1, 7)).alias("l1"),
        m(2, 1000).alias("l2"),
        m(3, 1_000_000).alias("l3"),
        h(4).alias("l4"),
        m(5, 100).alias("l5"),
        (F.lit(1_000_000_000_000) + m(6, 1_000_000_000)).alias("l6"),
        F.floor(k / 1000).alias("l7"),
        # doubles
        (m(11, 1_000_000) / 100.0).alias("d1"),
        (h(12) / F.lit(9.223372036854775807e18)).alias("d2"),
        (k * 0.5).alias("d3"),
        F.round(m(14, 100_000) / 7.0, 2).alias("d4"),
        F.sqrt(k.cast("double")).alias("d5"),
        F.log1p(m(16, 10_000).cast("double")).alias("d6"),
        (m(17, 2).cast("double") * 1.5).alias("d7"),
        # strings: 20 categories, 1M customer names, 16-hex-digit ids
        F.concat(F.lit("cat_"), m(21, 20).cast("string")).alias("s1"),
        F.concat(F.lit("customer_"), F.lpad(m(22, 1_000_000).cast("string"), 7, "0")).alias("s2"),
        F.lower(F.hex(h(23))).alias("s3"),
        # a date and a timestamp, both increasing with k (with jitter for the timestamp)
        F.date_add(F.lit(dt.date(2020, 1, 1)), (k * days / max(rows, 1)).cast("int")).alias("dt"),
        F.timestamp_seconds(F.lit(BASE_EPOCH_S) + k * 3 + m(25, 3)).alias("ts"),
    ]
    return spark.range(0, rows, 1, numPartitions=files).select(*columns).repartitionByRange(files, "k")


def cached_storage(spark: SparkSession) -> str:
    infos = spark.sparkContext._jsc.sc().getRDDStorageInfo()
    parts = []
    for info in infos:
        parts.append(
            f"{info.numCachedPartitions()}/{info.numPartitions()} partitions cached, "
            f"{fmt_bytes(info.memSize())} in memory, {fmt_bytes(info.diskSize())} on disk"
        )
    return "; ".join(parts) or "nothing cached (!)"


# --------------------------------------------------------------------------- tables


def parquet_files(path: str) -> list[str]:
    return sorted(str(p) for p in Path(path).rglob("*.parquet") if not p.name.startswith((".", "_")))


def delta_files(path: str) -> list[str]:
    """Absolute local paths of the Delta table's active files, from the snapshot."""
    snapshot = Table(path).snapshot()
    root = snapshot.table_root
    result = []
    for p in snapshot.file_paths():
        decoded = unquote(p.removeprefix("file:"))
        result.append(decoded if decoded.startswith("/") else os.path.join(root, decoded))
    return result


def total_size(paths: list[str]) -> int:
    return sum(os.path.getsize(p) for p in paths)


# --------------------------------------------------------------------------- operations


def range_bounds(rows: int) -> tuple[int, int]:
    lo = rows // 2
    return lo, lo + max(1, rows // 100)


def range_condition(rows: int):
    lo, hi = range_bounds(rows)
    return (F.col("k") >= lo) & (F.col("k") < hi)


def build(engine: str, op: str, table: str, files: list[str], rows: int, spark: SparkSession) -> DataFrame:
    """The DataFrame of one read operation (lazy: no data is read here)."""
    if engine == "ours":
        df = spark.read.format("delta").load(table)
    else:
        df = spark.read.parquet(*[f"file://{p}" for p in files])
    if op == "full":
        return df
    if op == "cols2":
        return df.select(*TWO_COLUMNS)
    if op == "range":
        # Filter straight on the read so ours can prune files (a select in between would hide the scan).
        return df.filter(range_condition(rows))
    raise ValueError(op)


def noop(df: DataFrame) -> None:
    df.write.format("noop").mode("overwrite").save()


def timed_read(engine: str, op: str, table: str, files: list[str], rows: int, spark: SparkSession) -> tuple[float, float]:
    quiesce(spark)
    t0 = time.perf_counter()
    df = build(engine, op, table, files, rows, spark)
    t1 = time.perf_counter()
    noop(df)
    t2 = time.perf_counter()
    return t2 - t0, t1 - t0


def write(engine: str, df: DataFrame, path: str) -> None:
    if engine == "ours":
        df.write.format("delta").save(path)
    else:
        df.write.option("compression", "snappy").parquet(path)


def timed_write(engine: str, df: DataFrame, path: str, spark: SparkSession) -> float:
    quiesce(spark)
    t0 = time.perf_counter()
    write(engine, df, path)
    return time.perf_counter() - t0


def checksum(df: DataFrame) -> tuple:
    row = df.agg(
        F.count(F.lit(1)).alias("n"),
        # (ANSI mode: keep the sums far from overflowing)
        F.sum(F.pmod(F.col("l4"), F.lit(1_000_003))).alias("l4"),
        F.sum(F.pmod(F.xxhash64(*[F.col(c) for c in COLUMN_NAMES]), F.lit(1_000_003))).alias("h"),
        F.min("k").alias("kmin"),
        F.max("k").alias("kmax"),
    ).collect()[0]
    return tuple(row)


def plan_text(df: DataFrame) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def scan_summary(df: DataFrame) -> str:
    """Joins in the physical plan and what the file scan reads (from ``explain``)."""
    plan = plan_text(df)
    joins = sorted({w for w in plan.replace("(", " ").replace("[", " ").split() if w.endswith("Join") and w[0].isupper()})
    scan_line = next((line.strip() for line in plan.splitlines() if "FileScan" in line), "")
    location = ""
    if "Location:" in scan_line:
        location = scan_line.split("Location:", 1)[1].split("]", 1)[0].split("[", 1)[0].strip()
    pushed = ""
    if "PushedFilters:" in scan_line:
        pushed = scan_line.split("PushedFilters:", 1)[1].split("], ", 1)[0].strip() + "]"
    out = f"joins: {', '.join(joins) or 'none'}; scan: {location or '?'}"
    if pushed and pushed != "[]":
        out += f"; pushed filters: {pushed}"
    return out


# --------------------------------------------------------------------------- profile


def profile_ours(spark: SparkSession, df: DataFrame, table: str, files: list[str], rows: int, workdir: Path) -> None:
    """Where ours spends time: write phases, and plan construction vs execution on reads."""
    from sparkdelta.kernel import transaction as tx_mod
    from sparkdelta.spark.write import dataframe as write_mod

    print("\n## Profile of ours")
    timers: dict[str, float] = {}
    counts: dict[str, int] = {}

    def timing(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                timers[name] = timers.get(name, 0.0) + time.perf_counter() - t0
                counts[name] = counts.get(name, 0) + 1

        return wrapper

    # Instrument (in this process only) the phases of write_dataframe.
    originals = {
        "_write_files": write_mod._write_files,
        "file_stats": write_mod.file_stats,
    }
    from pyspark.sql.readwriter import DataFrameWriter

    parquet_original = DataFrameWriter.parquet
    commit_original = tx_mod.Transaction.commit
    write_mod._write_files = timing("_write_files (Spark job + moves + stats)", originals["_write_files"])
    write_mod.file_stats = timing("file_stats (footer reads)", originals["file_stats"])
    DataFrameWriter.parquet = timing("Spark Parquet write job", parquet_original)
    tx_mod.Transaction.commit = timing("kernel commit", commit_original)
    path = str(workdir / "profile" / "ours")
    try:
        t0 = time.perf_counter()
        write("ours", df, path)
        total = time.perf_counter() - t0
    finally:
        write_mod._write_files = originals["_write_files"]
        write_mod.file_stats = originals["file_stats"]
        DataFrameWriter.parquet = parquet_original
        tx_mod.Transaction.commit = commit_original
    job = timers.get("Spark Parquet write job", 0.0)
    stats = timers.get("file_stats (footer reads)", 0.0)
    files_phase = timers.get("_write_files (Spark job + moves + stats)", 0.0)
    commit = timers.get("kernel commit", 0.0)
    print(f"write (ours, one run, instrumented): {total:.3f}s total")
    for label, seconds, indent in (
        ("Spark Parquet write job (into staging)", job, 2),
        (f"footer stats ({counts.get('file_stats (footer reads)', 0)} files)", stats, 2),
        ("moves out of staging, add actions", files_phase - job - stats, 2),
        ("kernel commit", commit, 2),
        ("rest (snapshot probe, schema, actions)", total - files_phase - commit, 2),
    ):
        print(f"{' ' * indent}{label:<45} {seconds:8.3f}s  ({100 * seconds / total:5.1f}%)")

    print("\nread plan construction (driver only, no data read), median of 5:")
    for op in ("full", "cols2", "range"):
        row = []
        for engine in ("ours", "parquet"):
            samples = []
            for _ in range(5):
                t0 = time.perf_counter()
                build(engine, op, table, files, rows, spark)
                samples.append(time.perf_counter() - t0)
            row.append(statistics.median(samples))
        print(f"  {op:<6} ours {row[0]:.3f}s   parquet {row[1]:.3f}s")

    print("\ncProfile of ours building the range-query DataFrame (top 12 by cumulative time):")
    profiler = cProfile.Profile()
    profiler.enable()
    build("ours", "range", table, files, rows, spark)
    profiler.disable()
    stream = io.StringIO()
    pstats.Stats(profiler, stream=stream).sort_stats("cumulative").print_stats(12)
    print("\n".join("  " + line for line in stream.getvalue().splitlines() if line.strip()))

    print("\nphysical plans of ours and parquet, full scan:")
    for engine in ("ours", "parquet"):
        text = plan_text(build(engine, "full", table, files, rows, spark))
        print(f"  [{engine}]")
        print("\n".join("    " + line[:220] for line in str(text).splitlines() if line.strip()))


# --------------------------------------------------------------------------- main


RUN_DIRS = ("write", "warmup", "profile")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows in the table (default 10,000,000)")
    parser.add_argument("--files", type=int, default=100, help="data files = range partitions of k (default 100)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per read operation (default 5)")
    parser.add_argument("--write-repeats", type=int, default=3, help="timed runs per writer (default 3)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs per read operation first (default 1)")
    parser.add_argument(
        "--no-write-warmup",
        dest="write_warmup",
        action="store_false",
        help=f"skip the untimed warm-up write of {WRITE_WARMUP_ROWS:,} rows per writer before the timed writes",
    )
    parser.add_argument(
        "--workdir",
        default="/tmp/sparkdelta-bench/spark_io",
        help="where tables are written, in subdirectories write/, warmup/, profile/ that each run replaces "
        "(default /tmp/sparkdelta-bench/spark_io)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the written tables (default: delete them at the end)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--driver-memory", default="6g", help="spark.driver.memory: holds the cached source (default 6g)")
    parser.add_argument("--profile", action="store_true", help="also break down where ours spends time (and on any FAIL)")
    parser.add_argument("--no-auto-profile", action="store_true", help="do not profile automatically when a target fails")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target fails")
    args = parser.parse_args(argv)
    if args.rows < 100 or args.files < 1 or args.repeats < 1 or args.write_repeats < 1 or args.warmup < 0:
        parser.error("need --rows >= 100, --files >= 1, --repeats >= 1, --write-repeats >= 1, --warmup >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    workdir = Path(args.workdir).resolve()
    remove_run_dirs(workdir, RUN_DIRS)
    workdir.mkdir(parents=True, exist_ok=True)

    spark = bench_session("sparkdelta-bench-spark-io", args.master, args.driver_memory, in_memory_catalog=False)
    print("# sparkdelta Spark I/O benchmark: format('delta') vs plain Parquet\n")
    for key, value in spark_machine_rows(spark):
        print(f"{key:<11} {value}")
    print(
        f"{'params':<11} rows={args.rows:,} columns=20 files={args.files} read repeats={args.repeats} "
        f"(+{args.warmup} warm-up) write repeats={args.write_repeats} workdir={workdir}"
    )
    print(flush=True)

    # 1. source data, cached
    t0 = time.perf_counter()
    source = generate(spark, args.rows, args.files).persist(StorageLevel.MEMORY_AND_DISK)
    count = source.count()
    gen_s = time.perf_counter() - t0
    if count != args.rows:
        print(f"FAIL: generated {count} rows, expected {args.rows}")
        return 2
    print(f"source: generated and cached in {gen_s:.1f}s ({cached_storage(spark)})", flush=True)

    # 2. writes: a small untimed warm-up of both writers (JIT, codegen, first-job costs), then
    # interleaved timed runs into fresh paths; the first table of each engine is kept for the reads
    if args.write_warmup:
        t0 = time.perf_counter()
        sample = generate(spark, min(args.rows, WRITE_WARMUP_ROWS), args.files)
        for engine in ("ours", "parquet"):
            write(engine, sample, str(workdir / "warmup" / engine))
        shutil.rmtree(workdir / "warmup")
        print(f"  write warm-up ({min(args.rows, WRITE_WARMUP_ROWS):,} rows per writer): {time.perf_counter() - t0:.1f}s")
    writes = {"ours": Series("write"), "parquet": Series("write")}
    written: dict[str, list[str]] = {"ours": [], "parquet": []}
    for i in range(args.write_repeats):
        order = ("ours", "parquet") if i % 2 == 0 else ("parquet", "ours")
        for engine in order:
            path = str(workdir / "write" / f"{engine}-{i}")
            seconds = timed_write(engine, source, path, spark)
            writes[engine].times.append(seconds)
            written[engine].append(path)
            print(f"  write {engine:<7} run {i + 1}/{args.write_repeats}: {seconds:.3f}s", flush=True)
            if i > 0 and not args.keep:
                shutil.rmtree(path)

    table = written["ours"][0]
    files = delta_files(table)
    plain = parquet_files(written["parquet"][0])
    snapshot = Table(table).snapshot()
    stats_present = sum(1 for s in snapshot.files.column("stats").to_pylist() if s)
    print(
        f"\ntables: ours {len(files)} files, {fmt_bytes(total_size(files))}, {stats_present}/{len(files)} with stats, "
        f"version {snapshot.version}; parquet {len(plain)} files, {fmt_bytes(total_size(plain))}"
    )
    problems = []
    if len(files) != args.files or len(plain) != args.files:
        problems.append(f"expected {args.files} files on both sides, got ours {len(files)} and parquet {len(plain)}")
    if stats_present != len(files):
        problems.append(f"only {stats_present} of {len(files)} files have stats")

    # 3. correctness before timing: same rows on both sides
    for op in ("full", "range"):
        ours_sum = checksum(build("ours", op, table, files, args.rows, spark))
        base_sum = checksum(build("parquet", op, table, files, args.rows, spark))
        expected_n = args.rows if op == "full" else range_bounds(args.rows)[1] - range_bounds(args.rows)[0]
        if ours_sum != base_sum or ours_sum[0] != expected_n:
            problems.append(f"{op}: ours {ours_sum} != parquet {base_sum} (expected {expected_n} rows)")
    ranged = build("ours", "range", table, files, args.rows, spark)
    info = scan_info(ranged)
    if info is None:
        problems.append("scan_info() found no Delta scan behind the filtered DataFrame")
    if problems:
        for p in problems:
            print(f"FAIL: {p}")
        return 2
    lo, hi = range_bounds(args.rows)
    print(f"check: same rows on both sides (full scan and range query); range k in [{lo:,}, {hi:,}) = {hi - lo:,} rows")
    print("plans:")
    for engine in ("ours", "parquet"):
        for op in ("full", "cols2", "range"):
            print(f"  {engine:<7} {op:<6} {scan_summary(build(engine, op, table, files, args.rows, spark))}")
    print(flush=True)

    # 4. reads: warm-up, then interleaved timed runs
    ops = [
        ("full", "full scan (20 cols)"),
        ("cols2", f"2-column scan ({', '.join(TWO_COLUMNS)})"),
        ("range", "1% range query on k"),
    ]
    reads = {(engine, op): Series(op) for engine in ("ours", "parquet") for op, _ in ops}
    for _ in range(args.warmup):
        for op, _label in ops:
            for engine in ("ours", "parquet"):
                timed_read(engine, op, table, files, args.rows, spark)
    print(f"reads: {args.warmup} warm-up run(s) done", flush=True)
    for i in range(args.repeats):
        line = []
        for op, _label in ops:
            order = ("ours", "parquet") if i % 2 == 0 else ("parquet", "ours")
            for engine in order:
                total, plan = timed_read(engine, op, table, files, args.rows, spark)
                reads[(engine, op)].times.append(total)
                reads[(engine, op)].plan_times.append(plan)
            line.append(f"{op} {reads[('ours', op)].times[-1]:.2f}/{reads[('parquet', op)].times[-1]:.2f}s")
        print(f"  run {i + 1}/{args.repeats} (ours/parquet): " + ", ".join(line), flush=True)

    # 5. report
    print("\n## Results (wall clock; best and median; ratio = ours / baseline)\n")
    header = (
        f"| {'operation':<34} | {'ours best':>9} | {'ours med':>9} | {'base best':>9} | {'base med':>9} "
        f"| {'ratio best':>10} | {'ratio med':>9} | {'target':>7} | verdict |"
    )
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    verdicts: list[tuple[str, bool]] = []

    def row(label: str, ours: Series, base: Series, target: float) -> None:
        ratio_best, ratio_med = ours.best / base.best, ours.median / base.median
        ok = ratio_best <= target
        verdicts.append((label, ok))
        print(
            f"| {label:<34} | {ours.best:>8.3f}s | {ours.median:>8.3f}s | {base.best:>8.3f}s | {base.median:>8.3f}s "
            f"| {ratio_best:>10.3f} | {ratio_med:>9.3f} | {'<= ' + format(target, '.2f'):>7} | {'PASS' if ok else 'FAIL':<7} |"
        )

    row("write (ours with stats)", writes["ours"], writes["parquet"], WRITE_TARGET)
    for op, label in ops:
        row(f"read: {label}", reads[("ours", op)], reads[("parquet", op)], READ_TARGET)
    fraction = info.files_read / info.files_total if info.files_total else 1.0
    ok = fraction <= FILES_READ_TARGET
    verdicts.append(("files read by the 1% range query", ok))
    print(
        f"\nfiles read by the 1% range query (ours, scan_info): {info.files_read} of {info.files_total} "
        f"({100 * fraction:.1f}%; target <= {100 * FILES_READ_TARGET:.0f}%): {'PASS' if ok else 'FAIL'}"
    )
    print(f"  (the parquet baseline opens all {len(files)} files and skips row groups using footer stats)")
    print("\nDataFrame construction inside each read (median; included in the timings above):")
    for op, label in ops:
        print(
            f"  {label:<34} ours {fmt_s(reads[('ours', op)].plan_median)}   parquet {fmt_s(reads[('parquet', op)].plan_median)}"
        )

    print("\nverdicts:")
    for label, ok in verdicts:
        print(f"  {'PASS' if ok else 'FAIL'}  {label}")
    failed = [label for label, ok in verdicts if not ok]

    if args.profile or (failed and not args.no_auto_profile):
        profile_ours(spark, source, table, files, args.rows, workdir)

    print(f"\nload avg at end: {load_average()}")
    print(f"total runtime: {time.perf_counter() - started:.0f}s")
    source.unpersist()
    spark.stop()
    if not args.keep:
        remove_run_dirs(workdir, RUN_DIRS)
        try:
            workdir.rmdir()  # only when empty
        except OSError:
            pass
    else:
        print(f"kept: {workdir}")
    return 1 if failed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
