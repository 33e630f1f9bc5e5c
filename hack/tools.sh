#!/usr/bin/env bash
# Builds the real control-plane binaries (kube-apiserver, kube-controller-manager,
# etcd, Karmada, and kubelet and kube-scheduler for the local platform's nodes) and the developer tools (controller-gen, golangci-lint,
# kustomize, goreleaser, promtool) from the Go module proxy into a versioned cache directory.
#
# Nothing is downloaded from anywhere but the Go module proxy: every binary is
# compiled here from a small wrapper module that requires the pinned version.
#
#   hack/tools.sh [all|platform|node|dev|kustomize|goreleaser|promtool|metrics-server|dir|bin NAME]
#
# Cache layout: $COMPUTE_TOOLS_DIR/<component>-<version>/bin/<binary>
# Default $COMPUTE_TOOLS_DIR: ${XDG_CACHE_HOME:-$HOME/.cache}/compute-tools.
# A component whose binaries all exist is skipped, so a second run builds nothing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "${here}/versions.env"

TOOLS_DIR="${COMPUTE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/compute-tools}"
export GOFLAGS="${GOFLAGS:-} -mod=mod"
export CGO_ENABLED="${CGO_ENABLED:-0}"
# The proxy refuses some version-list queries; never fall back to VCS.
export GONOSUMDB="${GONOSUMDB:-}"
export GOTOOLCHAIN=local

log() { printf '[tools %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

have_all() { # dir bin...
  local dir="$1"; shift
  local b
  for b in "$@"; do [ -x "${dir}/bin/${b}" ] || return 1; done
  return 0
}

# wrapper DIR MODULE@VERSION -> prepares DIR/src/go.mod requiring the module.
wrapper() {
  local dir="$1" req="$2"
  rm -rf "${dir}/src"
  mkdir -p "${dir}/src" "${dir}/bin"
  cat >"${dir}/src/go.mod" <<EOF
module compute.local/toolwrap

go 1.26

require ${req% *} ${req#* }
EOF
}

# kube_bins BIN... builds Kubernetes binaries of the pinned release into the
# kubernetes cache directory, skipping those already built.
kube_bins() {
  local dir="${TOOLS_DIR}/kubernetes-${KUBERNETES_VERSION}"
  if have_all "$dir" "$@"; then
    log "kubernetes ${KUBERNETES_VERSION} ($*): cached in ${dir}"
    return
  fi
  if [ ! -f "${dir}/src/go.sum" ]; then
    log "kubernetes ${KUBERNETES_VERSION}: resolving module (first time takes a few minutes)"
    wrapper "$dir" "k8s.io/kubernetes ${KUBERNETES_VERSION}"
    local gomod
    gomod="$(cd "${dir}/src" && go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
    # kubernetes replaces every staging module with ./staging/...; pin them to
    # the published staging versions instead.
    grep -oE 'k8s.io/[a-z0-9-]+ => ./staging/src/k8s.io/[a-z0-9-]+' "$gomod" |
      awk '{print $1}' | grep -v '^k8s.io/sample-' | sort -u |
      while read -r m; do
        echo "replace ${m} => ${m} ${KUBERNETES_STAGING_VERSION}"
      done >>"${dir}/src/go.mod"
  fi
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${KUBERNETES_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "${KUBERNETES_VERSION}" | cut -d. -f2) -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=${KUBERNETES_VERSION}"
  local b
  for b in "$@"; do
    [ -x "${dir}/bin/${b}" ] && continue
    log "kubernetes ${KUBERNETES_VERSION}: building ${b} (about 3 minutes cold)"
    (cd "${dir}/src" && go get "k8s.io/kubernetes/cmd/${b}@${KUBERNETES_VERSION}" >/dev/null)
    (cd "${dir}/src" && go build -trimpath -ldflags "$ldflags" -o "${dir}/bin/${b}.tmp" "k8s.io/kubernetes/cmd/${b}")
    mv "${dir}/bin/${b}.tmp" "${dir}/bin/${b}"
  done
  log "kubernetes ${KUBERNETES_VERSION} ($*): done"
}

build_kubernetes() { kube_bins kube-apiserver kube-controller-manager; }

# build_node builds what a real node of the local platform runs beside the
# cell's control plane (kubelet, kube-scheduler, from the same release), and
# installs the container runtime and the CNI plugins from Debian's packages
# when they are missing: containerd, runc and containernetworking-plugins
# (root only; nothing is downloaded from anywhere else).
build_node() {
  kube_bins kubelet kube-scheduler
  install_runtime
}

install_runtime() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] || [ -x /opt/cni/bin/bridge ] || missing+=(containernetworking-plugins)
  if [ "${#missing[@]}" -eq 0 ]; then
    log "container runtime: containerd, runc and the CNI plugins are installed"
    return
  fi
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    log "container runtime: ${missing[*]} missing; install them as root with: apt-get install -y ${missing[*]}"
    log "(the local platform's real nodes need them; every other part of the platform runs without)"
    return 1
  fi
  log "container runtime: installing ${missing[*]} with apt-get"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
    apt-get update >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null ||
      { log "container runtime: apt-get install ${missing[*]} failed (see above)"; return 1; }
  fi
  log "container runtime: installed ${missing[*]}"
}

