#!/usr/bin/env python
"""Benchmark sparkdelta against delta-spark, the reference implementation, on the same Spark.

Why: sparkdelta promises delta-spark's API and tables without its JVM jars. This runs the
operations a Delta user runs, the same way on both, on the same input data, with the same
PySpark (4.2.0, the newest delta-spark supports) and the same session settings, and
reports sparkdelta's time over delta-spark's for each. Target: at most 1.0 on every line.

What it does, in one run (``--quick`` for a small smoke run):

1. Environments, both cached under ``~/.cache/sparkdelta`` and made on first use:
   ``scripts/setup_deltaspark.sh`` (delta-spark 4.4.1's venv and its 4.4.0 jars; only the
   jars are used here) and a bench venv with ``pyspark==4.2.0``, ``delta-spark==4.4.1``
   (its Python API, which drives the jars) and sparkdelta installed from this checkout
   (``pip install -e``). Both sides run in that one venv, so Python, PySpark, pyarrow and
   the JVM are the same; only the Delta implementation differs.
2. Inputs, written once and reused while their parameters stay the same (under
   ``--workdir``/inputs): Parquet files from ``spark.range`` with columns hashed from the
   id (no randomness): the base table (``--rows`` in ``files`` files, each a contiguous id
   range), an append, a MERGE source (10% updates of keys in 3 of the base files, 90% new
   keys), a table of small files, a two-column table for layout (``x``, ``y`` uniform,
   every file spanning both ranges), and the lakehouse's landing CSV files (its own
   generator). A log-only table of 100,000 files (``bench_kernel.py``'s: 1,000 commits x
   100 adds, stats, 20 date partitions, checkpoint every 10) with an empty placeholder
   file per add, so a read can be planned (no file is ever opened).
3. Runs: ``--repeats`` rounds, each running one process per side (a fresh SparkSession),
   sides alternating which goes first. Both sessions get the same settings: ``local[2]``,
   driver memory, shuffle partitions, UTC session time zone, in-memory catalog, UI off,
   ``retentionDurationCheck`` off (VACUUM with 0 hours). sparkdelta's session is
   ``sparkdelta.configure(builder)`` (which adds its own defaults, as for any user),
   delta-spark's has its jars, SQL extension and catalog. Each process first runs an
   untimed warm-up of the same operations on a tiny table, then times every operation
   inside the process (perf_counter around the call, from opening the table to the
   commit or the last row; session start is reported apart, for information). Untimed
   preparation (copies of tables, property changes) happens outside the timed calls.
   Reads write to Spark's ``noop`` sink. Metadata operations on the 100k-file table run
   with each side's snapshot cache cleared first.
4. Checks: each operation's outcome (row counts, a checksum of every column, files
   written, metrics) must be equal on both sides in every round; any difference prints
   ``FAIL: ...`` and the script exits 2.
5. Layout: after each side's OPTIMIZE ZORDER BY (x, y) and after OPTIMIZE of a table
   created ``CLUSTER BY (x, y)`` (delta-spark clusters along a Hilbert curve), one function
   here reads each table's log (JSON commits, and a checkpoint if any) and computes, per
   file, the min/max of ``x`` and ``y``; the share of files a 1% range predicate on ``x``
   (on ``y``) must read is averaged over 50 windows across the domain. Compared with the
   ideal of a two-column curve, 1/sqrt(files).
6. Report: machine and load, then one line per operation: medians of ours and
   delta-spark's, the ratio, PASS/FAIL against 1.0, and the Spark jobs each ran. With
   ``--profile``, one more sparkdelta process runs under cProfile and the script prints,
   for every FAIL line, where our time went (our Python vs Spark jobs, top functions).

Run:  python benchmarks/bench_vs_deltaspark.py            (~20 min on 2 cores; --help for options)
      python benchmarks/bench_vs_deltaspark.py --quick    (smoke run, a few minutes)
The driver runs in the main venv (it builds the 100k-file log with bench_kernel.py, which
needs ``deltalake``); the measured processes run in the bench venv.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import hashlib
import io
import json
import math
import os
import pstats
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PYSPARK_VERSION = "4.2.0"
DELTA_SPARK_VERSION = "4.4.1"
CACHE = Path(os.environ.get("SPARKDELTA_CACHE", Path.home() / ".cache" / "sparkdelta"))
BENCH_HOME = CACHE / f"bench-pyspark-{PYSPARK_VERSION}"
OURS, THEIRS = "sparkdelta", "delta-spark"
SIDES = (OURS, THEIRS)
RATIO_TARGET = 1.0
DOMAIN = 1_000_000  # x and y are uniform in [0, DOMAIN)
WINDOW = 0.01  # the layout predicates select 1% of a column's domain
WINDOWS = 50  # ... at this many positions, evenly spread, averaged
CHECKSUM_MODULUS = 2_147_483_647
BASE_EPOCH = 1_735_689_600  # 2025-01-01T00:00:00Z; ts = this + id seconds
CATEGORIES = [f"cat{i:02d}" for i in range(20)]
META_PARTITION = "2025-01-05"  # the partition a selective plan of the 100k-file table reads
INPUTS_VERSION = 1  # bump when the generated inputs change


# --------------------------------------------------------------------------- sizes


@dataclass(frozen=True)
class Sizes:
    rows: int  # base table
    files: int
    append_rows: int
    append_files: int
    source_rows: int  # MERGE source: 10% updates, 90% inserts
    small_rows: int  # table to compact
    small_files: int
    layout_rows: int  # two-column table to Z-order / cluster
    layout_files: int
    lake_rows_per_day: int
    lake_days: int
    meta_commits: int  # log-only table: commits x 100 adds
    meta_files_per_commit: int = 100

    @property
    def file_rows(self) -> int:
        return self.rows // self.files

    def key_range(self, start: float, share: float = 0.01) -> tuple[int, int]:
        """A range of ids [low, high) of ``share`` of the base rows, starting at ``start`` of them."""
        low = int(self.rows * start)
        return low, low + max(1, int(self.rows * share))

    @property
    def update_files(self) -> list[int]:
        """The base files (by id range) that hold the MERGE source's updated keys: 3, spread out."""
        return sorted({int(self.files * f) for f in (0.15, 0.5, 0.85)})

    @property
    def meta_files(self) -> int:
        return self.meta_commits * self.meta_files_per_commit


DEFAULT = Sizes(
    rows=5_000_000,
    files=50,
    append_rows=500_000,
    append_files=5,
    source_rows=500_000,
    small_rows=1_000_000,
    small_files=500,
    layout_rows=2_000_000,
    layout_files=68,
    lake_rows_per_day=200_000,
    lake_days=2,
    meta_commits=1000,
)
QUICK = Sizes(
    rows=200_000,
    files=20,
    append_rows=20_000,
    append_files=2,
    source_rows=20_000,
    small_rows=50_000,
    small_files=50,
    layout_rows=200_000,
    layout_files=68,
    lake_rows_per_day=10_000,
    lake_days=2,
    meta_commits=100,
)


# --------------------------------------------------------------------------- the measured lines


@dataclass(frozen=True)
class Line:
    key: str
    label: str
    group: str


