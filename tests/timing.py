"""Where a test run's time goes, and the per-test budget (a pytest plugin, loaded by conftest).

Every run writes a record (JSON, under ``$SPARKDELTA_TEST_TIMES``, default ``.test-times/``,
one file per pass: ``classic.json`` or ``connect.json``, merged from the pytest-xdist
workers' parts when the pass runs on several): each test's setup, call and teardown; each
fixture's setup that took a second or more, with its scope and the test that paid for it; the child processes the run started (how many, and their lifetimes
summed: Spark drivers, example scripts, servers); and the pass's wall time. ``python tests/timing.py`` prints one summary line per record (``scripts/test.sh``
ends with them).

The budget: a test may take at most 60 s of wall time (setup, call and teardown), not
counting the session-wide services it happened to start first (the Spark session, a
Connect server, the delta-spark oracle, moto, Azurite), which every test shares, and
counting of a module's or class's fixture only its share: the fixture's setup divided by
the tests that use it (the delta-spark suite's one run, shared by each of its tests, costs
each a few seconds). A test over it fails the run, named; one that needs longer is a benchmark
(``benchmarks/``, marked ``slow``).

The budget is a test's time with the machine to itself. When a pass runs on several
pytest-xdist workers, each test shares the cores with the others' tests, and its wall time
grows up to the number of workers sharing a core: measured on two workers, the delta-spark
examples took 61 s that take 27 s alone. So a distributed pass reports every test over 60 s
and fails on those over 60 s times that sharing (``min(workers, cores)``); a pass in one
process (``SPARKDELTA_TEST_WORKERS=0 scripts/test.sh``, or plain pytest) holds the 60 s itself.

The 60 s are for this machine at the speed it had when the budget was set, and its speed
moves from day to day: the same commit's classic pass took 22.7 min one day and 57.0 the
next, every test two and a half times slower, and 13 tests failed the budget that passed it
the day before (BENCHMARKS.md, "Test suite"). So the pass is compared with a reference run
(``timing_reference.json``: each test file's seconds in a clean clone's ``.ci/run`` on a
day of the usual speed): the median, over the files both ran for 10 s or more, of this
pass's seconds over the reference's is the pass's slowdown, and the limit stretches by it
when it is over 1. A loop of Python additions timed during the pass was tried first and
does not do: on 2026-12-07 it ran twice as fast as on the reference days while the suite
ran at their speed. One file that slowed down moves a median of dozens not at all; a change
that slows every file alike reads here as a slower machine, which is for ``benchmarks/`` to
catch: this budget is for a single test grown too long.
"""

from __future__ import annotations

import json
import os
import subprocess
import statistics
import sys
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

BUDGET_SECONDS = 60.0
FIXTURE_FLOOR_SECONDS = 1.0  # fixture setups shorter than this are not recorded one by one
REFERENCE_MIN_SECONDS = 10.0  # files the reference ran for less are too short to time the machine by
REFERENCE_MIN_FILES = 5  # fewer files in common (a run of one folder) say nothing of the machine
REPO = Path(__file__).resolve().parent.parent
REFERENCE = Path(__file__).with_name("timing_reference.json")


def record_folder() -> Path:
    return Path(os.environ.get("SPARKDELTA_TEST_TIMES", REPO / ".test-times"))


@dataclass
class _Children:
    """Child processes the run started, and their lifetimes summed (start to observed exit)."""

    started: int = 0
    alive: float = 0.0


@dataclass
class _Record:
    began: float = field(default_factory=time.monotonic)
    tests: dict[str, dict[str, Any]] = field(default_factory=dict)
    fixtures: list[dict[str, Any]] = field(default_factory=list)
    children: _Children = field(default_factory=_Children)


_record = _Record()
_current_test: list[str] = [""]
_items: dict[str, pytest.Item] = {}  # this run's tests, by node id


