#!/usr/bin/env bash
# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
#
# Builds the External Secrets Operator's controller (the module's main package, which runs its
# ExternalSecret and SecretStore controllers) from source through the Go module proxy, at the
# version hack/external-secrets/go.mod pins, into a cache folder outside the checkout keyed by that
# version, and copies the module's CRDs (config/crds/bases) beside it: what the end-to-end suite's
# local cluster runs and installs (localcluster.Options.ExternalSecrets). Skips whatever is already
# there. Prints the absolute folder as its last line: external-secrets, and crds/.
#
# Only the fake provider is compiled in. ESO's controllers import pkg/provider/register and
# pkg/generator/register, which import every provider and generator and with them every cloud SDK
# (AWS, Azure, GCP, Oracle, IBM, Yandex, ...). `go build -overlay` replaces those two files, for
# this build only, with hack/external-secrets/overlay/*/register.go: the fake provider, no
# generator. The go command refuses overlays of files in the module cache, so the build reads
# ESO's source from a copy of the module (removed once built), which the build module's replace
# directive points at; ESO's code is not changed.
#
# The cache root is $MRTR_TOOLS_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/mrtr-operator, as for
# hack/build-controlplane.sh.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mod="$here/external-secrets"
module=github.com/external-secrets/external-secrets
export CGO_ENABLED=0 GOFLAGS=-mod=mod
# The version is the wrapper module's requirement, named once there.
version=$(cd "$mod" && go list -m -f '{{.Version}}' "$module")
root=${MRTR_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mrtr-operator}
dir="$root/external-secrets-$version"
mkdir -p "$dir"

# One build at a time per cache folder: parallel make targets or test suites would otherwise race.
exec 9>"$dir/.lock"
flock 9

say() { echo "build-external-secrets: $*" >&2; }

src=""
source_dir() {
	if [ -z "$src" ]; then
		src=$(cd "$mod" && go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
		[ -d "$src" ] || { say "go mod download $module@$version gave no source folder"; exit 1; }
	fi
	echo "$src"
}

if [ ! -x "$dir/external-secrets" ]; then
	say "building the external-secrets controller $version with the fake provider only (first run only; see docs/development.md for timings)"
	start=$SECONDS
	work="$dir/.build"
	rm -rf "$work" && mkdir -p "$work"
	cp -R "$(source_dir)" "$work/src"
	chmod -R u+w "$work/src"
	cp "$mod/go.mod" "$mod/go.sum" "$work/"
	(cd "$work" && go mod edit -replace="$module=$work/src")
	cat >"$work/overlay.json" <<JSON
{"Replace": {
  "$work/src/pkg/provider/register/register.go": "$mod/overlay/provider/register.go",
  "$work/src/pkg/generator/register/register.go": "$mod/overlay/generator/register.go"
}}
JSON
	(cd "$work" && nice -n 10 go build -overlay "$work/overlay.json" -trimpath -ldflags "-s -w" \
		-o "$dir/.external-secrets.tmp" "$module")
	mv "$dir/.external-secrets.tmp" "$dir/external-secrets"
	rm -rf "$work"
	say "built external-secrets in $((SECONDS - start))s"
fi

if [ ! -d "$dir/crds" ]; then
	# Every CRD of the release, as its chart installs them: the controller's informers list
	# ExternalSecrets, (Cluster)SecretStores, (Cluster)ExternalSecrets, (Cluster)PushSecrets and
	# GeneratorStates, and the generator kinds come with them.
	rm -rf "$dir/.crds.tmp" && mkdir "$dir/.crds.tmp"
	for f in "$(source_dir)"/config/crds/bases/*.yaml; do
		[ "$(basename "$f")" = kustomization.yaml ] || cp "$f" "$dir/.crds.tmp/"
	done
	chmod u+w "$dir/.crds.tmp"/*
	mv "$dir/.crds.tmp" "$dir/crds"
fi

echo "$dir"
