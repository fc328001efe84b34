#!/usr/bin/env bash
# Installs the npm packages from the lock file when node_modules is missing or older than the lock.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/retry.sh
. scripts/retry.sh
stamp=node_modules/.ffop-installed
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  retry npm ci --no-audit --no-fund --loglevel=error # starts over from an empty node_modules each time
  touch "$stamp"
fi
