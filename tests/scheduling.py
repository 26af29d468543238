"""Which test files pytest-xdist hands to one worker together (a pytest plugin, loaded by conftest).

``scripts/test.sh`` distributes by file (``--dist loadfile``): a file's tests stay on one worker,
with its module's fixtures. A session fixture, though, is built by every worker that runs a test
using it. The lakehouse's tests share one that runs the pipeline three times (``baseline``, in
``tests/conftest.py``): on two workers it was built twice, 53 s and 45 s in a clean clone's run.
The files sharing such a fixture (``SHARING``) go to one worker as one unit.
"""

from __future__ import annotations

import pytest
from xdist.remote import Producer  # type: ignore[import-untyped]
from xdist.scheduler import LoadFileScheduling  # type: ignore[import-untyped]

# Files that use a session fixture too costly to build on each worker, by the fixture.
SHARING = {
    "tests/lakehouse/test_lakehouse.py": "baseline",
    "tests/lakehouse/test_lakehouse_stream.py": "baseline",
}


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or the fixture its file shares."""
    path = nodeid.split("::", 1)[0]
    return f"sharing {SHARING[path]}" if path in SHARING else path


class SharedFixtureScheduling(LoadFileScheduling):
    """``loadfile``, with the files of ``SHARING`` one unit per fixture."""

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> SharedFixtureScheduling | None:
    """Ours for ``--dist loadfile`` (``scripts/test.sh``); xdist's own for any other choice."""
    if config.getvalue("dist") != "loadfile":
        return None
    return SharedFixtureScheduling(config, log)
