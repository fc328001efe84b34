#!/usr/bin/env bash
# Installs what the service and its tests need from Debian's packages, only when missing.
# Idempotent and quick when everything is present.
set -euo pipefail

need=()
command -v ffmpeg >/dev/null 2>&1 && command -v ffprobe >/dev/null 2>&1 || need+=(ffmpeg)
command -v prlimit >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
# Confinement of every ffmpeg/ffprobe run: bubblewrap, and libseccomp's Python binding (Debian's own
# python3) to compile the seccomp filter.
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
/usr/bin/python3 -c 'import seccomp' >/dev/null 2>&1 || need+=(python3-seccomp)
command -v openssl >/dev/null 2>&1 || need+=(openssl)   # test control plane certificates
command -v curl >/dev/null 2>&1 || need+=(curl)         # scripts/versitygw.sh readiness checks
if [ "${FFOP_NEED_POSTGRES:-0}" = 1 ]; then
  ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need+=(postgresql)
fi

if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "missing Debian packages: ${need[*]} (run as root, or: sudo apt-get install ${need[*]})" >&2
    exit 1
  fi
  echo "installing Debian packages: ${need[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
