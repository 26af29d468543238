#!/usr/bin/env bash
# The test suite, in two passes: every test on classic sessions, then every test that uses
# Spark again as a Spark Connect client of a local Connect server (pytest --connect).
# Arguments go to both passes (./scripts/test.sh tests/spark/test_catalog.py -x).
set -uo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m pytest "$@"
classic=$?
echo "== the same tests on Spark Connect"
.venv/bin/python -m pytest --connect "$@"
connect=$?
# pytest's 5: no test collected (arguments naming only tests without Spark, in the second pass).
[ "$connect" -eq 5 ] && connect=0
exit $(( classic != 0 ? classic : connect ))
