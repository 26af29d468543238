"""A stock Spark Connect server for the tests and benchmarks: pyspark's own, no extra jar.

``SparkSession.builder.remote("local[2]")`` would run the server inside the test process
(on the fixed port 15002, and with a JVM in the client). This starts it as a process of
its own instead, as a cluster runs it (``spark-submit`` of ``SparkConnectServer``, what
``start-connect-server.sh`` runs), on a free port, so the client is a pure gRPC client.

Its Python workers cannot import sparkdelta (a ``sitecustomize`` refuses it): the server
has nothing of sparkdelta installed, as on a managed Spark.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import pyspark

_BLOCKER = '''"""Spark Connect test server: sparkdelta is not installed here."""
import importlib.abc
import sys


class _NoSparkdelta(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "sparkdelta" or name.startswith("sparkdelta."):
            raise ImportError(f"{name}: sparkdelta is not installed on this Spark Connect server")
        return None


sys.meta_path.insert(0, _NoSparkdelta())
'''


# What a Spark Connect client leaves in its process's environment (pyspark's own markers): a
# child process inheriting them would build Connect sessions where it asks for classic ones.
CONNECT_MARKERS = frozenset({"SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE", "SPARK_API_MODE"})


def classic_environment(exclude: frozenset[str] | set[str] = frozenset()) -> dict[str, str]:
    """This process's environment for a child that builds classic sessions: without the
    Connect markers (and ``exclude``)."""
    return {key: value for key, value in os.environ.items() if key not in CONNECT_MARKERS | set(exclude)}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ConnectServer:
    """A local Spark Connect server process; ``url`` is what ``SparkSession.builder.remote`` takes."""

    def __init__(
        self, workdir: Path, configs: Mapping[str, str] | None = None, master: str = "local[2]", hidden: Path | None = None
    ) -> None:
        """``hidden``: a directory the server sees empty (a tmpfs over it in a mount namespace of
        its own, ``unshare``), as a server on another machine sees the client's local paths."""
        self.port = _free_port()
        self.url = f"sc://localhost:{self.port}"
        blocker = Path(tempfile.mkdtemp(dir=workdir))
        (blocker / "sitecustomize.py").write_text(_BLOCKER)
        spark_home = Path(pyspark.__file__).parent
        command = [
            str(spark_home / "bin" / "spark-submit"),
            "--class",
            "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--master",
            master,
            "--name",
            "sparkdelta-tests-connect",
            "--conf",
            f"spark.connect.grpc.binding.port={self.port}",
        ]
        for key, value in (configs or {}).items():
            command += ["--conf", f"{key}={value}"]
        if hidden is not None:
            command = ["unshare", "--mount", "sh", "-c", f'mount -t tmpfs none "{hidden}" && exec "$@"', "sh", *command]
        env = {
            **os.environ,
            "SPARK_HOME": str(spark_home),
            "PYSPARK_PYTHON": sys.executable,
            "PYTHONPATH": str(blocker),
        }
        env.pop("SPARK_REMOTE", None)
        self.log = workdir / "connect-server.log"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=workdir)
        self._wait()

    def _wait(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Spark Connect server exited ({self.process.returncode}): see {self.log}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the Spark Connect server did not listen on port {self.port} in {timeout:.0f} s: see {self.log}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
