#!/usr/bin/env bash
# Installs the npm packages from the lock file when node_modules is missing or older than the lock.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=node_modules/.ffop-installed
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  npm ci --no-audit --no-fund --loglevel=error
  touch "$stamp"
fi
