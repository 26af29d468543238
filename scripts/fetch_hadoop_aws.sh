#!/usr/bin/env bash
# Test-only: fetch Hadoop's S3A connector (hadoop-aws) matching the Hadoop client that
# pyspark bundles, with the AWS SDK v2 bundle and the analytics accelerator it needs, into
# a cache outside the repo. Prints the classpath (jars joined by ':').
#
# sparkdelta needs none of this: a cluster on S3 brings its own connector. The tests use
# it to run Spark against the moto S3 server. The SDK bundle is about 700 MB, fetched once.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-.venv/bin/python}"
jars_dir="$("$PYTHON" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
hadoop_jar="$(ls "$jars_dir"/hadoop-client-api-*.jar | head -1)"
hadoop_version="$(basename "$hadoop_jar" .jar)"
hadoop_version="${hadoop_version#hadoop-client-api-}"

cache="${SPARKDELTA_CACHE:-$HOME/.cache/sparkdelta}/jars/hadoop-aws-$hadoop_version"
mkdir -p "$(dirname "$cache")"
# One fetch at a time: the tests' two pytest-xdist workers each start a session asking for it.
exec 9>"$cache.lock"
flock 9
if [ -f "$cache/classpath" ]; then
  cat "$cache/classpath"
  exit 0
fi
mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fetch() {  # group:artifact:version[:packaging] into $cache
  mvn -q -B -Dstyle.color=never dependency:copy -Dartifact="$1" -DoutputDirectory="$2" -Dmdep.overWriteIfNewer=true >&2
}

# The versions hadoop-aws was built against, from Hadoop's own parent POM.
fetch "org.apache.hadoop:hadoop-project:$hadoop_version:pom" "$work"
pom="$work/hadoop-project-$hadoop_version.pom"
property() { sed -n "s:.*<$1>\(.*\)</$1>.*:\1:p" "$pom" | head -1; }
sdk_version="$(property aws-java-sdk-v2.version)"
accelerator_version="$(property amazon-s3-analyticsaccelerator-s3.version)"

echo "fetching hadoop-aws $hadoop_version, AWS SDK bundle $sdk_version, analytics accelerator $accelerator_version" >&2
fetch "org.apache.hadoop:hadoop-aws:$hadoop_version" "$cache"
fetch "software.amazon.awssdk:bundle:$sdk_version" "$cache"
if [ -n "$accelerator_version" ]; then
  fetch "software.amazon.s3.analyticsaccelerator:analyticsaccelerator-s3:$accelerator_version" "$cache"
fi
ls "$cache"/*.jar | paste -sd: > "$cache/classpath.tmp"
mv "$cache/classpath.tmp" "$cache/classpath"
cat "$cache/classpath"
