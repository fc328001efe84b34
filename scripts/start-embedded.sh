#!/usr/bin/env bash
# Starts ffmpeg-operator in embedded mode, installing what it needs first (ffmpeg from Debian's
# packages when missing, bubblewrap and python3-seccomp to confine it, npm packages from the lock file). Settings: see README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-system-deps.sh
bash scripts/ensure-npm-deps.sh
exec node --import tsx api/main.ts
