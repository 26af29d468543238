"""The ``sparkdelta`` CLI, run as a user runs it: a subprocess, exit codes, stdout/stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import deltalake
import pyarrow as pa
from oracles import conformance_root, delta_rs_files


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparkdelta.cli", *args], capture_output=True, text=True, timeout=120, env=os.environ
    )


def delta_rs_table(path: Path) -> Path:
    deltalake.write_deltalake(str(path), pa.table({"id": [1, 2], "p": ["x y", None]}), partition_by=["p"])
    deltalake.write_deltalake(str(path), pa.table({"id": [3], "p": ["z"]}), mode="append", partition_by=["p"])
    return path


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


def test_history_lists_commit_info_newest_first(tmp_path: Path) -> None:
    path = delta_rs_table(tmp_path / "t")
    result = run("history", str(path), "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    theirs = deltalake.DeltaTable(str(path)).history()
    assert [r["version"] for r in rows] == [1, 0]
    assert [r["operation"] for r in rows] == [h["operation"] for h in theirs]
    assert len(json.loads(run("history", str(path), "--limit", "1", "--json").stdout)) == 1


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


def test_vacuum_refuses_a_short_window_then_deletes_what_its_dry_run_listed(tmp_path: Path) -> None:
    path = delta_rs_table(tmp_path / "t")
    deltalake.write_deltalake(str(path), pa.table({"id": [9], "p": ["z"]}), mode="overwrite", partition_by=["p"])
    refused = run("vacuum", str(path), "--retain-hours", "0")
    assert refused.returncode != 0 and "retentionDurationCheck" in refused.stderr
    dry = run("vacuum", str(path), "--retain-hours", "0", "--no-retention-check", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    listed = json.loads(dry.stdout)["files"]
    assert len(listed) == 3 and all(Path(f).exists() for f in listed)
    done = run("vacuum", str(path), "--retain-hours", "0", "--no-retention-check", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["numDeletedFiles"] == 3 and not any(Path(f).exists() for f in listed)
    assert deltalake.DeltaTable(str(path)).to_pyarrow_table().column("id").to_pylist() == [9]
    assert [h["operation"] for h in deltalake.DeltaTable(str(path)).history(2)] == ["VACUUM END", "VACUUM START"]


def test_restore_by_version(tmp_path: Path) -> None:
    path = delta_rs_table(tmp_path / "t")
    result = run("restore", str(path), "--version", "0", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["numRemovedFiles"] == 1
    assert sorted(deltalake.DeltaTable(str(path)).to_pyarrow_table().column("id").to_pylist()) == [1, 2]
    assert run("restore", str(path)).returncode != 0


def test_optimize_compacts_with_spark(tmp_path: Path) -> None:
    path = delta_rs_table(tmp_path / "t")
    for i in range(3):
        deltalake.write_deltalake(str(path), pa.table({"id": [10 + i], "p": ["z"]}), mode="append", partition_by=["p"])
    result = run("optimize", str(path), "--where", "p = 'z'", "--master", "local[1]", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["numFilesRemoved"] == 4
    assert sorted(deltalake.DeltaTable(str(path)).to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3, 10, 11, 12]