def _track_children() -> None:
    """Count child processes and how long each lived, from ``Popen`` to the exit status it reports."""
    original_init = subprocess.Popen.__init__
    original_exit = subprocess.Popen._handle_exitstatus  # type: ignore[attr-defined]

    def init(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        self._sparkdelta_started = time.monotonic()  # type: ignore[attr-defined]
        original_init(self, *args, **kwargs)
        _record.children.started += 1

    def exited(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        original_exit(self, *args, **kwargs)
        started = self.__dict__.pop("_sparkdelta_started", None)
        if started is not None:
            _record.children.alive += time.monotonic() - started

    subprocess.Popen.__init__ = init  # type: ignore[method-assign]
    subprocess.Popen._handle_exitstatus = exited  # type: ignore[attr-defined]


def _worker() -> str | None:
    """This process's pytest-xdist worker id (``gw0``...), or ``None`` in a run of its own or the controller."""
    return os.environ.get("PYTEST_XDIST_WORKER")


def _distributing(config: pytest.Config) -> bool:
    """Whether this process is the pytest-xdist controller, whose tests run in worker processes."""
    return _worker() is None and config.pluginmanager.getplugin("dsession") is not None


def pytest_configure(config: pytest.Config) -> None:
    if not _distributing(config):  # the controller's children are the workers, counted by nobody
        _track_children()
    else:  # parts a killed run left behind
        for stale in record_folder().glob(f"{_pass_name(config)}.gw*.json"):
            stale.unlink()


def pytest_collection_finish(session: pytest.Session) -> None:
    _items.update((item.nodeid, item) for item in session.items)


def _sharers(fixture: str, scope: str, test: str) -> int:
    """How many of this run's tests use the fixture instance that ``test`` set up."""
    paying = _items.get(test)
    if paying is None or scope not in ("class", "module", "package"):
        return 1

    def same_instance(item: pytest.Item) -> bool:
        if scope == "package":
            return item.path.parent == paying.path.parent
        same_module = item.path == paying.path
        return same_module and (scope == "module" or getattr(item, "cls", None) is getattr(paying, "cls", None))

    return max(1, sum(1 for item in _items.values() if fixture in getattr(item, "fixturenames", ()) and same_instance(item)))


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> Generator[None, None, None]:
    began = time.monotonic()
    yield
    seconds = time.monotonic() - began
    if seconds >= FIXTURE_FLOOR_SECONDS:
        test = _current_test[0]
        _record.fixtures.append(
            {
                "fixture": fixturedef.argname,
                "scope": fixturedef.scope,
                "seconds": round(seconds, 3),
                "test": test,
                "shared_by": _sharers(fixturedef.argname, fixturedef.scope, test),
            }
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    _current_test[0] = item.nodeid
    yield
    _current_test[0] = ""


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    entry = _record.tests.setdefault(report.nodeid, {"outcome": "passed"})
    entry[report.when] = round(report.duration, 3)
    if report.failed:
        entry["outcome"] = "failed" if report.when == "call" else "error"
    elif report.skipped:
        entry["outcome"] = "skipped"


def _shared_setup(test: str) -> float:
    """Seconds of fixture setup a test paid for that are not its own cost: all of a session-wide
    service's, and of a module's or class's fixture what the other tests using it owe."""
    owed = 0.0
    for f in _record.fixtures:
        if f["test"] == test:
            owed += f["seconds"] if f["scope"] == "session" else f["seconds"] * (1 - 1 / f["shared_by"])
    return owed


def _budget_seconds(test: str, phases: dict[str, Any]) -> float:
    return sum(phases.get(p, 0.0) for p in ("setup", "call", "teardown")) - _shared_setup(test)


def sharing(config: pytest.Config) -> int:
    """How many tests share a core at most in this pass: 1 in one process, else the workers
    up to the cores (pytest-xdist's ``-n``, a count or ``auto``/``logical``)."""
    workers = getattr(config.option, "numprocesses", None) or 0
    cores = os.cpu_count() or 1
    count = cores if isinstance(workers, str) else int(workers)
    return max(1, min(count, cores))


def seconds_by_file(tests: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Each test file's seconds: its tests' setups, calls and teardowns summed."""
    summed: dict[str, float] = {}
    for test, phases in tests.items():
        path = test.split("::", 1)[0]
        summed[path] = summed.get(path, 0.0) + sum(phases.get(p, 0.0) for p in ("setup", "call", "teardown"))
    return summed


def slowdown(by_file: dict[str, float], reference: dict[str, float]) -> float:
    """How much slower this machine ran the pass than the reference run: the median ratio over
    the files both have (the reference's of 10 s or more); 1.0 when they share too few."""
    ratios = [by_file[path] / seconds for path, seconds in reference.items() if seconds >= REFERENCE_MIN_SECONDS and path in by_file]
    return round(statistics.median(ratios), 2) if len(ratios) >= REFERENCE_MIN_FILES else 1.0


def _slowdown(pass_name: str) -> float:
    reference = json.loads(REFERENCE.read_text())["seconds_by_file"].get(pass_name, {})
    return slowdown(seconds_by_file(_record.tests), reference)


def limit_seconds(config: pytest.Config, slowdown: float) -> float:
    """Past this a test fails the pass: the budget stretched by the sharing of cores, and by
    the machine's slowdown against the reference run where it is slower."""
    return BUDGET_SECONDS * sharing(config) * max(1.0, slowdown)


def failing(late: dict[str, float], config: pytest.Config, slowdown: float = 1.0) -> dict[str, float]:
    """The tests over budget that fail the pass: over the limit."""
    limit = limit_seconds(config, slowdown)
    return {test: seconds for test, seconds in late.items() if seconds > limit}


def over_budget() -> dict[str, float]:
    """Tests over the budget, and their seconds."""
    return {
        test: round(seconds, 1)
        for test, phases in _record.tests.items()
        if (seconds := _budget_seconds(test, phases)) > BUDGET_SECONDS and phases["outcome"] != "skipped"
    }


def _children_json() -> dict[str, float]:
    return {"started": _record.children.started, "alive_seconds": round(_record.children.alive, 1)}


def _pass_name(config: pytest.Config) -> str:
    return "connect" if config.getoption("--connect", default=False) else "classic"


def _merge_worker_parts(folder: Path, name: str) -> None:
    """Fold the workers' parts (their fixtures' setups and children; the controller has every
    test's report already) into this process's record, and remove them."""
    for part in sorted(folder.glob(f"{name}.gw*.json")):
        document = json.loads(part.read_text())
        _record.fixtures.extend(document["fixtures"])
        _record.children.started += document["children"]["started"]
        _record.children.alive += document["children"]["alive_seconds"]
        part.unlink()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    name = _pass_name(session.config)
    folder = record_folder()
    worker = _worker()
    if worker is not None:  # a part, for the controller to merge
        folder.mkdir(parents=True, exist_ok=True)
        part = {"fixtures": _record.fixtures, "children": _children_json()}
        (folder / f"{name}.{worker}.json").write_text(json.dumps(part))
        return
    if _distributing(session.config):
        _merge_worker_parts(folder, name)
    if not _record.tests:
        return
    folder.mkdir(parents=True, exist_ok=True)
    late, slower = over_budget(), _slowdown(name)
    document = {
        "pass": name,
        "wall_seconds": round(time.monotonic() - _record.began, 1),
        "slowdown": slower,
        "tests": _record.tests,
        "fixtures": _record.fixtures,
        "children": _children_json(),
        "over_budget": late,
    }
    (folder / f"{name}.json").write_text(json.dumps(document, indent=1))
    if failing(late, session.config, slower) and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    late = over_budget()
    if late:
        shared, slower = sharing(config), _slowdown(_pass_name(config))
        fails = failing(late, config, slower)
        terminalreporter.section(f"tests over the {BUDGET_SECONDS:.0f} s budget (benchmarks belong in benchmarks/)", red=True)
        terminalreporter.write_line(
            f"{shared} worker(s) sharing the cores, the files {slower:.2f} times the reference run's seconds: "
            f"a test fails the pass past {limit_seconds(config, slower):.0f} s (tests/timing.py)"
        )
        for test, seconds in sorted(late.items(), key=lambda kv: -kv[1]):
            why = "  FAILS the pass" if test in fails else "  (within the limit; over 60 s alone?)"
            terminalreporter.write_line(f"{seconds:7.1f} s  {test}{why}")


def summary_line(document: dict[str, Any]) -> str:
    """One line for a pass: tests by outcome, wall time, starting services, child processes."""
    outcomes: dict[str, int] = {}
    for phases in document["tests"].values():
        outcomes[phases["outcome"]] = outcomes.get(phases["outcome"], 0) + 1
    shared = [f for f in document["fixtures"] if f["scope"] == "session"]
    starts = sum(f["seconds"] for f in shared)
    slowest = ", ".join(f"{f['fixture']} {f['seconds']:.0f} s" for f in sorted(shared, key=lambda f: -f["seconds"])[:4])
    counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
    children = document["children"]
    late = f"; {len(document['over_budget'])} over the budget" if document["over_budget"] else ""
    pace = f", {document['slowdown']:.2f} times the reference's seconds" if "slowdown" in document else ""
    return (
        f"{document['pass']}: {len(document['tests'])} tests ({counts}) in {document['wall_seconds'] / 60:.1f} min{pace}; "
        f"{starts:.0f} s starting shared services ({slowest}); {children['started']} child processes, "
        f"{children['alive_seconds'] / 60:.1f} min alive in all{late}"
    )


if __name__ == "__main__":  # python tests/timing.py: the summary of the last run's passes
    for pass_name in ("classic", "connect"):
        path = record_folder() / f"{pass_name}.json"
        if path.exists():
            print(summary_line(json.loads(path.read_text())), file=sys.stdout)