build_etcd() {
  local dir="${TOOLS_DIR}/etcd-${ETCD_VERSION}"
  if have_all "$dir" etcd; then
    log "etcd ${ETCD_VERSION}: cached in ${dir}"
    return
  fi
  log "etcd ${ETCD_VERSION}: building"
  wrapper "$dir" "go.etcd.io/etcd/server/v3 ${ETCD_VERSION}"
  cat >"${dir}/src/main.go" <<'EOF'
// Command etcd is the etcd server, built from the Go module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
  (cd "${dir}/src" && go mod tidy >/dev/null 2>&1 || go get ./... >/dev/null)
  (cd "${dir}/src" && go build -trimpath -ldflags "-s -w" -o "${dir}/bin/etcd.tmp" .)
  mv "${dir}/bin/etcd.tmp" "${dir}/bin/etcd"
  log "etcd ${ETCD_VERSION}: done"
}

build_karmada() {
  local dir="${TOOLS_DIR}/karmada-${KARMADA_VERSION}"
  local bins=(karmada-controller-manager karmada-scheduler karmada-webhook karmada-aggregated-apiserver)
  if have_all "$dir" "${bins[@]}"; then
    log "karmada ${KARMADA_VERSION}: cached in ${dir}"
    return
  fi
  log "karmada ${KARMADA_VERSION}: resolving module"
  wrapper "$dir" "github.com/karmada-io/karmada ${KARMADA_VERSION}"
  local m="github.com/karmada-io/karmada"
  (cd "${dir}/src" && go get "${m}/cmd/controller-manager@${KARMADA_VERSION}" "${m}/cmd/scheduler@${KARMADA_VERSION}" \
    "${m}/cmd/webhook@${KARMADA_VERSION}" "${m}/cmd/aggregated-apiserver@${KARMADA_VERSION}" >/dev/null)
  local ldflags="-s -w -X ${m}/pkg/version.gitVersion=${KARMADA_VERSION}"
  local b
  for b in "${bins[@]}"; do
    log "karmada ${KARMADA_VERSION}: building ${b} (about 2 minutes cold)"
    (cd "${dir}/src" && go build -trimpath -ldflags "$ldflags" -o "${dir}/bin/${b}.tmp" "${m}/cmd/${b#karmada-}")
    mv "${dir}/bin/${b}.tmp" "${dir}/bin/${b}"
  done
  # The CRDs ship inside the module; keep a copy beside the binaries.
  local src
  src="$(cd "${dir}/src" && go list -m -f '{{.Dir}}' "${m}")"
  rm -rf "${dir}/crds"
  mkdir -p "${dir}/crds"
  cp -r "${src}/charts/karmada/_crds/bases/." "${dir}/crds/"
  chmod -R u+w "${dir}/crds"
  log "karmada ${KARMADA_VERSION}: done"
}

