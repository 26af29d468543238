#!/usr/bin/env bash
# Test-only: the reference implementation, delta-spark, as an oracle and a benchmark peer.
# Makes a venv with delta-spark and the pyspark it pins, and fetches delta-spark's jars
# with Maven, both in a cache outside the repo. Prints two lines: the venv's python, then
# the jars joined by ','. Idempotent: a second run only prints.
#
# sparkdelta never imports or needs any of this.
#
# delta-spark 4.4.1's Python package asks for jars of the same version, which Maven Central
# does not serve (the newest there is 4.4.0, whose Scala code the 4.4.1 Python API drives
# unchanged), so the jar version is set apart.
set -euo pipefail
cd "$(dirname "$0")/.."

DELTA_SPARK_VERSION="${DELTA_SPARK_VERSION:-4.4.1}"
DELTA_JAR_VERSION="${DELTA_JAR_VERSION:-4.4.0}"
PYSPARK_VERSION="${DELTA_SPARK_PYSPARK:-4.2.0}"
SCALA_SPARK="4.2_2.13"

home="${SPARKDELTA_CACHE:-$HOME/.cache/sparkdelta}/delta-spark-$DELTA_SPARK_VERSION"
venv="$home/venv"
jars="$home/jars"
ready="$home/ready"

mkdir -p "$home"
# One setup at a time: the tests' two pytest-xdist workers may both ask for the oracle first.
exec 9>"$home.lock"
flock 9
if [ ! -f "$ready" ]; then
  PYTHON="${PYTHON:-python3}"
  if [ ! -x "$venv/bin/python" ]; then
    echo "== creating the delta-spark venv ($venv)" >&2
    "$PYTHON" -m venv "$venv"
  fi
  echo "== installing delta-spark==$DELTA_SPARK_VERSION pyspark==$PYSPARK_VERSION" >&2
  "$venv/bin/python" -m pip install -q --upgrade pip >&2
  "$venv/bin/python" -m pip install -q "delta-spark==$DELTA_SPARK_VERSION" "pyspark==$PYSPARK_VERSION" >&2

  if ! command -v mvn >/dev/null 2>&1; then
    echo "== installing Maven (apt)" >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q maven >&2
  fi
  echo "== fetching delta-spark $DELTA_JAR_VERSION jars" >&2
  mkdir -p "$jars"
  for artifact in "io.delta:delta-spark_$SCALA_SPARK:$DELTA_JAR_VERSION" "io.delta:delta-storage:$DELTA_JAR_VERSION"; do
    mvn -q -B -Dstyle.color=never dependency:copy -Dartifact="$artifact" -DoutputDirectory="$jars" >&2
  done
  touch "$ready"
fi

echo "$venv/bin/python"
ls "$jars"/*.jar | paste -sd,
