"""Run delta-spark's own Python tests against sparkdelta, in this process; write outcomes as JSON.

Usage: ``python run_delta_spark_suite.py OUT.json MODULE [MODULE ...] [--exclude ID ...]``;
with ``--list`` for OUT.json, print the modules' test ids without running them.
The vendored tests import ``delta.tables`` and ``delta.testing.utils`` unchanged:
``sparkdelta.compat`` serves ``delta``, and the vendored ``python/delta`` folder (delta-spark's
test helpers, which its pip package does not ship) is added to that package's search path.
"""

from __future__ import annotations

import json
import sys
import traceback
import unittest
from pathlib import Path

VENDORED = Path(__file__).parent / "delta_spark"


class Outcomes(unittest.TestResult):
    """Each test's outcome and, when it did not pass, the traceback's last lines."""

    def __init__(self) -> None:
        super().__init__()
        self.outcomes: dict[str, dict[str, str]] = {}

    def _record(self, test: unittest.TestCase, outcome: str, detail: str = "", err: object = None) -> None:
        error = ""
        if isinstance(err, tuple) and err[1] is not None:
            error = f"{type(err[1]).__name__}: {str(err[1])[:1500]}"
        self.outcomes[_test_id(test)] = {"outcome": outcome, "error": error, "detail": detail[-6000:]}

    def addSuccess(self, test: unittest.TestCase) -> None:
        self._record(test, "passed")

    def addFailure(self, test: unittest.TestCase, err: object) -> None:
        self._record(test, "failed", self._exc_info_to_string(err, test), err)  # type: ignore[arg-type]

    def addError(self, test: unittest.TestCase, err: object) -> None:
        self._record(test, "error", self._exc_info_to_string(err, test), err)  # type: ignore[arg-type]

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        self._record(test, "skipped", reason)


def _test_id(test: unittest.TestCase) -> str:
    """``module.Class.test`` with the module's ``delta.tests.`` prefix dropped."""
    return test.id().removeprefix("delta.tests.")


def _tests(suite: unittest.TestSuite) -> list[unittest.TestCase]:
    found: list[unittest.TestCase] = []
    for item in suite:
        found.extend(_tests(item) if isinstance(item, unittest.TestSuite) else [item])
    return found


def _selected(suite: unittest.TestSuite, excluded: set[str]) -> unittest.TestSuite:
    kept = unittest.TestSuite()
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            kept.addTest(_selected(item, excluded))
        elif _test_id(item) not in excluded:
            kept.addTest(item)
    return kept


def main(argv: list[str]) -> int:
    out, rest = Path(argv[0]), argv[1:]
    modules = rest[: rest.index("--exclude")] if "--exclude" in rest else rest
    excluded = set(rest[rest.index("--exclude") + 1 :]) if "--exclude" in rest else set()

    import sparkdelta.compat

    if not sparkdelta.compat.register():
        raise SystemExit("delta-spark is installed here; the compatibility suite needs sparkdelta's delta modules")
    import delta

    delta.__path__.append(str(VENDORED / "python" / "delta"))
    if str(out) == "--list":
        for module in modules:
            for test in _tests(unittest.defaultTestLoader.loadTestsFromName(f"delta.tests.{module}")):
                print(_test_id(test))
        return 0
    result = Outcomes()
    for module in modules:
        try:
            suite = unittest.defaultTestLoader.loadTestsFromName(f"delta.tests.{module}")
        except Exception:
            result.outcomes[f"{module}"] = {"outcome": "error", "detail": traceback.format_exc()}
            continue
        _selected(suite, excluded).run(result)
        out.write_text(json.dumps(result.outcomes, indent=1))  # what finished, should a later module crash
    out.write_text(json.dumps(result.outcomes, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
