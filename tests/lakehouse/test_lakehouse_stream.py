"""``lakehouse run --stream``: the same landing files as streams give the batch runs' tables.

One stream warehouse is built once per module over the baseline's landing files
(``lakehouse_baseline.py``), and its story is checked step by step:

1. days 0-1 land; a run crashes in silver's micro-batch (quarantine appended, MERGE not
   yet), the rerun crashes in gold's (two tables folded of four), the next completes:
   the tables equal the batch runs' after the same days;
2. day 2 lands while a continuous run goes, with a column the running bronze query does
   not know (``CongestionSurcharge``): bronze's query stops on it and starts again,
   silver's after it (bronze's schema changed), and the tables equal the batch runs'
   after day 2, and the pandas oracle's gold;
3. silver is OPTIMIZEd, then two more runs (``availableNow`` with maintenance, then
   continuous) have nothing new: gold's query reads the OPTIMIZE commit as nothing to
   fold, and neither run commits to bronze, silver or gold.

Rows are compared as multisets without the columns that say when and in which batch a
line was ingested, which the two modes number differently.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from lakehouse_baseline import DAYS, FEED, MIN_FILES, Baseline, read, versions_after
from lakehouse_oracle import GOLD_KEYS, as_multiset, deltalake_rows, expected_gold, expected_silver, keyed, landing_lines
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from sparkdelta.kernel import Table
from sparkdelta.lakehouse import PipelineConfig, Warehouse, run
from sparkdelta.lakehouse.bronze_stream import landing_columns
from sparkdelta.lakehouse.cli import main as lakehouse_cli
from sparkdelta.lakehouse.errors import LandingColumnsError, ModeError
from sparkdelta.lakehouse.summary import RunSummary
from sparkdelta.tables import DeltaTable

# Delta streams run sparkdelta in the Spark server's Python (``spark/stream/server.py``); the
# tests' Connect server has none, so there they are refused by name (test_stream_connect.py).
pytestmark = pytest.mark.classic_only


INGESTION = ("_ingested_at", "_batch_id", "_line")  # when and in which batch: numbered apart by each mode
CONTINUOUS_LIMIT = 240.0  # seconds a continuous run may take to catch up before the test gives up


@dataclass
class Streamed:
    warehouse: Warehouse
    crashes: list[str]  # what each crashed run raised
    first: RunSummary  # the run that completed days 0-1
    continuous: RunSummary  # day 2 landed while it ran
    caught_up: bool  # the continuous run stopped because gold was complete, not on time


def stream_config(root: Path, continuous: bool = False) -> PipelineConfig:
    return PipelineConfig(root, FEED, days=DAYS, min_files=MIN_FILES, stream=True, continuous=continuous, trigger_seconds=0.5)


class Crash(Exception):
    pass


def crash_at(point: str) -> Callable[[str], None]:
    def hook(reached: str) -> None:
        if reached == point:
            raise Crash(point)

    return hook


def land(source: Path, landing: Path) -> None:
    """Drop a landing file as a feed does: whole, under its name at once (Spark skips ``.`` files)."""
    hidden = landing / f".{source.name}"
    shutil.copy(source, hidden)
    os.rename(hidden, landing / source.name)


def gold_is(warehouse: Warehouse, expected: dict[str, dict[tuple, dict]]) -> bool:
    return all(keyed(deltalake_rows(warehouse.gold(n)), keys) == expected[n] for n, keys in GOLD_KEYS.items())


@pytest.fixture(scope="module")
def streamed(spark: SparkSession, baseline: Baseline, tmp_path_factory: pytest.TempPathFactory) -> Streamed:
    root = tmp_path_factory.mktemp("lakehouse-stream") / "warehouse"
    warehouse = Warehouse(root)
    landing, feed = Path(str(warehouse.landing)), Path(str(baseline.warehouse.landing))
    landing.mkdir(parents=True)
    for day in range(DAYS):
        land(feed / FEED.file_name(day), landing)

    crashes = []
    for point in ("silver:quarantine", "gold:daily_zone:merge"):
        with pytest.raises(StreamingQueryException) as crashed:
            run(spark, stream_config(root), on_commit=crash_at(point))
        crashes.append(str(crashed.value))
    first = run(spark, stream_config(root))

    expected = expected_gold(expected_silver(landing_lines(feed)))  # every day of the baseline's feed
    started = time.monotonic()
    caught_up = False

    def until() -> bool:
        nonlocal caught_up
        if not (landing / FEED.file_name(DAYS)).exists():
            land(feed / FEED.file_name(DAYS), landing)  # while bronze's query runs, with a column it does not know
            return False
        caught_up = gold_is(warehouse, expected)
        return caught_up or time.monotonic() - started > CONTINUOUS_LIMIT

    continuous = run(spark, stream_config(root, continuous=True), until=until)
    return Streamed(warehouse, crashes, first, continuous, caught_up)


def assert_same_tables(spark: SparkSession, streamed: Warehouse, ours: RunSummary, batch: Baseline, theirs: RunSummary) -> None:
    """Every table of ``streamed`` after run ``ours`` holds the rows ``batch``'s held after
    run ``theirs``, ingestion columns aside."""
    for name, path in streamed.tables().items():
        streamed_rows = read(spark, path, versions_after(ours)[name]).toArrow()
        batch_rows = read(spark, batch.warehouse.tables()[name], versions_after(theirs)[name]).toArrow()
        assert streamed_rows.num_rows == batch_rows.num_rows > 0, name
        assert set(streamed_rows.column_names) == set(batch_rows.column_names), name
        assert as_multiset(streamed_rows, drop=INGESTION) == as_multiset(batch_rows, drop=INGESTION), name


# --------------------------------------------------------------------------- crashes and restarts


def test_runs_crashed_mid_micro_batch_resume_to_the_batch_runs_tables(
    spark: SparkSession, baseline: Baseline, streamed: Streamed
) -> None:
    assert all("Crash" in crash for crash in streamed.crashes)
    first = streamed.first
    # The replays did only what the crashes left: silver's MERGE (in the second crashed
    # run), then two gold tables of four.
    assert first.bronze.files == [] and first.silver.rows_in == 0
    assert set(first.gold.keys) == {"daily_payment", "tips_by_hour"} and first.micro_batches == {"gold": (0, 0)}
    versions = versions_after(first)
    history = {
        name: [c.commit_info["operation"] for c in Table(str(path)).history() if c.version <= (versions[name] or 0)]
        for name, path in streamed.warehouse.tables().items()
    }
    assert history["silver.trips"].count("MERGE") == 1
    assert history["silver.quarantine"].count("WRITE") == 1
    assert all(history[f"gold.{name}"].count("MERGE") == 1 for name in GOLD_KEYS)
    assert_same_tables(spark, streamed.warehouse, first, baseline, baseline.first)


def test_silver_and_gold_commits_record_their_micro_batch(streamed: Streamed) -> None:
    versions = versions_after(streamed.first)
    silver = Table(str(streamed.warehouse.silver)).snapshot(versions["silver.trips"])
    assert silver.app_transactions["lakehouse.stream.silver"].version == 0
    for name in GOLD_KEYS:
        gold = Table(str(streamed.warehouse.gold(name))).snapshot(versions[f"gold.{name}"])
        assert gold.app_transactions["lakehouse.stream.gold"].version == 0, name
        assert "lakehouse.gold" not in gold.app_transactions, name


# --------------------------------------------------------------------------- continuous


def test_a_continuous_run_takes_a_new_day_with_a_new_column(spark: SparkSession, baseline: Baseline, streamed: Streamed) -> None:
    assert streamed.caught_up, f"gold did not catch up within {CONTINUOUS_LIMIT} s"
    continuous = streamed.continuous
    assert continuous.mode == "continuous" and set(continuous.seconds) == {"streaming"}
    # Bronze's query met CongestionSurcharge in day 2's file and started again; silver's
    # query then met bronze's new schema and started again too.
    assert continuous.restarts == {"bronze": 1, "silver": 1}
    assert continuous.bronze.files == [FEED.file_name(DAYS)]
    assert "CongestionSurcharge" in Table(str(streamed.warehouse.bronze)).snapshot().schema.names
    assert continuous.silver.updated > 0  # day 2's late corrections of day 1's rides
    assert continuous.maintenance == []  # left to the next run
    assert_same_tables(spark, streamed.warehouse, continuous, baseline, baseline.later)


# --------------------------------------------------------------------------- nothing new


def committed_micro_batches(warehouse: Warehouse, layer: str) -> int:
    """How many micro-batches ``layer``'s query has finished (Spark's checkpoint ``commits`` log)."""
    return sum(f.name.isdigit() for f in (Path(str(warehouse.checkpoint(layer))) / "commits").iterdir())


def test_reruns_with_nothing_new_commit_nothing(spark: SparkSession, streamed: Streamed) -> None:
    warehouse, root = streamed.warehouse, str(streamed.warehouse.root)
    # What maintenance does to silver once files pile up: a rewrite with dataChange false,
    # which gold's stream of silver's change feed must read as nothing to fold.
    DeltaTable.forPath(spark, str(warehouse.silver)).optimize().executeZOrderBy("PickupLocationId")
    optimized = Table(str(warehouse.silver)).snapshot()
    assert optimized.commit_info is not None and optimized.commit_info["operation"] == "OPTIMIZE"
    gold_batches = committed_micro_batches(warehouse, "gold")

    rerun = CliRunner().invoke(lakehouse_cli, ["run", "--stream", "--warehouse", root, "--json"])
    assert rerun.exit_code == 0, rerun.output
    summary = json.loads(rerun.stdout)
    assert summary["mode"] == "stream" and summary["bronze"]["files"] == [] and summary["silver"]["rows_in"] == 0
    assert summary["gold"]["change_rows"] == 0 and summary["micro_batches"] == {}
    unchanged = {name: before == after for name, (before, after) in summary["versions"].items() if name != "silver.quarantine"}
    assert all(unchanged.values()), summary["versions"]
    assert committed_micro_batches(warehouse, "gold") == gold_batches + 1  # it read the OPTIMIZE commit

    again = CliRunner().invoke(
        lakehouse_cli,
        ["run", "--stream", "--continuous", "--trigger-interval", "500ms", "--run-for", "2s", "--warehouse", root, "--json"],
    )
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)
    assert summary["mode"] == "continuous" and summary["changed"] is False, summary["versions"]


# --------------------------------------------------------------------------- modes and landing columns


def test_a_warehouse_keeps_the_mode_it_was_built_in(spark: SparkSession, baseline: Baseline, streamed: Streamed) -> None:
    with pytest.raises(ModeError, match="built by `lakehouse run` without --stream"):
        run(spark, stream_config(Path(str(baseline.warehouse.root))))
    with pytest.raises(ModeError, match="run it with --stream"):
        run(spark, PipelineConfig(Path(str(streamed.warehouse.root)), FEED))
    refused = CliRunner().invoke(lakehouse_cli, ["run", "--warehouse", str(streamed.warehouse.root)])
    assert refused.exit_code == 1 and "run it with --stream" in refused.output
    usage = CliRunner().invoke(lakehouse_cli, ["run", "--continuous"])
    assert usage.exit_code == 2 and "give --stream too" in usage.output
    usage = CliRunner().invoke(lakehouse_cli, ["run", "--stream", "--continuous", "--trigger-interval", "soon"])
    assert usage.exit_code == 2 and "give a positive duration" in usage.output


def test_landing_columns_are_the_headers_union_and_only_grow_at_the_end(spark: SparkSession, tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path)
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "a.csv").write_text("RideId,VendorId,Fare\n1,2,3\n")
    (landing / "b.csv").write_text("RideId,VendorId\n4,5\n")
    (landing / "_writing.csv").write_text("Other\n")
    assert landing_columns(warehouse) == ["RideId", "VendorId", "Fare"]
    (landing / "c.csv").write_text('RideId,"VendorId",Fare,Tip\r\n')
    assert landing_columns(warehouse) == ["RideId", "VendorId", "Fare", "Tip"]
    (landing / "d.csv").write_text("VendorId,RideId\n")
    with pytest.raises(LandingColumnsError, match="d.csv"):
        landing_columns(warehouse)
