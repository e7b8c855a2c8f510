#!/usr/bin/env bash
# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
#
# Installs what the local cluster's real node needs (test/localcluster, make demo, make test-e2e):
# Debian's containerd, runc, containernetworking-plugins, iptables, conntrack and iproute2, and
# debootstrap (hack/server-rootfs.sh: the root of the Python and TypeScript servers' images), where it
# can, that is as root with apt-get. Nothing starts them: the local cluster runs its own containerd.
# Elsewhere it says what is missing and exits 0: the local cluster then falls back on kwok, and says
# why (localcluster.ChooseNode). MRTR_NODE=kwok skips it.
set -euo pipefail

[ "${MRTR_NODE:-}" = kwok ] && exit 0
missing=()
for tool in containerd:containerd ctr:containerd runc:runc iptables:iptables conntrack:conntrack ip:iproute2 debootstrap:debootstrap; do
	command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
done
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
[ ${#missing[@]} -eq 0 ] && exit 0
# containerd is named twice when both of its commands are missing.
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "node-packages: ${missing[*]} missing, and installing needs root and apt-get: the local cluster will use kwok" >&2
	exit 0
fi
echo "node-packages: installing ${missing[*]} (the local cluster's real node)" >&2
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
