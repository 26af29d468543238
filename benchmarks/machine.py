"""What every benchmark shares: the machine it ran on, its Spark session, and small helpers."""

from __future__ import annotations

import cProfile
import datetime as dt
import gc
import io
import os
import platform
import pstats
import shutil
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def load_average() -> str:
    """1/5/15-minute load, flagged when other work competes for the CPUs."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    busy = one > 0.5 * (os.cpu_count() or 1)
    return f"{one:.2f} {five:.2f} {fifteen:.2f}" + ("  (machine busy: timings may be noisy)" if busy else "")


def git_revision() -> str:
    try:
        result = subprocess.run(
            ["git", "-C", str(Path(__file__).resolve().parent), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        return result.stdout.strip() or "n/a"
    except (OSError, subprocess.SubprocessError):
        return "n/a"


def _proc_value(path: str, prefix: str) -> str | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine_info() -> list[tuple[str, str]]:
    """Date, host, CPUs, memory, load and Python: the rows every benchmark starts with."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    kib = _proc_value("/proc/meminfo", "MemTotal")
    memory = f"{int(kib.split()[0]) / 1024 / 1024:.1f} GiB" if kib else "unknown"
    return [
        ("date", dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
        ("host", f"{platform.node()} ({platform.platform()})"),
        ("nproc", f"{usable} usable of {os.cpu_count()}"),
        ("cpu", _proc_value("/proc/cpuinfo", "model name") or "unknown"),
        ("memory", memory),
        ("load avg", load_average()),
        ("python", f"{platform.python_implementation()} {platform.python_version()}"),
    ]


def spark_machine_rows(spark: SparkSession) -> list[tuple[str, str]]:
    """``machine_info`` plus the versions and Spark settings a Spark benchmark ran with."""
    import deltalake
    import pyarrow as pa
    import pyspark

    import sparkdelta

    jvm = spark.sparkContext._jvm
    java = f"{jvm.System.getProperty('java.vm.name')} {jvm.System.getProperty('java.version')}"
    conf = spark.sparkContext.getConf()
    return [
        *machine_info(),
        ("pyspark", f"{pyspark.__version__} (Spark {spark.version})"),
        ("pyarrow", pa.__version__),
        ("deltalake", deltalake.__version__),
        ("java", java),
        ("spark", f"master {spark.sparkContext.master}, driver memory {conf.get('spark.driver.memory', '1g (default)')}"),
        ("sparkdelta", f"{getattr(sparkdelta, '__version__', '?')} (git {git_revision()})"),
    ]


def bench_session(
    app: str, master: str, driver_memory: str, in_memory_catalog: bool = True, configs: dict[str, str] | None = None
) -> SparkSession:
    """A quiet sparkdelta session (no UI, no progress bar); tables by path need no metastore.
    ``configs`` are further settings (a connector's classpath, its credentials)."""
    from pyspark.sql import SparkSession

    import sparkdelta

    builder = (
        SparkSession.builder.appName(app)
        .master(master)
        .config("spark.driver.memory", driver_memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if in_memory_catalog:
        builder = builder.config("spark.sql.catalogImplementation", "in-memory")
    for key, value in (configs or {}).items():
        builder = builder.config(key, value)
    spark = sparkdelta.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def quiesce(spark: SparkSession) -> None:
    """Collect garbage on both sides so one run's garbage is not charged to the next."""
    gc.collect()
    spark.sparkContext._jvm.System.gc()


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} GiB"


def remove_run_dirs(workdir: Path, names: Iterable[str]) -> None:
    """Delete what a run writes under ``workdir`` (and nothing else there)."""
    for name in names:
        shutil.rmtree(workdir / name, ignore_errors=True)


def print_profile(work: Callable[[], object], label: str, top: int) -> None:
    """cProfile of one warm run of ``work``, by own time and by cumulative time."""
    work()  # warm-up
    profiler = cProfile.Profile()
    profiler.enable()
    work()
    profiler.disable()
    for sort in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(sort).print_stats(top)
        print(f"\n--- cProfile: {label}, by {sort}")
        print(out.getvalue().split("\n", 4)[-1].rstrip())