# go_tool NAME MODULE VERSION PACKAGE
go_tool() {
  local name="$1" mod="$2" ver="$3" pkg="$4"
  local dir="${TOOLS_DIR}/${name}-${ver}"
  if have_all "$dir" "$name"; then
    log "${name} ${ver}: cached in ${dir}"
    return
  fi
  log "${name} ${ver}: building"
  wrapper "$dir" "${mod} ${ver}"
  (cd "${dir}/src" && go get "${pkg}@${ver}" >/dev/null && go build -trimpath -o "${dir}/bin/${name}.tmp" "${pkg}")
  mv "${dir}/bin/${name}.tmp" "${dir}/bin/${name}"
  log "${name} ${ver}: done"
}

build_dev() {
  go_tool controller-gen sigs.k8s.io/controller-tools "${CONTROLLER_GEN_VERSION}" sigs.k8s.io/controller-tools/cmd/controller-gen
  go_tool golangci-lint github.com/golangci/golangci-lint/v2 "${GOLANGCI_LINT_VERSION}" github.com/golangci/golangci-lint/v2/cmd/golangci-lint
  build_kustomize
  build_goreleaser
  build_promtool
}

build_kustomize() {
  go_tool kustomize sigs.k8s.io/kustomize/kustomize/v5 "${KUSTOMIZE_VERSION}" sigs.k8s.io/kustomize/kustomize/v5
}

# goreleaser stamps its own version through -X main.version, so
# `goreleaser --version` names the pinned release rather than "unknown".
build_goreleaser() {
  local name=goreleaser ver="${GORELEASER_VERSION}"
  local dir="${TOOLS_DIR}/${name}-${ver}"
  local pkg=github.com/goreleaser/goreleaser/v2
  if have_all "$dir" "$name"; then
    log "${name} ${ver}: cached in ${dir}"
    return
  fi
  log "${name} ${ver}: building (a large module: several minutes cold)"
  wrapper "$dir" "${pkg} ${ver}"
  (cd "${dir}/src" && go get "${pkg}@${ver}" >/dev/null &&
    go build -trimpath -ldflags "-s -w -X main.version=${ver#v} -X main.builtBy=compute-tools" -o "${dir}/bin/${name}.tmp" "${pkg}")
  mv "${dir}/bin/${name}.tmp" "${dir}/bin/${name}"
  log "${name} ${ver}: done"
}

# promtool runs the Prometheus rule unit tests of config/components/prometheus
# (make test). It is built with Prometheus' remove_all_sd tag: promtool's
# `test rules` needs no service discovery, and leaving out the cloud SDKs
# (AWS, Azure, GCE, …) keeps the cold build to about 250 CPU-seconds.
build_promtool() {
  local name=promtool ver="${PROMTOOL_VERSION}"
  local dir="${TOOLS_DIR}/${name}-${ver}"
  local mod=github.com/prometheus/prometheus
  if have_all "$dir" "$name"; then
    log "${name} ${ver}: cached in ${dir}"
    return
  fi
  log "${name} ${ver}: building"
  wrapper "$dir" "${mod} ${ver}"
  (cd "${dir}/src" && go get "${mod}/cmd/promtool@${ver}" >/dev/null &&
    go build -trimpath -tags remove_all_sd \
      -ldflags "-s -w -X github.com/prometheus/common/version.Version=${ver#v} -X github.com/prometheus/common/version.BuildUser=compute-tools" \
      -o "${dir}/bin/${name}.tmp" "${mod}/cmd/promtool")
  mv "${dir}/bin/${name}.tmp" "${dir}/bin/${name}"
  log "${name} ${ver}: done"
}

