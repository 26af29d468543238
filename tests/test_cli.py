"""The ``sparkdelta`` CLI, run as a user runs it: a subprocess, exit codes, stdout/stderr."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import deltalake
import pyarrow as pa
from oracles import conformance_root, delta_rs_files

import sparkdelta
from sparkdelta.cli_output import human_size


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparkdelta.cli", *args], capture_output=True, text=True, timeout=120, env=os.environ
    )


def delta_rs_table(path: Path) -> Path:
    deltalake.write_deltalake(str(path), pa.table({"id": [1, 2], "p": ["x y", None]}), partition_by=["p"])
    deltalake.write_deltalake(str(path), pa.table({"id": [3], "p": ["z"]}), mode="append", partition_by=["p"])
    return path


def kib(size: int) -> str:
    """``size`` bytes as the CLI prints sizes for people, computed here without its code (1 KiB to 1 MiB only)."""
    assert 1024 <= size < 1024 * 1024, size
    return f"{size / 1024:.1f} KiB"


def table_cell(output: str, metric: str, value: str) -> bool:
    """Whether a metrics table in ``output`` has ``value`` on ``metric``'s row."""
    return re.search(rf"(^|\W){re.escape(metric)}\W+{re.escape(value)}(\s|$)", output, re.MULTILINE) is not None


def data_sizes(paths: list[str]) -> int:
    return sum(Path(p).stat().st_size for p in paths)


def test_sizes_read_in_binary_units() -> None:
    cases = {
        0: "0 B",
        1023: "1023 B",
        1023.4: "1023 B",
        1023.6: "1.0 KiB",
        1024: "1.0 KiB",
        1536: "1.5 KiB",
        1024**2 - 1: "1.0 MiB",
    }
    cases |= {int(1.2 * 1024**2): "1.2 MiB", 5 * 1024**4: "5.0 TiB"}
    assert {size: human_size(size) for size in cases} == cases


