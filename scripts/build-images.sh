#!/usr/bin/env bash
# Builds the two container images without Docker or a registry, and prints (stdout) where they are:
#   FFOP_SERVICE_IMAGE=localhost/ffmpeg-operator:<tag>          API (default CMD) and operator
#   FFOP_RUNNER_IMAGE=localhost/ffmpeg-operator-runner:<tag>    one ffmpeg step per Job
#   FFOP_SERVICE_IMAGE_ARCHIVE=/..../ffmpeg-operator-<tag>.tar   docker-archives, for
#   FFOP_RUNNER_IMAGE_ARCHIVE=/..../ffmpeg-operator-runner-<tag>.tar   `ctr -n k8s.io images import`
# Progress and sizes go to stderr. Usage: eval "$(bash scripts/build-images.sh)".
#
# Layers (both images): a Debian root filesystem made by mmdebstrap (ffmpeg, bubblewrap,
# ca-certificates), Node from npm's node-linux-<arch> package, the production node_modules, then the
# compiled application (dist/, package.json, the seccomp program). Assembled with buildah FROM scratch
# in storage of its own under the cache folder. The Dockerfile (targets service and runner) describes the
# same images for Docker users; keep them in step with this script.
#
# Everything is cached under ${FFOP_IMAGES_DIR:-~/.cache/ffmpeg-operator/images}, keyed by content:
# the root filesystem by its mmdebstrap arguments and the apt sources, Node by version, node_modules by
# package.json + package-lock.json; the tag hashes all of that plus the application and this script.
# An unchanged tree rebuilds nothing. Needs root (mmdebstrap --mode=root, buildah's overlay storage)
# and the Debian packages that `FFOP_NEED_IMAGES=1 bash scripts/ensure-system-deps.sh` installs.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
cache=${FFOP_IMAGES_DIR:-$HOME/.cache/ffmpeg-operator/images}
suite=bookworm
node_version=${FFOP_NODE_VERSION:-22.23.3}  # the Dockerfile's NODE_VERSION too
service_name=localhost/ffmpeg-operator
runner_name=localhost/ffmpeg-operator-runner
stage_name=localhost/ffmpeg-operator-stage
service_uid=10000
runner_uid=10001
# The runtime settings both images share (see the Dockerfile for the runner's contract).
common_env=(
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  NODE_ENV=production
  MALLOC_ARENA_MAX=2
  MALLOC_MMAP_THRESHOLD_=131072
  MALLOC_TRIM_THRESHOLD_=1048576
  FFMPEG_PATH=/usr/bin/ffmpeg
  FFPROBE_PATH=/usr/bin/ffprobe
  FFOP_SECCOMP_PROGRAM=/app/seccomp.bpf
)
# podman/buildah settings this machine needs (runc, no ulimits); not /etc's.
export CONTAINERS_CONF=$repo/scripts/images/containers.conf
# shellcheck source=scripts/retry.sh
. scripts/retry.sh

log() { printf 'build-images: %s\n' "$*" >&2; }
hash16() { sha256sum | cut -c1-16; }

[ "$(id -u)" = 0 ] || { log "run as root (mmdebstrap --mode=root and buildah's storage need it)"; exit 1; }
case "$(uname -m)" in
  x86_64) node_arch=x64 ;;
  aarch64) node_arch=arm64 ;;
  *) log "unsupported architecture $(uname -m)"; exit 1 ;;
esac

mkdir -p "$cache"/{tmp,base,node,modules,seccomp,archives}
# One build at a time per cache folder; a second run waits, then finds everything cached.
exec 9>"$cache/lock"
if ! flock -n 9; then
  log "waiting for another build (lock $cache/lock)"
  flock 9
