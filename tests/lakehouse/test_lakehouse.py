"""The lakehouse pipeline end to end on a few small days, checked against independent oracles.

The baseline warehouse (``lakehouse_baseline.py``, built once per session): two days
generated and run, a second run with nothing new, then a third day dropped and run. The
oracles are the generator's own count of what it injected (from its hashes, not from the
pipeline), pandas reading the landing CSV files (tests/lakehouse_oracle.py), and delta-rs
(``deltalake``) reading every table.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from lakehouse_baseline import DAYS, FEED, MIN_FILES, Baseline, config, read, versions_after
from lakehouse_oracle import GOLD_KEYS, as_multiset, deltalake_rows, expected_gold, expected_silver, keyed, landing_lines, reasons
from pyspark.sql import SparkSession

from sparkdelta.kernel import Table
from sparkdelta.lakehouse import FeedSpec, Warehouse, run
from sparkdelta.lakehouse.cli import main as lakehouse_cli
from sparkdelta.lakehouse.generator import BAD_KINDS, generate, injected, rides
from sparkdelta.lakehouse.maintenance import crowded_partitions

CHROMIUM = Path("/usr/bin/chromium")


# --------------------------------------------------------------------------- generator


def test_generator_is_reproducible_and_injects_what_it_reports(spark: SparkSession, baseline: Baseline, tmp_path: Path) -> None:
    landing = Path(str(baseline.warehouse.landing))
    names = [FEED.file_name(d) for d in range(DAYS + 1)]
    assert [p.name for p in baseline.warehouse.landing_files()] == names
    (again,) = generate(spark, FEED, tmp_path, [2])
    assert Path(str(again)).read_bytes() == (landing / names[2]).read_bytes()
    assert "CongestionSurcharge" not in (landing / names[1]).read_text().splitlines()[0]
    assert (landing / names[2]).read_text().splitlines()[0].endswith(",CongestionSurcharge")

    lines = landing_lines(landing)
    report = injected(spark, FEED, range(DAYS + 1))
    assert len(lines) == report.lines
    # Exact duplicate lines, corrections (same ride, other content) and bad lines, as pandas sees them.
    content = [c for c in lines.columns if not c.startswith("_")]
    assert lines.duplicated(content).sum() == report.duplicates
    why = reasons(lines)
    assert why.value_counts().to_dict() == report.bad
    good = lines[why.isna()]
    distinct = good.drop_duplicates(content)
    assert len(distinct) - distinct["RideId"].nunique() == report.corrections
    assert report.corrections > 0 and report.duplicates > 0 and all(report.bad.values())


def test_generated_trips_look_like_taxi_trips(spark: SparkSession) -> None:
    spec = FeedSpec(rows_per_day=20_000, seed=11)
    trips = rides(spark, spec, 0).where("kind = 'clean'").toPandas()
    hours = trips["PickupTime"].dt.hour.value_counts(normalize=True)
    assert hours[18] > 3 * hours[4]  # evening peak, small hours quiet
    assert trips["PickupLocationId"].value_counts(normalize=True).iloc[0] > 0.05  # a few zones dominate
    fare = trips["FareAmount"].astype(float)
    distance = trips["TripDistance"].astype(float)
    metered = trips["RateCodeId"] == 1
    assert (fare[metered] >= 2.5 + 2.5 * distance[metered] - 0.5).all()  # the meter's floor
    assert (trips.loc[trips["RateCodeId"] == 2, "FareAmount"] == Decimal("52.00")).all()  # JFK flat fare
    assert (trips.loc[trips["PaymentType"] != 1, "TipAmount"] == 0).all()  # cash tips are not recorded
    parts = ["FareAmount", "Extra", "MtaTax", "TipAmount", "TollsAmount", "ImprovementSurcharge"]
    assert (trips[parts].sum(axis=1) == trips["TotalAmount"]).all()
    assert (trips["DropTime"] > trips["PickupTime"]).all()


# --------------------------------------------------------------------------- one run


def test_counts_reconcile_across_layers(spark: SparkSession, baseline: Baseline) -> None:
    expected = injected(spark, FEED, range(DAYS))
    first = baseline.first
    assert first.generated == [FEED.file_name(d) for d in range(DAYS)]
    assert first.bronze.rows == expected.lines
    silver, quarantine = first.silver, sum(first.silver.quarantined.values())
    assert silver.rows_in == expected.lines
    assert silver.quarantined == expected.bad
    assert silver.duplicates == expected.duplicates
    assert silver.corrections == expected.corrections
    assert silver.inserted == expected.valid_rides and silver.updated == 0 and silver.unchanged == 0
    # in = silver + quarantine + duplicates (+ the older versions of corrected rides)
    assert expected.lines == silver.inserted + quarantine + silver.duplicates + silver.corrections
    versions = versions_after(first)
    assert read(spark, baseline.warehouse.silver, versions["silver.trips"]).count() == expected.valid_rides
    assert read(spark, baseline.warehouse.quarantine, versions["silver.quarantine"]).count() == sum(expected.bad.values())
    assert set(BAD_KINDS) == set(silver.quarantined)


def test_quarantine_keeps_rows_as_they_came_with_their_reason(spark: SparkSession, baseline: Baseline) -> None:
    lines = landing_lines(baseline.warehouse.landing)
    why = reasons(lines)
    expected = sorted(
        zip(lines.loc[why.notna(), "_file"], lines.loc[why.notna(), "RideId"].replace("", None), why[why.notna()], strict=True),
        key=str,
    )
    rows = read(spark, baseline.warehouse.quarantine).select("_source_file", "RideId", "reason").collect()
    assert sorted(((r[0], r[1], r[2]) for r in rows), key=str) == expected


def test_silver_holds_the_latest_valid_line_of_every_ride(spark: SparkSession, baseline: Baseline) -> None:
    expected = expected_silver(landing_lines(baseline.warehouse.landing))
    rows = (
        read(spark, baseline.warehouse.silver)
        .select("RideId", "TotalAmount", "TipAmount", "TollsAmount", "CongestionSurcharge")
        .collect()
    )
    assert len(rows) == len(expected)
    columns = ["TotalAmount", "TipAmount", "TollsAmount", "CongestionSurcharge"]
    got = {r["RideId"]: tuple(r[c] for c in columns) for r in rows}
    assert got == {ride: tuple(expected.loc[ride, c] for c in columns) for ride in expected.index}


def test_silver_table_has_constraints_change_feed_and_no_deletion_vectors(baseline: Baseline) -> None:
    snapshot = Table(str(baseline.warehouse.silver)).snapshot()
    configuration = snapshot.configuration
    assert configuration["delta.enableChangeDataFeed"] == "true"
    assert configuration["delta.constraints.total_not_negative"] == "TotalAmount >= 0"
    assert configuration["delta.constraints.passengers_not_negative"] == "PassengerCount >= 0"
    assert snapshot.partition_columns == ("PickupDate",)
    assert "deletionVectors" not in (snapshot.protocol.reader_features or ())


def test_gold_equals_a_full_recompute(baseline: Baseline) -> None:
    silver = expected_silver(landing_lines(baseline.warehouse.landing))
    expected = expected_gold(silver)
    for name, keys in GOLD_KEYS.items():
        got = keyed(deltalake_rows(baseline.warehouse.gold(name)), keys)
        assert got == expected[name], name


def test_gold_was_updated_incrementally_not_recomputed(baseline: Baseline) -> None:
    later = baseline.later
    assert later.gold.silver_versions is not None and later.gold.silver_versions[0] > 0
    # Only the changes of the new day and of yesterday's corrections were read.
    assert later.gold.change_rows == later.silver.inserted + 2 * later.silver.updated
    for name in GOLD_KEYS:
        history = Table(str(baseline.warehouse.gold(name))).history()
        assert [r.commit_info["operation"] for r in history].count("MERGE") == 2  # one per run with new data


def test_every_table_reads_the_same_with_deltalake(spark: SparkSession, baseline: Baseline) -> None:
    import pyarrow as pa

    for name, path in baseline.warehouse.tables().items():
        ours = read(spark, path).toArrow()
        theirs = pa.Table.from_pylist(deltalake_rows(path))
        assert ours.num_rows == theirs.num_rows > 0, name
        assert sorted(ours.column_names) == sorted(theirs.column_names), name
        assert as_multiset(ours) == as_multiset(theirs), name


# --------------------------------------------------------------------------- more runs


def test_a_second_run_with_nothing_new_changes_nothing(baseline: Baseline) -> None:
    again = baseline.again
    assert not again.changed
    assert versions_after(again) == versions_after(baseline.first)
    assert again.bronze.files == [] and again.silver.rows_in == 0 and again.gold.change_rows == 0
    assert all(m.optimize is None and m.vacuumed == 0 for m in again.maintenance)


def test_a_new_file_is_all_that_the_next_run_processes(spark: SparkSession, baseline: Baseline) -> None:
    later = baseline.later
    assert later.generated == []
    assert later.bronze.files == [FEED.file_name(DAYS)] and later.bronze.batches == (DAYS + 1, DAYS + 1)
    lines = landing_lines(baseline.warehouse.landing)
    new = lines[lines["_file"] == FEED.file_name(DAYS)]
    assert later.silver.rows_in == len(new) == later.bronze.rows
    # Yesterday's late corrections in today's file update rides silver already holds.
    valid = new[reasons(new).isna()]
    late = valid[valid["RideId"].astype("int64") // 1_000_000_000 == DAYS]
    assert later.silver.updated == late["RideId"].nunique() > 0


def test_time_travel_to_silver_before_the_late_corrections(spark: SparkSession, baseline: Baseline) -> None:
    before = versions_after(baseline.first)["silver.trips"]
    lines = landing_lines(baseline.warehouse.landing)
    new = lines[(lines["_file"] == FEED.file_name(DAYS)) & reasons(lines).isna()]
    ride = int(new.loc[new["RideId"].astype("int64") // 1_000_000_000 == DAYS, "RideId"].iloc[-1])
    first_days = expected_silver(lines[lines["_file"] != FEED.file_name(DAYS)])
    everything = expected_silver(lines)

    def total(version: int | None) -> Decimal:
        return read(spark, baseline.warehouse.silver, version).where(f"RideId = {ride}").first()["TotalAmount"]

    assert total(before) == first_days.loc[ride, "TotalAmount"] != everything.loc[ride, "TotalAmount"] == total(None)
    assert read(spark, baseline.warehouse.silver, before).count() == len(first_days)
    at_version = {r["RideId"]: r["TotalAmount"] for r in deltalake_rows(baseline.warehouse.silver, before)}
    assert at_version[ride] == first_days.loc[ride, "TotalAmount"]


def test_maintenance_optimizes_crowded_partitions_and_leaves_none(baseline: Baseline) -> None:
    ran = [m for s in (baseline.first, baseline.later) for m in s.maintenance if m.optimize]
    assert ran, "small files never piled up: the test data no longer exercises OPTIMIZE"
    assert all(m.files_added < m.files_removed for m in ran)
    for name, path in baseline.warehouse.tables().items():
        if name != "bronze.trips":
            assert crowded_partitions(Table(str(path)).snapshot(), MIN_FILES) == [], name


# --------------------------------------------------------------------------- crashes


class Crash(Exception):
    pass


def crash_at(point: str):  # noqa: ANN201
    def hook(reached: str) -> None:
        if reached == point:
            raise Crash(point)

    return hook


_KILLED_RUN = """
import os, signal, sys
from pathlib import Path
from pyspark.sql import SparkSession
import sparkdelta
from sparkdelta.lakehouse import FeedSpec, PipelineConfig, run

