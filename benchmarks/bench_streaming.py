#!/usr/bin/env python
"""Benchmark Structured Streaming over Delta tables against Spark's own Parquet file streams.

In one run, on the same data files (defaults: 4M rows, 7 columns, 20 files):

1. Source throughput: ``readStream.format("delta").load(table)`` into the ``noop`` sink
   vs ``readStream.schema(s).parquet(folder)`` into ``noop``, where the folder holds a
   copy of exactly the table's data files. Each run is one ``availableNow`` query with a
   fresh checkpoint and ``maxFilesPerTrigger`` 2 (10 micro-batches by default).
   Throughput is the rows of the batches after the first over the time Spark reports
   they took (``triggerExecution``): the rate a running stream keeps up. The wall time of
   the whole query, from ``start`` to termination, is printed too: it adds each side's
   start-up (for the Delta source, the Python process Spark starts for its offsets).
2. Sink throughput: the Parquet file stream above into ``writeStream.format("delta")``
   vs into ``writeStream.format("parquet")``, each run into a fresh table or folder,
   measured the same two ways.
3. Latency of one small micro-batch: a running query (``processingTime`` 0) from a Delta
   table to a Delta table; one row is appended to the source and the time until the
   sink's log holds it is measured, vs the same with a Parquet folder source and a Parquet
   sink (until Spark's sink log lists the new file). Median of ``--latency-rows`` rows.

Runs of the two sides are interleaved after a warm-up; verdicts use best-of-runs
ratios (median printed too). Targets: source and sink throughput within 1.2x of Parquet's.

Run:  python benchmarks/bench_streaming.py            (add --help for options)
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from machine import bench_session, load_average, quiesce, spark_machine_rows
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from sparkdelta.kernel import Table

TARGET = 1.2


def generate(spark: SparkSession, rows: int, files: int) -> DataFrame:
    return (
        spark.range(rows)
        .selectExpr(
            "id",
            "id * 2 as a",
            "cast(id as double) / 3 as b",
            "cast(id % 1000 as string) as s",
            "sha1(cast(id as string)) as h",
            "timestamp_seconds(1700000000 + id) as ts",
            "cast(id % 7 as int) as i",
        )
        .repartition(files)
    )


Timing = tuple[float, float]
"""A query's wall seconds, and its steady rows per second (the batches after the first)."""


def timed_query(start: Callable[[], StreamingQuery]) -> Timing:
    began = time.perf_counter()
    query = start()
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    wall = time.perf_counter() - began
    later = [p for p in query.recentProgress if p["numInputRows"]][1:]
    seconds = sum(p["durationMs"]["triggerExecution"] for p in later) / 1000
    return wall, sum(p["numInputRows"] for p in later) / seconds


def interleaved(
    runs: int, warmup: int, sides: dict[str, Callable[[int], Timing]], spark: SparkSession
) -> dict[str, list[Timing]]:
    times: dict[str, list[Timing]] = {name: [] for name in sides}
    for run in range(warmup + runs):
        for name, side in sides.items():
            quiesce(spark)
            timing = side(run)
            if run >= warmup:
                times[name].append(timing)
    return times


