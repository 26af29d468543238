"""delta-spark, the reference implementation, as a test oracle in a subprocess.

``scripts/setup_deltaspark.sh`` makes its venv (delta-spark and the pyspark it pins) and
fetches its jars; :class:`DeltaSpark` starts ``deltaspark_server.py`` there and runs
snippets in it. sparkdelta's own session and venv never see delta-spark.
"""

from __future__ import annotations

import hashlib
import pickle
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from multiprocessing.connection import Listener
from pathlib import Path
from typing import Any

from connect_server import classic_environment
from deltaspark_server import plain, rows

REPO = Path(__file__).resolve().parent.parent
SERVER = Path(__file__).resolve().parent / "deltaspark_server.py"

__all__ = ["DeltaSpark", "DeltaSparkError", "in_background", "keep", "plain", "rows", "setup_deltaspark"]


class DeltaSparkError(Exception):
    """An exception raised by delta-spark, with its class name as delta-spark's Python saw it."""

    def __init__(self, kind: str, message: str, trace: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.trace = trace


def setup_deltaspark() -> tuple[str, str]:
    """The delta-spark venv's python and its jars (``scripts/setup_deltaspark.sh``)."""
    done = subprocess.run([str(REPO / "scripts" / "setup_deltaspark.sh")], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"scripts/setup_deltaspark.sh failed:\n{done.stderr}")
    python, jars = done.stdout.strip().splitlines()[-2:]
    return python, jars


def keep(path: Path, value: Any) -> None:
    """``value`` pickled at ``path``, whole or not at all (written aside, then renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".part").write_bytes(pickle.dumps(value))
    path.with_suffix(".part").replace(path)


def in_background(work: Callable[[], Any]) -> Future[Any]:
    """``work()`` in a daemon thread; its result or exception in the future."""
    future: Future[Any] = Future()

    def run() -> None:
        try:
            future.set_result(work())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            future.set_exception(exc)

    threading.Thread(target=run, daemon=True).start()
    return future


class DeltaSpark:
    """A delta-spark session in its own process. :meth:`run` executes a snippet there with
    ``spark``, ``DeltaTable``, ``F``, ``rows`` and the given variables in scope, and returns
    its ``result``. One request at a time; :meth:`submit` runs one in the background."""

    def __init__(
        self, workdir: Path, time_zone: str = "UTC", answers: Path | None = None, jvm_options: str | None = None
    ) -> None:
        """``jvm_options``: its JVM's ``SPARK_SUBMIT_OPTS`` instead of this process's."""
        self._kept_answers = answers
        python, jars = setup_deltaspark()
        authkey = secrets.token_bytes(16)
        self._listener = Listener(("127.0.0.1", 0), authkey=authkey)
        host, port = self._listener.address
        workdir.mkdir(parents=True, exist_ok=True)
        self._log = open(workdir / "delta-spark.log", "wb")  # noqa: SIM115 - closed in close()
        self.log_path = workdir / "delta-spark.log"
        self._process = subprocess.Popen(
            [python, str(SERVER), f"{host}:{port}", authkey.hex(), jars, str(workdir), time_zone],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=classic_environment(exclude={"PYSPARK_PYTHON", "PYTHONPATH", "SPARK_HOME"})
            | {"PYSPARK_PYTHON": python}
            | ({} if jvm_options is None else {"SPARK_SUBMIT_OPTS": jvm_options}),
            cwd=workdir,
        )
        self._connection = self._accept(timeout=300)
        status, self.spark_version = self._connection.recv()
        assert status == "ready"
        self._lock = threading.Lock()

    def _accept(self, timeout: float) -> Any:
        """The server's connection, or an error pointing at its log once it exits or stalls."""
        socket = self._listener._listener._socket  # type: ignore[attr-defined]
        socket.settimeout(1)
        deadline = time.monotonic() + timeout
        while self._process.poll() is None and time.monotonic() < deadline:
            try:
                return self._listener.accept()
            except TimeoutError:
                continue
        self._process.kill()
        raise RuntimeError(f"delta-spark did not start; see {self.log_path}:\n{self.log_path.read_text()[-3000:]}")

    def run(self, code: str, **variables: Any) -> Any:
        """Run ``code`` in delta-spark's session and return its ``result``."""
        with self._lock:
            self._connection.send((code, variables))
            status, payload = self._connection.recv()
        if status == "error":
            raise DeltaSparkError(*payload)
        return payload

    def answer(self, code: str, path: Path, **variables: Any) -> Any:
        """:meth:`run` of ``code`` that builds its own table at ``path`` (``path=`` in its scope, a
        folder of the test's) and answers from nothing else than ``code`` and ``variables``.

        With a folder for kept answers (the passes' shared folder of a ``scripts/test.sh``
        run), the first pass's answer is kept there and the other pass reads it instead of
        asking delta-spark again: its answer cannot depend on which kind of session sparkdelta's side runs on.
        """
        key = hashlib.sha256(repr((code, sorted(variables.items()), self.spark_version)).encode()).hexdigest()
        kept = None if self._kept_answers is None else self._kept_answers / f"{key}.pickle"
        if kept is not None and kept.exists():
            return pickle.loads(kept.read_bytes())  # noqa: S301 - written by this run's other pass
        result = self.run(code, path=str(path), **variables)
        assert str(path) not in repr(result), "an answer naming its test's folder cannot be kept for another test"
        if kept is not None:
            keep(kept, result)
        return result

    def submit(self, code: str, **variables: Any) -> Future[Any]:
        """:meth:`run` in a thread, for writers racing sparkdelta's."""
        return in_background(lambda: self.run(code, **variables))

    def sql_rows(self, query: str) -> list[tuple[Any, ...]]:
        """A SQL query's rows, sorted and plain."""
        return self.run("result = rows(spark.sql(query))", query=query)

    def close(self) -> None:
        try:
            self._connection.send(None)
            self._process.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self._process.kill()
        self._listener.close()
        self._log.close()


if __name__ == "__main__":  # a smoke run: python tests/deltaspark.py
    import tempfile

    oracle = DeltaSpark(Path(tempfile.mkdtemp()))
    print(oracle.spark_version, oracle.run("result = spark.range(3).count()"), file=sys.stderr)
    oracle.close()
