#!/usr/bin/env bash
# Set up a fresh clone (venv, Python deps, Java 17 if missing), then run the main job.
# Set SPARKDELTA_SETUP_ONLY=1 to skip the main job.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v java >/dev/null 2>&1; then
  echo "== installing Java 17 (apt)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q openjdk-17-jre-headless
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
  echo "== main job"
  .venv/bin/python -m sparkdelta.demo
fi
