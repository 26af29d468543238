#!/usr/bin/env python
"""Benchmark sparkdelta's OPTIMIZE (compaction and Z-order) against delta-rs (the ``deltalake`` package).

Why: streaming and frequent small appends leave a table in thousands of small files, and
every reader pays for each one; compaction rewrites them into a few large files. Z-order
clusters rows by several columns at once, so the log's min/max stats of each file cover a
small box of their joint space and a selective filter on any one of them skips most files.
This measures both of ours against delta-rs on identical copies of the same table.

What it does, in one run (defaults: 10M rows, 2,000 small files, 100 files to Z-order):

1. Data: ``spark.range(rows)`` with 5 deterministic columns derived from the id by hashing:
   ``id`` long, ``a`` and ``b`` int (independent, uniform in [0, 1,000,000):
   ``pmod(xxhash64(id, seed), 1000000)``), ``s`` string (16 hex digits of another hash),
   ``d`` double (``pmod(xxhash64(id, seed), 1000000) / 100``). Written by ours, one commit,
   ``spark.range`` with one partition per file, so each file holds a contiguous id range
   and spans the whole range of ``a`` and ``b``.
2. Compaction: the data written as ``--small-files`` files (``base/compact``), copied
   twice with ``shutil.copytree`` (``compact/ours``, ``compact/delta-rs``). Target size
   N = the table's size / 4 (``--compact-target-size`` overrides), the same for both:
   ours through the Spark conf ``spark.databricks.delta.optimize.maxFileSize`` (the table
   has no ``delta.targetFileSize``, which would take precedence), delta-rs as
   ``target_size=N``. Both pack the files smaller than N into bins of up to N bytes, so
   each should leave about 4-5 files (a size-derived N keeps that true at any --rows; a
   fixed 128 MiB would leave 1 file at small scale).
     ours:     ``DeltaTable.forPath(spark, p).optimize().executeCompaction()`` (+ collecting its row)
     delta-rs: ``deltalake.DeltaTable(p).optimize.compact(target_size=N)``
3. Z-order by (``a``, ``b``): the data written as ``--zorder-files`` files
   (``base/zorder``), copied twice again; target size N_z = the table's size /
   ``--zorder-files``, so that a Z-order writes about ``--zorder-files`` files again:
     ours:     ``DeltaTable.forPath(spark, p).optimize().executeZOrderBy("a", "b")`` (conf as above)
     delta-rs: ``deltalake.DeltaTable(p).optimize.z_order(["a", "b"], target_size=N_z)``
4. Skipping: for ``a < 10000`` and ``b < 10000`` (1% of the rows each), the share of the
   files a reader must open, on the table before Z-ordering and after each Z-order:
     stats:     files whose minimum of the column is below 10,000 (or unknown), from
                ``deltalake.DeltaTable(p).get_add_actions(flatten=True)`` (``min.a``); the
                same rule on our log's stats JSON is shown as a cross-check;
     scan_info: the files our reader actually reads
                (``scan_info(spark.read.format("delta").load(p).where(pred))``).
   Also shown: the mean width of each file's [min, max] range of ``a`` and ``b`` (as a
   share of the domain).
5. Wall time covers opening the table through the end of the commit; one timed run per
   contender, each on its own fresh copy. Files before / after, removed / added come from
   the log and are compared with what each engine reports.
6. Checks: every table (the bases and both results of both operations) must hold the
   generated rows: row count and an order-independent checksum over all columns, equal to
   the generator's, read by ours (Spark) and by delta-rs (``to_pyarrow_table``, checksum
   computed with numpy: the same integer formula, ``crc32`` of the string); the 1%
   predicates must return the expected number of rows through ours (with file skipping)
   and through delta-rs; each engine's reported files removed / added must match its log.
   A failed check prints ``FAIL: ...`` and the script exits 2.
7. Prints machine info, tables of timings, files, shares, ratios ours/delta-rs and
   PASS/FAIL per target.

Targets: after our Z-order, the 1% predicate on ``a`` and the one on ``b`` each read at
most 20% of the files (scan_info). delta-rs's shares are shown against the same bound for
reference. Times: the ratio ours/delta-rs is reported for both operations (no target).

An untimed warm-up (the same steps on a 100,000-row table, both contenders) runs first,
so the first Spark jobs' code generation and class loading are not charged to ours.

Run:  python benchmarks/bench_optimize.py            (add --help for options)
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from machine import bench_session, fmt_bytes, load_average, quiesce, remove_run_dirs, spark_machine_rows
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from sparkdelta.kernel import Table
from sparkdelta.spark.read.scan import scan_info
from sparkdelta.tables import DeltaTable

MAX_FILE_SIZE = "spark.databricks.delta.optimize.maxFileSize"
COMPACT_OUTPUT_FILES = 4  # compaction target size = table size / this
DOMAIN = 1_000_000  # a and b are uniform in [0, DOMAIN)
SELECTIVITY = 0.01
BOUND = int(DOMAIN * SELECTIVITY)  # the predicates are `a < BOUND` and `b < BOUND`
ZORDER_COLUMNS = ("a", "b")
FILES_READ_TARGET = 0.20
CHECKSUM_MODULUS = 2_147_483_647
WARMUP = (100_000, 20, 10)  # rows, small files, files to Z-order of the warm-up
CONTENDERS = ("ours", "delta-rs")
RUN_DIRS = ("warmup", "run")


# --------------------------------------------------------------------------- machine


# --------------------------------------------------------------------------- data and checksums


def generate(spark: SparkSession, rows: int, files: int) -> DataFrame:
    """The table's rows, one partition (= one written file) per contiguous id range."""

    def h(seed: int) -> Column:
        return F.xxhash64(F.col("id"), F.lit(seed))

    return spark.range(0, rows, 1, numPartitions=files).select(
        F.col("id"),
        F.pmod(h(1), F.lit(DOMAIN)).cast("int").alias("a"),
        F.pmod(h(2), F.lit(DOMAIN)).cast("int").alias("b"),
        F.lpad(F.lower(F.hex(h(3))), 16, "0").alias("s"),
        (F.pmod(h(4), F.lit(DOMAIN)) / 100.0).alias("d"),
    )


