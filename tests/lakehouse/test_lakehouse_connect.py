"""The main job on Spark Connect: ``lakehouse run --remote`` builds the same tables as a
classic run, on a stock Connect server that cannot import sparkdelta.

Both runs are the ``lakehouse`` command in a process of its own, on the same generated
feed (the landing files are copied, so both read identical bytes); every table is then
read back by delta-rs and compared row for row (ingestion times aside).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import deltalake
from connect_server import ConnectServer, classic_environment
from lakehouse_oracle import as_multiset

from sparkdelta.lakehouse.warehouse import Location, Warehouse

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


def test_run_on_a_connect_server_builds_the_classic_runs_tables(tmp_path: Path) -> None:
    classic, remote = tmp_path / "classic", tmp_path / "remote"
    generated = subprocess.run(
        [sys.executable, "-c", _MAIN, "generate", "--warehouse", str(classic), "--first-day", "0", *FEED,
         "--master", "local[2]"],
        capture_output=True, text=True, timeout=600, env=classic_environment(),
    )  # fmt: skip
    assert generated.returncode == 0, generated.stderr[-3000:]
    shutil.copytree(classic / "landing", remote / "landing")

    by_classic = _lakehouse("run", "--warehouse", str(classic), "--master", "local[2]", *FEED)
    server = ConnectServer(tmp_path)
    try:
        by_connect = _lakehouse("run", "--warehouse", str(remote), "--remote", server.url, *FEED)
    finally:
        server.stop()

    assert by_connect["versions"] == by_classic["versions"] and by_connect["silver"] == by_classic["silver"]
    assert by_connect["bronze"]["rows"] == by_classic["bronze"]["rows"] > 0
    theirs, ours = Warehouse(Location.of(str(classic))).tables(), Warehouse(Location.of(str(remote))).tables()
    assert theirs.keys() == ours.keys() and len(theirs) >= 7
    for name in theirs:
        expected = deltalake.DeltaTable(str(theirs[name])).to_pyarrow_table()
        actual = deltalake.DeltaTable(str(ours[name])).to_pyarrow_table()
        assert actual.num_rows == expected.num_rows > 0, name
        assert as_multiset(actual, drop=("_ingested_at",)) == as_multiset(expected, drop=("_ingested_at",)), name
