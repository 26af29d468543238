#!/usr/bin/env bash
# Start Azurite's blob service (Azure Storage emulator) on 127.0.0.1:PORT, in memory.
# Installs it first with npm under ~/.cache/sparkdelta/azurite (outside the repo) when missing.
# Usage: scripts/start_azurite.sh [PORT]   (default 10000; Ctrl-C or SIGTERM stops it)
set -euo pipefail

port="${1:-10000}"
version="3.37.0"
cache="${SPARKDELTA_CACHE:-$HOME/.cache/sparkdelta}/azurite"
blob="$cache/node_modules/.bin/azurite-blob"

command -v npm >/dev/null || { echo "start_azurite.sh: npm is not installed (Node 18+ and npm are needed)" >&2; exit 3; }
mkdir -p "$cache"
# One install at a time (the tests' two pytest-xdist workers may both start Azurite); the lock
# is not passed on to Azurite itself.
exec 9>"$cache.lock"
flock 9
if [[ ! -x "$blob" ]] || ! grep -q "\"version\": \"$version\"" "$cache/node_modules/azurite/package.json" 2>/dev/null; then
    npm install --prefix "$cache" --no-audit --no-fund --loglevel=error "azurite@$version" >&2
fi
exec 9>&-
exec "$blob" --blobHost 127.0.0.1 --blobPort "$port" --inMemoryPersistence --skipApiVersionCheck --silent
