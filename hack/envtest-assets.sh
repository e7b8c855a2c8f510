#!/usr/bin/env bash
# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
#
# Prints the folder of etcd and kube-apiserver that envtest runs (make test's KUBEBUILDER_ASSETS)
# as its last line, taking the first of:
#
#   1. KUBEBUILDER_ASSETS, when set: used as it is, nothing built or downloaded;
#   2. setup-envtest's binaries of ENVTEST_K8S_VERSION under ENVTEST_BIN_DIR, downloaded now if they
#      are not there yet (the kubebuilder way);
#   3. hack/build-controlplane.sh envtest: the release binaries, checked against their published
#      SHA-256, else built from source through the Go module proxy, for the machines that can download
#      no binaries (instant once there: it is cached outside the checkout).
#
# A failed download of 2 falls through to 3 without a word (3 says why it builds, if it must).
#
#   ENVTEST=bin/setup-envtest ENVTEST_K8S_VERSION=1.37 ENVTEST_BIN_DIR=bin hack/envtest-assets.sh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
	for b in etcd kube-apiserver; do
		if [ ! -x "$KUBEBUILDER_ASSETS/$b" ]; then
			echo "envtest-assets: KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS holds no executable $b;" \
				"unset it to download or build the control plane" >&2
			exit 1
		fi
	done
	echo "$KUBEBUILDER_ASSETS"
	exit 0
fi

envtest=${ENVTEST:-}
version=${ENVTEST_K8S_VERSION:-}
bindir=${ENVTEST_BIN_DIR:-"$here/../bin"}
# How long a download may take before the source build takes over: where the hosts are unreachable
# the request fails at once, but a network that drops packets would otherwise hang it.
timeout=${ENVTEST_DOWNLOAD_TIMEOUT:-120}

if [ -n "$envtest" ] && [ -x "$envtest" ] && [ -n "$version" ]; then
	# Installed already (no network), or downloaded now.
	if dir=$("$envtest" use -i "$version" --bin-dir "$bindir" -p path 2>/dev/null) && [ -n "$dir" ]; then
		echo "$dir"
		exit 0
	fi
	if dir=$(timeout "$timeout" "$envtest" use "$version" --bin-dir "$bindir" -p path 2>/dev/null) && [ -n "$dir" ]; then
		echo "$dir"
		exit 0
	fi
fi

"$here/build-controlplane.sh" envtest | tail -1
