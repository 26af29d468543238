"""The order in which pytest-xdist hands test files to its workers (a pytest plugin, loaded by
conftest): the longest first, and files that share an expensive session fixture together.

xdist's ``loadfile`` hands out files by their number of tests, most first. A pass ends when its
last worker does, so a long file of few tests handed out late (delta-spark's examples: 10 tests,
four minutes) runs on alone while the other workers, done, leave a core idle. Handed out by
their seconds in the reference run (``timing_reference.json``), longest first, the files leave
the short ones for the end, which is how a pass's tail is kept short (longest processing time
first). A file the reference does not know is taken at ``UNKNOWN_SECONDS_PER_TEST`` a test.

The lakehouse's tests share one session fixture that runs the pipeline three times
(``baseline``, in ``tests/conftest.py``): on two workers it was built twice, 53 s and 45 s in a
clean clone's run. Their files go to one worker as one unit (``SHARING``).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path

import pytest
from xdist.remote import Producer  # type: ignore[import-untyped]
from xdist.scheduler import LoadFileScheduling  # type: ignore[import-untyped]
from xdist.workermanage import WorkerController  # type: ignore[import-untyped]

REFERENCE = Path(__file__).with_name("timing_reference.json")
UNKNOWN_SECONDS_PER_TEST = 1.0
# Files that use a session fixture too costly to build on each worker, by the fixture.
SHARING = {
    "tests/lakehouse/test_lakehouse.py": "baseline",
    "tests/lakehouse/test_lakehouse_stream.py": "baseline",
}


def reference_seconds(pass_name: str) -> dict[str, float]:
    """Each test file's seconds in the reference run's pass of that name."""
    return dict(json.loads(REFERENCE.read_text())["seconds_by_file"].get(pass_name, {}))


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or the fixture its file shares."""
    path = nodeid.split("::", 1)[0]
    return f"sharing {SHARING[path]}" if path in SHARING else path


def longest_first(units: dict[str, list[str]], seconds: dict[str, float]) -> list[str]:
    """The units in the order to hand them out: by their files' reference seconds, most first."""

    def estimate(unit: str) -> float:
        files: dict[str, int] = {}
        for nodeid in units[unit]:
            path = nodeid.split("::", 1)[0]
            files[path] = files.get(path, 0) + 1
        return sum(seconds.get(path, tests * UNKNOWN_SECONDS_PER_TEST) for path, tests in files.items())

    return sorted(units, key=lambda unit: (-estimate(unit), unit))


class LongestFirstScheduling(LoadFileScheduling):
    """``loadfile``, with the units and their order above."""

    def __init__(self, config: pytest.Config, log: Producer, seconds: dict[str, float]) -> None:
        super().__init__(config, log)
        self._seconds = seconds
        self._ordered = False

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)

    def _assign_work_unit(self, node: WorkerController) -> None:
        # xdist fills its queue of units, then hands out the first: order it in between.
        if not self._ordered:
            queue: OrderedDict[str, dict[str, bool]] = self.workqueue
            for unit in longest_first({unit: list(tests) for unit, tests in queue.items()}, self._seconds):
                queue.move_to_end(unit)
            self._ordered = True
        super()._assign_work_unit(node)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> LongestFirstScheduling | None:
    """Ours for ``--dist loadfile`` (``scripts/test.sh``); xdist's own for any other choice."""
    if config.getvalue("dist") != "loadfile":
        return None
    return LongestFirstScheduling(config, log, reference_seconds("connect" if config.getoption("--connect") else "classic"))
