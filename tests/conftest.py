"""One SparkSession for the whole test run (local[2]), created only if a test asks for it.

Its warehouse and Hive metastore live in a temporary directory, so tests never touch
(or depend on) a ``spark-warehouse`` or ``metastore_db`` in the working directory.

``pytest --connect`` makes that session a Spark Connect client of a local Connect server
(``connect_server.py``: pyspark's own, no extra jar, no sparkdelta on its side): the
tests given that use that session run a second time that way (``scripts/test.sh`` runs
both passes, the second over ``connect_suite.txt``). Tests of what only a classic session
has are marked ``classic_only``, and deselected there.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from class_archives import BASE_OPTIONS, class_archive, class_archive_later, submit_options
from deltaspark import DeltaSpark, setup_deltaspark

REPO = Path(__file__).resolve().parent.parent

# Where the time goes, and the per-test budget (tests/timing.py); the files pytest-xdist
# hands to one worker together (tests/scheduling.py).
pytest_plugins = ["timing", "scheduling"]

# Every JVM the tests start through spark-submit (this run's session, the delta-spark oracle,
# Connect servers, the examples' and the CLI's child processes, which inherit the environment)
# runs small queries once each, and is set up for that (class_archives.BASE_OPTIONS: C1 only,
# serial GC, no code cache sweeping). Measured on two interop cases: 183 s wall and 334 s of
# CPU before, 142 s and 177 s with the first two (BENCHMARKS.md, "Test suite"). Once the
# jvm_class_archive fixture has run, they also start from an archive of the classes a Delta
# workload loads (class_archives.py). A user's SPARK_SUBMIT_OPTS is kept as it is.
# (pytest-xdist's workers inherit the options this module set in the controller: those are ours.)
USER_SUBMIT_OPTS = os.environ.get("SPARK_SUBMIT_OPTS")
if USER_SUBMIT_OPTS is not None and USER_SUBMIT_OPTS.startswith(BASE_OPTIONS):
    USER_SUBMIT_OPTS = None
os.environ.setdefault("SPARK_SUBMIT_OPTS", BASE_OPTIONS)

# delta-spark's own tests, vendored verbatim: tests/compat/test_delta_spark_suite.py runs them
# in a process of their own (they build their own SparkContext).
collect_ignore_glob = ["compat/delta_spark/*"]


def catalog_configs(directory: Path) -> dict[str, str]:
    """Settings that put a session's warehouse and embedded metastore under ``directory``."""
    return {
        "spark.sql.warehouse.dir": str(directory / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={directory / 'metastore_db'};create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={directory}",
    }


def hadoop_aws_classpath() -> str | None:
    """Hadoop's S3A connector for the tests' Spark (``scripts/fetch_hadoop_aws.sh``, cached
    outside the repo), or ``None`` with a warning when it cannot be fetched: the ``s3a://``
    tests then fail saying so, and every other test runs."""
    try:
        done = subprocess.run(
            [str(REPO / "scripts" / "fetch_hadoop_aws.sh")],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHON": sys.executable},
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        warnings.warn(f"no hadoop-aws for Spark on s3a://: {exc} {getattr(exc, 'stderr', '')}", stacklevel=1)
        return None
    return done.stdout.strip().splitlines()[-1]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--connect", action="store_true", help="run the Spark tests on a local Spark Connect server")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "classic_only: needs a classic (py4j) session; deselected under --connect")
    config.addinivalue_line("markers", "connect_only: about Spark Connect sessions only; deselected without --connect")
    config.addinivalue_line(
        "markers",
        "connect_once_per(*params, key=None, reason): under --connect, one case of this parametrized test per distinct "
        "value of the parameters named (or of key(**params)); the others vary only what is the same on both kinds of "
        "session (reason says what)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--connect``, only tests that use the Spark session, less the classic-only ones."""
    if not config.getoption("--connect"):
        classic = [item for item in items if not item.get_closest_marker("connect_only")]
        if len(classic) < len(items):
            config.hook.pytest_deselected(items=[item for item in items if item.get_closest_marker("connect_only")])
            items[:] = classic
        return
    kept = _connect_cases(
        [item for item in items if "spark" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("classic_only")]
    )
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


def _connect_cases(items: list[pytest.Item]) -> list[pytest.Item]:
    """The first case of each ``connect_once_per`` test for each value of the parameters it names.

    A parametrized test whose parameters only vary the data, or what happens below the session
    (the kernel's storage faults, random seeds), reaches on Connect the same Connect-specific
    code in every case; the parameters it names choose a surface or a plan, and each of their
    values still runs there."""
    seen: set[tuple[Any, ...]] = set()
    kept = []
    for item in items:
        mark = item.get_closest_marker("connect_once_per")
        if mark is None:
            kept.append(item)
            continue
        if not mark.kwargs.get("reason"):
            raise pytest.UsageError(f"{item.nodeid}: connect_once_per needs reason=, what the other cases vary")
        params = item.callspec.params  # type: ignore[attr-defined]
        chosen = mark.kwargs["key"](**params) if mark.kwargs.get("key") else tuple(repr(params[name]) for name in mark.args)
        key = (item.path, item.originalname, chosen)  # type: ignore[attr-defined]
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


@pytest.fixture(scope="session")
def connect(request: pytest.FixtureRequest) -> bool:
    """Whether this run's session is a Spark Connect client (``pytest --connect``)."""
    return bool(request.config.getoption("--connect"))


def _archived_options(python: str, name: str, arguments: list[str]) -> str | None:
    """``SPARK_SUBMIT_OPTS`` for a JVM of ``python``'s pyspark that runs like workload ``name``
    (class_archives.py); None where the user's own are kept."""
    if USER_SUBMIT_OPTS is not None:
        return None
    return submit_options(class_archive(name, python, arguments))


@contextlib.contextmanager
def _submit_options(options: str | None) -> Iterator[None]:
    """This process's ``SPARK_SUBMIT_OPTS`` set to ``options`` while a JVM is launched from it."""
    before = os.environ.get("SPARK_SUBMIT_OPTS")
    if options is not None:
        os.environ["SPARK_SUBMIT_OPTS"] = options
    try:
        yield
    finally:
        if before is not None:
            os.environ["SPARK_SUBMIT_OPTS"] = before


@pytest.fixture(scope="session")
def jvm_class_archive() -> Iterator[None]:
    """The child JVMs started after this (examples, CLI runs, drivers of killed streams, which
    inherit this process's environment and have pyspark's own classpath) start from an
    archive of their classes (class_archives.py), once it is made: in a clean clone, while
    the tests go on."""
    if USER_SUBMIT_OPTS is not None:
        yield
        return
    archive, making = class_archive_later("sparkdelta", sys.executable, [])
    os.environ["SPARK_SUBMIT_OPTS"] = submit_options(archive)
    yield
    if making is not None:
        making.join()


@pytest.fixture(scope="session")
def spark(connect: bool, tmp_path_factory: pytest.TempPathFactory, jvm_class_archive: None) -> Iterator[pyspark.sql.SparkSession]:  # noqa: F821
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import sparkdelta

    # No web UI: no test reads it, and its listeners cost every job a little.
    configs = {**catalog_configs(tmp_path_factory.mktemp("catalog")), "spark.ui.enabled": "false"}
    classpath = hadoop_aws_classpath()
    if classpath:
        configs["spark.driver.extraClassPath"] = classpath
    server = None
    # This JVM's classpath has hadoop-aws first, so the children's archive does not fit it;
    # one of its own would cost more to make than its one start gains.
    with _submit_options(None if USER_SUBMIT_OPTS is not None else BASE_OPTIONS):
        if connect:
            from connect_server import ConnectServer

            server = ConnectServer(tmp_path_factory.mktemp("connect"), configs)
            builder = SparkSession.builder.remote(server.url)
        else:
            builder = SparkSession.builder.appName("sparkdelta-tests").master("local[2]")
            for key, value in configs.items():
                builder = builder.config(key, value)
        session = sparkdelta.configure(builder).getOrCreate()
    if not connect:
        session.sparkContext.setLogLevel("ERROR")
    session.conf.set("spark.sql.shuffle.partitions", "4")
    yield session
    session.stop()
    if server is not None:
        server.stop()


@pytest.fixture(scope="session")
def run_folder() -> Path | None:
    """A folder the passes of one ``scripts/test.sh`` run share (``$SPARKDELTA_TEST_RUN_FOLDER``, made
    empty by it for the run), for what one pass makes that the next may copy: delta-spark's own
    tables, which depend on nothing sparkdelta does. None under a plain pytest."""
    folder = os.environ.get("SPARKDELTA_TEST_RUN_FOLDER")
    return Path(folder) if folder else None


@pytest.fixture(scope="session")
def deltaspark(tmp_path_factory: pytest.TempPathFactory, run_folder: Path | None) -> Iterator[DeltaSpark]:
    """delta-spark, the reference implementation, in its own venv and process
    (``tests/deltaspark.py``): the oracle of the two-way conformance tests."""
    answers = None if run_folder is None else run_folder / "delta-spark-answers"
    python, jars = setup_deltaspark()
    oracle = DeltaSpark(
        tmp_path_factory.mktemp("delta-spark"), answers=answers, jvm_options=_archived_options(python, "delta-spark", [jars])
    )
    yield oracle
    oracle.close()


# Object-store endpoints on loopback (moto's S3 server, Azurite), for tests/kernel/test_object_stores.py.
from object_stores import azurite, moto_s3  # noqa: E402,F401


@pytest.fixture(scope="session")
def baseline(spark: pyspark.sql.SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Any:  # noqa: F821
    """The lakehouse tests' shared batch runs (``tests/lakehouse/lakehouse_baseline.py``), built
    once per session; the files that use it run on one pytest-xdist worker (``tests/scheduling.py``).
    Here, not in a ``tests/lakehouse/conftest.py``: the tests import this module as ``conftest``,
    and a second one would shadow it."""
    from lakehouse_baseline import build_baseline  # on the path once tests/lakehouse is collected

    return build_baseline(spark, tmp_path_factory.mktemp("lakehouse") / "warehouse")
