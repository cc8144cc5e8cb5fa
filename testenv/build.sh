#!/usr/bin/env bash
# Build the real-Kubernetes test environment binaries from Go modules:
#   kube-apiserver, kube-controller-manager, kube-scheduler  (k8s.io/kubernetes, ./kubernetes)
#   etcd                                                     (go.etcd.io/etcd/server/v3, ./etcd)
#   kwok                                                     (sigs.k8s.io/kwok/cmd/kwok, ./kwok)
#   strategic-merge: apimachinery's strategic merge patch    (./kubernetes/strategicmerge)
#     for tests/integration/test_smp_apimachinery.py; it links only apimachinery and
#     client-go's scheme, which the Kubernetes build has already compiled
#
# One Kubernetes version is built: v1.36.3 (the first with server-side sharded list and
# watch) with etcd v3.6.8. The first argument or $OPER8D_K8S_VERSION may name it (1.36,
# v1.36.3); anything else is refused, since the wrapper modules pin that one release.
#
# Binaries are cached outside the repo in
#   ${OPER8D_TESTENV_CACHE:-$HOME/.cache/oper8d-testenv}/<component>-<version>/
# and anything already there is skipped, so a warm run takes well under a second.
# OPER8D_TESTENV_CACHED_ONLY=1 builds nothing: it fails (exit 3) when a binary is missing.
# OPER8D_TESTENV_TIME=1 reports the time and peak memory of each cold build.
# A directory of symlinks to all the binaries is printed on the last line of stdout.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_ROOT="${OPER8D_TESTENV_CACHE:-$HOME/.cache/oper8d-testenv}"

# Pinned versions: keep in step with the require lines of the wrapper modules.
case "${1:-${OPER8D_K8S_VERSION:-1.36}}" in
1.36 | v1.36 | 1.36.3 | v1.36.3)
    K8S_VERSION=v1.36.3 ETCD_VERSION=v3.6.8
    ;;
*)
    echo "[testenv] unsupported Kubernetes version '${1:-$OPER8D_K8S_VERSION}': use 1.36" >&2
    exit 2
    ;;
esac
KWOK_VERSION=v0.8.0

K8S_MINOR="${K8S_VERSION#v1.}"
K8S_MINOR="${K8S_MINOR%%.*}"

export CGO_ENABLED=0
export GOFLAGS="-buildvcs=false -mod=readonly"

log() { echo "[testenv] $*" >&2; }

mkdir -p "$CACHE_ROOT"
# Serialize concurrent runs (e.g. several test sessions starting at once).
if command -v flock >/dev/null 2>&1; then
    exec 9>"$CACHE_ROOT/.build.lock"
    flock 9
fi

# build_one COMPONENT VERSION MODULE_DIR PACKAGE [LDFLAGS]
build_one() {
    local name="$1" version="$2" moddir="$3" pkg="$4" ldflags="${5:-}"
    local dir="$CACHE_ROOT/$name-$version"
    if [[ -x "$dir/$name" ]]; then
        log "$name $version: cached ($dir/$name)"
        return 0
    fi
    if [[ -n "${OPER8D_TESTENV_CACHED_ONLY:-}" ]]; then
        log "$name $version is not built (run: bash testenv/build.sh ${K8S_VERSION#v})"
        exit 3
    fi
    command -v go >/dev/null 2>&1 || { log "go is not installed"; exit 1; }
    mkdir -p "$dir"
    local tmp="$dir/.$name.tmp.$$"
    log "building $name $version from $pkg ..."
    local start=$SECONDS
    local timer=()
    # OPER8D_TESTENV_TIME=1: report wall time, CPU time (user + system: what a quiet
    # machine spreads over its cores) and the largest process's peak RSS.
    if [[ -n "${OPER8D_TESTENV_TIME:-}" && -x /usr/bin/time ]]; then
        local format="[testenv] $name: %e s wall, %U s user + %S s system CPU"
        timer=(/usr/bin/time -f "$format, %M KB max RSS of one process")
    fi
    (cd "$HERE/$moddir" && "${timer[@]}" go build -trimpath -ldflags "-s -w $ldflags" -o "$tmp" "$pkg")
    mv -f "$tmp" "$dir/$name"
    log "built $name $version in $((SECONDS - start))s"
}

K8S_LDFLAGS="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
K8S_LDFLAGS+=" -X k8s.io/component-base/version.gitMajor=1"
K8S_LDFLAGS+=" -X k8s.io/component-base/version.gitMinor=$K8S_MINOR"
K8S_LDFLAGS+=" -X k8s.io/component-base/version.gitTreeState=clean"

for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
    build_one "$cmd" "$K8S_VERSION" kubernetes "k8s.io/kubernetes/cmd/$cmd" "$K8S_LDFLAGS"
done
# Versioned by its source too, so that a change to main.go rebuilds it.
SMP_VERSION="$K8S_VERSION-$(cat "$HERE/kubernetes/strategicmerge/main.go" | sha256sum | cut -c1-12)"
build_one strategic-merge "$SMP_VERSION" kubernetes ./strategicmerge
build_one etcd "$ETCD_VERSION" etcd go.etcd.io/etcd/server/v3
build_one kwok "$KWOK_VERSION" kwok sigs.k8s.io/kwok/cmd/kwok

# kwok >= 0.8 has no built-in stages: it needs Stage objects in a --config file.
# Take kwok's own "fast" stages (node initialize + heartbeat with lease, pod ready,
# Job pod complete, pod delete) from the pinned kwok module.
KWOK_STAGES="$CACHE_ROOT/kwok-$KWOK_VERSION/kwok-stages.yaml"
if [[ ! -s "$KWOK_STAGES" ]]; then
    log "writing $KWOK_STAGES"
    src="$(cd "$HERE/kwok" && go mod download -json sigs.k8s.io/kwok |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')/kustomize/stage"
    {
        for f in node/fast/node-initialize.yaml \
            node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
            pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
            echo "---"
            cat "$src/$f"
        done
    } > "$KWOK_STAGES.tmp.$$"
    mv -f "$KWOK_STAGES.tmp.$$" "$KWOK_STAGES"
fi

# One directory holding all binaries of this version set.
BIN_DIR="$CACHE_ROOT/bin-k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"
mkdir -p "$BIN_DIR"
for pair in kube-apiserver:$K8S_VERSION kube-controller-manager:$K8S_VERSION \
    kube-scheduler:$K8S_VERSION strategic-merge:$SMP_VERSION etcd:$ETCD_VERSION \
    kwok:$KWOK_VERSION; do
    name="${pair%%:*}"
    ln -sfn "$CACHE_ROOT/$name-${pair#*:}/$name" "$BIN_DIR/$name"
done
ln -sfn "$KWOK_STAGES" "$BIN_DIR/kwok-stages.yaml"
echo "$BIN_DIR"