@dataclass(frozen=True)
class Checksum:
    """Order-independent integer aggregates of every column; ``mix`` binds each row's values together."""

    rows: int
    sum_id: int
    sum_a: int
    sum_b: int
    sum_cents: int
    sum_crc: int
    mix: int

    def short(self) -> str:
        return f"{self.rows:,} rows, mix {self.mix}"


def spark_checksum(df: DataFrame) -> Checksum:
    """The checksum computed by Spark (ANSI-safe: every sum stays far below 2^63)."""
    a, b = F.col("a").cast("long"), F.col("b").cast("long")
    cents = F.round(F.col("d") * 100).cast("long")
    crc = F.crc32(F.col("s").cast("binary"))
    mix = F.pmod(F.col("id") * 1_000_003 + a * 1_009 + b * 17 + cents * 3 + crc, F.lit(CHECKSUM_MODULUS))
    row = df.agg(F.count(F.lit(1)), F.sum("id"), F.sum(a), F.sum(b), F.sum(cents), F.sum(crc), F.sum(mix)).collect()[0]
    return Checksum(*(int(v or 0) for v in row))


def arrow_checksum(table: pa.Table) -> Checksum:
    """The same checksum computed with numpy over an Arrow table (as delta-rs reads it)."""

    def ints(name: str) -> np.ndarray:
        return table.column(name).to_numpy().astype(np.int64)

    ids, a, b = ints("id"), ints("a"), ints("b")
    cents = np.rint(table.column("d").to_numpy() * 100).astype(np.int64)
    strings = pc.cast(table.column("s"), pa.binary()).to_pylist()
    crc = np.fromiter((zlib.crc32(v) for v in strings), dtype=np.int64, count=table.num_rows)
    mix = (ids * 1_000_003 + a * 1_009 + b * 17 + cents * 3 + crc) % CHECKSUM_MODULUS
    return Checksum(table.num_rows, *(int(x.sum()) for x in (ids, a, b, cents, crc, mix)))


def ours_check(spark: SparkSession, path: str) -> Checksum:
    return spark_checksum(spark.read.format("delta").load(path))