# metrics-server serves the resource metrics API (metrics.k8s.io) beside the
# local platform's real nodes. It is built from its own module, with the
# Kubernetes libraries its go.mod requires (not the platform's release), and
# stamped as its own Makefile does (client-go's version only: component-base's
# is the emulated Kubernetes version).
build_metrics_server() {
  local name=metrics-server ver="${METRICS_SERVER_VERSION}"
  local dir="${TOOLS_DIR}/${name}-${ver}"
  local mod=sigs.k8s.io/metrics-server
  if have_all "$dir" "$name"; then
    log "${name} ${ver}: cached in ${dir}"
    return
  fi
  log "${name} ${ver}: building (about 5 minutes cold on 2 busy cores)"
  wrapper "$dir" "${mod} ${ver}"
  (cd "${dir}/src" && go get "${mod}/cmd/metrics-server@${ver}" >/dev/null &&
    go build -trimpath \
      -ldflags "-s -w -X k8s.io/client-go/pkg/version.gitVersion=${ver}" \
      -o "${dir}/bin/${name}.tmp" "${mod}/cmd/metrics-server")
  mv "${dir}/bin/${name}.tmp" "${dir}/bin/${name}"
  log "${name} ${ver}: done"
}

build_platform() {
  build_etcd
  build_kubernetes
  kube_bins kubelet kube-scheduler
  # The platform starts without real nodes when the runtime cannot be
  # installed (not root): say so, but build the rest.
  install_runtime || log "container runtime: the local platform will run no real node"
  build_metrics_server
  build_karmada
  # The install tests render the kustomize overlays and dry-run them on
  # real planes.
  build_kustomize
}

# bin NAME prints the cached path of one binary.
bin_path() {
  case "$1" in
    kube-apiserver | kube-controller-manager | kube-scheduler | kubelet) echo "${TOOLS_DIR}/kubernetes-${KUBERNETES_VERSION}/bin/$1" ;;
    etcd) echo "${TOOLS_DIR}/etcd-${ETCD_VERSION}/bin/etcd" ;;
    karmada-*) echo "${TOOLS_DIR}/karmada-${KARMADA_VERSION}/bin/$1" ;;
    karmada-crds) echo "${TOOLS_DIR}/karmada-${KARMADA_VERSION}/crds" ;;
    controller-gen) echo "${TOOLS_DIR}/controller-gen-${CONTROLLER_GEN_VERSION}/bin/controller-gen" ;;
    golangci-lint) echo "${TOOLS_DIR}/golangci-lint-${GOLANGCI_LINT_VERSION}/bin/golangci-lint" ;;
    kustomize) echo "${TOOLS_DIR}/kustomize-${KUSTOMIZE_VERSION}/bin/kustomize" ;;
    goreleaser) echo "${TOOLS_DIR}/goreleaser-${GORELEASER_VERSION}/bin/goreleaser" ;;
    promtool) echo "${TOOLS_DIR}/promtool-${PROMTOOL_VERSION}/bin/promtool" ;;
    metrics-server) echo "${TOOLS_DIR}/metrics-server-${METRICS_SERVER_VERSION}/bin/metrics-server" ;;
    *) echo "unknown tool $1" >&2; return 2 ;;
  esac
}

case "${1:-all}" in
  # make tools fails, saying what to run, when the runtime cannot be
  # installed; make test and make up (platform) only warn.
  all) build_platform; build_node; build_dev ;;
  platform) build_platform ;;
  kubernetes) build_kubernetes ;;
  node) build_node ;;
  etcd) build_etcd ;;
  karmada) build_karmada ;;
  dev) build_dev ;;
  controller-gen) go_tool controller-gen sigs.k8s.io/controller-tools "${CONTROLLER_GEN_VERSION}" sigs.k8s.io/controller-tools/cmd/controller-gen ;;
  golangci-lint) go_tool golangci-lint github.com/golangci/golangci-lint/v2 "${GOLANGCI_LINT_VERSION}" github.com/golangci/golangci-lint/v2/cmd/golangci-lint ;;
  kustomize) build_kustomize ;;
  goreleaser) build_goreleaser ;;
  promtool) build_promtool ;;
  metrics-server) build_metrics_server ;;
  dir) echo "${TOOLS_DIR}" ;;
  bin) bin_path "$2" ;;
  *) echo "usage: $0 [all|platform|kubernetes|node|etcd|karmada|dev|controller-gen|golangci-lint|kustomize|goreleaser|promtool|metrics-server|dir|bin NAME]" >&2; exit 2 ;;
esac
