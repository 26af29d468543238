"""sparkdelta on a real Spark cluster: nothing on the executors may depend on driver-local state.

``local[*]`` runs every task inside the driver's JVM, so state only the driver holds
(its environment, its working directory, objects a closure drags along) goes unnoticed.
Here a standalone Master and Worker are started from pyspark's own launcher
(``bin/spark-class``; the pip package has no ``sbin/start-master.sh``), and a Worker
with two cores runs two single-core executors, each a separate JVM with its own Python
workers. ``cluster_job.py`` runs the Delta workload on it in a separate process (this
process already holds the tests' local SparkContext) and the test checks:

- the work really ran on the executors: every task ran on a non-driver executor and both
  executors ran some; Python workers ran in the executors' working directories, with the
  interpreter sparkdelta's session chose (the job gets no ``PYSPARK_PYTHON``);
- the rows of every version written (partitioned, with null and space-holding partition
  values; append; overwrite with ``replaceWhere``), read back at each version and through
  filters, equal a Python model of the writes and delta-rs's reads of the same table. The
  table path is relative to the driver's working directory (executors run in their own),
  and executors run in another time zone than the driver;
- a write that breaks ``replaceWhere`` fails in an executor's task, is reported as
  ``DeltaInvariantViolationException`` and commits nothing;
- filters return the model's rows and prune files by partition value and by stats, as far
  as delta-rs's view of the same files allows;
- a column-mapped reference table reads as its files' data under logical names;
- ``DeltaTable.history()`` lists the three writes.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pyspark
import pytest
from cluster_job import APP_NAME, APPEND, CITIES, EXECUTORS, FIRST_WRITE, REPLACE_WHERE, REPLACEMENT
from deltalake import DeltaTable as DeltaRsTable
from oracles import CONFORMANCE

# Their child JVMs start from an archive of their classes (tests/class_archives.py).
pytestmark = pytest.mark.usefixtures("jvm_class_archive")

SPARK_HOME = Path(pyspark.__file__).parent
JOB = Path(__file__).resolve().parents[1] / "cluster_job.py"
COLUMN_MAPPED = "table-with-columnmapping-mode-name"
START_TIMEOUT = 90.0
JOB_TIMEOUT = 300.0

Row = tuple[int, str | None, float, datetime]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Cluster:
    master_url: str
    web_url: str
    work_dir: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _master_state(web_url: str) -> dict[str, Any] | None:
    """The Master's JSON status page, or None while it is not serving yet."""
    try:
        with urllib.request.urlopen(f"{web_url}/json/", timeout=5) as response:
            return json.load(response)
    except OSError:
        return None


