#!/usr/bin/env bash
# Starts ffmpeg-operator in embedded mode, installing what it needs first (ffmpeg from Debian's
# packages when missing, bubblewrap and python3-seccomp to confine it, npm packages from the lock
# file), and runs it compiled to JavaScript (scripts/build.sh). Settings: see README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-system-deps.sh
bash scripts/ensure-npm-deps.sh
bash scripts/build.sh
# Fewer glibc malloc arenas: about 10 MiB less resident under load (as in the images).
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
exec node dist/api/main.js
