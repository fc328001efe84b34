#!/usr/bin/env bash
# Schemathesis (OpenAPI conformance testing, e2e/openapi-conformance.db.test.ts), pinned, in a venv of
# its own outside the repo: ${XDG_CACHE_HOME:-~/.cache}/ffmpeg-operator/schemathesis-<version>.
# Installs it from PyPI the first time (needs python3 with venv), then only prints the path of its `st`
# executable on stdout; everything else goes to stderr.
set -euo pipefail
# shellcheck source=scripts/retry.sh
. "$(dirname "$0")/retry.sh"
version=4.32.5
dir=${XDG_CACHE_HOME:-$HOME/.cache}/ffmpeg-operator/schemathesis-$version
st=$dir/bin/st
# Written last: a venv without it is an interrupted install.
stamp=$dir/.installed

if [ ! -f "$stamp" ]; then
  mkdir -p "$(dirname "$dir")"
  # One install at a time; a second caller waits, then finds it done.
  exec 9>"$dir.lock"
  flock 9
  if [ ! -f "$stamp" ]; then
    echo "schemathesis.sh: installing schemathesis $version into $dir (first time only)" >&2
    rm -rf "$dir"
    python3 -m venv "$dir" >&2
    retry "$dir/bin/pip" install --quiet --disable-pip-version-check --no-input "schemathesis==$version" >&2
    "$st" --version >&2
    touch "$stamp"
  fi
fi
echo "$st"