fi
rm -rf "$cache"/tmp/* # what a killed run left (we hold the lock: nothing there is in use)
scratch=$(mktemp -d "$cache/tmp/run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# buildah with the cache's own storage: nothing lands in the machine's /var/lib/containers. Its run
# state lives in /run, which a reboot clears along with the mounts it describes.
runroot=/run/ffmpeg-operator-images/$(printf '%s' "$cache" | hash16)
bh() { buildah --root "$cache/storage" --runroot "$runroot" --storage-driver overlay "$@"; }
have_image() { bh inspect --type image "$1" >/dev/null 2>&1; }
# Publishes a finished file or folder under its cached name: a half-built one never looks cached.
publish() { rm -rf "$2"; mv -T "$1" "$2"; }

# --- the application, compiled (incremental: a couple of seconds when nothing changed) ---
FFOP_NEED_IMAGES=1 bash scripts/ensure-system-deps.sh >&2
bash scripts/ensure-npm-deps.sh >&2
bash scripts/build.sh >&2

# --- keys ---
# The Debian mirrors this machine's apt uses (sources.list or deb822 .sources alike), for the suite,
# its -updates and -security; deb.debian.org when apt knows none.
# shellcheck disable=SC2016  # $(...) are apt's format fields, not shell
sources=$(apt-get indextargets --format '$(TARGET_OF) $(REPO_URI) $(RELEASE) $(COMPONENT) $(IDENTIFIER)' 2>/dev/null |
  awk -v s="$suite" '$1 == "deb" && $4 == "main" && $5 == "Packages" && $3 ~ ("^" s "(-updates|-security)?$") { print "deb " $2 " " $3 " main" }' |
  sort -u) || true
if [ -z "$sources" ]; then
  sources=$(printf 'deb http://deb.debian.org/debian %s main\ndeb http://deb.debian.org/debian %s-updates main\ndeb http://deb.debian.org/debian-security %s-security main' "$suite" "$suite" "$suite")
fi
mapfile -t source_lines <<<"$sources"
# The smallest rootfs ffmpeg runs in: the essential packages plus ffmpeg's dependencies, without
# recommends (mmdebstrap's default), docs, man pages or locales.
# - usr-is-merged satisfies init-system-helpers without usrmerge, which would pull in all of perl.
# - Mesa's OpenGL drivers (libgl1-mesa-dri and LLVM, ~160 MB) come in through libGL; ffmpeg links
#   libGL but loads a driver only when it makes an OpenGL context, which it never does here, so they
#   are removed (--force-depends: nothing else needs them).
# - Named users for the numeric ids the images run as (tools that look the user up find one).
# - A small common set of fonts (DejaVu, Liberation, Open Sans; docs/api.md "Fonts"), as
#   scripts/ensure-system-deps.sh installs them: commands name them by family or by path.
packages=ffmpeg,bubblewrap,ca-certificates,usr-is-merged,fonts-dejavu-core,fonts-liberation2,fonts-open-sans
# shellcheck disable=SC2016  # "$1" is expanded by mmdebstrap's hook shell
base_args=(
  --mode=root --variant=essential --skip=output/dev
  "--include=$packages"
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/lintian/*'
  --customize-hook='chroot "$1" dpkg --purge --force-depends libgl1-mesa-dri libllvm15 libz3-4'
  --customize-hook="printf 'ffop:x:$service_uid:$service_uid:ffmpeg-operator:/data:/usr/sbin/nologin\nrunner:x:$runner_uid:$runner_uid:ffmpeg-operator runner:/work:/usr/sbin/nologin\n' >>\"\$1/etc/passwd\""
  --customize-hook="printf 'ffop:x:$service_uid:\nrunner:x:$runner_uid:\n' >>\"\$1/etc/group\""
  --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/log/* "$1"/var/lib/apt/lists/*'
  # A download that fails for a moment is tried again (also by the whole step, below).
  "--aptopt=Acquire::Retries \"$APT_RETRIES\""
)
# A mirror that serves a snapshot has Release files past their Valid-Until; a machine set up for one
# tells its apt not to check (Acquire::Check-Valid-Until / Check-Date "false"), and mmdebstrap's apt
# must be told the same, or its update fails.
for option in Acquire::Check-Valid-Until Acquire::Check-Date; do
  if [ "$(apt-config dump "$option" 2>/dev/null | sed -n "s/^$option \"\(.*\)\";$/\1/p")" = false ]; then
    base_args+=("--aptopt=$option \"false\"")
  fi
done
base_key=$(printf '%s\n' "$suite" "${base_args[@]}" "${source_lines[@]}" | hash16)
# What is dropped from node_modules: type declarations, source maps and the compilers (typescript is an
# optional peer of valibot; tsx and esbuild only run the sources, which the images do not contain).
# swagger-ui-dist is served to browsers as it is.
prune='typescript tsx esbuild @esbuild'
modules_key=$(cat package.json package-lock.json <(echo "$prune") | hash16)
seccomp_key=$(hash16 <core/confine/seccomp-filter.py)
# The compiled files the images hold (source maps and tsc's state are left out).
app_files() { find dist -type f ! -name '*.map' ! -name .tsbuildinfo | LC_ALL=C sort; }
app_key=$(app_files | xargs sha256sum | cat - package.json | hash16)
# The tag: every input of both images, including how this script assembles them.
tag=$(printf '%s\n' "$base_key" "$node_arch-$node_version" "$modules_key" "$seccomp_key" "$app_key" |
  cat - scripts/build-images.sh scripts/images/containers.conf | hash16)
service_archive=$cache/archives/ffmpeg-operator-$tag.tar
runner_archive=$cache/archives/ffmpeg-operator-runner-$tag.tar

print_result() {
  local name archive size
  for name in "$service_name" "$runner_name"; do
    archive=$cache/archives/${name#localhost/}-$tag.tar
    size=$(bh images --noheading --format '{{.Size}}' "$name:$tag" 2>/dev/null || echo '?')
    log "$name:$tag: $size uncompressed, archive $(du -h "$archive" | cut -f1)"
  done
  echo "FFOP_SERVICE_IMAGE=$service_name:$tag"
  echo "FFOP_RUNNER_IMAGE=$runner_name:$tag"
  echo "FFOP_SERVICE_IMAGE_ARCHIVE=$service_archive"
  echo "FFOP_RUNNER_IMAGE_ARCHIVE=$runner_archive"
}
if [ -f "$service_archive" ] && [ -f "$runner_archive" ]; then
  log "up to date (tag $tag)"
  print_result
  exit 0
fi

# --- inputs, each cached by its key ---
base_tar=$cache/base/$suite-$base_key.tar
if [ ! -f "$base_tar" ]; then
  log "root filesystem: mmdebstrap $suite (about a minute)"
  retry mmdebstrap --quiet "${base_args[@]}" "$suite" "$scratch/base.tar" "${source_lines[@]}" >&2
  publish "$scratch/base.tar" "$base_tar"
fi

node_dir=$cache/node/$node_arch-$node_version
if [ ! -x "$node_dir/usr/local/bin/node" ]; then
  log "node $node_version: npm pack node-linux-$node_arch@$node_version"
  (cd "$scratch" && retry npm pack --silent "node-linux-$node_arch@$node_version" >/dev/null)
  # Only the binary: npm and corepack are not needed to run the application.
  mkdir -p "$scratch/node/usr/local/bin"
  tar -xzf "$scratch/node-linux-$node_arch-$node_version.tgz" -C "$scratch/node/usr/local/bin" --strip-components=2 package/bin/node
  "$scratch/node/usr/local/bin/node" --version >/dev/null
  publish "$scratch/node" "$node_dir"
fi

modules_dir=$cache/modules/$modules_key
if [ ! -d "$modules_dir/node_modules" ]; then
  log "production node_modules: npm ci --omit=dev"
  mkdir -p "$scratch/modules"
  cp package.json package-lock.json "$scratch/modules/"
  # No lifecycle scripts: nothing the application needs builds at install time.
  (cd "$scratch/modules" && retry npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
  for p in $prune; do rm -rf "$scratch/modules/node_modules/$p"; done
  find "$scratch/modules/node_modules" -path '*/swagger-ui-dist' -prune -o -type f \
    \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -exec rm -f {} +
  rm -f "$scratch/modules/package.json" "$scratch/modules/package-lock.json"
  publish "$scratch/modules" "$modules_dir"
