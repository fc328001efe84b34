#!/usr/bin/env bash
# Builds the test cluster's binaries from the published Go modules and caches them outside the repo,
# keyed by version:
#   ${FFOP_TOOLS_DIR:-$HOME/.cache/ffmpeg-operator/tools}/k8s-<ver>/   kube-apiserver, kube-controller-manager,
#                                                                       kubectl, kube-scheduler, kubelet
#   .../etcd-<ver>/ and .../helm-<ver>/
# A cached run only tests for the files, so it returns at once; a missing binary is built alone.
# Prints shell assignments (FFOP_K8S_BIN_DIR=..., FFOP_ETCD_BIN_DIR=..., FFOP_HELM_BIN_DIR=...) on
# stdout; progress goes to stderr.
#
# Env: FFOP_K8S_VERSION (default below), FFOP_ETCD_VERSION, FFOP_HELM_VERSION, FFOP_TOOLS_DIR.
set -euo pipefail

K8S_VERSION="${FFOP_K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${FFOP_ETCD_VERSION:-v3.6.16}"
HELM_VERSION="${FFOP_HELM_VERSION:-v3.22.0}"
TOOLS_DIR="${FFOP_TOOLS_DIR:-$HOME/.cache/ffmpeg-operator/tools}"
K8S_DIR="$TOOLS_DIR/k8s-$K8S_VERSION"
ETCD_DIR="$TOOLS_DIR/etcd-$ETCD_VERSION"
HELM_DIR="$TOOLS_DIR/helm-$HELM_VERSION"
# The control plane, then what a real node needs (built right after, they reuse most of the build cache).
K8S_BINARIES=(kube-apiserver kube-controller-manager kubectl kube-scheduler kubelet)

log() { echo "build.sh: $*" >&2; }

k8s_cached() {
  local b
  for b in "${K8S_BINARIES[@]}"; do [[ -x "$K8S_DIR/$b" ]] || return 1; done
}
etcd_cached() { [[ -x "$ETCD_DIR/etcd" ]]; }
helm_cached() { [[ -x "$HELM_DIR/helm" ]]; }

print_locations() {
  echo "FFOP_K8S_BIN_DIR=$K8S_DIR"
  echo "FFOP_ETCD_BIN_DIR=$ETCD_DIR"
  echo "FFOP_HELM_BIN_DIR=$HELM_DIR"
}

if k8s_cached && etcd_cached && helm_cached; then
  print_locations
  exit 0
fi

command -v go >/dev/null || { log "go is not installed"; exit 1; }
mkdir -p "$TOOLS_DIR"

# Two test runs may ask for a build at once: one builds, the other waits and then finds the cache.
exec 9>"$TOOLS_DIR/.build.lock"
flock 9

# Never fetch another toolchain, never let a surrounding go.work or vendor dir interfere.
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0
export GOFLAGS="-mod=mod -buildvcs=false"

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/ffop-cp-build.XXXXXX")"
trap 'chmod -R u+w "$SCRATCH" 2>/dev/null; rm -rf "$SCRATCH"' EXIT

# `go mod download -json` prints one JSON object; pull one string field out of it without jq.
json_field() { sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}$/\1/p" | head -n1; }

# go directive of a go.mod file, e.g. "1.26.0".
go_directive() { awk '$1 == "go" { print $2; exit }' "$1"; }

