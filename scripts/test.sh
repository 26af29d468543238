#!/usr/bin/env bash
# The test suite, in two passes: every test on classic sessions, then the public API's tests
# (tests/connect_suite.txt) again as a Spark Connect client of a local Connect server
# (pytest --connect). Arguments go to both passes instead (./scripts/test.sh tests/sql -x).
set -uo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m pytest "$@"
classic=$?
echo "== the public API's tests on Spark Connect"
if [ "$#" -gt 0 ]; then
  .venv/bin/python -m pytest --connect "$@"
else
  # shellcheck disable=SC2046 # one argument per listed file
  .venv/bin/python -m pytest --connect $(grep -v '^#' tests/connect_suite.txt)
fi
connect=$?
# pytest's 5: no test collected (arguments naming only tests without Spark, in the second pass).
[ "$connect" -eq 5 ] && connect=0
exit $(( classic != 0 ? classic : connect ))
