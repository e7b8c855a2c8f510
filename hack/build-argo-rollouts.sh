#!/usr/bin/env bash
# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
#
# Builds the Argo Rollouts controller (cmd/rollouts-controller) from source through the Go module
# proxy, at the version hack/argo-rollouts/go.mod pins, into a cache folder outside the checkout keyed
# by that version, and copies the module's CRDs (manifests/crds) beside it: what the end-to-end
# suite's local cluster runs and installs (localcluster.Options.ArgoRollouts). Skips whatever is
# already there. Prints the absolute folder as its last line: rollouts-controller, and crds/.
#
# The cache root is $MRTR_TOOLS_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/mrtr-operator, as for
# hack/build-controlplane.sh.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mod="$here/argo-rollouts"
module=github.com/argoproj/argo-rollouts
export CGO_ENABLED=0 GOFLAGS=-mod=mod
# The version is the wrapper module's requirement, named once there.
version=$(cd "$mod" && go list -m -f '{{.Version}}' "$module")
root=${MRTR_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mrtr-operator}
dir="$root/argo-rollouts-$version"
mkdir -p "$dir"

# One build at a time per cache folder: parallel make targets or test suites would otherwise race.
exec 9>"$dir/.lock"
flock 9

say() { echo "build-argo-rollouts: $*" >&2; }

if [ ! -x "$dir/rollouts-controller" ]; then
	say "building rollouts-controller $version (first run only; see docs/development.md for timings)"
	start=$SECONDS
	(cd "$mod" && go build -trimpath -ldflags "-s -w -X $module/utils/version.version=${version#v}" \
		-o "$dir/.rollouts-controller.tmp" "$module/cmd/rollouts-controller")
	mv "$dir/.rollouts-controller.tmp" "$dir/rollouts-controller"
	say "built rollouts-controller in $((SECONDS - start))s"
fi

if [ ! -d "$dir/crds" ]; then
	# The controller's informers list every kind of its API group (Rollout, AnalysisRun,
	# AnalysisTemplate, ClusterAnalysisTemplate, Experiment): all their CRDs, as the module ships them.
	src=$(cd "$mod" && go list -m -f '{{.Dir}}' "$module")
	rm -rf "$dir/.crds.tmp" && mkdir "$dir/.crds.tmp"
	for f in "$src"/manifests/crds/*-crd.yaml; do
		cp "$f" "$dir/.crds.tmp/"
	done
	chmod u+w "$dir/.crds.tmp"/*
	mv "$dir/.crds.tmp" "$dir/crds"
fi

echo "$dir"