def _wait_for(what: str, ready: Callable[[], bool], processes: list[subprocess.Popen[bytes]], logs: list[Path]) -> None:
    """Poll ``ready`` until it holds; fail with the daemons' logs if one exits or time runs out."""
    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        dead = [p.args for p in processes if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            tails = "\n".join(f"--- {log}\n{log.read_text(errors='replace')[-3000:]}" for log in logs)
            pytest.fail(f"{what}: {'exited: ' + str(dead) if dead else f'not ready after {START_TIMEOUT:.0f}s'}\n{tails}")
        time.sleep(0.5)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """End a daemon and everything in its process group (a Worker's executors and their Python workers).

    SIGTERM first, so the Worker stops its executors; then SIGKILL for whatever remains.
    """
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A standalone Master and one two-core Worker on loopback, each in its own process group."""
    home = tmp_path_factory.mktemp("cluster")
    work_dir = home / "work"
    master_port, master_web, worker_web = _free_port(), _free_port(), _free_port()
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOG_DIR": str(home / "logs"),
        "SPARK_DAEMON_MEMORY": "256m",
        # The Master's REST submission server would take the fixed port 6066.
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    master_url, web_url = f"spark://127.0.0.1:{master_port}", f"http://127.0.0.1:{master_web}"
    commands = {
        "master": [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                   "--port", str(master_port), "--webui-port", str(master_web)],
        "worker": [spark_class, "org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1",
                   "--cores", str(EXECUTORS), "--memory", "2g", "--webui-port", str(worker_web), "--work-dir", str(work_dir)],
    }  # fmt: skip
    processes: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    try:
        for name, command in commands.items():
            log = home / f"{name}.log"
            logs.append(log)
            with log.open("wb") as out:
                processes.append(
                    subprocess.Popen(command, env=env, cwd=home, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
                )
            if name == "master":
                _wait_for("master", lambda: (_master_state(web_url) or {}).get("status") == "ALIVE", processes, logs)
        _wait_for("worker", lambda: (_master_state(web_url) or {}).get("aliveworkers", 0) >= 1, processes, logs)
        yield Cluster(master_url, web_url, work_dir)
    finally:
        for process in reversed(processes):
            _stop(process)


@pytest.fixture(scope="module")
def job(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Run ``cluster_job.py`` on the cluster; its output directory and ``result.json``."""
    out = tmp_path_factory.mktemp("cluster_job")
    # The job must get its Python workers' interpreter from sparkdelta's session alone.
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    column_mapped = CONFORMANCE / "tables" / COLUMN_MAPPED
    command = [sys.executable, str(JOB), cluster.master_url, str(out), *([str(column_mapped)] if column_mapped.exists() else [])]
    try:
        done = subprocess.run(command, cwd=out, env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"cluster job did not finish in {JOB_TIMEOUT:.0f}s\n{exc.stderr}")
    assert done.returncode == 0, f"cluster job failed:\n{done.stderr[-6000:]}"
    return out, json.loads((out / "result.json").read_text())


# ----------------------------------------------------------------------------- the model


def _rows(first: int, end: int, _partitions: int) -> list[Row]:
    return [(i, CITIES[i % len(CITIES)], i / 2, EPOCH + timedelta(hours=i)) for i in range(first, end)]


def _replaced(rows: list[Row]) -> list[Row]:
    assert REPLACE_WHERE == "city = 'New York'", "the model below implements this replaceWhere"
    return [r for r in rows if r[1] != "New York"] + [r for r in _rows(*REPLACEMENT) if r[1] == "New York"]


MODEL: dict[str, list[Row]] = {"v0": _rows(*FIRST_WRITE), "v1": _rows(*FIRST_WRITE) + _rows(*APPEND)}
MODEL["latest"] = _replaced(MODEL["v1"])
MODEL["recent_san_francisco"] = [r for r in MODEL["latest"] if r[1] == "San Francisco" and r[0] >= 1000]
MODEL["no_city"] = [r for r in MODEL["latest"] if r[1] is None]


def _as_rows(table: pa.Table) -> list[Row]:
    """Rows sorted by id (ids are unique, so None cities are never compared)."""
    return sorted(zip(*(table.column(c).to_pylist() for c in ("id", "city", "value", "at")), strict=True))


def _saved(out: Path, name: str) -> pa.Table:
    return pq.read_table(out / f"{name}.parquet")


# ----------------------------------------------------------------------------- the tests


def test_executors_ran_the_work(cluster: Cluster, job: tuple[Path, dict[str, Any]]) -> None:
    _, result = job
    by_id = {e["id"]: e for e in result["executors"]}
    workers = {k: v for k, v in by_id.items() if k != "driver"}
    assert len(workers) == EXECUTORS and all(e["isActive"] for e in workers.values()), result["executors"]
    assert all(e["totalTasks"] > 0 for e in workers.values()), "every executor ran tasks"
    assert by_id["driver"]["totalTasks"] == 0, "no task ran in the driver"
    # Each executor runs in <work dir>/<app id>/<executor id>; Python workers inherit it.
    app_dir = cluster.work_dir / result["app_id"]
    assert {Path(w["cwd"]) for w in result["python_workers"]} <= {app_dir / i for i in workers}
    assert result["driver_pid"] not in {w["pid"] for w in result["python_workers"]}
    assert {w["prefix"] for w in result["python_workers"]} == {sys.prefix}, "executors run the driver's interpreter"
    master = _master_state(cluster.web_url) or {}
    applications = [*master.get("activeapps", []), *master.get("completedapps", [])]
    assert [a["name"] for a in applications if a["id"] == result["app_id"]] == [APP_NAME]


@pytest.mark.parametrize("name", ["v0", "v1", "latest"])
def test_versions_match_model_and_delta_rs(job: tuple[Path, dict[str, Any]], name: str) -> None:
    out, result = job
    version = {"v0": 0, "v1": 1, "latest": 2}[name]
    ours = _as_rows(_saved(out, name))
    assert ours == sorted(MODEL[name])
    assert _as_rows(DeltaRsTable(result["table"], version=version).to_pyarrow_table()) == ours


def _delta_rs_files(table: str, keep: Callable[[str | None, int], bool]) -> int:
    """How many active files delta-rs lists whose (city, max id) ``keep`` accepts."""
    actions = DeltaRsTable(table).get_add_actions(flatten=True)
    cities, max_ids = actions.column("partition.city").to_pylist(), actions.column("max.id").to_pylist()
    return sum(keep(city, max_id) for city, max_id in zip(cities, max_ids, strict=True))


def test_filters_prune_files_and_keep_rows(job: tuple[Path, dict[str, Any]]) -> None:
    out, result = job
    table, scans = result["table"], result["scans"]
    total = _delta_rs_files(table, lambda _city, _max_id: True)
    for name in ("recent_san_francisco", "no_city"):
        assert _as_rows(_saved(out, name)) == sorted(MODEL[name]), name
        assert scans[name]["files_total"] == total, name
    # IS NULL on the partition column reads exactly the null partition.
    assert scans["no_city"]["files_read"] == _delta_rs_files(table, lambda city, _max_id: city is None)
    # Both halves of the conjunction pruned: fewer files than either one alone keeps.
    matching = _delta_rs_files(table, lambda city, max_id: city == "San Francisco" and max_id >= 1000)
    by_partition = _delta_rs_files(table, lambda city, _max_id: city == "San Francisco")
    by_stats = _delta_rs_files(table, lambda _city, max_id: max_id >= 1000)
    assert 0 < matching <= scans["recent_san_francisco"]["files_read"] < min(by_partition, by_stats)


def test_comparisons_prune_null_partitions(job: tuple[Path, dict[str, Any]]) -> None:
    _, result = job
    matching = _delta_rs_files(result["table"], lambda city, max_id: city == "San Francisco" and max_id >= 1000)
    assert result["scans"]["recent_san_francisco"]["files_read"] == matching


def _comparable(value: Any) -> Any:
    """Equal values compare equal: instants as naive UTC, NaN as a marker."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


def test_column_mapped_table_reads_its_files(job: tuple[Path, dict[str, Any]]) -> None:
    """delta-rs reads column-mapped data as nulls, so the oracle reads the files themselves."""
    out, _ = job
    root = CONFORMANCE / "tables" / COLUMN_MAPPED
    if not root.exists():
        pytest.skip(f"conformance tables not found at {CONFORMANCE}")
    table = DeltaRsTable(str(root))
    physical = {f.name: f.metadata["delta.columnMapping.physicalName"] for f in table.schema().fields}
    ours = _saved(out, "column_mapped")
    assert ours.num_rows > 0
    files = [pq.read_table(uri) for uri in table.file_uris()]
    expected = Counter(
        tuple(_comparable(v) for v in row)
        for data in files
        for row in zip(*(data.column(physical[name]).to_pylist() for name in ours.column_names), strict=True)
    )
    assert Counter(tuple(_comparable(v) for v in row) for row in zip(*ours.to_pydict().values(), strict=True)) == expected


def test_constraint_violation_on_an_executor_commits_nothing(job: tuple[Path, dict[str, Any]]) -> None:
    """The replaceWhere check fails inside an executor's task; the driver must still name it."""
    _, result = job
    rejected = result["rejected_write"]
    assert rejected is not None, "rows outside replaceWhere were written"
    assert rejected["error"] == "DeltaInvariantViolationException", rejected
    assert f"does not match replaceWhere '{REPLACE_WHERE}'" in rejected["message"]
    assert DeltaRsTable(result["table"]).version() == 2


def test_history_lists_the_writes(job: tuple[Path, dict[str, Any]]) -> None:
    _, result = job
    assert [(h["version"], h["operation"], h["mode"]) for h in result["history"]] == [
        (2, "WRITE", "Overwrite"),
        (1, "WRITE", "Append"),
        (0, "WRITE", "ErrorIfExists"),
    ]
    assert [(h["version"], h["operation"]) for h in DeltaRsTable(result["table"]).history()] == [
        (h["version"], h["operation"]) for h in result["history"]
    ]