LINES = [
    Line("history", "history(), every commit", "snapshot and metadata (100k-file table)"),
    Line("detail", "detail()", "snapshot and metadata (100k-file table)"),
    Line("plan_all", "plan a read of all files (inputFiles)", "snapshot and metadata (100k-file table)"),
    Line("plan_partition", "plan a read of one date partition (inputFiles)", "snapshot and metadata (100k-file table)"),
    Line("write", "write (new table)", "writes and reads"),
    Line("append", "append", "writes and reads"),
    Line("full_scan", "full scan (noop sink)", "writes and reads"),
    Line("selective_scan", "1% id-range scan, data skipping", "writes and reads"),
    Line("merge_cow", "MERGE, copy-on-write", "DML"),
    Line("merge_dv", "MERGE, deletion vectors", "DML"),
    Line("delete_cow", "DELETE 1%, copy-on-write", "DML"),
    Line("delete_dv", "DELETE 1%, deletion vectors", "DML"),
    Line("update_cow", "UPDATE 1%, copy-on-write", "DML"),
    Line("update_dv", "UPDATE 1%, deletion vectors", "DML"),
    Line("compaction", "OPTIMIZE compaction of small files", "maintenance and change feed"),
    Line("zorder", "OPTIMIZE ZORDER BY (x, y)", "maintenance and change feed"),
    Line("liquid", "OPTIMIZE of a table CLUSTER BY (x, y)", "maintenance and change feed"),
    Line("vacuum", "VACUUM (RETAIN 0 HOURS) after compaction", "maintenance and change feed"),
    Line("cdf_read", "change feed read (update, delete, append)", "maintenance and change feed"),
    Line("lakehouse", "lakehouse pipeline, one run (4 stages)", "lakehouse"),
]
LINE = {line.key: line for line in LINES}
META_OPS = ("history", "detail", "plan_all", "plan_partition")
LAKE_STAGES = ("bronze", "silver", "gold", "maintenance")


# =========================================================================== environments (driver)


