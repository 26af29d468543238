"""Delta-to-Delta streams stopped inside a micro-batch while other writers move the source on.

Each query's ids pass a gate (``restart_driver.py``): the query stops inside a batch (its
first, or a later one), a commit lands on its source, the query restarts, and so on; the
last run goes to the end. Spark's checkpoints show each stop landed inside a batch:
planned, not finished. Then each sink must hold every source row exactly once, as
delta-rs reads the source in batch (the starting snapshot, then the changes after it),
each micro-batch must be one commit whose ``txn`` is the query's, and a rerun must add
exactly what is new. A restarted query that planned its first batch from the table as it
is at the restart, not from what its checkpoint recorded, loses that batch's rows here
(the starting snapshot).

- *killed*: sparkdelta's own driver process, killed with SIGKILL (no cleanup at all)
  while one query is inside batch 0 and another inside a later batch, on local disk and
  on moto's S3 alike; the driver also runs a batch write that the kill stops half-way,
  whose staged files VACUUM must collect.
- *failed*: four queries (each value of trigger, ``maxFilesPerTrigger`` and source rows
  or change feed, and every pair of two options' values) stop inside batch 0, restart,
  stop inside a later batch, restart and finish, with an UPDATE among the last changes;
  their batches fail at the gates, which leaves Spark's checkpoint as a kill does. Three
  of them run the same way in delta-spark's session (the oracle), whose micro-batches
  must hold the same rows.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from conftest import hadoop_aws_classpath
from connect_server import classic_environment
from deltaspark import DeltaSpark
from object_stores import MotoServer
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812
from restart_driver import run_queries

from sparkdelta.kernel import Table
from sparkdelta.kernel.vacuum import execute_vacuum, plan_vacuum, vacuum
from sparkdelta.tables import DeltaTable

pytestmark = pytest.mark.classic_only  # the driver builds classic sessions; Delta streams need sparkdelta on a server

DRIVER = Path(__file__).resolve().parent / "restart_driver.py"
FIRST_GATE, LATER_GATE, SNAPSHOT_GATE = 0, 100, 10  # met in batch 0; after the first restart; in batch 2 of 1-file batches
WRITE_GATE = 500  # the first of the ids a killed batch write appends
COLUMNS = ("id", "v")
CHANGE_COLUMNS = ("id", "v", "_change_type", "_commit_version")
WEEK_MS = 7 * 24 * 3600 * 1000


@dataclass(frozen=True)
class Scenario:
    trigger: str  # "processingTime" or "availableNow"
    max_files: int | None  # maxFilesPerTrigger; None: the default
    cdf: bool  # the change feed as the source

    @property
    def name(self) -> str:
        return f"{self.trigger}-{self.max_files or 'default'}-{'cdf' if self.cdf else 'rows'}"


# Half of the eight combinations, holding every pair of two options' values.
SCENARIOS = [
    Scenario(trigger, max_files, cdf)
    for trigger in ("processingTime", "availableNow")
    for max_files in (1, None)
    for cdf in (False, True)
    if (trigger == "availableNow") == ((max_files is None) != cdf)
]
COMPARED = [s for s in SCENARIOS if s.cdf]  # both triggers, both maxFilesPerTrigger
# Killed: inside batch 0 on both stores, and inside batch 2 (of the starting snapshot).
KILLED = {
    ("local", "batch 0"): (Scenario("processingTime", None, False), FIRST_GATE),
    ("local", "batch 2"): (Scenario("availableNow", 1, True), SNAPSHOT_GATE),
    ("s3", "batch 0"): (Scenario("availableNow", None, True), FIRST_GATE),
}

Key = tuple[str, str, str]  # (implementation, store, scenario name)
FAILED_KEYS: list[Key] = [("sparkdelta", "local", s.name) for s in SCENARIOS]
ORACLE_KEYS: list[Key] = [("delta-spark", "local", s.name) for s in COMPARED]
KILLED_KEYS: list[Key] = [("sparkdelta", store, s.name) for (store, _), (s, _) in KILLED.items()]

# Runs in delta-spark's session (the oracle): the same queries, failing at their gates.
ORACLE_STEP = """
import sys
sys.path.insert(0, folder)
from restart_driver import run_queries
run_queries(spark, queries, markers, "fail")
"""


def _ids(keys: list[Key]) -> list[str]:
    return ["/".join(k) for k in keys]


def _rs_uri(path: str) -> str:
    return path.replace("s3a://", "s3://")


def _rows_of(table: pa.Table, columns: tuple[str, ...]) -> Counter[tuple[Any, ...]]:
    return Counter(zip(*[table.column(c).to_pylist() for c in columns], strict=True))


def _append(spark: SparkSession, path: str, ids: range) -> None:
    spark.range(ids.start, ids.stop).selectExpr("id", "id * 10 as v").coalesce(1).write.format("delta").mode("append").save(path)


def _create_source(spark: SparkSession, path: str, cdf: bool) -> None:
    """Ids 0-14 in three files of five (one commit, so the files are in path order: a batch
    of one file takes ids 0-4, the next 5-9, ...)."""
    rows = spark.range(15).selectExpr("id", "id * 10 as v").repartitionByRange(3, "id")
    rows.write.format("delta").option("delta.enableChangeDataFeed", str(cdf).lower()).save(path)


def _unfinished_batches(checkpoint: str) -> set[int]:
    """Batches the checkpoint planned (offsets) but did not record as done (commits)."""

    def ids(folder: Path) -> set[int]:
        return {int(p.name) for p in folder.iterdir() if p.name.isdigit()} if folder.exists() else set()

    return ids(Path(checkpoint) / "offsets") - ids(Path(checkpoint) / "commits")


Step = Callable[[list[dict[str, Any]]], None]  # runs queries (each with its gate, or None) in a session


@dataclass
class Sequence:
    """One sequence's sources and queries, and what their checkpoints showed at each stop."""

    sources: dict[str, str]  # a store, or a store and "cdf": the table
    storage: dict[str, dict[str, str]]  # store: delta-rs's storage options
    queries: dict[Key, dict[str, Any]] = field(default_factory=dict)
    source_of: dict[Key, str] = field(default_factory=dict)
    start_versions: dict[str, int] = field(default_factory=dict)
    stops: list[dict[Key, int]] = field(default_factory=list)
    unfinished: list[dict[Key, set[int]]] = field(default_factory=list)

    def add_query(self, key: Key, scenario: Scenario, source: str, base: str, checkpoints: Path) -> None:
        impl, store, name = key
        self.source_of[key] = source
        self.queries[key] = {
            "name": f"{store}-{name}",
            "source": self.sources[source],
            "sink": f"{base}/{impl}/{name}/sink",
            "checkpoint": str(checkpoints / impl / store / name),
            "trigger": scenario.trigger,
            "max_files": scenario.max_files,
            "cdf": scenario.cdf,
            "gate": None,
        }

    def run(self, spark: SparkSession, stops: list[dict[Key, int]], step: Step, update: bool) -> None:
        """Run the queries to each stop's gates, then to their ends; after each stop a commit
        lands on every source (and, with ``update``, an UPDATE on those with the change feed)."""
        self.stops = stops
        for source, path in self.sources.items():
            self.start_versions[source] = deltalake.DeltaTable(_rs_uri(path), storage_options=self._storage(source)).version()
        for number, gates in enumerate(stops, start=1):
            step([{**q, "gate": gates.get(key)} for key, q in self.queries.items() if key in gates])
            self.unfinished.append({key: _unfinished_batches(q["checkpoint"]) for key, q in self.queries.items()})
            for path in self.sources.values():  # another process moves the sources on
                _append(spark, path, range(LATER_GATE * number, LATER_GATE * number + 5))
        if update:
            for source, path in self.sources.items():
                if source.endswith("cdf"):
                    DeltaTable.forPath(spark, path).update("id = 3", {"v": F.expr("v + 1000")})
        step(list(self.queries.values()))

    def _storage(self, source: str) -> dict[str, str]:
        return self.storage[source.split("-")[0]]


