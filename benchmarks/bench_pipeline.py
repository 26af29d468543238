#!/usr/bin/env python
"""Benchmark the lakehouse pipeline end to end: raw CSV rows per second through bronze, silver and gold.

Why: the pipeline is sparkdelta under a realistic load (appends with idempotent txns,
schema evolution, MERGE with corrections, the change feed, OPTIMIZE), so its throughput
is what a user of the library sees. Bronze ingest is compared with the plainest Spark job
over the same files, so the cost of Delta (stats, commits, one exactly-once batch per
file, the metadata columns) shows against Spark's own CSV and Parquet speed.

What it does, in one run (defaults: 10,000,000 raw rows as 10 daily files):

1. Landing: the pipeline's generator writes ``--days`` CSV files of ``--rows / --days``
   rides each (plus the dirt it injects: duplicates, corrections, bad lines) under
   ``--workdir/warehouse/landing``. Timed, but not part of the pipeline's throughput.
2. Pipeline: one ``lakehouse`` run over all files (``sparkdelta.lakehouse.run``): bronze,
   silver, gold, maintenance, each timed. Throughput = raw lines / (sum of the four).
3. Plain baseline, same files, same session, after the pipeline (an untimed warm-up of
   both on two small days comes first):
   ``spark.read.schema(<20 string columns>).option("header", True).csv(files).write.parquet(p)``
   (all columns as text, as bronze keeps them; one job over all files). Compared with
   bronze's time: ratio = bronze / plain.
4. A rerun with no new file (must change no table), then one more day dropped and run
   (incremental: yesterday's late corrections update silver, gold folds the change feed).
5. Checks: bronze holds every raw line (Spark's line count of the files, minus headers) and
   the plain Parquet copy as many rows; silver + quarantine + duplicates + superseded lines
   = bronze's rows; gold's trips = silver's rows; the rerun changed nothing; deltalake
   opens every table at the version ours reports, with the same row count. A failed check
   prints ``FAIL: ...`` and the script exits 2.

Run:  python benchmarks/bench_pipeline.py            (add --help for options; --rows 1000000 for a quick run)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import deltalake
from machine import bench_session, fmt_bytes, load_average, spark_machine_rows
from pyspark.sql import SparkSession

from sparkdelta.lakehouse import FeedSpec, PipelineConfig, Warehouse, run
from sparkdelta.lakehouse.generator import generate
from sparkdelta.lakehouse.summary import RunSummary
from sparkdelta.lakehouse.trips import TYPED_COLUMNS

STAGES = ("bronze", "silver", "gold", "maintenance")


def fail(message: str) -> None:
    print(f"FAIL: {message}")
    sys.exit(2)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000, help="raw rides over all days (default 10,000,000)")
    parser.add_argument("--days", type=int, default=10, help="daily landing files (default 10)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/sparkdelta-bench/pipeline"), help="where the warehouse goes")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--driver-memory", default="6g", help="spark.driver.memory (default 6g)")
    parser.add_argument("--keep", action="store_true", help="keep the warehouse (default: delete it at the end)")
    return parser.parse_args(argv)


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def timed_stages(summary: RunSummary) -> str:
    return ", ".join(f"{stage} {summary.seconds.get(stage, 0):.1f} s" for stage in STAGES)


def pipeline_seconds(summary: RunSummary) -> float:
    return sum(summary.seconds.get(stage, 0.0) for stage in STAGES)


def plain_copy(spark: SparkSession, files: list[Path], target: Path) -> None:
    """The baseline: the files as text columns into Parquet, in one plain Spark job."""
    schema = ", ".join(f"`{name}` STRING" for name in TYPED_COLUMNS)
    spark.read.schema(schema).option("header", True).csv([str(p) for p in files]).write.parquet(str(target))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    spark = bench_session("bench-pipeline", args.master, args.driver_memory)
    print("# sparkdelta lakehouse pipeline benchmark: raw CSV to bronze, silver and gold\n")
    for key, value in spark_machine_rows(spark):
        print(f"{key:<11} {value}")

    shutil.rmtree(args.workdir, ignore_errors=True)
    # Untimed warm-up: the same steps on two small days, so code generation and class
    # loading are charged to neither the pipeline nor the baseline.
    warm = Warehouse(args.workdir / "warmup")
    run(spark, PipelineConfig(warm.root, FeedSpec(rows_per_day=20_000), days=2))
    plain_copy(spark, warm.landing_files(), args.workdir / "warmup_parquet")

    warehouse = Warehouse(args.workdir / "warehouse")
    spec = FeedSpec(rows_per_day=args.rows // args.days)
    config = PipelineConfig(warehouse.root, spec, days=args.days)

    started = time.perf_counter()
    files = generate(spark, spec, warehouse.landing, range(args.days))
    generate_seconds = time.perf_counter() - started
    lines = spark.read.text([str(p) for p in files]).count() - len(files)
    landing_bytes = dir_size(warehouse.landing)
    print(f"\nlanding: {len(files)} files, {lines:,} lines, {fmt_bytes(landing_bytes)}, generated in {generate_seconds:.1f} s")

    first = run(spark, config)
    seconds = pipeline_seconds(first)
    print(f"pipeline: {timed_stages(first)}; {lines / seconds:,.0f} rows/s end to end")

    plain = args.workdir / "plain_parquet"
    started = time.perf_counter()
    plain_copy(spark, files, plain)
    plain_seconds = time.perf_counter() - started
    plain_rows = spark.read.parquet(str(plain)).count()

    again = run(spark, config)
    extra = generate(spark, spec, warehouse.landing, [args.days])
    extra_lines = spark.read.text(str(extra[0])).count() - 1
    later = run(spark, config)

    # Checks.
    def count(path: Path) -> int:
        return spark.read.format("delta").load(str(path)).count()

    silver = first.silver
    if first.bronze.rows != lines or plain_rows != lines:
        fail(f"raw lines {lines:,}, bronze rows {first.bronze.rows:,}, plain Parquet rows {plain_rows:,}")
    accounted = sum(silver.quarantined.values()) + silver.duplicates + silver.superseded + silver.inserted + silver.updated
    if accounted + silver.unchanged != first.bronze.rows:
        fail(f"silver accounts for {accounted + silver.unchanged:,} of {first.bronze.rows:,} bronze rows")
    silver_rows = count(warehouse.silver)
    gold_trips = spark.read.format("delta").load(str(warehouse.gold("daily_vendor"))).agg({"trips": "sum"}).first()[0]
    if gold_trips != silver_rows:
        fail(f"gold counts {gold_trips:,} trips, silver holds {silver_rows:,}")
    if again.changed:
        fail(f"a rerun with no new file changed tables: {again.versions}")
    if later.bronze.rows != extra_lines:
        fail(f"the extra day has {extra_lines:,} lines, bronze took {later.bronze.rows:,}")
    for name, path in warehouse.tables().items():
        theirs = deltalake.DeltaTable(str(path))
        if theirs.version() != later.versions[name][1] or theirs.to_pyarrow_dataset().count_rows() != count(path):
            fail(f"deltalake reads {name} differently")

    bronze_seconds = first.seconds["bronze"]
    print(f"\n## Results ({args.rows:,} rides in {args.days} daily files; load average now {load_average()})\n")
    header = "| run | raw rows | bronze | silver | gold | maintenance | end to end | rows/s |"
    print(header)
    print("| --- " * (header.count("|") - 1) + "|")
    for label, summary, rows in (
        ("initial, all files", first, lines),
        ("rerun, nothing new", again, 0),
        ("one more day", later, extra_lines),
    ):
        stage = [f"{summary.seconds.get(s, 0):.1f} s" for s in STAGES]
        total = pipeline_seconds(summary)
        rate = f"{rows / total:,.0f}" if rows else "-"
        print(f"| {label} | {rows:,} | {' | '.join(stage)} | {total:.1f} s | {rate} |")
    print(
        f"\nbronze ingest vs plain `spark.read.csv(...).write.parquet(...)` on the same {len(files)} files: "
        f"{bronze_seconds:.1f} s vs {plain_seconds:.1f} s, ratio {bronze_seconds / plain_seconds:.2f}"
    )
    print(
        f"silver: {silver.inserted:,} rides, {sum(silver.quarantined.values()):,} quarantined, {silver.duplicates:,} duplicates, "
        f"{silver.superseded:,} superseded; one more day: {later.silver.inserted:,} inserted, {later.silver.updated:,} late corrections"
    )
    print(f"gold: {first.gold.change_rows:,} change rows folded, then {later.gold.change_rows:,}")
    sizes = {name: dir_size(path) for name, path in warehouse.tables().items()}
    print("table sizes: " + ", ".join(f"{name} {fmt_bytes(size)}" for name, size in sizes.items()))
    print(f"generation: {generate_seconds:.1f} s ({lines / generate_seconds:,.0f} lines/s), landing {fmt_bytes(landing_bytes)}")
    print("checks: PASS (line counts, reconciliation, gold = silver trips, no-op rerun, deltalake reads every table)")
    if not args.keep:
        shutil.rmtree(args.workdir, ignore_errors=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
