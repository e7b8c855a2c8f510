#!/usr/bin/env bash
# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
#
# Prints the path of a minimal Debian root (bookworm, debootstrap's minbase) with python3 and the CA
# certificates: the base of the Python and TypeScript example servers' images on the real node
# (test/localcluster.BuildServerImage adds the server, its packages and, for TypeScript, this
# machine's node binary). Nothing can be pulled here, but Debian's archive can be reached, so the
# root is made with debootstrap, once: it is cached in ~/.cache/mrtr-operator (about 2 minutes and
# 60 MB of packages the first time). Root is needed (debootstrap chroots); hack/node-packages.sh
# installs debootstrap.
set -euo pipefail

suite=bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# libstdc++6 and libgcc-s1 are what a node binary links besides libc.
packages=python3,ca-certificates,libstdc++6,libgcc-s1
cache=${MRTR_CACHE:-$HOME/.cache/mrtr-operator}
out=$cache/rootfs-$suite-$(printf '%s' "$suite $packages" | sha256sum | cut -c1-12)

if [ -f "$out.complete" ]; then
	echo "$out"
	exit 0
fi
command -v debootstrap >/dev/null 2>&1 || { echo "server-rootfs: debootstrap is missing (hack/node-packages.sh installs it)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "server-rootfs: debootstrap needs root" >&2; exit 1; }
mkdir -p "$cache"
exec 9>"$cache/rootfs.lock"
flock 9 # one build at a time; a second caller waits and then finds it complete
if [ ! -f "$out.complete" ]; then
	echo "server-rootfs: building $out with debootstrap ($suite, minbase, $packages)" >&2
	rm -rf "$out.tmp"
	debootstrap --variant=minbase --include="$packages" "$suite" "$out.tmp" "$mirror" >"$cache/rootfs-debootstrap.log" 2>&1 ||
		{ tail -20 "$cache/rootfs-debootstrap.log" >&2; exit 1; }
	# What a server never reads: package caches and lists, documentation, manuals, locales.
	rm -rf "$out.tmp"/var/cache/apt/* "$out.tmp"/var/lib/apt/lists/* "$out.tmp"/usr/share/doc/* \
		"$out.tmp"/usr/share/man/* "$out.tmp"/usr/share/locale/* "$out.tmp"/var/log/*
		rm -rf "$out"
	mv "$out.tmp" "$out"
	touch "$out.complete"
fi
echo "$out"
