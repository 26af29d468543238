"""A Spark Connect server that does not see the client's local paths is refused by name.

The server runs with a tmpfs over the table's directory (``ConnectServer(hidden=...)``):
the client sees the table, the server an empty folder, as a server on another machine
would. Reads and writes must fail with sparkdelta's error, not read nothing or write
files where the client cannot commit them.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest
from connect_server import ConnectServer

# Their child JVMs start from an archive of their classes (tests/class_archives.py).
pytestmark = pytest.mark.usefixtures("jvm_class_archive")

CLIENT = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession
    import sparkdelta

    spark = sparkdelta.configure(SparkSession.builder.remote(sys.argv[1])).getOrCreate()
    for name, act in [
        ("read", lambda: spark.read.format("delta").load(sys.argv[2]).count()),
        ("write", lambda: spark.range(3).write.format("delta").save(sys.argv[3])),
    ]:
        try:
            act()
            print(name, "succeeded")
        except Exception as error:
            print(name, type(error).__name__, str(error).splitlines()[0])
    """
)


def test_a_server_that_does_not_see_the_clients_paths_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    existing, new = shared / "existing", shared / "new"
    deltalake.write_deltalake(str(existing), pa.table({"id": [1, 2, 3]}))
    server = ConnectServer(tmp_path, hidden=shared)
    try:
        done = subprocess.run(
            [sys.executable, "-c", CLIENT, server.url, str(existing), str(new)], capture_output=True, text=True, timeout=600
        )
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.strip().splitlines()[-2:])
    for name, location in (("read", existing), ("write", new)):
        assert lines[name].startswith(f"DeltaIllegalArgumentException {location}: the Spark Connect server does not see"), lines
    assert not (new / "_delta_log").exists()  # nothing committed
    assert deltalake.DeltaTable(str(existing)).version() == 0