fi

seccomp_bpf=$cache/seccomp/$seccomp_key.bpf
if [ ! -s "$seccomp_bpf" ]; then
  # Compiled here (same architecture) so the images need no python; the code uses it through
  # FFOP_SECCOMP_PROGRAM instead of generating it.
  /usr/bin/python3 core/confine/seccomp-filter.py >"$scratch/seccomp.bpf"
  size=$(stat -c %s "$scratch/seccomp.bpf")
  if [ "$size" = 0 ] || [ $((size % 8)) != 0 ]; then log "seccomp-filter.py wrote no BPF program"; exit 1; fi
  publish "$scratch/seccomp.bpf" "$seccomp_bpf"
fi

# /app as the images hold it: package.json says "type": "module" for dist/.
mkdir -p "$scratch/app"
app_files | tar -cf - -T - | tar -xf - -C "$scratch/app"
cp package.json "$scratch/app/"
cp "$seccomp_bpf" "$scratch/app/seccomp.bpf"
chmod -R u=rwX,go=rX "$scratch/app"

# --- layers: one image per cached input, so both images share them ---
# Working containers left by an interrupted run (we hold the lock: none is in use).
bh rm --all >/dev/null 2>&1 || true
# Commits a working container as an image, as one new layer.
commit() { bh commit --quiet --rm --format docker "$1" "$2" >/dev/null; }
base_image=$stage_name:base-$base_key
if ! have_image "$base_image"; then
  log "layer: root filesystem"
  c=$(bh from scratch)
  bh add --quiet "$c" "$base_tar" /
  commit "$c" "$base_image"
