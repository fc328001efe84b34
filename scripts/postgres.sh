#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests, on 127.0.0.1 only.
#   scripts/postgres.sh start   -> prints a postgres:// URL (creates the cluster on first use)
#   scripts/postgres.sh stop
# FFOP_PG_DIR (default /tmp/ffop-test-pg) holds the cluster; FFOP_PG_PORT (default 55432) the port.
set -euo pipefail
dir=${FFOP_PG_DIR:-/tmp/ffop-test-pg}
port=${FFOP_PG_PORT:-55432}
# The newest installed major version (nullglob: no match leaves the list empty, and bin empty).
shopt -s nullglob
bins=(/usr/lib/postgresql/*/bin)
shopt -u nullglob
bin=$(printf '%s\n' "${bins[@]}" | sort -V | tail -1)
[ -n "$bin" ] || { echo "PostgreSQL is not installed (scripts/ensure-system-deps.sh installs it)" >&2; exit 1; }

# PostgreSQL refuses to run as root: run it as the 'postgres' system user then.
as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

case "${1:-}" in
  start)
    if [ ! -f "$dir/PG_VERSION" ]; then
      mkdir -p "$dir"
      [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
      as_owner "$bin/initdb" -D "$dir" -U postgres --auth=trust -E UTF8 >/dev/null
    fi
    if ! as_owner "$bin/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
      as_owner "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c max_connections=200" \
        start >/dev/null
    fi
    echo "postgres://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    if [ -f "$dir/PG_VERSION" ]; then
      as_owner "$bin/pg_ctl" -D "$dir" -m fast -w stop >/dev/null 2>&1 || true
    fi
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