def delta_rs_check(path: str) -> Checksum:
    table = deltalake.DeltaTable(path).to_pyarrow_table(columns=["id", "a", "b", "s", "d"])
    result = arrow_checksum(table)
    del table
    return result


# --------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class LogState:
    """The active files of a table, from our kernel."""

    paths: frozenset[str]
    size: int
    version: int

    @property
    def files(self) -> int:
        return len(self.paths)


def log_state(path: str) -> LogState:
    snapshot = Table(path).snapshot()
    return LogState(frozenset(snapshot.file_paths()), snapshot.size_in_bytes, snapshot.version)


@dataclass(frozen=True)
class Share:
    """Files a 1% predicate on one column must read: by stats (delta-rs's and our log's view) and by our reader."""

    column: str
    files: int
    stats_delta_rs: int  # files whose min (delta-rs's add actions) is below the bound, or unknown
    stats_ours: int  # the same rule on our log's stats JSON
    read: int  # scan_info: files our reader reads
    total: int  # scan_info: files in the snapshot
    span: float  # mean (max - min) / DOMAIN of the column over the files
    rows_ours: int  # rows the predicate returns through ours (with skipping)
    rows_delta_rs: int  # rows the predicate returns through delta-rs's reader

    @property
    def fraction(self) -> float:
        return self.read / self.total if self.total else 1.0

    @property
    def stats_fraction(self) -> float:
        return self.stats_delta_rs / self.files if self.files else 1.0


def share(spark: SparkSession, path: str, column: str) -> Share:
    """What ``column < BOUND`` reads from the table at ``path``, three ways, and the rows it returns."""
    actions = pa.table(deltalake.DeltaTable(path).get_add_actions(flatten=True))
    mins = actions.column(f"min.{column}")
    maxs = actions.column(f"max.{column}")
    below = pc.fill_null(pc.less(mins, BOUND), True)
    stats_delta_rs = int(pc.sum(below.cast(pa.int64())).as_py() or 0)
    widths = pc.subtract(maxs.cast(pa.int64()), mins.cast(pa.int64()))
    span = float(pc.mean(widths).as_py() or 0.0) / DOMAIN

    stats_ours = 0
    for stats in Table(path).snapshot().files.column("stats").to_pylist():
        low = json.loads(stats).get("minValues", {}).get(column) if stats else None
        stats_ours += low is None or low < BOUND

    df = spark.read.format("delta").load(path).where(f"{column} < {BOUND}")
    info = scan_info(df)
    if info is None:
        raise SystemExit(f"FAIL: scan_info() found no Delta scan behind the filtered read of {path}")
    rows_ours = df.count()
    rows_delta_rs = deltalake.DeltaTable(path).to_pyarrow_dataset().count_rows(filter=pc.field(column) < BOUND)
    return Share(
        column, actions.num_rows, stats_delta_rs, stats_ours, info.files_read, info.files_total, span, rows_ours, rows_delta_rs
    )


# --------------------------------------------------------------------------- runs


@dataclass
class Outcome:
    """One contender's timed OPTIMIZE on its copy, and what it left."""

    contender: str
    seconds: float
    reported_removed: int
    reported_added: int
    before: LogState
    after: LogState
    by_ours: Checksum
    by_delta_rs: Checksum
    shares: dict[str, Share] = field(default_factory=dict)

    @property
    def removed(self) -> int:
        return len(self.before.paths - self.after.paths)

    @property
    def added(self) -> int:
        return len(self.after.paths - self.before.paths)


def run_ours(spark: SparkSession, path: str, target: int, z_order: tuple[str, ...]) -> tuple[float, int, int]:
    spark.conf.set(MAX_FILE_SIZE, str(target))
    try:
        t0 = time.perf_counter()
        builder = DeltaTable.forPath(spark, path).optimize()
        result = builder.executeZOrderBy(*z_order) if z_order else builder.executeCompaction()
        (row,) = result.collect()
        seconds = time.perf_counter() - t0
    finally:
        spark.conf.unset(MAX_FILE_SIZE)
    metrics = row["metrics"]
    return seconds, int(metrics["numFilesRemoved"]), int(metrics["numFilesAdded"])


