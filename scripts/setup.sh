#!/usr/bin/env bash
# Set up a fresh clone (venv, Python deps, Java 17 and Chromium if missing), then run the
# main job: the lakehouse pipeline on an embedded warehouse (./warehouse) and its report.
# Set SPARKDELTA_SETUP_ONLY=1 to skip the main job.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v java >/dev/null 2>&1; then
  echo "== installing Java 17 (apt)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q openjdk-17-jre-headless
fi

# Maven fetches Hadoop's S3A connector for the tests' Spark on S3 (scripts/fetch_hadoop_aws.sh).
if ! command -v mvn >/dev/null 2>&1; then
  echo "== installing Maven (apt)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q maven
fi

# Headless Chromium renders the lakehouse report in the tests.
if [ ! -x /usr/bin/chromium ]; then
  echo "== installing Chromium (apt)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium
fi

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PYTHON" -m venv .venv
fi
echo "== installing sparkdelta with test extras"
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test]"

if [ "${SPARKDELTA_SETUP_ONLY:-0}" != "1" ]; then
  echo "== main job: the lakehouse pipeline (warehouse/)"
  .venv/bin/lakehouse run --warehouse warehouse
  .venv/bin/lakehouse report --warehouse warehouse
fi