def latency(spark: SparkSession, work: Path, kind: str, rows: int) -> list[float]:
    """Seconds from appending one row to the source until the sink has committed it."""
    source, sink, checkpoint = work / f"lat-{kind}-src", work / f"lat-{kind}-sink", work / f"lat-{kind}-cp"
    for p in (source, sink, checkpoint):
        shutil.rmtree(p, ignore_errors=True)
    seed = spark.range(1).selectExpr("id", "'x' as s")
    if kind == "delta":
        seed.write.format("delta").save(str(source))
        stream = spark.readStream.format("delta").load(str(source))
    else:
        seed.write.parquet(str(source))
        stream = spark.readStream.schema(seed.schema).parquet(str(source))
    query = (
        stream.writeStream.format(kind)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="0 seconds")
        .start(str(sink))
    )
    query.processAllAvailable()
    seen: list[float] = []

    def landed() -> int:
        if kind == "delta":
            return Table(str(sink)).latest_version()
        return len(glob.glob(str(sink / "_spark_metadata" / "*")))

    try:
        for i in range(rows):
            before = landed()
            row = spark.range(i + 1, i + 2).selectExpr("id", "'x' as s")
            if kind == "delta":
                row.write.format("delta").mode("append").save(str(source))
            else:
                row.write.mode("append").parquet(str(source))
            began = time.perf_counter()
            while landed() == before:
                time.sleep(0.005)
            seen.append(time.perf_counter() - began)
    finally:
        query.stop()
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--latency-rows", type=int, default=10)
    parser.add_argument("--workdir", default="/tmp/sparkdelta-bench/streaming")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()

    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    spark = bench_session("bench-streaming", args.master, args.driver_memory)
    for key, value in spark_machine_rows(spark):
        print(f"{key:>12}: {value}")

    table, folder = work / "table", work / "parquet"
    generate(spark, args.rows, args.files).write.format("delta").save(str(table))
    folder.mkdir()
    files = Table(str(table)).snapshot().file_paths()
    for name in files:
        shutil.copy(table / name, folder / Path(name).name)
    schema = spark.read.parquet(str(folder)).schema
    print(
        f"{'data':>12}: {args.rows:,} rows in {len(files)} files, {sum(os.path.getsize(folder / f) for f in os.listdir(folder)) / 2**20:.1f} MiB"
    )
    per_batch = "2"

    def source_delta(run: int) -> Timing:
        stream = spark.readStream.format("delta").option("maxFilesPerTrigger", per_batch).load(str(table))
        checkpoint = str(work / f"cp-src-delta-{run}")
        return timed_query(
            lambda: stream.writeStream.format("noop").option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
        )

    def source_parquet(run: int) -> Timing:
        stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", per_batch).parquet(str(folder))
        checkpoint = str(work / f"cp-src-parquet-{run}")
        return timed_query(
            lambda: stream.writeStream.format("noop").option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
        )

    def sink(kind: str) -> Callable[[int], Timing]:
        def run_sink(run: int) -> Timing:
            out, checkpoint = work / f"sink-{kind}-{run}", work / f"cp-sink-{kind}-{run}"
            stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", per_batch).parquet(str(folder))
            timing = timed_query(
                lambda: (
                    stream.writeStream.format(kind)
                    .option("checkpointLocation", str(checkpoint))
                    .trigger(availableNow=True)
                    .start(str(out))
                )
            )
            shutil.rmtree(out, ignore_errors=True)
            return timing

        return run_sink

    results: list[tuple[str, list[Timing], list[Timing]]] = []
    times = interleaved(args.repeats, args.warmup, {"delta": source_delta, "parquet": source_parquet}, spark)
    results.append(("source -> noop", times["delta"], times["parquet"]))
    times = interleaved(args.repeats, args.warmup, {"delta": sink("delta"), "parquet": sink("parquet")}, spark)
    results.append(("parquet stream -> sink", times["delta"], times["parquet"]))
    print(f"{'load avg':>12}: {load_average()} (after the throughput runs)")

    print()
    print(f"{'':<24}{'delta rows/s':>14}{'parquet rows/s':>16}{'ratio best':>12}{'ratio median':>14}  verdict")
    failed = False
    for name, ours, theirs in results:
        best = max(r for _, r in theirs) / max(r for _, r in ours)
        median = statistics.median(r for _, r in theirs) / statistics.median(r for _, r in ours)
        verdict = "PASS" if best <= TARGET else "FAIL"
        failed |= verdict == "FAIL"
        print(
            f"{name:<24}{max(r for _, r in ours):>14,.0f}{max(r for _, r in theirs):>16,.0f}{best:>12.2f}{median:>14.2f}"
            f"  {verdict} (target <= {TARGET})"
        )
    print(
        f"{'':<24}{'delta wall':>14}{'parquet wall':>16}{'ratio best':>12}{'ratio median':>14}  (whole query, start-up included)"
    )
    for name, ours, theirs in results:
        best = min(w for w, _ in ours) / min(w for w, _ in theirs)
        median = statistics.median(w for w, _ in ours) / statistics.median(w for w, _ in theirs)
        print(f"{name:<24}{min(w for w, _ in ours):>13.2f}s{min(w for w, _ in theirs):>15.2f}s{best:>12.2f}{median:>14.2f}")
    ours_latency = latency(spark, work, "delta", args.latency_rows)
    their_latency = latency(spark, work, "parquet", args.latency_rows)
    print(
        f"{'one-row micro-batch':<24}{statistics.median(ours_latency):>13.2f}s{statistics.median(their_latency):>15.2f}s"
        f"{statistics.median(ours_latency) / statistics.median(their_latency):>12.2f}{'':>14}  (median latency, informational)"
    )
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
