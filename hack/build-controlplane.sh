#!/usr/bin/env bash
# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
#
# Puts the local control plane into a cache folder outside the checkout, keyed by version, and skips
# whatever is already there. Prints the absolute folder that holds the binaries as its last line.
#
# Each binary with a release is downloaded first (hack/fetchrelease: etcd and the Kubernetes binaries,
# each checked against the SHA-256 its release publishes before it is made executable); where that
# fails (no network, a checksum that does not match) the script says why in one line and builds what
# is missing from source through the Go module proxy, as machines that can download no binaries need.
# kwok and its stage definitions have no release with published checksums: they always come from
# the module proxy (a build of about 1.5 minutes).
#
#   hack/build-controlplane.sh envtest   etcd + kube-apiserver (what envtest needs)
#   hack/build-controlplane.sh all       the above + kube-controller-manager, kube-scheduler, kwok and
#                                        kwok's stage definitions (what the end-to-end cluster needs)
#   hack/build-controlplane.sh node      the above + kubelet and kube-proxy (a real node for the demo
#                                        and the e2e suite, where the machine can run containerd)
#   hack/build-controlplane.sh kubectl   kubectl at the API server's version (make install, deploy, ...):
#                                        the machine's kubectl may be outside the supported skew
#
# The cache root is $MRTR_TOOLS_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/mrtr-operator.
#
# MRTR_CONTROLPLANE_FROM chooses where the binaries with a release come from: auto (the default:
# download, else build), download (fail rather than build them) or source (build, try no download).
# MRTR_K8S_RELEASE_URL and MRTR_ETCD_RELEASE_URL replace the release hosts (a mirror; the tests' local
# server): see hack/fetchrelease.
set -euo pipefail

KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0

what=${1:-envtest}
case "$what" in
envtest | all | node | kubectl) ;;
*)
	echo "usage: $0 [envtest|all|node|kubectl]" >&2
	exit 2
	;;
esac
from=${MRTR_CONTROLPLANE_FROM:-auto}
case "$from" in
auto | download | source) ;;
*)
	echo "$0: MRTR_CONTROLPLANE_FROM=$from: use auto, download or source" >&2
	exit 2
	;;
esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=${MRTR_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mrtr-operator}
dir="$root/controlplane-k8s-${KUBE_VERSION}-etcd-${ETCD_VERSION}-kwok-${KWOK_VERSION}"
mkdir -p "$dir"

# One build at a time per cache folder: parallel make targets or test suites would otherwise race.
exec 9>"$dir/.lock"
flock 9

export CGO_ENABLED=0 GOFLAGS=-mod=mod
say() { echo "build-controlplane: $*" >&2; }

# fetch NAME...: download the release binaries of those that are missing, verified (see the top). On
# failure, says why in one line and returns, for build to make what is still missing; exits instead
# when MRTR_CONTROLPLANE_FROM=download.
fetch() {
	[ "$from" = source ] && return 0
	local missing=() name reason start=$SECONDS
	for name in "$@"; do
		[ -x "$dir/$name" ] || missing+=("$name")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	say "downloading ${missing[*]} (Kubernetes $KUBE_VERSION, etcd $ETCD_VERSION)"
	# The downloader is in the project's own module and imports only the standard library: read-only.
	# Built rather than run with go run, which would add its own line about the exit status.
	local tool="$dir/.fetchrelease"
	if ! (cd "$here/.." && GOFLAGS=-mod=readonly go build -o "$tool" ./hack/fetchrelease); then
		reason="building hack/fetchrelease failed (see above)"
	elif reason=$("$tool" -dir "$dir" -kube "$KUBE_VERSION" -etcd "$ETCD_VERSION" "${missing[@]}"); then
		rm -f "$tool"
		say "downloaded ${missing[*]} in $((SECONDS - start))s"
		return 0
	fi
	rm -f "$tool"
	reason=${reason:-"hack/fetchrelease failed (see above)"}
	if [ "$from" = download ]; then
		say "$reason; MRTR_CONTROLPLANE_FROM=download: building nothing"
		exit 1
	fi
	say "$reason; building from source"
}

# build NAME PKG DIR [LDFLAGS]: go build PKG inside module DIR into $dir/NAME unless it is there.
build() {
	local name=$1 pkg=$2 moddir=$3 ldflags=${4:-}
	[ -x "$dir/$name" ] && return 0
	say "building $name (first run only; see docs/development.md for timings)"
	local start=$SECONDS
	(cd "$moddir" && go build -trimpath -ldflags "-s -w $ldflags" -o "$dir/.$name.tmp" "$pkg")
	mv "$dir/.$name.tmp" "$dir/$name"
	say "built $name in $((SECONDS - start))s"
}

minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
kube_ldflags=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	kube_ldflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done

if [ "$what" = kubectl ]; then
	fetch kubectl
	build kubectl k8s.io/kubernetes/cmd/kubectl "$here/controlplane" "$kube_ldflags"
	echo "$dir"
	exit 0
fi

case "$what" in
envtest) fetch etcd kube-apiserver ;;
all) fetch etcd kube-apiserver kube-controller-manager kube-scheduler ;;
node) fetch etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy ;;
esac

build etcd . "$here/etcd"
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$here/controlplane" "$kube_ldflags"

if [ "$what" = all ] || [ "$what" = node ]; then
	build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$here/controlplane" "$kube_ldflags"
	build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$here/controlplane" "$kube_ldflags"
	if [ ! -x "$dir/kwok" ]; then
		# kwok's own go.mod builds as is, so no wrapper module is needed.
		say "building kwok (first run only)"
		start=$SECONDS
		GOBIN="$dir/.kwok-bin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
		mv "$dir/.kwok-bin/kwok" "$dir/kwok" && rmdir "$dir/.kwok-bin"
		say "built kwok in $((SECONDS - start))s"
	fi
	if [ ! -f "$dir/kwok-stages.yaml" ]; then
		# The stages that make kwok act as a kubelet: nodes become Ready and keep a heartbeat, pods are
		# scheduled, become Ready and are removed on deletion. They ship inside the kwok module.
		src=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
		stages="$src/kustomize/stage"
		{
			for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml \
				pod/general/pod-create.yaml pod/general/pod-ready.yaml pod/general/pod-complete.yaml \
				pod/general/pod-delete.yaml; do
				echo "---"
				cat "$stages/$f"
			done
		} >"$dir/.kwok-stages.yaml.tmp"
		mv "$dir/.kwok-stages.yaml.tmp" "$dir/kwok-stages.yaml"
	fi
fi

if [ "$what" = node ]; then
	build kubelet k8s.io/kubernetes/cmd/kubelet "$here/controlplane" "$kube_ldflags"
	build kube-proxy k8s.io/kubernetes/cmd/kube-proxy "$here/controlplane" "$kube_ldflags"
fi

echo "$dir"