def run_delta_rs(path: str, target: int, z_order: tuple[str, ...]) -> tuple[float, int, int]:
    t0 = time.perf_counter()
    table = deltalake.DeltaTable(path)
    if z_order:
        metrics = table.optimize.z_order(list(z_order), target_size=target)
    else:
        metrics = table.optimize.compact(target_size=target)
    seconds = time.perf_counter() - t0
    return seconds, int(metrics["numFilesRemoved"]), int(metrics["numFilesAdded"])


def run(spark: SparkSession, contender: str, base: str, path: str, target: int, z_order: tuple[str, ...]) -> Outcome:
    """One timed run on a fresh copy of ``base``, then the checks of what it left."""
    shutil.copytree(base, path)
    before = log_state(path)
    quiesce(spark)
    if contender == "ours":
        seconds, removed, added = run_ours(spark, path, target, z_order)
    else:
        seconds, removed, added = run_delta_rs(path, target, z_order)
    after = log_state(path)
    outcome = Outcome(contender, seconds, removed, added, before, after, ours_check(spark, path), delta_rs_check(path))
    if z_order:
        outcome.shares = {column: share(spark, path, column) for column in ZORDER_COLUMNS}
    return outcome


@dataclass
class Measured:
    """Everything one configuration produced."""

    rows: int
    small_files: int
    zorder_files: int
    expected: Checksum
    expected_hits: dict[str, int]
    compact_base: LogState
    compact_target: int
    compact_base_check: Checksum
    zorder_base: LogState
    zorder_target: int
    zorder_base_check: Checksum
    before: dict[str, Share]
    compaction: list[Outcome]
    zorder: list[Outcome]
    problems: list[str]


def write_base(spark: SparkSession, rows: int, files: int, path: str) -> tuple[LogState, float]:
    t0 = time.perf_counter()
    generate(spark, rows, files).write.format("delta").save(path)
    return log_state(path), time.perf_counter() - t0


def measure(
    spark: SparkSession, rows: int, small_files: int, zorder_files: int, compact_target: int | None, root: Path
) -> Measured:
    """Write the base tables, then run both operations on both contenders; collect the problems found."""
    problems: list[str] = []
    t0 = time.perf_counter()
    generated = generate(spark, rows, max(1, min(small_files, 16)))
    expected = spark_checksum(generated)
    hits_row = generated.agg(*[F.sum((F.col(c) < BOUND).cast("long")) for c in ZORDER_COLUMNS]).collect()[0]
    expected_hits = {c: int(hits_row[i] or 0) for i, c in enumerate(ZORDER_COLUMNS)}
    print(
        f"  generator: {expected.short()}; {', '.join(f'{c} < {BOUND:,}: {n:,} rows' for c, n in expected_hits.items())} "
        f"({time.perf_counter() - t0:.1f}s)",
        flush=True,
    )

    # Compaction
    base = str(root / "base" / "compact")
    compact_base, seconds = write_base(spark, rows, small_files, base)
    target = compact_target or math.ceil(compact_base.size / COMPACT_OUTPUT_FILES)
    compact_base_check = ours_check(spark, base)
    print(
        f"  base/compact: {compact_base.files:,} files, {fmt_bytes(compact_base.size)} "
        f"(avg {fmt_bytes(compact_base.size / max(1, compact_base.files))}), written in {seconds:.1f}s; "
        f"target size {target:,} bytes ({fmt_bytes(target)})",
        flush=True,
    )
    if compact_base.files != small_files:
        problems.append(f"base/compact has {compact_base.files} files, expected {small_files}")
    compaction: list[Outcome] = []
    for contender in CONTENDERS:
        outcome = run(spark, contender, base, str(root / "compact" / contender), target, ())
        compaction.append(outcome)
        print(
            f"  COMPACT {contender:<8} {outcome.seconds:8.3f}s  files {outcome.before.files:,} -> {outcome.after.files:,} "
            f"(reported: removed {outcome.reported_removed:,}, added {outcome.reported_added:,}), "
            f"{fmt_bytes(outcome.after.size)}; table {outcome.by_ours.rows:,} rows",
            flush=True,
        )

    # Z-order
    base = str(root / "base" / "zorder")
    zorder_base, seconds = write_base(spark, rows, zorder_files, base)
    ztarget = math.ceil(zorder_base.size / zorder_files)
    zorder_base_check = ours_check(spark, base)
    print(
        f"  base/zorder: {zorder_base.files:,} files, {fmt_bytes(zorder_base.size)}, written in {seconds:.1f}s; "
        f"target size {ztarget:,} bytes ({fmt_bytes(ztarget)})",
        flush=True,
    )
    if zorder_base.files != zorder_files:
        problems.append(f"base/zorder has {zorder_base.files} files, expected {zorder_files}")
    before = {c: share(spark, base, c) for c in ZORDER_COLUMNS}
    print(
        "    before Z-order: " + ", ".join(f"{c} < {BOUND:,} reads {s.read}/{s.total} files" for c, s in before.items()),
        flush=True,
    )
    zorder: list[Outcome] = []
    for contender in CONTENDERS:
        outcome = run(spark, contender, base, str(root / "zorder" / contender), ztarget, ZORDER_COLUMNS)
        zorder.append(outcome)
        shown = ", ".join(
            f"{c} < {BOUND:,} reads {s.read}/{s.total} (stats {s.stats_delta_rs}/{s.files})" for c, s in outcome.shares.items()
        )
        print(
            f"  ZORDER  {contender:<8} {outcome.seconds:8.3f}s  files {outcome.before.files:,} -> {outcome.after.files:,} "
            f"(reported: removed {outcome.reported_removed:,}, added {outcome.reported_added:,}); {shown}",
            flush=True,
        )

    measured = Measured(
        rows,
        small_files,
        zorder_files,
        expected,
        expected_hits,
        compact_base,
        target,
        compact_base_check,
        zorder_base,
        ztarget,
        zorder_base_check,
        before,
        compaction,
        zorder,
        problems,
    )
    problems.extend(find_problems(measured))
    return measured


