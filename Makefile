# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0

# Image URL to use all building/pushing image targets
IMG ?= controller:latest
# YEAR defines the year value used for substituting the YEAR placeholder in the boilerplate header.
YEAR ?= 2026

# Setting SHELL to bash allows bash commands to be executed by recipes.
# Options are set to exit when a recipe line exits non-zero or a piped command fails.
SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

# The help target prints out all targets with their descriptions organized beneath their categories:
# lines of the form "target: ## help" become entries, lines of the form "##@ Title" become headings.

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-17s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate WebhookConfiguration, ClusterRole and CustomResourceDefinition objects (and the chart's copies).
	"$(CONTROLLER_GEN)" rbac:roleName=manager-role crd paths="./..." output:crd:artifacts:config=config/crd/bases
	@$(MAKE) --no-print-directory chart-files

# The Helm chart (dist/chart) embeds these files of config/ as they are (templates read them with
# .Files.Get), so that it installs the same CRDs, manager rules, consumer role and admission policy,
# alerts and dashboard as kustomize. `make manifests` refreshes the copies, so CI's check that it
# leaves the tree unchanged covers them; hack/helmcheck (make test) compares the two installs.
CHART_FILES := dist/chart/files
.PHONY: chart-files
chart-files: ## Copy the config/ files that the Helm chart embeds into dist/chart/files.
	rm -rf "$(CHART_FILES)"
	mkdir -p "$(CHART_FILES)"/{crd,rbac,consumer,admission,prometheus,grafana}
	cp config/crd/bases/*.yaml "$(CHART_FILES)/crd/"
	cp config/rbac/role.yaml "$(CHART_FILES)/rbac/"
	cp config/admission/pod_annotation_policy.yaml "$(CHART_FILES)/admission/"
	cp config/consumer/consumer_role.yaml config/consumer/acknowledgement_policy.yaml "$(CHART_FILES)/consumer/"
	cp config/prometheus/alerts.yaml "$(CHART_FILES)/prometheus/"
	cp config/grafana/mrtr-operator-dashboard.json "$(CHART_FILES)/grafana/"

.PHONY: generate
generate: controller-gen ## Generate code containing DeepCopy, DeepCopyInto, and DeepCopyObject method implementations.
	"$(CONTROLLER_GEN)" object:headerFile="hack/boilerplate.go.txt",year=$(YEAR) paths="./..."

# The repository holds two Go modules: the operator (the root) and pkg/, the library that MCP servers
# import without the operator's Kubernetes dependencies. Every Go target covers both.
MODULES := . pkg

.PHONY: fmt
fmt: ## Run go fmt against code.
	@for m in $(MODULES); do (cd $$m && go fmt ./...); done

.PHONY: vet
vet: ## Run go vet against code, including the files behind the e2e build tag.
	@for m in $(MODULES); do (cd $$m && go vet ./...); done
	go vet -tags=e2e ./test/...

# The control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok) cannot be
# downloaded here: hack/build-controlplane.sh builds it from source through the Go module proxy into a
# per-version cache folder outside the checkout (~/.cache/mrtr-operator), once per machine. It prints
# that folder as its last line.

.PHONY: envtest-assets
envtest-assets: ## Build etcd and kube-apiserver if missing; print their folder as the last line.
	@hack/build-controlplane.sh envtest

.PHONY: e2e-assets
e2e-assets: ## Build the whole local control plane and the kubelet and kube-proxy if missing; print its folder as the last line.
	@hack/build-controlplane.sh node

# The local cluster's real node runs Debian's containerd, runc and CNI plugins: installed where the
# machine allows (root, apt-get); elsewhere the cluster uses kwok and says why.
.PHONY: node-packages
node-packages: ## Install containerd, runc, the CNI plugins, iptables and conntrack for the real node, if root with apt-get.
	@hack/node-packages.sh

# hack/helmcheck runs uncached (-count=1): what it reads, the chart and config/, lies outside its
# module, where Go's test cache does not look for changes.
.PHONY: test
test: manifests generate fmt vet envtest-assets ## Run unit and envtest suites (real kube-apiserver and etcd).
	assets="$$(hack/build-controlplane.sh envtest)"; \
	KUBEBUILDER_ASSETS="$$assets" go test $$(go list ./... | grep -v /test/e2e) -coverprofile cover.out
	cd pkg && go test ./... -coverprofile cover.out
	cd hack/promrules && go test -count=1 ./...
	cd hack/image && go test -count=1 ./...
	cd hack/helmcheck && go test -count=1 ./...
	$(MAKE) --no-print-directory test-typescript

# The TypeScript consumer package (clients/typescript, @mrtr-dev/keyring): its pinned dependencies
# from npm (npm ci, package-lock.json), the type check (strict), eslint and node's own test runner,
# whose tests also `go run` the package's Go replica (clients/typescript/test/goreplica) and read the
# Snodo vectors in place (pkg/token/testdata/snodo; MRTR_SNODO_VECTORS names another file).
.PHONY: test-typescript
test-typescript: ## Run the TypeScript package's checks and tests (npm ci, tsc --noEmit, eslint, node --test).
	cd clients/typescript && npm ci --no-audit --no-fund && npx tsc --noEmit && npx eslint . && npm test

# One round trip (seal and open) of the TypeScript package's codec against the SDK's own
# createRequestStateCodec on the same payload (docs/benchmarks.md has the numbers).
.PHONY: bench-typescript
bench-typescript: ## Benchmark the TypeScript codec's round trip against the SDK's createRequestStateCodec.
	cd clients/typescript && npm ci --no-audit --no-fund && npm run bench

# The end-to-end tests, and the test of the local cluster itself, carry the e2e build tag: they need
# the whole control plane, and they run processes of their own (see test/localcluster).
.PHONY: test-e2e
test-e2e: manifests generate fmt vet build helm e2e-assets node-packages ## Run the end-to-end tests on a local cluster.
	go test -tags=e2e -p 1 -timeout 30m -v ./test/e2e/... ./test/localcluster/... ./test/docs/...

# The operator documentation's commands: test/docs runs every sh block of docs/*.md (but
# benchmarks.md) with bash, in order, against a local cluster with the operator and the example
# servers (the e2e harness, which installs the chart with bin/helm), with kubectl and a fresh
# kubectl-mrtr on PATH. test-e2e runs it too.
.PHONY: test-docs
test-docs: helm e2e-assets ## Run every command of the operator docs (docs/*.md) against a local cluster.
	go test -tags=e2e -count=1 -timeout 20m -v ./test/docs/...

FUZZTIME ?= 10s
.PHONY: fuzz
fuzz: ## Run every Fuzz target of the repository for FUZZTIME (default 10s) each.
	@for m in $(MODULES); do (cd $$m && \
	for pkg in $$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...); do \
		for target in $$(go test -list '^Fuzz' "$$pkg" | grep '^Fuzz'); do \
			echo "==> $$pkg $$target ($(FUZZTIME))"; \
			go test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) "$$pkg"; \
		done; \
	done) || exit 1; done

# The token benchmarks (pkg/token's codecs and floors, and the alternatives in their own module
# hack/tokenbench) run BENCH_COUNT times, each time all of them one after the other (so that a
# slow spell of the shared machine hits every benchmark of a round, not five runs of one);
# hack/benchratio prints their medians and ratios (docs/benchmarks.md explains them). The raw output
# stays in bin/bench-token.txt.
BENCH_COUNT ?= 7
.PHONY: bench-token
bench-token: ## Benchmark pkg/token's codecs against their floors and alternatives (BENCH_COUNT rounds, default 7).
	mkdir -p bin
	cd pkg && go test -c -o ../bin/token.test ./token/
	cd hack/tokenbench && go test -c -o ../../bin/tokenbench.test .
	for i in $$(seq $(BENCH_COUNT)); do \
		(cd pkg/token && ../../bin/token.test -test.run '^$$' -test.bench . -test.benchmem) && \
		(cd hack/tokenbench && ../../bin/tokenbench.test -test.run '^$$' -test.bench . -test.benchmem) || exit 1; \
	done | tee bin/bench-token.txt | go run ./hack/benchratio

# The scale benchmark runs the manager binary against a fresh envtest per size: SCALE_N keyrings
# (each with one Deployment) become Ready, then all rotate at once; hack/benchscale prints times,
# the manager's API requests and CPU per keyring rotation, its steady-state traffic and memory, a
# markdown table and one JSON line per size. SCALE_DELIVERY=Reload acknowledges on Pods instead of
# rolling out; SCALE_NEXT_KEY=Staged rotates in two rounds (the default, AtRotation, in the three
# the issue's baseline measured); SCALE_MANAGER_ARGS are appended to the manager's flags and
# SCALE_MANAGER_ENV (NAME=value ...) to its environment; SCALE_PROFILE_DIR=dir saves a CPU profile
# of the API server during the rotation, one keyring and Secret as served, and the manager's heap.
SCALE_N ?= 100,1000
.PHONY: bench-scale
bench-scale: envtest-assets ## Benchmark the manager with SCALE_N keyrings (default 100,1000) on envtest: Ready, rotate all, cost per rotation.
	KUBEBUILDER_ASSETS="$$(hack/build-controlplane.sh envtest | tail -1)" go run ./hack/benchscale -n "$(SCALE_N)"

# The linter also covers the test tool modules under hack/ (each its own module for its
# dependencies: Helm, the Prometheus rule evaluator, the image builder, the token libraries that
# pkg/token is benchmarked against).
LINT_MODULES := $(MODULES) hack/promrules hack/image hack/helmcheck hack/tokenbench

.PHONY: lint
lint: golangci-lint ## Run golangci-lint on every module (CI runs it: the tree holds no findings).
	@for m in $(LINT_MODULES); do (cd $$m && "$(GOLANGCI_LINT)" run --config "$(CURDIR)/.golangci.yml") || exit 1; done

.PHONY: lint-fix
lint-fix: golangci-lint ## Run golangci-lint linter and perform fixes
	@for m in $(LINT_MODULES); do (cd $$m && "$(GOLANGCI_LINT)" run --config "$(CURDIR)/.golangci.yml" --fix) || exit 1; done

.PHONY: lint-config
lint-config: golangci-lint ## Verify golangci-lint linter configuration
	"$(GOLANGCI_LINT)" config verify

##@ Build

.PHONY: build
build: manifests generate fmt vet kubectl-mrtr ## Build manager binary (and the kubectl plugin).
	go build -o bin/manager cmd/main.go

# The kubectl plugin: with bin/ on PATH, kubectl runs bin/kubectl-mrtr as `kubectl mrtr`.
.PHONY: kubectl-mrtr
kubectl-mrtr: ## Build the kubectl plugin bin/kubectl-mrtr (kubectl mrtr status, rotate, suspend, resume, inspect).
	go build -o bin/kubectl-mrtr ./cmd/kubectl-mrtr

# Outside a cluster the manager has no namespace of its own: the leader election Lease goes here.
LEADER_ELECTION_NAMESPACE ?= default

.PHONY: run
run: manifests generate fmt vet ## Run a controller from your host against the cluster of ~/.kube/config (with leader election).
	go run ./cmd --leader-elect --leader-election-namespace=$(LEADER_ELECTION_NAMESPACE)

# The demo needs no registry and no kubectl. test/e2e/demo starts the local cluster
# (test/localcluster) with a real node (kubelet, containerd) where the machine can run it, the
# operator as its own process, a 3-replica Deployment of the example MCP server (containers of its
# image; processes on kwok) and MCP clients, then walks two rotations and cleans up.
.PHONY: demo
demo: manifests helm e2e-assets node-packages ## Two key rotations under live MRTR traffic on a local cluster; cleans up (also on Ctrl-C).
	go run ./test/e2e/demo

# The same local cluster with the CRDs and the manager, left running for you to explore with kubectl.
.PHONY: run-local
run-local: build e2e-assets node-packages ## Start a local cluster with the CRDs and run the manager on it; Ctrl-C stops all.
	go build -o "$(LOCALBIN)/localcluster" ./test/localcluster/cmd/localcluster
	"$(LOCALBIN)/localcluster" -crds config/crd/bases -kubeconfig "$(LOCALBIN)/demo.kubeconfig" \
		-log-dir "$(LOCALBIN)/demo-logs" -- \
		"$(LOCALBIN)/manager" --health-probe-bind-address=0 --metrics-bind-address=0 \
		--leader-elect --leader-election-namespace=$(LEADER_ELECTION_NAMESPACE)

# The manager image without a container engine (the distroless base cannot be pulled here):
# hack/image, a module of its own, puts the static binary on a base it builds (this machine's CA
# certificates from Debian's ca-certificates package, a nonroot user and group 65532, /tmp) and
# writes $(IMAGE_DIR)/oci, an OCI image layout holding the image as $(IMG), and
# $(IMAGE_DIR)/manager.tar for `docker load -i`. Reproducible: every timestamp is SOURCE_DATE_EPOCH
# (the last commit's time), so the same tree gives the same digest. IMAGE_ARCH cross-builds.
IMAGE_DIR ?= $(LOCALBIN)/image
IMAGE_ARCH ?= $(shell go env GOARCH)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
.PHONY: image
image: ## Build the manager image without Docker: bin/image/oci (OCI layout, named IMG) and bin/image/manager.tar (docker load).
	mkdir -p "$(LOCALBIN)"
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) go build -trimpath -ldflags="-s -w" -o "$(LOCALBIN)/manager-static" ./cmd
	cd hack/image && SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) go run . -binary "$(LOCALBIN)/manager-static" \
		-out "$(IMAGE_DIR)" -tag "$(IMG)" -revision "$$(git rev-parse HEAD 2>/dev/null)" \
		-version "$$(git describe --tags --always --dirty 2>/dev/null || echo dev)"

# test/container runs that image under runc (the way an e2e test can run the manager as its image);
# its own e2e tests run the image for real: they need root and runc (apt-get install runc).
.PHONY: test-container
test-container: image ## Run the manager image under runc (root, runc): test/container's tests.
	IMAGE_LAYOUT="$(IMAGE_DIR)/oci" IMG="$(IMG)" go test -tags=e2e -count=1 -v ./test/container/...

.PHONY: build-installer
build-installer: manifests generate kustomize ## Generate a consolidated YAML with CRDs and deployment.
	mkdir -p dist
	cd config/manager && "$(KUSTOMIZE)" edit set image controller=${IMG}
	"$(KUSTOMIZE)" build config/default > dist/install.yaml
	# What the keyrings' consumers need (their ClusterRole and the acknowledgement policy), unprefixed.
	echo "---" >> dist/install.yaml
	"$(KUSTOMIZE)" build config/consumer >> dist/install.yaml
	# The policy that confines the manager's one write to pods to its annotation, unprefixed.
	echo "---" >> dist/install.yaml
	"$(KUSTOMIZE)" build config/admission >> dist/install.yaml

# The Helm chart, rendered by bin/helm with its default values and with the values of its ci/ folder
# (the manager watching some namespaces only; every optional part on). hack/helmcheck (make test)
# checks what they render against kustomize's config/.
CHART := dist/chart

.PHONY: helm-lint
helm-lint: helm ## Lint the Helm chart (--strict) with its default values and with each of its ci/*-values.yaml.
	"$(HELM)" lint --strict $(CHART)
	"$(HELM)" lint --strict $(CHART) -f $(CHART)/ci/namespaced-values.yaml
	"$(HELM)" lint --strict $(CHART) -f $(CHART)/ci/all-values.yaml

.PHONY: helm-template
helm-template: helm ## Render the Helm chart (release mrtr-operator) into bin/chart/{default,namespaced}.yaml.
	mkdir -p "$(LOCALBIN)/chart"
	"$(HELM)" template mrtr-operator $(CHART) -n mrtr-operator-system > "$(LOCALBIN)/chart/default.yaml"
	"$(HELM)" template mrtr-operator $(CHART) -n mrtr-operator-system -f $(CHART)/ci/namespaced-values.yaml \
		> "$(LOCALBIN)/chart/namespaced.yaml"

##@ Deployment

# These targets apply to the cluster of your kubeconfig (for the local cluster of `make demo`:
# KUBECONFIG=bin/demo.kubeconfig) and need kubectl, which `make demo` and the tests do not.

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests kustomize kubectl ## Install CRDs into the K8s cluster specified in ~/.kube/config.
	@out="$$( "$(KUSTOMIZE)" build config/crd 2>/dev/null || true )"; \
	if [ -n "$$out" ]; then echo "$$out" | "$(KUBECTL)" apply -f -; else echo "No CRDs to install; skipping."; fi

.PHONY: uninstall
uninstall: manifests kustomize kubectl ## Uninstall CRDs from the K8s cluster specified in ~/.kube/config. Call with ignore-not-found=true to ignore resource not found errors during deletion.
	@out="$$( "$(KUSTOMIZE)" build config/crd 2>/dev/null || true )"; \
	if [ -n "$$out" ]; then echo "$$out" | "$(KUBECTL)" delete --ignore-not-found=$(ignore-not-found) -f -; else echo "No CRDs to delete; skipping."; fi

.PHONY: deploy
deploy: manifests kustomize kubectl ## Deploy controller to the K8s cluster specified in ~/.kube/config.
	cd config/manager && "$(KUSTOMIZE)" edit set image controller=${IMG}
	"$(KUSTOMIZE)" build config/default | "$(KUBECTL)" apply -f -
	"$(KUSTOMIZE)" build config/consumer | "$(KUBECTL)" apply -f -
	"$(KUSTOMIZE)" build config/admission | "$(KUBECTL)" apply -f -

.PHONY: undeploy
undeploy: kustomize kubectl ## Undeploy controller from the K8s cluster specified in ~/.kube/config. Call with ignore-not-found=true to ignore resource not found errors during deletion.
	"$(KUSTOMIZE)" build config/admission | "$(KUBECTL)" delete --ignore-not-found=$(ignore-not-found) -f -
	"$(KUSTOMIZE)" build config/consumer | "$(KUBECTL)" delete --ignore-not-found=$(ignore-not-found) -f -
	"$(KUSTOMIZE)" build config/default | "$(KUBECTL)" delete --ignore-not-found=$(ignore-not-found) -f -

##@ Dependencies

## Location to install dependencies to
LOCALBIN ?= $(shell pwd)/bin
$(LOCALBIN):
	mkdir -p "$(LOCALBIN)"

## Tool Binaries
# kubectl at the API server's version, built from source once (the machine's may be outside the skew).
KUBECTL ?= $(LOCALBIN)/kubectl
KUSTOMIZE ?= $(LOCALBIN)/kustomize
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
GOLANGCI_LINT = $(LOCALBIN)/golangci-lint
HELM ?= $(LOCALBIN)/helm

## Tool Versions
KUSTOMIZE_VERSION ?= v5.8.1
CONTROLLER_TOOLS_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
# Keep in step with hack/helmcheck/go.mod, which renders the chart with the same Helm.
HELM_VERSION ?= v3.22.0

.PHONY: kubectl
kubectl: ## Build kubectl v1.37.2 from source into the control-plane cache (once) and link it as bin/kubectl; or set KUBECTL.
	@if [ "$(KUBECTL)" = "$(LOCALBIN)/kubectl" ]; then \
		dir="$$(hack/build-controlplane.sh kubectl | tail -1)" && mkdir -p "$(LOCALBIN)" && ln -sf "$$dir/kubectl" "$(LOCALBIN)/kubectl"; \
	fi
	@command -v "$(KUBECTL)" >/dev/null 2>&1 || { \
		echo "This target needs kubectl ($(KUBECTL)), which is not there; set KUBECTL=/path/to/kubectl."; \
		exit 1; \
	}

.PHONY: kustomize
kustomize: $(KUSTOMIZE) ## Download kustomize locally if necessary.
$(KUSTOMIZE): $(LOCALBIN)
	$(call go-install-tool,$(KUSTOMIZE),sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION))

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Download controller-gen locally if necessary.
$(CONTROLLER_GEN): $(LOCALBIN)
	$(call go-install-tool,$(CONTROLLER_GEN),sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION))

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Download golangci-lint locally if necessary.
$(GOLANGCI_LINT): $(LOCALBIN)
	$(call go-install-tool,$(GOLANGCI_LINT),github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))

.PHONY: helm
helm: $(HELM) ## Build helm locally (from its Go module) if necessary.
$(HELM): $(LOCALBIN)
	$(call go-install-tool,$(HELM),helm.sh/helm/v3/cmd/helm,$(HELM_VERSION))

# go-install-tool will 'go install' any package with custom target and name of binary, if it doesn't exist
# $1 - target path with name of binary
# $2 - package url which can be installed
# $3 - specific version of package
define go-install-tool
@[ -f "$(1)-$(3)" ] && [ "$$(readlink -- "$(1)" 2>/dev/null)" = "$(1)-$(3)" ] || { \
set -e; \
package=$(2)@$(3) ;\
echo "Downloading $${package}" ;\
rm -f "$(1)" ;\
GOBIN="$(LOCALBIN)" go install $${package} ;\
mv "$(LOCALBIN)/$$(basename "$(1)")" "$(1)-$(3)" ;\
} ;\
ln -sf "$$(realpath "$(1)-$(3)")" "$(1)"
endef
