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


def test_a_slower_machine_stretches_the_limit_only_past_the_sharing_of_cores() -> None:
    two = _config(2)
    late = {"t::shared": 100.0, "t::slow": 130.0, "t::slower": 200.0}
    assert timing.failing(late, two, slowdown=0.5) == {"t::slow": 130.0, "t::slower": 200.0}  # a fast day: as before
    assert timing.failing(late, two, slowdown=1.8) == {"t::slow": 130.0, "t::slower": 200.0}  # within the sharing
    assert timing.failing(late, two, slowdown=2.5) == {"t::slower": 200.0}  # 150 s
    assert timing.failing({"t::over": 61.0}, _config(None), slowdown=1.0) == {"t::over": 61.0}


def test_the_pace_is_the_median_loop_over_its_time_alone_then() -> None:
    pace = timing._Pace()
    assert pace.slowdown() == 1.0  # nothing measured: the budget as it stands
    pace.samples = [timing.PACE_REFERENCE_SECONDS * f for f in (1.0, 3.0, 2.0)]
    assert pace.slowdown() == 2.0
    assert 0 < timing._Pace.loop_seconds() < 10  # the loop runs, and is timed in seconds