# --------------------------------------------------------------------------- checks and report


def find_problems(m: Measured) -> list[str]:
    """Every way a table or a reported count differs from what it must be."""
    found: list[str] = []
    if m.expected.rows != m.rows:
        found.append(f"the generator made {m.expected.rows:,} rows, expected {m.rows:,}")
    for label, check in (
        ("base/compact (read by ours)", m.compact_base_check),
        ("base/zorder (read by ours)", m.zorder_base_check),
    ):
        if check != m.expected:
            found.append(f"{label}: {check} != generated {m.expected}")
    for operation, outcomes in (("COMPACT", m.compaction), ("ZORDER", m.zorder)):
        for o in outcomes:
            where = f"{operation} {o.contender}"
            for reader, check in (("ours", o.by_ours), ("delta-rs", o.by_delta_rs)):
                if check != m.expected:
                    found.append(f"{where}: read by {reader}: {check} != generated {m.expected}")
            if (o.reported_removed, o.reported_added) != (o.removed, o.added):
                found.append(
                    f"{where}: reports {o.reported_removed} files removed and {o.reported_added} added, "
                    f"the log shows {o.removed} and {o.added}"
                )
            if o.after.version != o.before.version + 1:
                found.append(f"{where}: {o.after.version - o.before.version} commits, expected 1")
    states = [("before Z-order", m.before)] + [(f"ZORDER {o.contender}", o.shares) for o in m.zorder]
    for label, shares in states:
        for column, s in shares.items():
            want = m.expected_hits[column]
            if s.rows_ours != want or s.rows_delta_rs != want:
                found.append(
                    f"{label}: {column} < {BOUND:,} returns {s.rows_ours:,} rows through ours, "
                    f"{s.rows_delta_rs} through delta-rs; expected {want:,}"
                )
            if s.read < s.stats_ours:
                found.append(f"{label}: {column} < {BOUND:,}: ours reads {s.read} files, but {s.stats_ours} may hold matches")
    return found


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def rule(header: str) -> str:
    return "|" + "|".join("-" * len(c) for c in header.split("|")[1:-1]) + "|"