def _s3a_configs(server: MotoServer) -> dict[str, str]:
    return {
        "spark.hadoop.fs.s3a.endpoint": server.endpoint,
        "spark.hadoop.fs.s3a.access.key": server.access_key,
        "spark.hadoop.fs.s3a.secret.key": server.secret_key,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
    }


@pytest.fixture(scope="module")
def s3_session(spark: SparkSession, moto_s3: MotoServer) -> Iterator[MotoServer]:
    """The test session on moto's endpoint too (it writes the S3 source, runs the last step)."""
    if hadoop_aws_classpath() is None:
        pytest.fail("hadoop-aws is not on Spark's classpath: scripts/fetch_hadoop_aws.sh failed")
    settings = _s3a_configs(moto_s3)
    for key, value in settings.items():
        spark.conf.set(key.removeprefix("spark.hadoop."), value)
    yield moto_s3
    for key in settings:
        spark.conf.unset(key.removeprefix("spark.hadoop."))


@dataclass
class Killed:
    sequence: Sequence
    source_rows: dict[str, Counter[tuple[Any, ...]]]  # store: its source's rows when the kill stopped a write to it


def _kill_at_gates(spec: dict[str, Any], workdir: Path, timeout: float = 600) -> None:
    """sparkdelta's driver over ``spec``, killed once each of its queries and writes stopped at its gate.

    ``timeout`` only guards against a hung driver: on a machine two and a half times slower
    than usual (2026-12-05) reaching the gates took over 120 s."""
    spec_file = workdir / "spec.json"
    spec_file.write_text(json.dumps(spec))
    log = workdir / "driver.log"
    process = subprocess.Popen(
        [sys.executable, str(DRIVER), str(spec_file)],
        env=classic_environment() | {"PYSPARK_PYTHON": sys.executable},
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its JVM and Python workers go down with it
    )
    markers = [workdir / f"{job['name']}.{job['gate']}" for job in spec["queries"] + spec["writes"]]
    deadline = time.monotonic() + timeout
    try:
        while not all(marker.exists() for marker in markers):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the driver did not stop everything at its gate: {log.read_text()[-3000:]}")
            time.sleep(0.1)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture(scope="module")
