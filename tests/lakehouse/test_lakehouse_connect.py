"""The main job on Spark Connect: ``lakehouse run --remote`` builds the same tables as a
classic run, on a stock Connect server that cannot import sparkdelta.

Both runs are the ``lakehouse`` command in a process of its own, on the same feed: the
classic run generates it, and its landing files are copied for the Connect run, so both
read identical bytes; every table is then read back by delta-rs and compared row for row
(ingestion times aside).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import deltalake
import pytest
from connect_server import ConnectServer, classic_environment
from lakehouse_oracle import as_multiset

from sparkdelta.lakehouse.warehouse import Location, Warehouse

# Their child JVMs start from an archive of their classes (tests/class_archives.py).
pytestmark = pytest.mark.usefixtures("jvm_class_archive")

FEED = ["--days", "3", "--rows-per-day", "300", "--seed", "11"]
_MAIN = "from sparkdelta.lakehouse.cli import main; main()"


def _lakehouse(*args: str) -> dict:  # type: ignore[type-arg]
    done = subprocess.run(
        [sys.executable, "-c", _MAIN, *args, "--json"],
        capture_output=True,
        text=True,
        timeout=900,
        env=classic_environment() | {"PYSPARK_PYTHON": sys.executable},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)


@dataclass
class Runs:
    classic: Path
    remote: Path
    by_classic: dict  # type: ignore[type-arg]
    by_connect: dict  # type: ignore[type-arg]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """The classic run (which generates the feed), then the Connect run on a copy of its feed."""
    root = tmp_path_factory.mktemp("lakehouse-connect")
    classic, remote = root / "classic", root / "remote"
    by_classic = _lakehouse("run", "--warehouse", str(classic), "--master", "local[2]", *FEED)
    assert by_classic["generated"], "the classic run generates the feed"
    shutil.copytree(classic / "landing", remote / "landing")
    server = ConnectServer(root)
    try:
        by_connect = _lakehouse("run", "--warehouse", str(remote), "--remote", server.url, *FEED)
    finally:
        server.stop()
    assert not by_connect["generated"], "the Connect run reads the copied feed"
    return Runs(classic, remote, by_classic, by_connect)


def test_run_on_a_connect_server_reports_what_the_classic_run_reports(runs: Runs) -> None:
    assert runs.by_connect["versions"] == runs.by_classic["versions"]
    assert runs.by_connect["silver"] == runs.by_classic["silver"]
    assert runs.by_connect["bronze"]["rows"] == runs.by_classic["bronze"]["rows"] > 0


def test_run_on_a_connect_server_builds_the_classic_runs_tables(runs: Runs) -> None:
    theirs, ours = Warehouse(Location.of(str(runs.classic))).tables(), Warehouse(Location.of(str(runs.remote))).tables()
    assert theirs.keys() == ours.keys() and len(theirs) >= 7
    for name in theirs:
        expected = deltalake.DeltaTable(str(theirs[name])).to_pyarrow_table()
        actual = deltalake.DeltaTable(str(ours[name])).to_pyarrow_table()
        assert actual.num_rows == expected.num_rows > 0, name
        assert as_multiset(actual, drop=("_ingested_at",)) == as_multiset(expected, drop=("_ingested_at",)), name
