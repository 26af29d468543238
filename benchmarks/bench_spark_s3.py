#!/usr/bin/env python
"""Benchmark sparkdelta's Spark reads and writes on S3 against plain Spark Parquet on S3.

Both sides run in one Spark session (``local[2]``) against one ``moto`` S3 server on
127.0.0.1, through Hadoop's S3A connector (``scripts/fetch_hadoop_aws.sh``), interleaved:

1. Data: ``--rows`` deterministic rows x 10 columns in ``--files`` range-partitioned
   partitions, persisted in memory so writes compare the writers, not the generator.
2. Write: ``df.write.format("delta").save("s3a://...")`` (ours: Spark writes into
   ``_staging/``, each file is moved into place with a server-side copy, stats come from
   a ranged footer read, one conditional-PUT commit) vs ``df.write.parquet("s3a://...")``
   (Spark's own commit, which renames on S3A too), best and median of ``--write-repeats``.
3. Read: a full scan materialized with the ``noop`` sink, ours = ``format("delta").load``,
   baseline = ``spark.read.parquet`` of the same files, best and median of ``--repeats``
   after one warm-up; and a 1% range query on ``k`` (ours skips files with stats).

Targets: write ratio <= 1.5 (ours pays one more server-side copy per file than Spark's
committer), read ratios <= 1.10. moto shares the two cores with Spark, so the absolute
times are not S3's; the ratios compare the two writers' request patterns on one endpoint.

Run: python benchmarks/bench_spark_s3.py   (add --help for options)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from machine import bench_session, load_average, quiesce, spark_machine_rows
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from object_stores import MotoServer, start_moto  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
WRITE_TARGET = 1.5
READ_TARGET = 1.10


def hadoop_aws_classpath() -> str:
    done = subprocess.run([str(REPO / "scripts" / "fetch_hadoop_aws.sh")], capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def session(server: MotoServer, driver_memory: str) -> SparkSession:
    settings = {
        "spark.driver.extraClassPath": hadoop_aws_classpath(),
        "spark.hadoop.fs.s3a.endpoint": server.endpoint,
        "spark.hadoop.fs.s3a.access.key": server.access_key,
        "spark.hadoop.fs.s3a.secret.key": server.secret_key,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
    }
    return bench_session("bench-spark-s3", "local[2]", driver_memory, configs=settings)


def generate(spark: SparkSession, rows: int, files: int) -> DataFrame:
    k = F.col("id")

    def h(seed: int) -> F.Column:
        return F.xxhash64(k, F.lit(seed))

    columns = [
        k.alias("k"),
        *[(h(i) % 1000).alias(f"l{i}") for i in range(1, 5)],
        *[(F.abs(h(10 + i)) % 100_000 / 7.0).alias(f"d{i}") for i in range(1, 4)],
        F.concat(F.lit("s"), (h(20) % 5000).cast("string")).alias("s1"),
        F.date_add(F.lit("2020-01-01").cast("date"), (k % 365).cast("int")).alias("dt"),
    ]
    return spark.range(rows).select(*columns).repartitionByRange(files, "k")


def timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def summary(times: list[float]) -> tuple[float, float]:
    return min(times), statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--write-repeats", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--driver-memory", default="4g")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as logs:
        server = start_moto(Path(logs))
        try:
            spark = session(server, args.driver_memory)
            bucket = server.new_bucket("bench")
            data = generate(spark, args.rows, args.files).cache()
            data.count()
            base = f"s3a://{bucket}"

            data.write.format("delta").save(f"{base}/warm_ours")  # connector, JIT, conditional-write probe
            data.write.parquet(f"{base}/warm_plain")
            ours_w: list[float] = []
            plain_w: list[float] = []
            for i in range(args.write_repeats):
                quiesce(spark)
                ours_w.append(timed(lambda i=i: data.write.format("delta").save(f"{base}/ours_{i}")))
                quiesce(spark)
                plain_w.append(timed(lambda i=i: data.write.parquet(f"{base}/plain_{i}")))
            table, plain = f"{base}/ours_0", f"{base}/plain_0"
            files = spark.read.format("delta").load(table).inputFiles()
            assert len(files) == args.files, files

            def ours_scan() -> None:
                spark.read.format("delta").load(table).write.format("noop").mode("overwrite").save()

            def plain_scan() -> None:
                spark.read.parquet(plain).write.format("noop").mode("overwrite").save()

            low, high = args.rows // 2, args.rows // 2 + args.rows // 100

            def ours_range() -> None:
                spark.read.format("delta").load(table).where(f"k >= {low} AND k < {high}").write.format("noop").mode(
                    "overwrite"
                ).save()

            def plain_range() -> None:
                spark.read.parquet(plain).where(f"k >= {low} AND k < {high}").write.format("noop").mode("overwrite").save()

            same = spark.read.format("delta").load(table).agg(F.count("*"), F.sum("k"), F.sum("l1")).first()
            assert same == spark.read.parquet(plain).agg(F.count("*"), F.sum("k"), F.sum("l1")).first(), "rows differ"
            reads: dict[str, tuple[list[float], list[float]]] = {}
            for name, ours, baseline in (("full scan", ours_scan, plain_scan), ("1% range query on k", ours_range, plain_range)):
                ours(), baseline()  # warm-up
                pair: tuple[list[float], list[float]] = ([], [])
                for _ in range(args.repeats):
                    pair[0].append(timed(ours))
                    pair[1].append(timed(baseline))
                reads[name] = pair

            print("# Spark on S3 (moto) vs plain Parquet on S3")
            for label, value in spark_machine_rows(spark):
                print(f"- {label}: {value}")
            print(f"- load average at the end: {load_average()}")
            print(f"- data: {args.rows:,} rows x 10 columns, {args.files} files per write")
            print()
            print("| measurement | ours (best / median) | baseline (best / median) | ratio (best / median) | target |")
            print("| --- | --- | --- | --- | --- |")
            rows = [("write vs `df.write.parquet`", ours_w, plain_w, WRITE_TARGET)]
            rows += [(name, ours, baseline, READ_TARGET) for name, (ours, baseline) in reads.items()]
            for name, ours, baseline, target in rows:
                (ob, om), (bb, bm) = summary(ours), summary(baseline)
                verdict = "PASS" if ob / bb <= target else "FAIL"
                print(
                    f"| {name} | {ob:.2f} / {om:.2f} s | {bb:.2f} / {bm:.2f} s | {ob / bb:.2f} / {om / bm:.2f} | "
                    f"<= {target:.2f}, {verdict} |"
                )
            spark.stop()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