def killed(spark: SparkSession, s3_session: MotoServer, tmp_path_factory: pytest.TempPathFactory) -> Killed:
    root = tmp_path_factory.mktemp("killed")
    stores = {"local": str(root / "tables"), "s3": f"s3a://{s3_session.new_bucket('killed')}/tables"}
    # One source per store, with the change feed on, for the queries of rows and of changes.
    sequence = Sequence({store: f"{base}/source" for store, base in stores.items()}, {"local": {}, "s3": s3_session.options})
    for store in stores:
        _create_source(spark, sequence.sources[store], cdf=True)
    gates: dict[Key, int] = {}
    for (store, _), (scenario, gate) in KILLED.items():
        key = ("sparkdelta", store, scenario.name)
        sequence.add_query(key, scenario, store, stores[store], root / "checkpoints")
        gates[key] = gate
    source_rows = {store: _rs_rows(path, sequence.storage[store]) for store, path in sequence.sources.items()}
    workdir = root / "driver"
    workdir.mkdir()
    configs = {"spark.driver.extraClassPath": hadoop_aws_classpath(), **_s3a_configs(s3_session)}

    def step(queries: list[dict[str, Any]]) -> None:
        if all(q["gate"] is None for q in queries):  # the restart: in the test's session
            run_queries(spark, queries, str(workdir), "fail")
            return
        # An append to each source too, which the kill stops half-way.
        writes = [{"name": f"write-{store}", "path": path, "gate": WRITE_GATE} for store, path in sequence.sources.items()]
        spec = {"configs": configs, "markers": str(workdir), "queries": queries, "writes": writes}
        _kill_at_gates(spec, workdir)

    sequence.run(spark, [gates], step, update=False)
    return Killed(sequence, source_rows)