builder = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
           .config("spark.sql.catalogImplementation", "in-memory").config("spark.sql.shuffle.partitions", "4"))
spark = sparkdelta.configure(builder).getOrCreate()
feed = FeedSpec(**eval(sys.argv[2]))

def die(point):
    if point == sys.argv[3]:
        print("killing at", point, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

run(spark, PipelineConfig(Path(sys.argv[1]), feed, min_files=int(sys.argv[4]), retention_hours=0), on_commit=die)
"""


@pytest.mark.classic_only  # the lakehouse in child processes of their own, with classic sessions
def test_runs_killed_between_commits_resume_to_the_same_tables(spark: SparkSession, baseline: Baseline, tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    crashed = Warehouse(root)
    Path(str(crashed.landing)).mkdir(parents=True)
    for day in range(DAYS):
        shutil.copy(Path(str(baseline.warehouse.landing)) / FEED.file_name(day), str(crashed.landing))

    # Mid-bronze (batch 1 of 2 committed), then right after silver's MERGE, which carries its progress.
    for point in ("bronze:1", "silver:merge"):
        with pytest.raises(Crash):
            run(spark, config(root, retention_hours=0), on_commit=crash_at(point))
    assert Table(str(crashed.bronze)).snapshot().app_transactions["lakehouse.bronze"].version == DAYS
    silver = Table(str(crashed.silver)).snapshot()
    assert silver.app_transactions["lakehouse.silver"].version == DAYS
    assert silver.commit_info is not None and silver.commit_info["operation"] == "MERGE"
    # The MERGE ran under the pipeline's settings only: the session's own are as they were.
    assert spark.conf.get("spark.databricks.delta.write.txnAppId", None) is None
    assert spark.conf.get("spark.databricks.delta.commitInfo.userMetadata", None) is None
    # A real kill (SIGKILL, no cleanup) right after a gold MERGE, with one gold table done before it.
    feed = {
        k: getattr(FEED, k) for k in ("rows_per_day", "seed", "congestion_from", "duplicate_rate", "correction_rate", "bad_rate")
    }
    killed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_KILLED_RUN), str(root), repr(feed), "gold:daily_zone:merge", str(MIN_FILES)],
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    operations = {name: [r.commit_info["operation"] for r in Table(str(crashed.gold(name))).history()] for name in GOLD_KEYS}
    assert operations["daily_vendor"] == operations["daily_zone"] == ["MERGE", "CREATE TABLE"]
    assert "MERGE" not in operations["daily_payment"]
    final = run(spark, config(root, retention_hours=0))
    assert final.bronze.files == [] and final.silver.batches is None
    # Only the gold tables the kill left behind are folded: no MERGE runs twice.
    assert set(final.gold.keys) == {"daily_payment", "tips_by_hour"}
    assert [r.commit_info["operation"] for r in Table(str(crashed.silver)).history()].count("MERGE") == 1

    # Exactly the tables an uninterrupted run built (ingestion times aside).
    reference = versions_after(baseline.first)
    for name, path in crashed.tables().items():
        ours = read(spark, path).toArrow()
        uninterrupted = read(spark, baseline.warehouse.tables()[name], reference[name]).toArrow()
        assert as_multiset(ours, drop=("_ingested_at",)) == as_multiset(uninterrupted, drop=("_ingested_at",)), name
    assert run(spark, config(root, retention_hours=0)).changed is False


# --------------------------------------------------------------------------- CLI and report


@pytest.mark.classic_only  # the lakehouse in child processes of their own, with classic sessions
def test_cli_generate_run_json_and_report_rendered_by_chromium(baseline: Baseline, tmp_path: Path) -> None:
    drop = CliRunner().invoke(
        lakehouse_cli,
        ["generate", "--warehouse", str(tmp_path), "--first-day", "5", "--rows-per-day", "50", "--master", "local[2]"],
    )
    assert drop.exit_code == 0, drop.output
    assert [p.name for p in Warehouse(tmp_path).landing_files()] == ["trips_2024-01-06.csv"]

    root = baseline.warehouse.root
    done = CliRunner().invoke(lakehouse_cli, ["run", "--warehouse", str(root), "--master", "local[2]", "--json"])
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert summary["changed"] is False and set(summary["seconds"]) == {"bronze", "silver", "gold", "maintenance"}
    assert {name: after for name, (_, after) in summary["versions"].items()} == versions_after(baseline.later)

    report = CliRunner().invoke(lakehouse_cli, ["report", "--warehouse", str(root), "--output", str(tmp_path / "report.html")])
    assert report.exit_code == 0, report.output
    page = tmp_path / "report.html"
    text = page.read_text()
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text  # no network
    assert text.count("<tr><td><code>") == len(baseline.warehouse.tables())  # health panel: every table

    if not CHROMIUM.exists():
        pytest.skip("chromium is not installed (scripts/setup.sh installs it)")
    dom = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'chromium'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert 'data-charts-rendered="4"' in dom
    charts = dom.split('<svg class="chart"')[1:]
    assert len(charts) == 4
    for chart in charts:
        assert chart.split("</svg>")[0].count('class="bar"') > 0
