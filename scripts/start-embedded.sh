#!/usr/bin/env bash
# Starts ffmpeg-operator in embedded mode, installing what it needs first (ffmpeg from Debian's
# packages when missing, bubblewrap and python3-seccomp to confine it, npm packages from the lock
# file), and runs it compiled to JavaScript (scripts/build.sh). Settings: see docs/settings.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-system-deps.sh
bash scripts/ensure-npm-deps.sh
bash scripts/build.sh
# glibc malloc, as in the images: fewer arenas (about 10 MiB less resident under load), and fixed
# thresholds so that freed memory goes back to the system (about 20 MiB less, idle and under load).
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
export MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_:-131072}"
export MALLOC_TRIM_THRESHOLD_="${MALLOC_TRIM_THRESHOLD_:-1048576}"
exec node dist/api/embedded/main.js