def _failed(spark: SparkSession, root: Path, impl: str, scenarios: list[Scenario], step: Step) -> Sequence:
    sequence = Sequence({"local": str(root / "source-rows"), "local-cdf": str(root / "source-cdf")}, {"local": {}})
    for source, path in sequence.sources.items():
        _create_source(spark, path, cdf=source.endswith("cdf"))
    for scenario in scenarios:
        source = "local-cdf" if scenario.cdf else "local"
        sequence.add_query((impl, "local", scenario.name), scenario, source, str(root), root / "checkpoints")
    keys = list(sequence.queries)
    sequence.run(spark, [dict.fromkeys(keys, FIRST_GATE), dict.fromkeys(keys, LATER_GATE)], step, update=True)
    return sequence


@pytest.fixture(scope="module")
def failed(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Sequence:
    root = tmp_path_factory.mktemp("failed")

    def step(queries: list[dict[str, Any]]) -> None:
        run_queries(spark, queries, str(root), "fail")

    return _failed(spark, root, "sparkdelta", SCENARIOS, step)


@pytest.fixture(scope="module")
def oracle(spark: SparkSession, deltaspark: DeltaSpark, tmp_path_factory: pytest.TempPathFactory) -> Sequence:
    root = tmp_path_factory.mktemp("oracle")

    def step(queries: list[dict[str, Any]]) -> None:
        deltaspark.run(ORACLE_STEP, folder=str(DRIVER.parent), queries=queries, markers=str(root))

    return _failed(spark, root, "delta-spark", COMPARED, step)


def _rs_rows(path: str, storage: dict[str, str], version: int | None = None) -> Counter[tuple[Any, ...]]:
    table = deltalake.DeltaTable(_rs_uri(path), version=version, storage_options=storage)
    return _rows_of(table.to_pyarrow_table(columns=list(COLUMNS)), COLUMNS)


def _sink_rows(sequence: Sequence, key: Key) -> Counter[tuple[Any, ...]]:
    query = sequence.queries[key]
    columns = CHANGE_COLUMNS if query["cdf"] else COLUMNS
    table = deltalake.DeltaTable(_rs_uri(query["sink"]), storage_options=sequence.storage[key[1]])
    return _rows_of(table.to_pyarrow_table(columns=list(columns)), columns)


def _snapshot_rows(sequence: Sequence, key: Key) -> Counter[tuple[Any, ...]]:
    """The source's rows when the query started (as its change feed's inserts, for one of changes)."""
    source, storage = sequence.source_of[key], sequence.storage[key[1]]
    start = sequence.start_versions[source]
    rows = _rs_rows(sequence.sources[source], storage, start)
    return Counter((*row, "insert", start) for row in rows.elements()) if sequence.queries[key]["cdf"] else rows


def _source_rows(sequence: Sequence, key: Key) -> Counter[tuple[Any, ...]]:
    """The source as delta-rs reads it in batch: its rows; or, for the change feed, the
    starting snapshot as inserts at its version, then every change after it."""
    source, storage = sequence.source_of[key], sequence.storage[key[1]]
    path = sequence.sources[source]
    if not sequence.queries[key]["cdf"]:
        return _rs_rows(path, storage)
    changes = deltalake.DeltaTable(_rs_uri(path), storage_options=storage).load_cdf(
        starting_version=sequence.start_versions[source] + 1
    )
    return _snapshot_rows(sequence, key) + _rows_of(pa.table(changes.read_all()), CHANGE_COLUMNS)


def _commits(sequence: Sequence, key: Key) -> list[dict[str, Any]]:
    """The sink's commits as delta-rs lists them (its history), oldest first."""
    query = sequence.queries[key]
    table = deltalake.DeltaTable(_rs_uri(query["sink"]), storage_options=sequence.storage[key[1]])
    return list(reversed(table.history()))


def _batches(sequence: Sequence, key: Key) -> dict[int, Counter[tuple[Any, ...]]]:
    """Each micro-batch's rows: what its commit added to the sink (which only appends)."""
    query, storage = sequence.queries[key], sequence.storage[key[1]]
    columns = CHANGE_COLUMNS if query["cdf"] else COLUMNS
    batches: dict[int, Counter[tuple[Any, ...]]] = {}
    before: Counter[tuple[Any, ...]] = Counter()
    for commit in _commits(sequence, key):
        table = deltalake.DeltaTable(_rs_uri(query["sink"]), version=commit["version"], storage_options=storage)
        rows = _rows_of(table.to_pyarrow_table(columns=list(columns)), columns)
        if commit["operation"] == "STREAMING UPDATE":
            assert not before - rows, "a micro-batch removed rows"
            batches[int(commit["operationParameters"]["epochId"])] = rows - before
        before = rows
    return batches


def _check_stops(sequence: Sequence, key: Key) -> None:
    """Each stop left one batch planned and unfinished: batch 0 at the first gate, batch 2
    at the snapshot's third file, a later batch after a restart."""
    for number, (gates, unfinished) in enumerate(zip(sequence.stops, sequence.unfinished, strict=True)):
        expected = {0} if gates[key] == FIRST_GATE else {2} if gates[key] == SNAPSHOT_GATE else None
        assert len(unfinished[key]) == 1, f"stop {number + 1} left {unfinished[key]} unfinished"
        assert expected is None or unfinished[key] == expected, f"stop {number + 1} was not inside batch {expected}"
        assert expected is not None or min(unfinished[key]) > 0


def _check_exactly_once(sequence: Sequence, key: Key) -> None:
    expected = _source_rows(sequence, key)
    assert sum(expected.values()) > 15
    assert _sink_rows(sequence, key) == expected


def _check_one_commit_a_batch(sequence: Sequence, key: Key) -> None:
    streaming = [c for c in _commits(sequence, key) if c["operation"] == "STREAMING UPDATE"]
    epochs = [int(c["operationParameters"]["epochId"]) for c in streaming]
    assert epochs == sorted(set(epochs)), f"a batch committed twice, or out of order: {epochs}"
    assert epochs[0] == 0
    metadata = Path(sequence.queries[key]["checkpoint"]) / "metadata"
    assert {c["operationParameters"]["queryId"] for c in streaming} == {json.loads(metadata.read_text().splitlines()[0])["id"]}


@pytest.mark.parametrize("key", KILLED_KEYS, ids=_ids(KILLED_KEYS))
def test_killed_stream_stopped_inside_its_batch(killed: Killed, key: Key) -> None:
    _check_stops(killed.sequence, key)


@pytest.mark.parametrize("key", KILLED_KEYS, ids=_ids(KILLED_KEYS))
def test_killed_stream_holds_every_source_row_exactly_once(killed: Killed, key: Key) -> None:
    _check_exactly_once(killed.sequence, key)


@pytest.mark.parametrize("key", KILLED_KEYS, ids=_ids(KILLED_KEYS))
def test_killed_stream_commits_each_batch_once(killed: Killed, key: Key) -> None:
    _check_one_commit_a_batch(killed.sequence, key)


def _staged(table: Table) -> list[str]:
    """The staged files: not S3A's empty folder markers (zero-byte keys ending in ``/``,
    which obstore lists without it and cannot delete; VACUUM leaves them)."""
    listed = table.storage.list_tree(f"{table.root}/_delta_staging", lambda name: True)
    return [f.path for f in listed if f.size or table.storage.local_path(f.path) is not None]


@pytest.mark.parametrize("store", ["local", "s3"])
def test_vacuum_collects_a_killed_write_s_staging_after_the_retention_window(killed: Killed, store: str) -> None:
    """The append the kill stopped left staged files (its finished task's) and no commit;
    VACUUM keeps them inside the retention window (a write could still be placing them) and
    deletes them after it, and the table reads the same either way."""
    path, storage = killed.sequence.sources[store], killed.sequence.storage[store]
    table = Table(_rs_uri(path), storage_options=storage or None)
    assert _staged(table), "the killed write left nothing staged"
    rows = _rs_rows(path, storage)
    assert not [i for i, _ in rows if i >= WRITE_GATE], "the killed write committed"
    kept = vacuum(table)
    assert _staged(table) and not kept.plan.files
    plan = plan_vacuum(table, now_ms=int(time.time() * 1000) + WEEK_MS + 3_600_000)
    assert {f.path for f in plan.files} == set(_staged(table))
    execute_vacuum(table, plan)
    assert not _staged(table)
    assert _rs_rows(path, storage) == rows
    assert not killed.source_rows[store] - rows, "rows of the source went missing"


@pytest.mark.parametrize("key", FAILED_KEYS, ids=_ids(FAILED_KEYS))
def test_failed_stream_stopped_inside_its_batches(failed: Sequence, key: Key) -> None:
    _check_stops(failed, key)


@pytest.mark.parametrize("key", FAILED_KEYS, ids=_ids(FAILED_KEYS))
def test_failed_stream_holds_every_source_row_exactly_once(failed: Sequence, key: Key) -> None:
    _check_exactly_once(failed, key)


@pytest.mark.parametrize("key", FAILED_KEYS, ids=_ids(FAILED_KEYS))
def test_failed_stream_commits_each_batch_once(failed: Sequence, key: Key) -> None:
    _check_one_commit_a_batch(failed, key)


@pytest.mark.parametrize("key", ORACLE_KEYS, ids=_ids(ORACLE_KEYS))
def test_delta_spark_s_stream_stopped_inside_its_batches_and_holds_every_row(oracle: Sequence, key: Key) -> None:
    """The oracle's own run passes the same checks: the sequence is sound."""
    _check_stops(oracle, key)
    _check_exactly_once(oracle, key)


@pytest.mark.parametrize("scenario", COMPARED, ids=[s.name for s in COMPARED])
def test_micro_batches_are_delta_spark_s(failed: Sequence, oracle: Sequence, scenario: Scenario) -> None:
    """The same rows in each micro-batch as delta-spark's; batch 0, replayed after the first
    stop, is the starting snapshot (one file of it, with maxFilesPerTrigger 1)."""
    key = ("sparkdelta", "local", scenario.name)
    ours = _batches(failed, key)
    theirs = _batches(oracle, ("delta-spark", "local", scenario.name))
    assert {k: v for k, v in ours.items() if v} == {k: v for k, v in theirs.items() if v}
    snapshot = _snapshot_rows(failed, key)
    if scenario.max_files is None:
        assert ours[0] == snapshot
    else:
        assert sum(ours[0].values()) == 5 and not ours[0] - snapshot


def test_a_rerun_adds_exactly_what_is_new(spark: SparkSession, failed: Sequence, tmp_path: Path) -> None:
    """After the stops, the same query run again commits nothing when its source has
    nothing new, then only the new rows. On copies of its source, sink and checkpoint,
    which the other tests read."""
    query = failed.queries[("sparkdelta", "local", "availableNow-default-rows")]
    source, sink, checkpoint = (str(tmp_path / name) for name in ("source", "sink", "checkpoint"))
    for original, copy in ((query["source"], source), (query["sink"], sink), (query["checkpoint"], checkpoint)):
        shutil.copytree(original, copy)

    def rerun() -> None:
        writer = spark.readStream.format("delta").load(source).writeStream.format("delta")
        started = writer.option("checkpointLocation", checkpoint).trigger(availableNow=True).start(sink)
        started.awaitTermination(120)
        assert not started.isActive

    before = deltalake.DeltaTable(sink).version()
    rerun()
    assert deltalake.DeltaTable(sink).version() == before, "an idle rerun committed"
    _append(spark, source, range(300, 310))
    rerun()
    assert deltalake.DeltaTable(sink).version() == before + 1
    assert _rs_rows(sink, {}) == _rs_rows(source, {})