# Fails early with a clear message if the local toolchain is older than a go.mod asks for.
check_toolchain() {
  local want="$1" have
  have="$(go env GOVERSION)"; have="${have#go}"
  if [[ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -n1)" != "$want" ]]; then
    log "go $have is older than the go $want that $2 needs"; exit 1
  fi
}

build_k8s() {
  local mod_file go_version minor staging_version out version_pkg client_version_pkg ldflags
  log "building Kubernetes $K8S_VERSION binaries that are not cached yet; this takes a while"
  mod_file="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | json_field GoMod)"
  [[ -f "$mod_file" ]] || { log "could not download k8s.io/kubernetes@$K8S_VERSION"; exit 1; }
  go_version="$(go_directive "$mod_file")"
  check_toolchain "$go_version" "k8s.io/kubernetes@$K8S_VERSION"

  # Staging modules are published as k8s.io/<name> v0.<minor>.<patch> for kubernetes v1.<minor>.<patch>.
  staging_version="v0.${K8S_VERSION#v1.}"
  minor="$(echo "$K8S_VERSION" | cut -d. -f2)"

  mkdir -p "$SCRATCH/k8s"
  {
    echo "module ffop.local/k8s-build"
    echo
    echo "go $go_version"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    # Every "k8s.io/<name> => ./staging/..." line of the release's go.mod becomes the published module.
    awk -v v="$staging_version" '$2 == "=>" && $3 ~ /^\.\/staging\// { print "\t" $1 " => " $1 " " v }' "$mod_file"
    echo ")"
  } >"$SCRATCH/k8s/go.mod"
  grep -q '=> k8s.io/' "$SCRATCH/k8s/go.mod" || { log "found no staging replacements in $mod_file"; exit 1; }

  version_pkg="k8s.io/component-base/version"
  client_version_pkg="k8s.io/client-go/pkg/version"
  ldflags="-s -w"
  local pkg
  for pkg in "$version_pkg" "$client_version_pkg"; do
    ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done

  out="$SCRATCH/k8s/out"
  mkdir -p "$out"
  (
    cd "$SCRATCH/k8s"
    local b
    for b in "${K8S_BINARIES[@]}"; do
      [[ -x "$K8S_DIR/$b" ]] && continue
      log "go build k8s.io/kubernetes/cmd/$b"
      go build -trimpath -ldflags "$ldflags" -o "$out/$b" "k8s.io/kubernetes/cmd/$b"
      install_file "$out/$b" "$K8S_DIR/$b"
    done
  )
}

# build_module <name> <module> <version> <package> <ldflags> <cache dir>: builds one main package of a
# published module (whose own go.mod needs no replacements) with a scratch go.mod that requires it.
build_module() {
  local name="$1" module="$2" version="$3" package="$4" ldflags="$5" dest="$6" mod_file go_version out
  log "building $name $version"
  mod_file="$(go mod download -json "$module@$version" | json_field GoMod)"
  [[ -f "$mod_file" ]] || { log "could not download $module@$version"; exit 1; }
  go_version="$(go_directive "$mod_file")"
  check_toolchain "$go_version" "$module@$version"
  mkdir -p "$SCRATCH/$name"
  printf 'module ffop.local/%s-build\n\ngo %s\n\nrequire %s %s\n' "$name" "$go_version" "$module" "$version" >"$SCRATCH/$name/go.mod"
  out="$SCRATCH/$name/out"
  mkdir -p "$out"
  (cd "$SCRATCH/$name" && go build -trimpath -ldflags "$ldflags" -o "$out/$name" "$package")
  install_dir "$out" "$dest"
}

# The etcd server module's root package is etcd's main package.
build_etcd() { build_module etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" go.etcd.io/etcd/server/v3 "-s -w" "$ETCD_DIR"; }
build_helm() {
  build_module helm helm.sh/helm/v3 "$HELM_VERSION" helm.sh/helm/v3/cmd/helm \
    "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" "$HELM_DIR"
}

# Moves one finished binary into the cache by rename, so a half-written file never looks cached.
install_file() {
  mkdir -p "$(dirname "$2")"
  mv "$1" "$2.partial"
  mv "$2.partial" "$2"
  log "installed $2"
}

# Moves a finished build into the cache in one rename, so a half-built directory never looks cached.
install_dir() {
  local from="$1" to="$2"
  rm -rf "$to.partial"
  mkdir -p "$(dirname "$to")"
  mv "$from" "$to.partial"
  rm -rf "$to"
  mv "$to.partial" "$to"
  local entries=("$to"/*)
  log "installed ${entries[*]##*/} in $to"
}

start=$SECONDS
k8s_cached || build_k8s
etcd_cached || build_etcd
helm_cached || build_helm
log "done in $((SECONDS - start))s"
print_locations