def test_version_option_prints_the_package_version() -> None:
    result = run("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"sparkdelta {sparkdelta.__version__}\n"


def test_files_lists_the_active_paths_at_each_version(tmp_path: Path) -> None:
    path = delta_rs_table(tmp_path / "t")
    for version in (0, 1):
        result = run("files", str(path), "--version", str(version))
        assert result.returncode == 0, result.stderr
        assert sorted(unquote(p) for p in result.stdout.splitlines()) == delta_rs_files(path, version)


def test_describe_json_reports_log_facts(tmp_path: Path) -> None:
    path = delta_rs_table(tmp_path / "t")
    result = run("describe", str(path), "--json")
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    dt = deltalake.DeltaTable(str(path))
    assert facts["version"] == dt.version() == 1
    assert facts["metadata"]["id"] == dt.metadata().id
    assert facts["metadata"]["partitionColumns"] == ["p"]
    assert facts["numFiles"] == len(delta_rs_files(path)) == 3
    adds = dt.get_add_actions(flatten=True)
    assert facts["sizeInBytes"] == sum(adds.column("size_bytes").to_pylist())
    assert [f["name"] for f in facts["metadata"]["schema"]["fields"]] == ["id", "p"]
    text = run("describe", str(path))
    assert "partition columns: p" in text.stdout and "files:             3" in text.stdout
    assert f"size:              {kib(facts['sizeInBytes'])}\n" in text.stdout


def test_history_lists_commit_info_newest_first(tmp_path: Path) -> None:
    path = delta_rs_table(tmp_path / "t")
    result = run("history", str(path), "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    theirs = deltalake.DeltaTable(str(path)).history()
    assert [r["version"] for r in rows] == [1, 0]
    assert [r["operation"] for r in rows] == [h["operation"] for h in theirs]
    assert len(json.loads(run("history", str(path), "--limit", "1", "--json").stdout)) == 1


def test_history_shows_each_commits_metrics_for_people(tmp_path: Path) -> None:
    """delta-rs's OPTIMIZE keeps its file statistics as JSON objects in strings; sparkdelta's
    VACUUM START records a size as delta-spark does, a number in a string. Both read as text."""
    path = delta_rs_table(tmp_path / "t")
    for i in range(2):
        deltalake.write_deltalake(str(path), pa.table({"id": [10 + i], "p": ["z"]}), mode="append", partition_by=["p"])
    deltalake.DeltaTable(str(path)).optimize.compact()
    assert run("vacuum", str(path), "--retain-hours", "0", "--no-retention-check").returncode == 0
    theirs = {h["version"]: h for h in deltalake.DeltaTable(str(path)).history()}
    compacted = json.loads(theirs[4]["operationMetrics"]["filesRemoved"])
    doomed = int(theirs[5]["operationMetrics"]["sizeOfDataToDelete"])
    assert compacted["totalFiles"] == 3 and doomed == compacted["totalSize"]
    result = run("history", str(path))
    assert result.returncode == 0, result.stderr
    lines = {int(line.split()[0]): line for line in result.stdout.splitlines()[1:]}
    assert sorted(lines) == list(range(7))
    assert "{" not in result.stdout and "}" not in result.stdout
    assert result.stdout.splitlines()[0].split() == ["version", "timestamp", "operation", "parameters", "metrics"]
    assert f"filesRemoved=3 files totalling {kib(compacted['totalSize'])} (min " in lines[4]
    assert "numFilesRemoved=3" in lines[4] and "targetSize=100.0 MiB" in lines[4]
    assert "numFilesToDelete=3" in lines[5] and f"sizeOfDataToDelete={kib(doomed)}" in lines[5]
    assert "numDeletedFiles=3" in lines[6] and "status=COMPLETED" in lines[6]
    assert "num_added_files=2" in lines[0] and "mode=ErrorIfExists" in lines[0]
    raw = {r["version"]: r for r in json.loads(run("history", str(path), "--json").stdout)}
    assert raw[5]["operationMetrics"]["sizeOfDataToDelete"] == str(doomed)  # --json keeps the log's values


def test_commands_without_spark_import_neither_pyspark_nor_pandas(tmp_path: Path) -> None:
    """The installed ``sparkdelta`` command, loaded as its console script loads it, reads and
    maintains a table without importing either: they would cost more start-up than reading
    the log. VACUUM, RESTORE and DESCRIBE DETAIL are the kernel's commands, which Spark's wrap."""
    path = delta_rs_table(tmp_path / "t")
    probe = (
        "import sys\n"
        "from importlib.metadata import entry_points\n"
        "(script,) = entry_points(group='console_scripts', name='sparkdelta')\n"
        "sys.argv = ['sparkdelta', *sys.argv[1:]]\n"
        "try:\n"
        "    script.load()()\n"
        "except SystemExit as done:\n"
        "    assert not done.code, done.code\n"
        "print(sorted(m for m in sys.modules if m.partition('.')[0] in ('pyspark', 'pandas')), file=sys.stderr)\n"
    )
    commands = (
        ["files"],
        ["history"],
        ["describe"],
        ["detail"],
        ["vacuum", "--dry-run"],
        ["vacuum"],
        ["restore", "--version", "0"],
    )
    for command in commands:
        done = subprocess.run(
            [sys.executable, "-c", probe, *command, str(path)], capture_output=True, text=True, timeout=120, env=os.environ
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() or command == ["vacuum", "--dry-run"], done.stderr
        assert done.stderr.strip().splitlines()[-1] == "[]", f"sparkdelta {' '.join(command)} imported {done.stderr.strip()}"
    assert [h["operation"] for h in deltalake.DeltaTable(str(path)).history(3)] == ["RESTORE", "VACUUM END", "VACUUM START"]


def test_user_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    gap = conformance_root() / "tables" / "versions-not-contiguous"
    for args, words in (
        (("files", str(tmp_path / "missing")), "does not exist"),
        (("describe", str(gap)), "missing version 1"),
        (("files", str(conformance_root() / "tables" / "time-travel-start"), "--version", "9"), "latest version is 0"),
        (("describe", str(conformance_root() / "tables" / "deltalog-invalid-protocol-version")), "minReaderVersion=99"),
    ):
        result = run(*args)
        assert result.returncode != 0
        assert words in result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_vacuum_refuses_a_short_window_naming_the_flags_that_allow_it(tmp_path: Path) -> None:
    path = delta_rs_table(tmp_path / "t")
    refused = run("vacuum", str(path), "--retain-hours", "2.5", "--dry-run")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "retention of 2.5 hours, below the table's delta.deletedFileRetentionDuration of 168 hours" in refused.stderr
    assert "Give --retain-hours 168 or more, or add --no-retention-check" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    allowed = run("vacuum", str(path), "--retain-hours", "2.5", "--dry-run", "--no-retention-check")
    assert allowed.returncode == 0, allowed.stderr
    negative = run("vacuum", str(path), "--retain-hours", "-1", "--no-retention-check")
    assert (
        negative.returncode != 0 and "must not be negative" in negative.stderr and "--no-retention-check" not in negative.stderr
    )


def test_vacuum_dry_run_lists_the_files_or_says_there_is_nothing_to_delete(tmp_path: Path) -> None:
    path = delta_rs_table(tmp_path / "t")
    nothing = run("vacuum", str(path), "--dry-run")
    assert nothing.returncode == 0, nothing.stderr
    assert (nothing.stdout, nothing.stderr) == ("", "nothing to delete\n")
    deltalake.write_deltalake(str(path), pa.table({"id": [9], "p": ["z"]}), mode="overwrite", partition_by=["p"])
    dry = run("vacuum", str(path), "--retain-hours", "0", "--no-retention-check", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    listed = dry.stdout.splitlines()
    assert len(listed) == 3 and all(Path(f).exists() for f in listed)
    size = data_sizes(listed)
    assert dry.stderr == f"would delete 3 files ({kib(size)})\n"
    done = run("vacuum", str(path), "--retain-hours", "0", "--no-retention-check")
    assert done.returncode == 0, done.stderr
    assert table_cell(done.stdout, "numDeletedFiles", "3") and table_cell(done.stdout, "sizeOfDeletedData", kib(size))
    assert not any(Path(f).exists() for f in listed)
    assert run("vacuum", str(path), "--retain-hours", "0", "--no-retention-check", "--dry-run").stderr == "nothing to delete\n"


def test_vacuum_refuses_a_short_window_then_deletes_what_its_dry_run_listed(tmp_path: Path) -> None:
    path = delta_rs_table(tmp_path / "t")
    deltalake.write_deltalake(str(path), pa.table({"id": [9], "p": ["z"]}), mode="overwrite", partition_by=["p"])
    refused = run("vacuum", str(path), "--retain-hours", "0")
    assert refused.returncode != 0 and "retentionDurationCheck" in refused.stderr
    dry = run("vacuum", str(path), "--retain-hours", "0", "--no-retention-check", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    listed = json.loads(dry.stdout)["files"]
    assert len(listed) == 3 and all(Path(f).exists() for f in listed)
    size = data_sizes(listed)
    assert json.loads(dry.stdout)["sizeInBytes"] == size
    done = run("vacuum", str(path), "--retain-hours", "0", "--no-retention-check", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["numDeletedFiles"] == 3 and not any(Path(f).exists() for f in listed)
    assert json.loads(done.stdout)["sizeOfDeletedData"] == size
    assert deltalake.DeltaTable(str(path)).to_pyarrow_table().column("id").to_pylist() == [9]
    assert [h["operation"] for h in deltalake.DeltaTable(str(path)).history(2)] == ["VACUUM END", "VACUUM START"]


def test_restore_by_version(tmp_path: Path) -> None:
    path = delta_rs_table(tmp_path / "t")
    result = run("restore", str(path), "--version", "0", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["numRemovedFiles"] == 1
    assert sorted(deltalake.DeltaTable(str(path)).to_pyarrow_table().column("id").to_pylist()) == [1, 2]
    assert run("restore", str(path)).returncode != 0


def test_restore_reports_its_metrics_in_a_table_with_sizes_for_people(tmp_path: Path) -> None:
    path = delta_rs_table(tmp_path / "t")
    size = sum(deltalake.DeltaTable(str(path)).get_add_actions(flatten=True).column("size_bytes").to_pylist())
    deltalake.write_deltalake(str(path), pa.table({"id": [9], "p": ["z"]}), mode="overwrite", partition_by=["p"])
    result = run("restore", str(path), "--version", "1")
    assert result.returncode == 0, result.stderr
    assert table_cell(result.stdout, "numRestoredFiles", "3") and table_cell(result.stdout, "tableSizeAfterRestore", kib(size))
    assert table_cell(result.stdout, "restoredFilesSize", kib(size))


def test_optimize_compacts_with_spark_and_reports_a_table(tmp_path: Path) -> None:
    """Text: a table of the metrics, the removed and added files' statistics spelled out with
    sizes for people (the summary nests them as objects); ``--json``: the raw numbers."""
    path = delta_rs_table(tmp_path / "t")
    for i in range(3):
        for partition in ("z", "w"):
            deltalake.write_deltalake(str(path), pa.table({"id": [10 + i], "p": [partition]}), mode="append", partition_by=["p"])
    adds = pa.table(deltalake.DeltaTable(str(path)).get_add_actions(flatten=True)).to_pylist()
    sizes = {p: [a["size_bytes"] for a in adds if a["partition.p"] == p] for p in ("z", "w")}
    assert (len(sizes["z"]), len(sizes["w"])) == (4, 3)
    text = run("optimize", str(path), "--where", "p = 'z'", "--master", "local[1]")
    assert text.returncode == 0, text.stderr
    assert "{" not in text.stdout and "Result(" not in text.stdout
    assert table_cell(text.stdout, "numFilesRemoved", "4") and table_cell(text.stdout, "numFilesAdded", "1")
    assert table_cell(text.stdout, "filesRemoved", f"4 files totalling {kib(sum(sizes['z']))} (min")
    assert re.search(r"filesAdded\W+1 file totalling \d+ B\s", text.stdout), text.stdout
    result = run("optimize", str(path), "--where", "p = 'w'", "--master", "local[1]", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["numFilesRemoved"] == 3 and summary["filesRemoved"]["totalSize"] == sum(sizes["w"])
    ids = sorted(deltalake.DeltaTable(str(path)).to_pyarrow_table().column("id").to_pylist())
    assert ids == [1, 2, 3, 10, 10, 11, 11, 12, 12]
