"""delta-spark's own Python tests, unmodified, against sparkdelta: each must pass, or be excluded here with its reason.

The tests (``delta_spark/python/delta/tests``, vendored from delta-io/delta v4.4.0, the
Python API of delta-spark 4.4.1) import ``delta.tables`` and build their sessions with
delta-spark's JVM settings, as users' code does. ``run_delta_spark_suite.py`` runs them in
a process of their own, with ``sparkdelta.compat`` serving the ``delta`` modules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# Their child JVMs start from an archive of their classes (tests/class_archives.py).
pytestmark = pytest.mark.usefixtures("jvm_class_archive")

HERE = Path(__file__).parent
RUNNER = HERE / "run_delta_spark_suite.py"
SRC = HERE.parents[1] / "src"
MODULES = ["test_deltatable", "test_sql", "test_pip_utils", "test_version", "test_exceptions", "test_exceptions_init"]

_JVM_EXCEPTIONS = "raises delta-spark's JVM exception classes through py4j (self.spark.sparkContext._jvm.io.delta...)"
_CONVERSION = "checks that delta-spark patched pyspark's py4j exception conversion; sparkdelta raises Python exceptions directly"
EXCLUDED: dict[str, str] = {
    "test_deltatable.DeltaTableTests.test_verify_paritionedBy_compatibility": (
        "replaces the builder's JVM object (tableBuilder._jbuilder), which sparkdelta's builder does not have"
    ),
    "test_deltatable.DeltaTableTests.test_dropFeatureSupport": (
        "adds delta-spark's test-only table features testRemovableWriter and testRemovableReaderWriter, which "
        "delta-spark itself registers only when its JVM runs its own tests"
    ),
    "test_pip_utils.PipUtilsCustomJarsTests.test_maven_jar_loaded": (
        "downloads delta-spark's jar (io.delta:delta-spark) through spark.jars.packages and reads the version of "
        "the delta_spark distribution: it tests delta-spark's installation, which sparkdelta replaces"
    ),
    **{
        f"test_exceptions.DeltaExceptionTests.test_capture_{name}": _JVM_EXCEPTIONS
        for name in (
            "concurrent_write_exception",
            "metadata_changed_exception",
            "protocol_changed_exception",
            "concurrent_append_exception",
            "concurrent_delete_read_exception",
            "concurrent_delete_delete_exception",
            "concurrent_transaction_exception",
            "delta_analysis_exception",
            "delta_illegal_argument_exception",
        )
    },
    "test_exceptions.DeltaExceptionTests.test_assert_classic_mode": "in test_exceptions, whose every test uses the JVM",
    "test_exceptions_init.DeltaClassicExceptionConversionInstalledTests.test_importing_delta_installs_conversion": _CONVERSION,
    "test_exceptions_init.DeltaClassicExceptionConversionInstalledTests.test_convert_exception_is_patched": _CONVERSION,
}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}


def suite_tests() -> list[str]:
    """Every test id of the vendored modules, as the runner names them."""
    listed = subprocess.run(
        [sys.executable, str(RUNNER), "--list", *MODULES], capture_output=True, text=True, env=_env(), check=True, timeout=120
    )
    return list(dict.fromkeys(listed.stdout.split()))  # a base class's tests appear once per module


ALL_TESTS = suite_tests()


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Run the suite once (its own SparkContexts, in a child process) and read each test's outcome."""
    out = tmp_path_factory.mktemp("delta-spark-suite") / "outcomes.json"
    done = subprocess.run(
        [sys.executable, str(RUNNER), str(out), *MODULES, "--exclude", *EXCLUDED],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=out.parent,
        timeout=1800,
        check=False,
    )
    assert out.exists(), done.stderr[-4000:]
    result: dict[str, dict[str, Any]] = json.loads(out.read_text())
    return result


def test_exclusions_name_real_tests() -> None:
    assert set(EXCLUDED) <= set(ALL_TESTS)


@pytest.mark.parametrize("test_id", [t for t in ALL_TESTS if t not in EXCLUDED], ids=str)
def test_delta_spark_test_passes(test_id: str, outcomes: dict[str, dict[str, Any]]) -> None:
    outcome = outcomes.get(test_id, {"outcome": "not run", "error": "", "detail": ""})
    assert outcome["outcome"] == "passed", f"{outcome['error']}\n{outcome['detail']}"
