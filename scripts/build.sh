#!/usr/bin/env bash
# Compiles the service, the operator and the runner to JavaScript in dist/ (same layout as the
# sources), so nothing compiles TypeScript at run time. Incremental: quick when nothing changed.
# The files the code finds next to itself (SQL migrations, the seccomp filter generator, the dashboard's
# stylesheet) are copied, and the start gate library is compiled with gcc.
set -euo pipefail
cd "$(dirname "$0")/.."
npx --no-install tsc -p tsconfig.build.json
# An incremental build leaves the output of moved or deleted sources (and of test kits, which are not
# built) behind: remove every compiled file whose source is gone, so images carry only what is built.
while IFS= read -r -d '' js; do
  source_file=${js#dist/}
  source_file=${source_file%.js}.ts
  if [ ! -f "$source_file" ] || [[ $source_file == */testing/* ]]; then rm -f "$js" "$js.map"; fi
done < <(find dist -path dist/node_modules -prune -o -name '*.js' -print0)
mkdir -p dist/core/db dist/core/confine
rm -rf dist/core/db/migrations
cp -r core/db/migrations dist/core/db/migrations
cp core/confine/seccomp-filter.py dist/core/confine/seccomp-filter.py
# The start gate preloaded into ffmpeg and ffprobe started ahead (core/confine/start-gate.c); rebuilt
# only when its source changed. Without a compiler the service still works, starting them when needed.
gate=dist/core/confine/start-gate.so
if [ ! -f "$gate" ] || [ core/confine/start-gate.c -nt "$gate" ]; then
  if command -v gcc >/dev/null 2>&1; then
    gcc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$gate.tmp" core/confine/start-gate.c
    mv "$gate.tmp" "$gate"
  else
    echo "build: gcc is missing, so ffmpeg and ffprobe will not be started ahead (scripts/ensure-system-deps.sh installs it)" >&2
  fi
fi
# The dashboard's stylesheet (its modules are compiled above; preact and htm are read from node_modules).
rm -rf dist/api/dashboard/static
mkdir -p dist/api/dashboard
cp -r api/dashboard/static dist/api/dashboard/static