def bench_python(rebuild: bool = False) -> str:
    """The bench venv's python: pyspark 4.2.0, delta-spark's Python API and sparkdelta from this checkout."""
    venv = BENCH_HOME / "venv"
    # pyspark[sql]: pandas, which PySpark's mapInArrow needs (sparkdelta's deletion vectors use it) and
    # sparkdelta's own dependencies do not name; below 3, which PySpark 4.2 warns it does not fully support.
    requirements = [f"pyspark[sql]=={PYSPARK_VERSION}", "pandas<3", f"delta-spark=={DELTA_SPARK_VERSION}", "-e", str(REPO)]
    ready = BENCH_HOME / "ready"
    spec = " ".join(requirements)
    if rebuild or not ready.exists() or ready.read_text() != spec:
        print(f"== making the bench venv {venv} ({spec})", flush=True)
        BENCH_HOME.mkdir(parents=True, exist_ok=True)
        if not (venv / "bin" / "python").exists():
            subprocess.run([sys.executable if sys.prefix == sys.base_prefix else "python3", "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, "--upgrade", "pip"], check=True)
        subprocess.run([*pip, *requirements], check=True)
        ready.write_text(spec)
    return str(venv / "bin" / "python")


def delta_spark_jars() -> str:
    done = subprocess.run([str(REPO / "scripts" / "setup_deltaspark.sh")], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"scripts/setup_deltaspark.sh failed:\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1]


def child_env(python: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "SPARK_HOME", "PYSPARK_PYTHON", "VIRTUAL_ENV"}}
    env["PYSPARK_PYTHON"] = python
    env["PATH"] = f"{Path(python).parent}:{env.get('PATH', '')}"
    return env


# =========================================================================== inputs (driver + prepare process)


def inputs_params(sizes: Sizes) -> dict[str, Any]:
    return {"version": INPUTS_VERSION, "pyspark": PYSPARK_VERSION, **asdict(sizes)}


def meta_table(inputs: Path, sizes: Sizes) -> dict[str, Any]:
    """The log-only 100k-file table (bench_kernel.py's builder), with an empty placeholder per file."""
    sys.path.insert(0, str(HERE))
    from bench_kernel import TableSpec, build_table  # needs deltalake: the driver runs in the main venv

    from sparkdelta.kernel import Table

    spec = TableSpec(sizes.meta_commits, sizes.meta_files_per_commit, 20)
    path = inputs / f"meta-{sizes.meta_commits}x{sizes.meta_files_per_commit}"
    marker = path.with_name(path.name + ".placeholders")
    started = time.perf_counter()
    report = build_table(path, spec, rebuild=False)
    if not report.reused:
        marker.unlink(missing_ok=True)
    snapshot = Table(str(path)).snapshot()
    paths = snapshot.file_paths()
    partition = [
        p
        for p, values in zip(paths, snapshot.files.column("partitionValues").to_pylist(), strict=True)
        if dict(values or {}).get("event_date") == META_PARTITION
    ]
    if not marker.exists():
        for relative in paths:
            target = path / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()
        marker.write_text(str(len(paths)))
    print(
        f"  100k-file table: {path} ({len(paths):,} files, version {snapshot.version}; "
        f"{'reused' if report.reused else 'built'} in {time.perf_counter() - started:.1f} s)",
        flush=True,
    )
    return {
        "path": str(path),
        "files": len(paths),
        "commits": snapshot.version + 1,
        "partition_files": len(partition),
        "size": snapshot.size_in_bytes,
    }


def prepare_inputs(python: str, inputs: Path, sizes: Sizes, master: str, memory: str) -> dict[str, Any]:
    """Generate the Parquet and CSV inputs once (a bench-venv Spark process); reuse them while their parameters hold."""
    params = inputs_params(sizes)
    ready = inputs / "data.ready.json"
    if ready.exists():
        saved = json.loads(ready.read_text())
        if saved.get("params") == params:
            print(f"  data inputs: reused ({inputs})", flush=True)
            return saved["facts"]
    shutil.rmtree(inputs / "data", ignore_errors=True)
    (inputs / "data").mkdir(parents=True, exist_ok=True)
    config = {"inputs": str(inputs / "data"), "sizes": asdict(sizes), "master": master, "memory": memory}
    config_file = inputs / "prepare.json"
    config_file.write_text(json.dumps(config))
    started = time.perf_counter()
    done = subprocess.run(
        [python, str(Path(__file__).resolve()), "--prepare", str(config_file)],
        env=child_env(python),
        cwd=inputs,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"FAIL: preparing the inputs failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
    facts = json.loads((inputs / "data" / "facts.json").read_text())
    ready.write_text(json.dumps({"params": params, "facts": facts}))
    print(f"  data inputs: generated in {time.perf_counter() - started:.1f} s ({inputs / 'data'})", flush=True)
    return facts


def with_columns(ids: Any, seed: int = 0, layout: bool = False) -> Any:
    """The columns of the inputs for an ``id`` column, hashed from the id (``seed`` varies them)."""
    from pyspark.sql import functions as F

    def h(offset: int, modulus: int) -> Any:
        return F.pmod(F.xxhash64(F.col("id"), F.lit(seed + offset)), F.lit(modulus))

    x, y = h(2, DOMAIN).cast("int").alias("x"), h(3, DOMAIN).cast("int").alias("y")
    amount = (h(4, 100_000_000) / 100.0).alias("amount")
    if layout:
        return ids.select("id", x, y, amount)
    return ids.select(
        "id",
        h(1, 1_000_000).cast("int").alias("k"),
        x,
        y,
        amount,
        F.concat(F.lit("customer_"), F.lpad(h(5, 1_000_000).cast("string"), 7, "0")).alias("s"),
        F.element_at(F.array(*[F.lit(c) for c in CATEGORIES]), (h(6, len(CATEGORIES)) + 1).cast("int")).alias("cat"),
        F.timestamp_seconds(F.lit(BASE_EPOCH) + F.col("id")).alias("ts"),
    )


def generated_rows(spark: Any, start: int, count: int, partitions: int, layout: bool = False) -> Any:
    """Rows with ids [start, start + count) in ``partitions`` contiguous ranges (one file each when written)."""
    return with_columns(spark.range(start, start + count, 1, numPartitions=partitions), layout=layout)


def prepare_main(config_file: str) -> int:
    """``--prepare``: write the inputs with a plain Spark session of the bench venv."""
    from functools import reduce

    from pyspark.sql import DataFrame, SparkSession

    import sparkdelta
    from sparkdelta.lakehouse.generator import FeedSpec, generate

    config = json.loads(Path(config_file).read_text())
    sizes = Sizes(**config["sizes"])
    out = Path(config["inputs"])
    builder = (
        SparkSession.builder.master(config["master"])
        .appName("bench-vs-deltaspark-prepare")
        .config("spark.driver.memory", config["memory"])
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.catalogImplementation", "in-memory")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    )
    spark = sparkdelta.configure(builder).getOrCreate()  # the lakehouse generator names files through sparkdelta's paths
    spark.sparkContext.setLogLevel("ERROR")
    generated_rows(spark, 0, sizes.rows, sizes.files).write.parquet(str(out / "base"))
    generated_rows(spark, sizes.rows, sizes.append_rows, sizes.append_files).write.parquet(str(out / "append"))
    # MERGE source: 10% updates with keys in sizes.update_files (a fixed stride through each), 90% new keys.
    updates = sizes.source_rows // 10
    chosen = sizes.update_files
    parts = []
    for i, f in enumerate(chosen):
        n = updates // len(chosen) + (1 if i < updates % len(chosen) else 0)
        stride = max(1, sizes.file_rows // max(1, n))
        low = f * sizes.file_rows
        parts.append(spark.range(n).selectExpr(f"{low} + id * {stride} AS id"))
    first_new = sizes.rows + sizes.append_rows
    parts.append(spark.range(first_new, first_new + sizes.source_rows - updates).selectExpr("id"))
    keys = reduce(DataFrame.unionByName, parts).repartition(1)
    with_columns(keys, seed=100).write.parquet(str(out / "source"))
    generated_rows(spark, 0, sizes.small_rows, sizes.small_files).write.parquet(str(out / "small"))
    generated_rows(spark, 0, sizes.layout_rows, sizes.layout_files, layout=True).write.parquet(str(out / "layout"))
    generated_rows(spark, 0, 20_000, 4).write.parquet(str(out / "warmup"))
    landing = generate(spark, FeedSpec(rows_per_day=sizes.lake_rows_per_day), str(out / "landing"), range(sizes.lake_days))
    warm_landing = generate(spark, FeedSpec(rows_per_day=2_000), str(out / "warmup_landing"), range(2))

    def parquet_files(name: str) -> list[Path]:
        return sorted((out / name).glob("*.parquet"))

    facts = {
        name: {
            "files": len(parquet_files(name)),
            "bytes": sum(p.stat().st_size for p in parquet_files(name)),
            "rows": spark.read.parquet(str(out / name)).count(),
        }
        for name in ("base", "append", "source", "small", "layout", "warmup")
    }
    facts["landing"] = {
        "files": len(landing),
        "warmup_files": len(warm_landing),
        "lines": spark.read.text(str(out / "landing")).count() - len(landing),
    }
    (out / "facts.json").write_text(json.dumps(facts))
    spark.stop()
    return 0


# =========================================================================== the measured process (worker)


class Worker:
    """One side's process: its session, its DeltaTable, the timed operations and their outcomes."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.side = config["side"]
        self.sizes = Sizes(**config["sizes"])
        self.data = Path(config["inputs"]) / "data"
        self.root = Path(config["workdir"])
        self.profile = config.get("profile", False)
        self.times: dict[str, float] = {}
        self.outcomes: dict[str, Any] = {}
        self.jobs: dict[str, dict[str, float]] = {}
        self.profiles: dict[str, str] = {}
        self.info: dict[str, Any] = {}
        started = time.perf_counter()
        self.spark = self._session()
        self.info["session_start"] = time.perf_counter() - started
        self.sc = self.spark.sparkContext
        if self.side == OURS:
            from sparkdelta.tables import DeltaTable
        else:
            from delta.tables import DeltaTable
        self.DeltaTable = DeltaTable
        jvm = self.sc._jvm
        self.info["spark"] = self.spark.version
        self.info["java"] = f"{jvm.System.getProperty('java.vm.name')} {jvm.System.getProperty('java.version')}"
        self.info["python"] = sys.version.split()[0]

    # ------------------------------------------------------------------ session

    def _session(self) -> Any:
        from pyspark.sql import SparkSession

        c = self.config
        builder = (
            SparkSession.builder.master(c["master"])
            .appName(f"bench-vs-deltaspark-{self.side}")
            .config("spark.driver.memory", c["memory"])
            .config("spark.sql.shuffle.partitions", str(c["shuffle_partitions"]))
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.catalogImplementation", "in-memory")
            .config("spark.sql.warehouse.dir", str(self.root / "spark-warehouse"))
            .config("spark.databricks.delta.retentionDurationCheck.enabled", "false")
            # delta-spark's VACUUM lists the table in this many tasks (Spark's default 10,000): on 2 cores
            # each costs code generation, and a VACUUM of a tiny table took minutes. sparkdelta never uses it.
            .config("spark.sql.sources.parallelPartitionDiscovery.parallelism", str(c["listing_parallelism"]))
        )
        if self.side == OURS:
            import sparkdelta

            builder = sparkdelta.configure(builder)
        else:
            builder = (
                builder.config("spark.jars", c["jars"])
                .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
                .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
            )
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        return spark

    # ------------------------------------------------------------------ helpers

    def clear_caches(self) -> None:
        """Each side's snapshot cache, so the metadata lines load the log cold."""
        if self.side == OURS:
            from sparkdelta.kernel.snapshot import clear_log_cache

            clear_log_cache()
        else:
            self.sc._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()

    def timed(self, key: str, work: Callable[[], Any], record: bool = True) -> Any:
        """Run ``work`` as Spark job group ``key``; its wall time, its jobs, (with profile) its cProfile."""
        import gc

        gc.collect()
        group = f"bench-{key}-{time.monotonic_ns()}"
        self.sc.setJobGroup(group, key)
        profiler = cProfile.Profile() if self.profile and record else None
        try:
            started = time.perf_counter()
            if profiler:
                profiler.enable()
            result = work()
            if profiler:
                profiler.disable()
            seconds = time.perf_counter() - started
        finally:
            self.sc.setLocalProperty("spark.jobGroup.id", None)
            self.sc.setLocalProperty("spark.job.description", None)
        if record:
            self.times[key] = seconds
            self.jobs[key] = self.job_stats(group)
            if profiler:
                out = io.StringIO()
                stats = pstats.Stats(profiler, stream=out)
                stats.sort_stats("cumulative").print_stats(30)
                stats.sort_stats("tottime").print_stats(20)
                self.profiles[key] = out.getvalue()
        return result

    def job_stats(self, group: str) -> dict[str, float]:
        """Jobs the group ran, and the time at least one of them was running (union of their intervals)."""
        ids = list(self.sc.statusTracker().getJobIdsForGroup(group))
        store = self.sc._jsc.sc().statusStore()
        intervals = []
        for job_id in ids:
            try:
                job = store.job(job_id)
                submitted, completed = job.submissionTime(), job.completionTime()
                if submitted.isDefined() and completed.isDefined():
                    intervals.append((submitted.get().getTime(), completed.get().getTime()))
            except Exception:  # noqa: BLE001 - a job the store no longer keeps
                continue
        busy, end = 0, 0
        for start, stop in sorted(intervals):
            if stop <= end:
                continue
            busy += stop - max(start, end)
            end = stop
        return {"jobs": len(ids), "job_seconds": busy / 1000}

    def checksum(self, df: Any, exclude: tuple[str, ...] = ()) -> list[int]:
        """Row count and an order-independent hash sum of all columns (names sorted)."""
        from pyspark.sql import functions as F

        columns = sorted(c for c in df.columns if c not in exclude)
        row_hash = F.pmod(F.xxhash64(*[F.col(f"`{c}`") for c in columns]), F.lit(CHECKSUM_MODULUS))
        row = df.agg(F.count(F.lit(1)), F.sum(row_hash)).collect()[0]
        return [int(row[0]), int(row[1] or 0)]

    def read(self, path: Path) -> Any:
        return self.spark.read.format("delta").load(str(path))

    @contextlib.contextmanager
    def one_file_per_input(self) -> Iterator[None]:
        """Reads pack no two input files into one task, so a write writes one file per input file
        (each an id range): the same files on both sides, and ranges data skipping can use."""
        key = "spark.sql.files.openCostInBytes"
        self.spark.conf.set(key, str(1 << 40))
        try:
            yield
        finally:
            self.spark.conf.unset(key)

    @contextlib.contextmanager
    def max_file_size(self, size: int) -> Iterator[None]:
        key = "spark.databricks.delta.optimize.maxFileSize"
        self.spark.conf.set(key, str(size))
        try:
            yield
        finally:
            self.spark.conf.unset(key)

    def write_input(self, name: str, target: Path, mode: str = "errorifexists", **options: str) -> None:
        with self.one_file_per_input():
            writer = self.spark.read.parquet(str(self.data / name)).write.format("delta").mode(mode)
            for key, value in options.items():
                writer = writer.option(key, value)
            writer.save(str(target))

    def copy(self, source: Path, target: Path) -> Path:
        shutil.copytree(source, target)
        return target

    def sql(self, text: str) -> Any:
        return self.spark.sql(text)

    def detail(self, path: Path) -> dict[str, Any]:
        row = self.DeltaTable.forPath(self.spark, str(path)).detail().collect()[0]
        return {"numFiles": int(row["numFiles"]), "properties": dict(row["properties"] or {})}

    def last_metrics(self, path: Path) -> dict[str, str]:
        row = self.DeltaTable.forPath(self.spark, str(path)).history(1).collect()[0]
        return {k: str(v) for k, v in (row["operationMetrics"] or {}).items()}

    def data_files(self, path: Path) -> int:
        return sum(1 for p in path.rglob("*.parquet") if "_delta_log" not in p.parts)

    # ------------------------------------------------------------------ operations

    def run(self, keys: set[str]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        self.warm_up()
        self.info["warmup_seconds"] = time.perf_counter() - started
        if keys & set(META_OPS):
            self.metadata(keys)
        if keys - set(META_OPS) - {"lakehouse"}:
            self.tables(keys)
        if "lakehouse" in keys:
            self.lakehouse(warm_up=keys == {"lakehouse"})

    def warm_up(self) -> None:
        """Every operation once on a tiny table, untimed: class loading and code generation go here."""
        w = self.root / "warmup"
        s = self.spark
        t, c = w / "t", w / "c"

        def table() -> Any:
            return self.DeltaTable.forPath(s, str(t))

        def noop(df: Any) -> None:
            df.write.format("noop").mode("overwrite").save()

        self.write_input("warmup", t)
        self.write_input("warmup", t, mode="append")
        noop(self.read(t))
        noop(self.read(t).where("id >= 100 AND id < 200"))
        src = s.read.parquet(str(self.data / "warmup")).where("id % 10 = 0")
        table().alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
        table().delete("id < 100")
        table().update("id < 200", {"amount": "amount + 1"})
        properties = "'delta.enableDeletionVectors' = 'true', 'delta.enableChangeDataFeed' = 'true'"
        self.sql(f"ALTER TABLE delta.`{t}` SET TBLPROPERTIES ({properties})")
        feed_start = int(table().history(1).collect()[0]["version"]) + 1
        table().delete("id < 300")
        noop(s.read.format("delta").option("readChangeFeed", "true").option("startingVersion", feed_start).load(str(t)))
        table().optimize().executeCompaction()
        table().optimize().executeZOrderBy("x", "y")
        table().vacuum(0.0)
        table().history().collect()
        table().detail().collect()
        self.read(t).inputFiles()
        self.sql(f"CREATE TABLE delta.`{c}` (id BIGINT, x INT, y INT, amount DOUBLE) USING delta CLUSTER BY (x, y)")
        s.read.parquet(str(self.data / "warmup")).select("id", "x", "y", "amount").write.format("delta").mode("append").save(
            str(c)
        )
        self.DeltaTable.forPath(s, str(c)).optimize().executeCompaction()
        self.checksum(self.read(t))
        shutil.rmtree(w, ignore_errors=True)

    def metadata(self, keys: set[str]) -> None:
        meta = self.config["meta"]
        path = meta["path"]
        s, DeltaTable = self.spark, self.DeltaTable
        ops: dict[str, Callable[[], Any]] = {
            "history": lambda: [int(r["version"]) for r in DeltaTable.forPath(s, path).history().select("version").collect()],
            "detail": lambda: DeltaTable.forPath(s, path).detail().collect()[0],
            "plan_all": lambda: s.read.format("delta").load(path).inputFiles(),
            "plan_partition": lambda: (
                s.read.format("delta").load(path).where(f"event_date = DATE'{META_PARTITION}'").inputFiles()
            ),
        }
        for key in META_OPS:
            if key not in keys:
                continue
            self.clear_caches()
            result = self.timed(key, ops[key])
            if key == "history":
                self.outcomes[key] = {"commits": len(result), "versions": [min(result), max(result)]}
            elif key == "detail":
                self.outcomes[key] = {"numFiles": int(result["numFiles"]), "sizeInBytes": int(result["sizeInBytes"])}
            else:
                self.outcomes[key] = {
                    "files": len(result),
                    "hash": hashlib.sha1("\n".join(sorted(p.rpartition("/")[2] for p in result)).encode()).hexdigest()[:12],
                }

    def tables(self, keys: set[str]) -> None:
        sz = self.sizes
        s, DeltaTable, root = self.spark, self.DeltaTable, self.root
        t = root / "t"

        # writes and reads
        self.timed("write", lambda: self.write_input("base", t))
        self.outcomes["write"] = {"files": self.detail(t)["numFiles"], "check": self.checksum(self.read(t))}
        self.timed("append", lambda: self.write_input("append", t, mode="append"))
        self.outcomes["append"] = {"files": self.detail(t)["numFiles"], "check": self.checksum(self.read(t))}
        self.timed("full_scan", lambda: self.read(t).write.format("noop").mode("overwrite").save())
        self.outcomes["full_scan"] = {"check": self.checksum(self.read(t))}
        low, high = sz.key_range(0.5)
        predicate = f"id >= {low} AND id < {high}"
        self.timed("selective_scan", lambda: self.read(t).where(predicate).write.format("noop").mode("overwrite").save())
        selective = self.read(t).where(predicate)
        self.outcomes["selective_scan"] = {"check": self.checksum(selective)}
        self.info["selective_scan_input_files"] = len(selective.inputFiles())
        if self.side == OURS:
            from sparkdelta.spark.read.scan import scan_info

            info = scan_info(selective)
            self.info["selective_scan_info"] = [info.files_read, info.files_total] if info else None

        # DML, each on its own copy of the table; deletion vectors on a copy with the property set
        source = lambda: s.read.parquet(str(self.data / "source"))  # noqa: E731
        dv = self.copy(t, root / "base_dv")
        self.sql(f"ALTER TABLE delta.`{dv}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
        delete_low, delete_high = sz.key_range(0.4)
        update_low, update_high = sz.key_range(0.6)
        dml: dict[str, tuple[Path, Callable[[Path], Any]]] = {
            "merge": (
                t,
                lambda p: (
                    DeltaTable.forPath(s, str(p))
                    .alias("t")
                    .merge(source().alias("s"), "t.id = s.id")
                    .whenMatchedUpdateAll()
                    .whenNotMatchedInsertAll()
                    .execute()
                ),
            ),
            "delete": (t, lambda p: DeltaTable.forPath(s, str(p)).delete(f"id >= {delete_low} AND id < {delete_high}")),
            "update": (
                t,
                lambda p: DeltaTable.forPath(s, str(p)).update(
                    f"id >= {update_low} AND id < {update_high}", {"amount": "amount + 1"}
                ),
            ),
        }
        for name, (_, work) in dml.items():
            for mode, base in (("cow", t), ("dv", dv)):
                key = f"{name}_{mode}"
                if key not in keys:
                    continue
                target = self.copy(base, root / key)
                self.timed(key, lambda target=target, work=work: work(target))
                metrics = self.last_metrics(target)
                # Rows must match; files removed and DVs added are shown, not compared (engines may differ there).
                wanted = ("numTargetRowsUpdated", "numTargetRowsInserted", "numDeletedRows", "numUpdatedRows")
                self.outcomes[key] = {
                    "check": self.checksum(self.read(target)),
                    "metrics": {k: v for k, v in metrics.items() if k in wanted},
                }
                self.info[f"{key}_metrics"] = metrics
                shutil.rmtree(target)

        # OPTIMIZE compaction, then VACUUM of the files it replaced
        small = root / "small"
        self.write_input("small", small)
        small_files = self.detail(small)["numFiles"]
        with self.max_file_size(self.config["compact_target"]):
            self.timed("compaction", lambda: DeltaTable.forPath(s, str(small)).optimize().executeCompaction().collect())
        after = self.detail(small)["numFiles"]
        self.outcomes["compaction"] = {"files_before": small_files, "check": self.checksum(self.read(small))}
        self.info["compaction_files"] = [small_files, after]
        before = self.data_files(small)
        self.timed("vacuum", lambda: DeltaTable.forPath(s, str(small)).vacuum(0.0).collect())
        left = self.data_files(small)
        self.outcomes["vacuum"] = {
            "deleted": before - left,
            "left_are_active": left == after,
            "check": self.checksum(self.read(small)),
        }

        # Z-order and liquid clustering of the two-column table, same target file size
        layout = root / "layout"
        self.write_input("layout", layout)
        with self.max_file_size(self.config["layout_target"]):
            self.timed("zorder", lambda: DeltaTable.forPath(s, str(layout)).optimize().executeZOrderBy("x", "y").collect())
        self.outcomes["zorder"] = {"check": self.checksum(self.read(layout))}
        clustered = root / "clustered"
        self.sql(f"CREATE TABLE delta.`{clustered}` (id BIGINT, x INT, y INT, amount DOUBLE) USING delta CLUSTER BY (x, y)")
        self.write_input("layout", clustered, mode="append")
        with self.max_file_size(self.config["layout_target"]):
            self.timed("liquid", lambda: DeltaTable.forPath(s, str(clustered)).optimize().executeCompaction().collect())
        self.outcomes["liquid"] = {"check": self.checksum(self.read(clustered))}
        self.info["layout_tables"] = {"zorder": str(layout), "liquid": str(clustered)}

        # change feed: a copy with the feed on, then an update, a delete and an append; read all three
        feed = self.copy(t, root / "feed")
        self.sql(f"ALTER TABLE delta.`{feed}` SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
        start = int(DeltaTable.forPath(s, str(feed)).history(1).collect()[0]["version"]) + 1
        low, high = sz.key_range(0.2)
        DeltaTable.forPath(s, str(feed)).update(f"id >= {low} AND id < {high}", {"amount": "amount + 1"})
        low, high = sz.key_range(0.3)
        DeltaTable.forPath(s, str(feed)).delete(f"id >= {low} AND id < {high}")
        source().write.format("delta").mode("append").save(str(feed))

        def changes() -> Any:
            return s.read.format("delta").option("readChangeFeed", "true").option("startingVersion", start).load(str(feed))

        self.timed("cdf_read", lambda: changes().write.format("noop").mode("overwrite").save())
        by_type = {r["_change_type"]: int(r["count"]) for r in changes().groupBy("_change_type").count().collect()}
        self.outcomes["cdf_read"] = {
            "by_type": by_type,
            "check": self.checksum(changes(), exclude=("_commit_version", "_commit_timestamp")),
        }

    def lakehouse(self, warm_up: bool) -> None:
        """One pipeline run over the landing files: ours as it is, delta-spark's through ``swap_lakehouse``.

        After the other operations every primitive it uses (writes, MERGE, change feed, OPTIMIZE,
        VACUUM) has run in this process; alone (``--only lakehouse``) it first runs on two tiny days.
        """
        if self.side == THEIRS:
            swap_lakehouse(self.spark)
        from sparkdelta.lakehouse import FeedSpec, PipelineConfig, Warehouse, run

        runs = [("lake", "landing", FeedSpec(rows_per_day=self.sizes.lake_rows_per_day))]
        if warm_up:
            runs.insert(0, ("warmup_lake", "warmup_landing", FeedSpec(rows_per_day=2_000)))
        for name, landing, spec in runs:
            warehouse = Warehouse(self.root / name)
            shutil.copytree(self.data / landing, Path(str(warehouse.landing)))
            config = PipelineConfig(warehouse.root, spec, days=self.sizes.lake_days)
            summary = self.timed("lakehouse", lambda config=config: run(self.spark, config), record=name == "lake")
        seconds = {stage: summary.seconds.get(stage, 0.0) for stage in LAKE_STAGES}
        self.times["lakehouse"] = sum(seconds.values())  # the stages' own clocks, as bench_pipeline.py counts them
        self.info["lakehouse_stages"] = seconds
        counts = {}
        for table, location in warehouse.tables().items():
            df = self.spark.read.format("delta").load(str(location))
            counts[table] = self.checksum(df, exclude=("_ingested_at",)) if table != "bronze.trips" else [df.count()]
        self.outcomes["lakehouse"] = {
            "bronze_rows": summary.bronze.rows,
            "silver": [summary.silver.inserted, summary.silver.updated, summary.silver.duplicates, summary.silver.superseded],
            "gold_change_rows": summary.gold.change_rows,
            "tables": counts,
        }
        maintenance = [(m.table, m.optimize, m.files_removed, m.files_added, m.vacuumed) for m in summary.maintenance]
        self.info["lakehouse_maintenance"] = maintenance
        if self.side == THEIRS:
            from pyspark.sql import DataFrameReader

            assert not getattr(DataFrameReader, "_sparkdelta_installed", False), "sparkdelta's hooks ran in delta-spark's process"

    def result(self) -> dict[str, Any]:
        return {
            "side": self.side,
            "times": self.times,
            "jobs": self.jobs,
            "outcomes": self.outcomes,
            "info": self.info,
            "profiles": self.profiles,
        }


class _DeltaSparkMaintenanceTable:
    """delta-spark's ``DeltaTable`` as lakehouse/maintenance.py uses it. maintenance.py calls
    ``vacuum(dryRun=True)``, a sparkdelta extension: delta-spark's Python ``vacuum`` has no
    ``dryRun``; its SQL ``VACUUM ... DRY RUN`` answers the same question."""

    def __init__(self, spark: Any, path: str) -> None:
        from delta.tables import DeltaTable

        self._spark, self._path, self._table = spark, path, DeltaTable.forPath(spark, path)

    @classmethod
    def forPath(cls, spark: Any, path: str) -> _DeltaSparkMaintenanceTable:  # noqa: N802 - delta-spark's name
        return cls(spark, path)

    def optimize(self) -> Any:
        return self._table.optimize()

    def vacuum(self, retentionHours: float | None = None, dryRun: bool = False) -> Any:  # noqa: N803
        if not dryRun:
            return self._table.vacuum(retentionHours)
        retain = f" RETAIN {retentionHours} HOURS" if retentionHours is not None else ""
        return self._spark.sql(f"VACUUM delta.`{self._path}`{retain} DRY RUN")


def swap_lakehouse(spark: Any) -> None:
    """The lakehouse on delta-spark: its three modules that name sparkdelta's ``DeltaTable``
    get delta-spark's instead. Its reads and writes are ``format("delta")``, which a
    delta-spark session serves; its progress markers read the log with sparkdelta's
    kernel (markers.py, warehouse.py, maintenance.py), which only reads."""
    from delta.tables import DeltaTable

    from sparkdelta.lakehouse import gold, maintenance, silver

    silver.DeltaTable = DeltaTable  # type: ignore[attr-defined]
    gold.DeltaTable = DeltaTable  # type: ignore[attr-defined]
    maintenance.DeltaTable = _DeltaSparkMaintenanceTable  # type: ignore[attr-defined,assignment]


def worker_main(config_file: str, out_file: str) -> int:
    config = json.loads(Path(config_file).read_text())
    worker = Worker(config)
    try:
        worker.run(set(config["keys"]))
    finally:
        Path(out_file).write_text(json.dumps(worker.result(), default=str))
        worker.spark.stop()
    return 0


# =========================================================================== layout from the log (driver)


def log_file_stats(table: Path, columns: tuple[str, ...]) -> list[dict[str, tuple[Any, Any] | None]]:
    """Per active file of the latest version, (min, max) of ``columns`` from its stats (None when missing).

    Read straight from the log, the same way for every table: the checkpoint named by
    ``_last_checkpoint`` if any (classic, one or more Parquet parts), then the JSON commits
    after it, adds and removes applied in order.
    """
    import pyarrow.parquet as pq

    log = table / "_delta_log"
    active: dict[str, str | None] = {}
    start = -1
    last = log / "_last_checkpoint"
    if last.exists():
        checkpoint = json.loads(last.read_text())
        start = int(checkpoint["version"])
        parts = sorted(log.glob(f"{start:020d}.checkpoint*.parquet"))
        if not parts:
            raise SystemExit(f"FAIL: {table}: _last_checkpoint names version {start}, whose checkpoint is missing")
        for part in parts:
            for add in pq.read_table(part, columns=["add"]).column("add").to_pylist():
                if add:
                    active[add["path"]] = add.get("stats")
    commits = sorted(p for p in log.glob("*.json") if p.stem.isdigit() and int(p.stem) > start)
    for commit in commits:
        for text in commit.read_text().splitlines():
            action = json.loads(text)
            if "add" in action:
                active[action["add"]["path"]] = action["add"].get("stats")
            elif "remove" in action:
                active.pop(action["remove"]["path"], None)
    out = []
    for stats in active.values():
        parsed = json.loads(stats) if stats else {}
        low, high = parsed.get("minValues", {}), parsed.get("maxValues", {})
        out.append({c: (low[c], high[c]) if c in low and c in high else None for c in columns})
    return out


def layout_shares(table: Path) -> dict[str, Any]:
    """Files of ``table`` and the mean share a 1% range on x (on y) must read, by the log's min/max."""
    files = log_file_stats(table, ("x", "y"))
    width = DOMAIN * WINDOW
    shares = {}
    for column in ("x", "y"):
        total = 0.0
        for i in range(WINDOWS):
            low = (DOMAIN - width) * i / (WINDOWS - 1)
            high = low + width
            total += sum(1 for f in files if f[column] is None or (f[column][0] < high and f[column][1] >= low)) / len(files)
        shares[column] = total / WINDOWS
    return {"files": len(files), **shares}


# =========================================================================== driver


def read_through(folder: Path) -> None:
    """Read every file under ``folder`` once: the OS page cache then holds them for whichever side runs next."""
    for path in folder.rglob("*"):
        if path.is_file():
            with open(path, "rb") as f:
                while f.read(1 << 24):
                    pass


def run_worker(python: str, side: str, config: dict[str, Any], run_dir: Path, label: str) -> dict[str, Any]:
    run_dir.mkdir(parents=True, exist_ok=True)
    if config.get("meta"):
        read_through(Path(config["meta"]["path"]) / "_delta_log")
    config_file, out_file, log_file = run_dir / "config.json", run_dir / "result.json", run_dir / "worker.log"
    config = {**config, "side": side, "workdir": str(run_dir / "tables")}
    config_file.write_text(json.dumps(config))
    started = time.perf_counter()
    print(f"  {label}: {side} ...", end="", flush=True)
    with open(log_file, "wb") as log:
        # Its own session (process group): an interrupted driver takes the worker and its JVM down with it.
        worker = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--worker", str(config_file), str(out_file)],
            env=child_env(python),
            cwd=run_dir,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            returncode = worker.wait()
        except BaseException:
            os.killpg(worker.pid, 9)
            raise
    elapsed = time.perf_counter() - started
    if returncode != 0 or not out_file.exists():
        tail = log_file.read_text(errors="replace")[-6000:]
        raise SystemExit(f"\nFAIL: the {side} process exited with {returncode}; its log ({log_file}):\n{tail}")
    result = json.loads(out_file.read_text())
    if len(result["times"]) < len(config["keys"]):
        missing = sorted(set(config["keys"]) - set(result["times"]))
        tail = log_file.read_text(errors="replace")[-6000:]
        raise SystemExit(f"\nFAIL: the {side} process measured nothing for {missing}; its log ({log_file}):\n{tail}")
    layout = result["info"].get("layout_tables")
    if layout:
        result["layout"] = {name: layout_shares(Path(path)) for name, path in layout.items()}
    print(
        f" {elapsed:.0f} s (session start {result['info']['session_start']:.1f} s, "
        f"warm-up {result['info'].get('warmup_seconds', 0):.0f} s; load {os.getloadavg()[0]:.2f})",
        flush=True,
    )
    return result


def compare_outcomes(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Every outcome must be the same on both sides in every round."""
    problems = []
    reference = results[THEIRS][0]["outcomes"]
    for side in SIDES:
        for i, result in enumerate(results[side]):
            for key, expected in reference.items():
                got = result["outcomes"].get(key)
                if got != expected:
                    problems.append(f"{LINE[key].label}: {side} round {i + 1} gives {got}, delta-spark round 1 {expected}")
    return problems


def _file_metrics(metrics: dict[str, str]) -> str:
    """Files removed / added and DVs added, from a DML commit's operationMetrics."""

    def get(*names: str) -> str:
        return next((metrics[n] for n in names if n in metrics), "?")

    return (
        f"-{get('numTargetFilesRemoved', 'numRemovedFiles')} +{get('numTargetFilesAdded', 'numAddedFiles')} files, "
        f"+{get('numTargetDeletionVectorsAdded', 'numDeletionVectorsAdded')} DVs"
    )


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def fmt_seconds(value: float) -> str:
    if math.isnan(value):
        return "-"
    return f"{value:.3f} s" if value < 10 else f"{value:.1f} s"


def report(
    results: dict[str, list[dict[str, Any]]], keys: list[str], sizes: Sizes, meta: dict[str, Any], facts: dict[str, Any]
) -> tuple[list[tuple[str, bool]], list[str]]:
    """Print the result table; the verdicts and the FAIL line keys."""
    rounds = len(results[OURS])
    print(f"\n## sparkdelta vs delta-spark, medians of {rounds} process(es) per side\n")
    print("| group | operation | sparkdelta | delta-spark | ratio | verdict | jobs (ours / theirs) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    verdicts: list[tuple[str, bool]] = []
    failed: list[str] = []
    for line in LINES:
        if line.key not in keys:
            continue
        ours = median([r["times"][line.key] for r in results[OURS]])
        theirs = median([r["times"][line.key] for r in results[THEIRS]])
        ratio = ours / theirs if theirs else float("inf")
        ok = ratio <= RATIO_TARGET
        verdicts.append((line.label, ok))
        if not ok:
            failed.append(line.key)
        jobs = "/".join(str(int(median([r["jobs"].get(line.key, {}).get("jobs", 0) for r in results[s]]))) for s in SIDES)
        print(
            f"| {line.group} | {line.label} | {fmt_seconds(ours)} | {fmt_seconds(theirs)} | {ratio:.2f} "
            f"| {'PASS' if ok else 'FAIL'} | {jobs} |"
        )
    starts = [median([r["info"]["session_start"] for r in results[s]]) for s in SIDES]
    print(
        f"| (info) | session start | {fmt_seconds(starts[0])} | {fmt_seconds(starts[1])} | {starts[0] / starts[1]:.2f} | - | - |"
    )

    if any("layout" in r for r in results[OURS]):
        print("\n## Layout: share of files a 1% range on one column reads (log min/max; mean of 50 windows)\n")
        print("| layout | files | x | y | ideal 1/sqrt(files) | verdict (ours <= delta-spark's) |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name, label in (("zorder", "ZORDER BY (x, y)"), ("liquid", "CLUSTER BY (x, y) + OPTIMIZE")):
            values = {}
            for side in SIDES:
                layouts = [r["layout"][name] for r in results[side]]
                values[side] = {k: median([lay[k] for lay in layouts]) for k in ("files", "x", "y")}
                v = values[side]
                print(
                    f"| {side} {label} | {v['files']:.0f} | {100 * v['x']:.1f}% | {100 * v['y']:.1f}% "
                    f"| {100 / math.sqrt(v['files']):.1f}% | {'' if side == THEIRS else '(below)'} |"
                )
            for column in ("x", "y"):
                ours, theirs = values[OURS][column], values[THEIRS][column]
                ok = ours <= theirs + 1e-9
                verdicts.append(
                    (f"layout after {label}: 1% range on {column} reads {100 * ours:.1f}% vs {100 * theirs:.1f}%", ok)
                )
                print(f"|  ^ {label}, {column}: ours/delta-spark | | {ours / theirs:.2f} | | | {'PASS' if ok else 'FAIL'} |")

    if "lakehouse" in keys:
        print("\n## Lakehouse stages (medians)\n")
        print("| stage | sparkdelta | delta-spark | ratio |")
        print("| --- | --- | --- | --- |")
        for stage in LAKE_STAGES:
            o, t = (median([r["info"]["lakehouse_stages"][stage] for r in results[s]]) for s in SIDES)
            print(f"| {stage} | {fmt_seconds(o)} | {fmt_seconds(t)} | {o / t if t else float('inf'):.2f} |")
    return verdicts, failed


def print_details(results: dict[str, list[dict[str, Any]]], keys: list[str]) -> None:
    print("\n## Per-round times (s) and time inside Spark jobs (median)\n")
    print("| operation | " + " | ".join(f"{s} rounds" for s in SIDES) + " | in jobs (ours / theirs) |")
    print("| --- | --- | --- | --- |")
    for line in LINES:
        if line.key not in keys:
            continue
        cells = [", ".join(f"{r['times'][line.key]:.2f}" for r in results[s]) for s in SIDES]
        in_jobs = " / ".join(
            f"{median([r['jobs'].get(line.key, {}).get('job_seconds', 0) for r in results[s]]):.2f}" for s in SIDES
        )
        print(f"| {line.label} | {cells[0]} | {cells[1]} | {in_jobs} |")


def print_profiles(profile: dict[str, Any], failed: list[str]) -> None:
    for key in failed:
        text = profile["profiles"].get(key)
        if not text:
            continue
        jobs = profile["jobs"].get(key, {})
        wall = profile["times"][key]
        print(
            f"\n--- profile of sparkdelta, {LINE[key].label}: {wall:.2f} s under cProfile, {jobs.get('jobs', 0)} Spark jobs "
            f"busy {jobs.get('job_seconds', 0):.2f} s"
        )
        print("\n".join(line for line in text.splitlines() if line.strip())[:6000])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes and 1 round: a smoke run of a few minutes")
    parser.add_argument("--repeats", type=int, help="processes per side, alternating (default 3; 1 with --quick)")
    parser.add_argument("--only", help="comma-separated operation keys to run (default all): " + ",".join(LINE))
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path("/tmp/sparkdelta-bench/vs_deltaspark"),
        help="inputs (kept and reused) and each process's tables (default /tmp/sparkdelta-bench/vs_deltaspark)",
    )
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument(
        "--shuffle-partitions", type=int, default=8, help="spark.sql.shuffle.partitions on both sides (default 8)"
    )
    parser.add_argument(
        "--listing-parallelism",
        type=int,
        default=8,
        help="spark.sql.sources.parallelPartitionDiscovery.parallelism on both sides: delta-spark's VACUUM lists in "
        "this many tasks (default 8; Spark's own default, 10000, makes a VACUUM on 2 cores take minutes)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="one more sparkdelta process under cProfile; profiles of FAIL lines"
    )
    parser.add_argument("--keep", action="store_true", help="keep the last round's tables")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a line FAILs")
    parser.add_argument("--rebuild-venv", action="store_true", help="reinstall the bench venv")
    parser.add_argument("--prepare", help=argparse.SUPPRESS)
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.prepare:
        return prepare_main(args.prepare)
    if args.worker:
        return worker_main(*args.worker)

    started = time.perf_counter()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # through run_worker's cleanup of the running worker
    sys.path.insert(0, str(HERE))
    from machine import git_revision, load_average, machine_info

    sizes = QUICK if args.quick else DEFAULT
    repeats = args.repeats or (1 if args.quick else 3)
    keys = [k.strip() for k in args.only.split(",")] if args.only else list(LINE)
    unknown = set(keys) - set(LINE)
    if unknown:
        raise SystemExit(f"unknown operations: {sorted(unknown)}; known: {', '.join(LINE)}")
    workdir = args.workdir.resolve()
    inputs = workdir / ("inputs-quick" if args.quick else "inputs")
    runs = workdir / "runs"
    shutil.rmtree(runs, ignore_errors=True)

    print("# sparkdelta vs delta-spark on PySpark 4.2.0\n")
    for key, value in machine_info():
        print(f"{key:<11} {value}")
    print(f"{'sparkdelta':<11} git {git_revision()}")
    print(
        f"{'params':<11} {'quick' if args.quick else 'default'} sizes {asdict(sizes)}; {repeats} round(s); "
        f"master {args.master}, driver memory {args.driver_memory}, shuffle partitions {args.shuffle_partitions}, "
        f"listing parallelism {args.listing_parallelism}\n",
        flush=True,
    )

    print("setup:", flush=True)
    python = bench_python(args.rebuild_venv)
    jars = delta_spark_jars()
    print(f"  bench venv: {python}\n  delta-spark jars: {jars}", flush=True)
    inputs.mkdir(parents=True, exist_ok=True)
    facts = prepare_inputs(python, inputs, sizes, args.master, args.driver_memory)
    meta = meta_table(inputs, sizes) if set(keys) & set(META_OPS) else {}
    config = {
        "inputs": str(inputs),
        "sizes": asdict(sizes),
        "keys": keys,
        "master": args.master,
        "memory": args.driver_memory,
        "shuffle_partitions": args.shuffle_partitions,
        "listing_parallelism": args.listing_parallelism,
        "jars": jars,
        "meta": meta,
        "compact_target": max(1, facts["small"]["bytes"] // 4),
        "layout_target": max(1, facts["layout"]["bytes"] // sizes.layout_files),
    }
    print(
        f"  compaction target {config['compact_target']:,} bytes (input / 4), layout target "
        f"{config['layout_target']:,} bytes (input / {sizes.layout_files})\n",
        flush=True,
    )

    results: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
    loads = [os.getloadavg()[0]]
    print("runs:", flush=True)
    for i in range(repeats):
        order = SIDES if i % 2 == 0 else SIDES[::-1]
        for side in order:
            run_dir = runs / f"{i + 1}-{side}"
            results[side].append(run_worker(python, side, config, run_dir, f"round {i + 1}/{repeats}"))
            loads.append(os.getloadavg()[0])
            if not (args.keep and i == repeats - 1):
                shutil.rmtree(run_dir / "tables", ignore_errors=True)

    problems = compare_outcomes(results)
    print("\n## Checks\n")
    for problem in problems:
        print(f"FAIL: {problem}")
    if not problems:
        print(
            "  every outcome (row counts, checksums of all columns, files, DML metrics, change types, lakehouse "
            "tables) is the same on both sides in every round"
        )
    ours_info = results[OURS][-1]["info"]
    print(f"  Spark {ours_info['spark']}, {ours_info['java']}, Python {ours_info['python']} (both sides)")
    if ours_info.get("selective_scan_info"):
        read, total = ours_info["selective_scan_info"]
        theirs_files = results[THEIRS][-1]["info"].get("selective_scan_input_files")
        print(
            f"  1% id-range scan: sparkdelta reads {read} of {total} files (scan_info); inputFiles() of the filtered "
            f"DataFrame: {ours_info.get('selective_scan_input_files')} (sparkdelta), {theirs_files} (delta-spark)"
        )
    for side in SIDES:
        info = results[side][-1]["info"]
        if "compaction_files" in info:
            files = ", ".join(f"{key[:-8]} {_file_metrics(info[key])}" for key in sorted(info) if key.endswith("_metrics"))
            print(f"  {side}: compaction {info['compaction_files'][0]} -> {info['compaction_files'][1]} files; {files}")
    if meta:
        print(
            f"  100k-file table: {meta['files']:,} files, {meta['commits']:,} commits, one partition {meta['partition_files']:,} files"
        )

    verdicts, failed = report(results, keys, sizes, meta, facts)
    print_details(results, keys)
    print("\nverdicts:")
    for label, ok in verdicts:
        print(f"  {'PASS' if ok else 'FAIL'}  {label}")
    for side in SIDES:
        extra = results[side][-1]["info"]
        if "lakehouse_maintenance" in extra:
            print(f"  lakehouse maintenance ({side}): {extra['lakehouse_maintenance']}")

    if args.profile and failed:
        print("\n## Profiles of the FAIL lines (one more sparkdelta process, under cProfile)\n", flush=True)
        profiled = run_worker(python, OURS, {**config, "keys": failed, "profile": True}, runs / "profile", "profile")
        shutil.rmtree(runs / "profile" / "tables", ignore_errors=True)
        print_profiles(profiled, failed)

    loads.append(os.getloadavg()[0])
    print(f"\nload avg during the runs: min {min(loads):.2f}, max {max(loads):.2f}; at end {load_average()}")
    print(f"total runtime: {time.perf_counter() - started:.0f} s")
    if not args.keep:
        shutil.rmtree(runs, ignore_errors=True)
    if problems:
        return 2
    return 1 if args.strict and not all(ok for _, ok in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
