#!/usr/bin/env bash
# The test suite, in two passes: every test on classic sessions, then the public API's tests
# (tests/connect_suite.txt) again as a Spark Connect client of a local Connect server
# (pytest --connect). Arguments go to both passes instead (./scripts/test.sh tests/sql -x).
# Each pass runs on three pytest-xdist workers (a test file stays on one worker, with its module's
# fixtures and the fixed paths of delta-spark's examples; each worker starts the session-wide
# services it needs): on two, this machine's two cores sat idle about a seventh of a pass while
# tests waited on streams' triggers and child processes, and a third fills that (BENCHMARKS.md,
# "Test suite"); the lakehouse's two files share one worker and its pipeline runs
# (tests/scheduling.py). Each pass prints its 30 slowest tests and setups, and
# records every test's time in .test-times/ (tests/timing.py); the last lines sum up each pass.
# SPARKDELTA_TEST_WORKERS=0 runs a pass in one process. The passes share a temporary folder for
# what the second may copy from the first (delta-spark's own tables and its answers about them).
set -uo pipefail
cd "$(dirname "$0")/.."
export SPARKDELTA_TEST_TIMES="${SPARKDELTA_TEST_TIMES:-$PWD/.test-times}"
# What one pass makes for the next (tests/conftest.py, run_folder): this run's only.
SPARKDELTA_TEST_RUN_FOLDER="$(mktemp -d)"
export SPARKDELTA_TEST_RUN_FOLDER
trap 'rm -rf "$SPARKDELTA_TEST_RUN_FOLDER"' EXIT
rm -f "$SPARKDELTA_TEST_TIMES"/classic*.json "$SPARKDELTA_TEST_TIMES"/connect*.json
workers=(-n "${SPARKDELTA_TEST_WORKERS:-3}" --dist loadfile)
.venv/bin/python -m pytest "${workers[@]}" "$@"
classic=$?
echo "== the public API's tests on Spark Connect"
if [ "$#" -gt 0 ]; then
  .venv/bin/python -m pytest "${workers[@]}" --connect "$@"
else
  # shellcheck disable=SC2046 # one argument per listed file
  .venv/bin/python -m pytest "${workers[@]}" --connect $(grep -v '^#' tests/connect_suite.txt)
fi
connect=$?
# pytest's 5: no test collected (arguments naming only tests without Spark, in the second pass).
[ "$connect" -eq 5 ] && connect=0
echo "== where the time went"
.venv/bin/python tests/timing.py
exit $(( classic != 0 ? classic : connect ))