def report(m: Measured) -> list[tuple[str, bool]]:
    """Print the results tables; the verdicts."""
    print(
        f"\n## Compaction of {m.rows:,} rows in {m.compact_base.files:,} files ({fmt_bytes(m.compact_base.size)}); "
        f"target size {m.compact_target:,} bytes ({fmt_bytes(m.compact_target)}) for both\n"
    )
    header = (
        f"| {'contender':<9} | {'time':>9} | {'files before':>12} | {'files after':>11} | {'removed':>8} | {'added':>8} "
        f"| {'size after':>11} | {'avg file':>10} | {'rows':>12} |"
    )
    print(header)
    print(rule(header))
    for o in m.compaction:
        print(
            f"| {o.contender:<9} | {o.seconds:>8.3f}s | {o.before.files:>12,} | {o.after.files:>11,} | {o.removed:>8,} "
            f"| {o.added:>8,} | {fmt_bytes(o.after.size):>11} | {fmt_bytes(o.after.size / max(1, o.after.files)):>10} "
            f"| {o.by_ours.rows:>12,} |"
        )

    print(
        f"\n## Z-order by ({', '.join(ZORDER_COLUMNS)}) of {m.rows:,} rows in {m.zorder_base.files:,} files "
        f"({fmt_bytes(m.zorder_base.size)}); target size {m.zorder_target:,} bytes ({fmt_bytes(m.zorder_target)}) for both\n"
    )
    print(header)
    print(rule(header))
    for o in m.zorder:
        print(
            f"| {o.contender:<9} | {o.seconds:>8.3f}s | {o.before.files:>12,} | {o.after.files:>11,} | {o.removed:>8,} "
            f"| {o.added:>8,} | {fmt_bytes(o.after.size):>11} | {fmt_bytes(o.after.size / max(1, o.after.files)):>10} "
            f"| {o.by_ours.rows:>12,} |"
        )

    print(
        f"\n## Files read by 1% predicates (stats: min < {BOUND:,} per delta-rs's add actions / our log; "
        f"read: scan_info of our reader; span: mean file [min, max] width / domain)\n"
    )
    header = (
        f"| {'table':<21} | {'predicate':<10} | {'stats (delta-rs)':>17} | {'stats (ours)':>17} | {'read (ours)':>17} "
        f"| {'span':>6} | {'target':>6} | verdict |"
    )
    print(header)
    print(rule(header))
    verdicts: list[tuple[str, bool]] = []
    states = [("before Z-order", m.before)] + [(f"Z-ordered by {o.contender}", o.shares) for o in m.zorder]
    for label, shares in states:
        for column, s in shares.items():
            predicate = f"{column} < {BOUND:,}"
            measured_fraction = s.fraction if label.endswith("ours") else s.stats_fraction
            ok = measured_fraction <= FILES_READ_TARGET
            if label.endswith("ours"):
                verdict = "PASS" if ok else "FAIL"
                verdicts.append((f"Z-order by ours: {predicate} reads <= {100 * FILES_READ_TARGET:.0f}% of the files", ok))
            elif label.endswith("delta-rs"):
                verdict = "(pass)" if ok else "(fail)"
            else:
                verdict = "-"
            cells = [
                f"{part:,}/{whole:,} {pct(part, whole):>6}"
                for part, whole in ((s.stats_delta_rs, s.files), (s.stats_ours, s.files), (s.read, s.total))
            ]
            print(
                f"| {label:<21} | {predicate:<10} | " + " | ".join(f"{c:>17}" for c in cells) + f" | {100 * s.span:>5.1f}% "
                f"| {'<= ' + format(100 * FILES_READ_TARGET, '.0f') + '%':>6} | {verdict:<7} |"
            )
    print("  (verdicts: ours by scan_info; delta-rs, in parentheses, by its stats, for reference only)")

    print("\n## Ratios (wall clock, one run each; ratio = ours / delta-rs; no target)\n")
    header = f"| {'operation':<10} | {'ours':>9} | {'delta-rs':>9} | {'ratio':>6} | {'files after (ours / delta-rs)':>29} |"
    print(header)
    print(rule(header))
    for operation, outcomes in (("COMPACT", m.compaction), ("ZORDER", m.zorder)):
        by = {o.contender: o for o in outcomes}
        ours, theirs = by["ours"], by["delta-rs"]
        files = f"{ours.after.files:,} / {theirs.after.files:,}"
        print(
            f"| {operation:<10} | {ours.seconds:>8.3f}s | {theirs.seconds:>8.3f}s | {ours.seconds / theirs.seconds:>6.3f} "
            f"| {files:>29} |"
        )
    return verdicts


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows in each table (default 10,000,000)")
    parser.add_argument("--small-files", type=int, default=2000, help="files of the table to compact (default 2000)")
    parser.add_argument("--zorder-files", type=int, default=100, help="files of the table to Z-order, and after it (default 100)")
    parser.add_argument(
        "--compact-target-size",
        type=int,
        help=f"compaction target size in bytes, for both (default: the table's size / {COMPACT_OUTPUT_FILES})",
    )
    parser.add_argument(
        "--workdir",
        default="/tmp/sparkdelta-bench/optimize",
        help="where tables are written, in subdirectories warmup/ and run/ that each run replaces "
        "(default /tmp/sparkdelta-bench/optimize)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the written tables (default: delete them at the end)")
    parser.add_argument("--no-warmup", dest="warmup", action="store_false", help="skip the untimed warm-up round")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--driver-memory", default="6g", help="spark.driver.memory (default 6g)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target fails")
    args = parser.parse_args(argv)
    if args.small_files < 2 or args.zorder_files < 1 or args.rows < 100 * max(args.small_files, args.zorder_files):
        parser.error("need --small-files >= 2, --zorder-files >= 1, --rows >= 100 * both")
    if args.compact_target_size is not None and args.compact_target_size < 1:
        parser.error("--compact-target-size must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    workdir = Path(args.workdir).resolve()
    remove_run_dirs(workdir, RUN_DIRS)
    workdir.mkdir(parents=True, exist_ok=True)

    spark = bench_session("sparkdelta-bench-optimize", args.master, args.driver_memory, in_memory_catalog=True)
    print("# sparkdelta OPTIMIZE benchmark: compaction and Z-order, vs delta-rs\n")
    for key, value in spark_machine_rows(spark):
        print(f"{key:<11} {value}")
    print(
        f"{'params':<11} rows={args.rows:,} small files={args.small_files:,} zorder files={args.zorder_files} "
        f"compact target={args.compact_target_size or f'table size / {COMPACT_OUTPUT_FILES}'} workdir={workdir}\n",
        flush=True,
    )

    if args.warmup:
        t0 = time.perf_counter()
        rows, small, zfiles = WARMUP
        print(f"warm-up (untimed; {rows:,} rows, {small} small files, {zfiles} files to Z-order):", flush=True)
        warm = measure(spark, rows, small, zfiles, None, workdir / "warmup")
        shutil.rmtree(workdir / "warmup")
        for problem in warm.problems:
            print(f"  (warm-up) FAIL: {problem}")
        print(f"warm-up: done in {time.perf_counter() - t0:.1f}s\n", flush=True)

    t0 = time.perf_counter()
    print("run:", flush=True)
    measured = measure(spark, args.rows, args.small_files, args.zorder_files, args.compact_target_size, workdir / "run")
    print(f"run: done in {time.perf_counter() - t0:.1f}s\n", flush=True)

    print("## Checks\n")
    for problem in measured.problems:
        print(f"FAIL: {problem}")
    if not measured.problems:
        print(
            f"  all tables (bases, both contenders' results of both operations): {measured.expected.short()}, "
            "the generator's checksum, read by ours and by delta-rs; the 1% predicates return the expected rows "
            "through both; reported files removed / added match the logs"
        )

    verdicts = report(measured)
    print("\nverdicts:")
    for label, ok in verdicts:
        print(f"  {'PASS' if ok else 'FAIL'}  {label}")

    print(f"\nload avg at end: {load_average()}")
    print(f"total runtime: {time.perf_counter() - started:.0f}s")
    spark.stop()
    if args.keep:
        print(f"kept: {workdir / 'run'}")
    else:
        remove_run_dirs(workdir, RUN_DIRS)
        try:
            workdir.rmdir()  # only when empty
        except OSError:
            pass
    if measured.problems:
        return 2
    return 1 if args.strict and not all(ok for _, ok in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
