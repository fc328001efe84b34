#!/usr/bin/env bash
# A throwaway S3 server for tests and benchmarks: versitygw (checks SigV4 signatures), on 127.0.0.1 only.
#   scripts/versitygw.sh build    -> builds the binary once into the tools cache (needs Go)
#   scripts/versitygw.sh start    -> builds if needed, starts if not running, prints `export` lines:
#                                    FFOP_TEST_S3_ENDPOINT, _REGION, _ACCESS_KEY, _SECRET_KEY
#   scripts/versitygw.sh status   -> exit 0 when it is running and answering
#   scripts/versitygw.sh stop     -> stops it and deletes its data
# FFOP_TOOLS_DIR (default ~/.cache/ffmpeg-operator/tools) caches the binary, outside the repo;
# FFOP_S3_PORT (default 7070) is the port; FFOP_S3_DIR (default $TMPDIR/ffop-versitygw-PORT) holds
# the pid, log, data and metadata.
set -euo pipefail
# shellcheck source=scripts/retry.sh
. "$(dirname "$0")/retry.sh"
version=v1.7.0
cache=${FFOP_TOOLS_DIR:-$HOME/.cache/ffmpeg-operator/tools}
bin=$cache/versitygw
port=${FFOP_S3_PORT:-7070}
state=${FFOP_S3_DIR:-${TMPDIR:-/tmp}/ffop-versitygw-$port}
# FFOP_S3_HOST: a test node's pods reach it on the node sandbox's address (e2e/node/sandbox.sh).
host=${FFOP_S3_HOST:-127.0.0.1}
endpoint=http://$host:$port
region=us-east-1

build() {
  [ -x "$bin" ] && return 0
  command -v go >/dev/null 2>&1 || { echo "versitygw.sh: Go is needed to build versitygw" >&2; exit 1; }
  mkdir -p "$cache"
  # Starts side by side (test files with servers of their own) build it once: the others wait.
  (
    flock 9
    [ -x "$bin" ] && exit 0
    echo "versitygw.sh: building versitygw $version into $cache (first time only)" >&2
    # pkg@version installs ignore any go.mod around; run from the cache so none is even looked at.
    cd "$cache" && GOBIN=$cache retry go install "github.com/versity/versitygw/cmd/versitygw@$version"
  ) 9>"$cache/.versitygw-build.lock" >&2
}

running() {
  [ -f "$state/pid" ] || return 1
  local pid
  pid=$(cat "$state/pid")
  grep -q versitygw "/proc/$pid/cmdline" 2>/dev/null || return 1
  answers
}

# Any HTTP answer (an anonymous request gets 403) means it is serving.
answers() { curl -s -o /dev/null --max-time 2 "$endpoint/"; }

print_settings() {
  echo "export FFOP_TEST_S3_ENDPOINT=$endpoint"
  echo "export FFOP_TEST_S3_REGION=$region"
  echo "export FFOP_TEST_S3_ACCESS_KEY=$(cat "$state/access-key")"
  echo "export FFOP_TEST_S3_SECRET_KEY=$(cat "$state/secret-key")"
}

start() {
  if running; then
    print_settings
    return 0
  fi
  build
  stop_server
  mkdir -p "$state/data" "$state/meta"
  # Test-only credentials of a server that listens on loopback and holds only test data.
  echo "${FFOP_S3_ACCESS_KEY:-ffop-test-access}" >"$state/access-key"
  echo "${FFOP_S3_SECRET_KEY:-ffop-test-secret-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')}" >"$state/secret-key"
  ROOT_ACCESS_KEY=$(cat "$state/access-key") ROOT_SECRET_KEY=$(cat "$state/secret-key") \
    setsid "$bin" --port "$host:$port" --region "$region" --quiet \
    posix --sidecar "$state/meta" "$state/data" >"$state/log" 2>&1 </dev/null &
  echo $! >"$state/pid"
  for _ in $(seq 1 100); do
    if answers; then
      print_settings
      return 0
    fi
    if ! kill -0 "$(cat "$state/pid")" 2>/dev/null; then break; fi
    sleep 0.1
  done
  echo "versitygw.sh: versitygw did not start on $endpoint; its log:" >&2
  cat "$state/log" >&2 || true
  stop_server
  exit 1
}

stop_server() {
  [ -f "$state/pid" ] || return 0
  local pid
  pid=$(cat "$state/pid")
  if grep -q versitygw "/proc/$pid/cmdline" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$state/pid"
}

case "${1:-}" in
  build) build ;;
  start) start ;;
  status) running ;;
  stop)
    stop_server
    rm -rf "$state"
    ;;
  *)
    echo "usage: $0 build|start|status|stop" >&2
    exit 2
    ;;
esac
