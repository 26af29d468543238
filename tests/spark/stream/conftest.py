"""Delta streams under ``pytest --connect``.

The tests' Connect server has no sparkdelta (``tests/connect_server.py``), and a Delta
stream runs sparkdelta in the server's Python (``sparkdelta/spark/stream/server.py``), so
there every stream is refused by name. The tests of what streams do run on classic
sessions; under ``--connect`` only ``test_stream_connect.py`` runs: the refusal (the
streams themselves on a Connect server that has sparkdelta run in the classic suite, in a
child process with a server of its own).
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _streams_need_sparkdelta_on_the_server(request: pytest.FixtureRequest) -> None:
    if request.config.getoption("--connect") and request.node.path.name != "test_stream_connect.py":
        pytest.skip("the tests' Connect server has no sparkdelta: Delta streams are refused there (test_stream_connect.py)")
