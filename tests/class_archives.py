"""Class-data-sharing archives for the tests' JVMs: each starts from the classes a workload
loaded, already parsed and verified, instead of reading them from Spark's jars again.

A JVM of pyspark's parses and verifies some 15,000 classes before and during its first
queries, and the suite starts dozens that do little else: the examples', the delta-spark
suite's and the killed streams' drivers, the oracle. With an archive of the classes a short
Delta workload loads (``class_archive_workload.py``), a session's start and first job took
2.9 s of wall time and 3 s of CPU here against 5.1 s and 5 s, and each of delta-spark's
examples ran 3.5-4 s faster (BENCHMARKS.md, "Test suite"). The tests' own session, whose
classpath has hadoop-aws first, starts once per pass and goes without.

An archive is made once per JVM, classpath and workload (``jcmd VM.cds dynamic_dump`` from
the workload's own JVM, written aside and renamed), and kept in the venv whose pyspark jars
it holds classes of (a clean clone's ``.venv``; the delta-spark venv in sparkdelta's cache). The JVM checks that its classpath and jars are the ones of the
archive and quietly ignores an archive that does not match; a JVM given a missing archive
file starts without sharing at all, and a torn one would crash it, so an archive file only
appears under its name once it is whole and a JVM has opened it. Nothing here touches what the tests test: the
same classes, from the same jars, only loaded faster. A failure to make an archive is a
warning, and the tests then run without one.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pyspark
from connect_server import classic_environment

HERE = Path(__file__).resolve().parent
WORKLOAD = HERE / "class_archive_workload.py"
# Every JVM the tests start through spark-submit runs small queries once each: C2 compiling
# their code costs more CPU than it saves, G1's concurrent threads compete for the 2 cores,
# and the code cache's sweeper, freeing compiled code no longer run, took 7 % of a session's
# CPU; a code cache as large as the JVM would fill is kept whole (BENCHMARKS.md, "Test suite").
BASE_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UseCodeCacheFlushing -XX:ReservedCodeCacheSize=512m"
# The JVM reports every class it cannot archive, or an archive that does not match its classpath.
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def _spark_jars(python: str) -> Path:
    if os.path.abspath(python) == os.path.abspath(sys.executable):  # not resolved: venvs link one interpreter
        return Path(pyspark.__file__).parent / "jars"
    found = subprocess.run(
        [python, "-c", "import pyspark, pathlib; print(pathlib.Path(pyspark.__file__).parent / 'jars')"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(found.stdout.strip())


def _digest(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _archive_path(name: str, python: str, arguments: list[str]) -> Path:
    """Where the archive goes: in the venv of ``python``, whose jars it holds classes of (it
    goes with them); named by its workload and arguments, then by what else it depends on (the
    JVM, the jars, the workload's code), so that a new one replaces the old."""
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=True).stderr
    jars = _spark_jars(python)
    listing = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in jars.iterdir())
    depends = _digest(java, BASE_OPTIONS, str(jars), repr(listing), WORKLOAD.read_text())
    venv = Path(os.path.abspath(python)).parent.parent
    return venv / "jvm-class-archives" / f"{name}-{_digest(*arguments)}-{depends}.jsa"


def _opens(archive: Path) -> bool:
    """Whether a JVM starts with ``archive`` (a torn one crashes it)."""
    done = subprocess.run(
        ["java", f"-XX:SharedArchiveFile={archive}", *_QUIET.split(), "-version"], capture_output=True, check=False
    )
    return done.returncode == 0


def class_archive(name: str, python: str, arguments: list[str]) -> Path | None:
    """The archive of ``class_archive_workload.py NAME ... ARGUMENTS`` run by ``python``, made on
    first use; None when it cannot be made, with a warning saying why."""
    archive = _archive_path(name, python, arguments)
    return archive if archive.exists() or _make(archive, name, python, arguments) else None


def class_archive_later(name: str, python: str, arguments: list[str]) -> tuple[Path, threading.Thread | None]:
    """Where that archive is or will be, and the thread making it if it is not there yet.

    Nobody waits for it: making it takes a minute of a clean clone's run, which the tests'
    own work overlaps, and a JVM started before it is there starts without one (a JVM given
    a missing archive goes without sharing)."""
    archive = _archive_path(name, python, arguments)
    if archive.exists():
        return archive, None
    making = threading.Thread(target=_make, args=(archive, name, python, arguments), name=f"archive {name}", daemon=True)
    making.start()
    return archive, making


def _make(archive: Path, name: str, python: str, arguments: list[str]) -> bool:
    """Make ``archive``, by one process at a time (both pytest-xdist workers may ask first);
    whether it is there."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    variant = archive.name.rsplit("-", 1)[0]
    with open(archive.parent / f"{variant}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if archive.exists():
            return True
        torn = archive.with_suffix(".part")
        torn.unlink(missing_ok=True)
        # A classic session of ``python``'s own pyspark, whichever venv this process runs in.
        env = classic_environment(exclude={"PYTHONPATH", "SPARK_HOME"}) | {
            "SPARK_SUBMIT_OPTS": f"{BASE_OPTIONS} -XX:+RecordDynamicDumpInfo",
            "PYSPARK_PYTHON": python,
        }
        done = subprocess.run(
            [python, str(WORKLOAD), name, str(torn), *arguments], capture_output=True, text=True, env=env, check=False
        )
        if done.returncode != 0 or not torn.exists() or not _opens(torn):
            torn.unlink(missing_ok=True)
            warnings.warn(
                f"no JVM class archive {name}: the tests' JVMs load their classes from the jars\n{done.stderr[-2000:]}",
                stacklevel=1,
            )
            return False
        torn.replace(archive)
        for older in archive.parent.glob(f"{variant}-*.jsa"):
            if older != archive:
                older.unlink(missing_ok=True)
        return True


def submit_options(archive: Path | None) -> str:
    """``SPARK_SUBMIT_OPTS`` for a test JVM, with ``archive`` if there is one."""
    return BASE_OPTIONS if archive is None else f"{BASE_OPTIONS} -XX:SharedArchiveFile={archive} {_QUIET}"
