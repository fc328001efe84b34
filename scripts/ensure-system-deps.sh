#!/usr/bin/env bash
# Installs what the service and its tests need from Debian's packages, only when missing.
# Idempotent and quick when everything is present.
set -euo pipefail
# shellcheck source=scripts/retry.sh
. "$(dirname "$0")/retry.sh"

need=()
command -v ffmpeg >/dev/null 2>&1 && command -v ffprobe >/dev/null 2>&1 || need+=(ffmpeg)
command -v prlimit >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
# Confinement of every ffmpeg/ffprobe run: bubblewrap, and libseccomp's Python binding (Debian's own
# python3) to compile the seccomp filter.
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
/usr/bin/python3 -c 'import seccomp' >/dev/null 2>&1 || need+=(python3-seccomp)
# scripts/build.sh compiles the start gate library (core/confine/start-gate.c) with them.
command -v gcc >/dev/null 2>&1 && [ -f /usr/include/unistd.h ] || need+=(gcc libc6-dev)
# A small common set of fonts, as the images hold (docs/api.md, "Fonts"): drawtext, subtitles and ASS find
# them by family through fontconfig, or by path under /usr/share/fonts.
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)
[ -f /usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf ] || need+=(fonts-liberation2)
[ -d /usr/share/fonts/truetype/open-sans ] || need+=(fonts-open-sans)
command -v openssl >/dev/null 2>&1 || need+=(openssl)   # test control plane certificates
command -v curl >/dev/null 2>&1 || need+=(curl)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need+=(python3-venv) # scripts/schemathesis.sh         # scripts/versitygw.sh readiness checks
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)   # scripts/lint.sh
# The dashboard's browser tests (e2e/dashboard): headless Chromium, driven by playwright-core.
command -v chromium-headless-shell >/dev/null 2>&1 || need+=(chromium-headless-shell)
if [ "${FFOP_NEED_POSTGRES:-0}" = 1 ]; then
  ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need+=(postgresql)
fi
# npm run bench: wrk loads the API (e2e/bench/api-load.ts).
if [ "${FFOP_NEED_BENCH:-0}" = 1 ]; then
  command -v wrk >/dev/null 2>&1 || need+=(wrk)
fi
# scripts/build-images.sh: mmdebstrap makes the images' Debian root filesystem, buildah assembles and
# exports them (as root: kernel overlay storage, no uidmap or fuse-overlayfs), runc runs them to try
# them (podman, optional, takes the same containers.conf).
if [ "${FFOP_NEED_IMAGES:-0}" = 1 ]; then
  command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
  command -v buildah >/dev/null 2>&1 || need+=(buildah)
  command -v runc >/dev/null 2>&1 || need+=(runc)
fi
# e2e/node (a real test node): containerd with runc and the CNI plugins, iptables and iproute2 for pod
# networking, a static libc to build the pause image.
if [ "${FFOP_NEED_NODE:-0}" = 1 ]; then
  command -v containerd >/dev/null 2>&1 || need+=(containerd)
  command -v runc >/dev/null 2>&1 || need+=(runc)
  [ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
  command -v iptables >/dev/null 2>&1 || need+=(iptables)
  command -v ip >/dev/null 2>&1 || need+=(iproute2)
  command -v unshare >/dev/null 2>&1 || need+=(util-linux)
  command -v gcc >/dev/null 2>&1 && [ -f /usr/lib/x86_64-linux-gnu/libc.a ] || need+=(gcc libc6-dev)
fi

if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "missing Debian packages: ${need[*]} (run as root, or: sudo apt-get install ${need[*]})" >&2
    exit 1
  fi
  echo "installing Debian packages: ${need[*]}" >&2
  retry apt-get -o Acquire::Retries="$APT_RETRIES" update -qq
  retry env DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Retries="$APT_RETRIES" install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
