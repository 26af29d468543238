"""The suite's time record and budget (``tests/timing.py``): the rules a pass is judged by."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest
import timing


def _config(workers: object) -> pytest.Config:
    return types.SimpleNamespace(option=types.SimpleNamespace(numprocesses=workers))  # type: ignore[return-value]


def test_one_process_fails_a_test_over_the_budget_itself() -> None:
    assert timing.sharing(_config(None)) == 1
    assert timing.failing({"t::over": 61.0, "t::under": 59.0}, _config(None)) == {"t::over": 61.0}


def test_workers_sharing_the_cores_stretch_the_limit_by_their_sharing_only() -> None:
    two = _config(2)
    assert timing.sharing(two) == 2
    assert timing.failing({"t::shared": 100.0, "t::slow": 130.0}, two) == {"t::slow": 130.0}
    # More workers than cores share no more than the cores allow.
    assert timing.sharing(_config(64)) == (timing.os.cpu_count() or 1)


def test_the_controller_merges_and_removes_the_workers_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = timing._Record()
    monkeypatch.setattr(timing, "_record", record)
    fixture = {"fixture": "spark", "scope": "session", "seconds": 9.0, "test": "t::a", "shared_by": 1}
    for worker, started in (("gw0", 3), ("gw1", 4)):
        part = {"fixtures": [fixture], "children": {"started": started, "alive_seconds": 10.0}}
        (tmp_path / f"classic.{worker}.json").write_text(json.dumps(part))
    (tmp_path / "connect.gw0.json").write_text(json.dumps({"fixtures": [], "children": {"started": 1, "alive_seconds": 1}}))
    timing._merge_worker_parts(tmp_path, "classic")
    assert (record.children.started, record.children.alive, len(record.fixtures)) == (7, 20.0, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["connect.gw0.json"]


def test_a_slower_machine_stretches_the_limit_by_its_slowdown_against_the_reference() -> None:
    two = _config(2)
    late = {"t::shared": 100.0, "t::slow": 130.0, "t::slower": 200.0}
    assert timing.failing(late, two, slowdown=0.5) == {"t::slow": 130.0, "t::slower": 200.0}  # a faster day: as on the reference's
    assert timing.failing(late, two, slowdown=1.0) == {"t::slow": 130.0, "t::slower": 200.0}
    assert timing.failing(late, two, slowdown=1.5) == {"t::slower": 200.0}  # past 180 s
    assert timing.failing({"t::over": 61.0}, _config(None), slowdown=0.4) == {"t::over": 61.0}


def test_the_slowdown_is_the_median_ratio_over_the_files_both_runs_timed() -> None:
    tests = {
        "a.py::x": {"setup": 1.0, "call": 19.0, "teardown": 0.0},
        "a.py::y": {"call": 10.0},
        "b.py::x": {"call": 40.0},
        "c.py::x": {"call": 12.0},
        "d.py::x": {"call": 100.0},
        "e.py::x": {"call": 33.0},
        "f.py::x": {"call": 5.0},
    }
    by_file = timing.seconds_by_file(tests)
    assert by_file["a.py"] == 30.0
    # Ratios 2, 2, 1.2, 10 (one file much slower moves the median little), 3; f.py's 1 s reference is too short to count.
    reference = {"a.py": 15.0, "b.py": 20.0, "c.py": 10.0, "d.py": 10.0, "e.py": 11.0, "f.py": 1.0, "gone.py": 50.0}
    assert timing.slowdown(by_file, reference) == 2.0
    assert timing.slowdown({"a.py": 30.0}, reference) == 1.0  # one folder's run says nothing of the machine


def test_the_reference_names_files_of_this_suite_for_both_passes() -> None:
    reference = json.loads(timing.REFERENCE.read_text())["seconds_by_file"]
    assert set(reference) == {"classic", "connect"}
    for files in reference.values():
        assert len(files) >= timing.REFERENCE_MIN_FILES
        assert all((timing.REPO / path).is_file() for path in files)