fi
node_image=$stage_name:node-$(printf '%s\n' "$base_key" "$node_arch-$node_version" | hash16)
if ! have_image "$node_image"; then
  log "layer: node"
  c=$(bh from "$base_image")
  bh copy --quiet --chown 0:0 "$c" "$node_dir/usr/local/bin/node" /usr/local/bin/node
  commit "$c" "$node_image"
fi
modules_image=$stage_name:modules-$(printf '%s\n' "$node_image" "$modules_key" | hash16)
if ! have_image "$modules_image"; then
  log "layer: node_modules"
  c=$(bh from "$node_image")
  bh copy --quiet --chown 0:0 "$c" "$modules_dir/node_modules" /app/node_modules
  commit "$c" "$modules_image"
fi

# The application layer and the settings of one image, then its archive.
# A docker-archive whose tag is the full reference: `ctr images import` names the image exactly so.
final() {
  local name=$1 archive=$2 uid=$3 writable=$4; shift 4
  local c e
  log "layer: application -> $name:$tag"
  c=$(bh from "$modules_image")
  bh copy --quiet --chown 0:0 "$c" "$scratch/app" /app
  bh copy --quiet --chown "$uid:$uid" "$c" "$scratch/writable-$uid" "$writable"
  for e in "${common_env[@]}"; do bh config --env "$e" "$c"; done
  bh config --user "$uid:$uid" --label "org.opencontainers.image.source=ffmpeg-operator" "$@" "$c"
  commit "$c" "$name:$tag"
  rm -f "$scratch/image.tar"
  bh push --quiet "$name:$tag" "docker-archive:$scratch/image.tar:$name:$tag" >&2
  publish "$scratch/image.tar" "$archive"
}
# The one folder each image's user may write to when nothing is mounted there.
mkdir -p "$scratch/writable-$service_uid" "$scratch/writable-$runner_uid/tmp"
# The API by default; the operator's Deployment runs `node /app/dist/operator/main.js`. The data
# folder (self-test of the confinement, working folders) is /data: mount an emptyDir there when the
# root filesystem is read-only.
final "$service_name" "$service_archive" "$service_uid" /data \
  --workingdir /app --env FFOP_DATA_DIR=/data --port 8080 \
  --entrypoint '[]' --cmd '["node", "/app/dist/api/cluster/main.js"]'
# The runner's contract (the Dockerfile's runner target): writes only to /work and /work/tmp.
final "$runner_name" "$runner_archive" "$runner_uid" /work \
  --workingdir /work --env FFOP_WORK_ROOT=/work --env TMPDIR=/work/tmp --volume /work \
  --entrypoint '["node", "/app/dist/runner-image/main.js"]' --cmd '[]'

# --- keep the cache from growing: the newest few of each kind ---
keep_newest() { # folder, glob, count
  local old
  old=$(find "$1" -mindepth 1 -maxdepth 1 -name "$2" -printf '%T@ %p\n' | sort -rn | tail -n +"$(($3 + 1))" | cut -d' ' -f2-)
  [ -z "$old" ] || xargs -d '\n' rm -rf <<<"$old"
}
keep_newest "$cache/archives" 'ffmpeg-operator-runner-*.tar' 3
keep_newest "$cache/archives" 'ffmpeg-operator-[0-9a-f]*.tar' 3
keep_newest "$cache/base" '*.tar' 2
keep_newest "$cache/node" '*' 2
keep_newest "$cache/modules" '*' 2
keep_newest "$cache/seccomp" '*.bpf' 3
# Images in storage: the ones just built and the stages under them; older tags go.
bh images --format '{{.Name}}:{{.Tag}}' | while read -r ref; do
  case "$ref" in
    "$service_name:$tag" | "$runner_name:$tag" | "$base_image" | "$node_image" | "$modules_image") ;;
    "$service_name":* | "$runner_name":* | "$stage_name":*) bh rmi "$ref" >/dev/null 2>&1 || true ;;
  esac
done

log "built in ${SECONDS}s"
print_result
