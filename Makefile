# compute — the Makefile. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

include hack/versions.env

TOOLS        := hack/tools.sh
TOOLS_DIR    ?= $(shell bash $(TOOLS) dir)
export COMPUTE_TOOLS_DIR := $(TOOLS_DIR)
CONTROLLER_GEN = $(shell bash $(TOOLS) bin controller-gen)
GOLANGCI_LINT  = $(shell bash $(TOOLS) bin golangci-lint)

BIN_DIR      := bin
# What `make images` stamps into the images (labels, tag, -X main.version).
VERSION           ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
REVISION          ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
PLATFORM          ?= linux/$(shell go env GOARCH)
KUSTOMIZE          = $(shell bash $(TOOLS) bin kustomize)
GORELEASER         = $(shell bash $(TOOLS) bin goreleaser)
OVERLAYS          := $(notdir $(wildcard config/overlays/*))
BINARIES     := $(notdir $(wildcard cmd/*))
GO_TEST_FLAGS ?=
# Short fuzz budget per target in `make test`; raise it for a real fuzz session.
FUZZTIME     ?= 10s

##@ General

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_-]+:.*?##/ { printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: ## Generate deepcopy, CRDs, RBAC and the pinned-version constants.
	@bash $(TOOLS) controller-gen >/dev/null
	go run ./hack/genversions hack/versions.env internal/toolchain/zz_generated.versions.go
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/v1alpha/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) crd paths=./api/quota/... paths=./api/networking/... paths=./api/services/... output:crd:artifacts:config=config/crd/external
# (rbac) Every RBAC marker of every controller, in one role that nothing installs: the
# per-role ClusterRoles in config/rbac/<role> must cover it (config/rbac/rbac_test.go).
	$(CONTROLLER_GEN) rbac:roleName=compute-manager paths=./internal/... output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) webhook paths=./internal/webhook/... output:webhook:artifacts:config=config/webhook

.PHONY: verify
verify: generate manifests-check ## Regenerate and fail if anything generated drifted; render every overlay; check gofmt and go vet.
	@if [ -n "$$(git status --porcelain -- api config internal/toolchain)" ]; then \
		echo "generated files are out of date; run 'make generate' and commit:"; \
		git status --porcelain -- api config internal/toolchain; git diff --stat -- api config internal/toolchain; exit 1; fi
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	go vet -tags e2e,bench ./test/...

.PHONY: lint
lint: ## Run golangci-lint (built from the pinned version) over every package, e2e and bench tags included.
	@bash $(TOOLS) golangci-lint >/dev/null
	$(GOLANGCI_LINT) run ./...

# The version and commit `make build` stamps into the binaries that print
# them (datumctl-compute's `version`): GOFLAGS=-buildvcs=false, set on some
# machines, leaves the toolchain nothing to record, and they would say "dev".
# A checkout without a v* tag gets v0.0.0-dev+<commit> (semver, as datumctl
# compares plugin versions).
CLI_VERSION   ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || echo v0.0.0-dev+$$(git rev-parse --short=7 HEAD 2>/dev/null || echo unknown))
BUILD_LDFLAGS := -X main.version=$(CLI_VERSION) -X main.commit=$(shell git rev-parse --short=7 HEAD 2>/dev/null)

.PHONY: build
build: ## Build every binary of the project into ./bin/, the version (git describe) and commit stamped in.
	@mkdir -p $(BIN_DIR)
	@for b in $(BINARIES); do echo "go build -ldflags '$(BUILD_LDFLAGS)' -o $(BIN_DIR)/$$b ./cmd/$$b"; \
		go build -ldflags '$(BUILD_LDFLAGS)' -o $(BIN_DIR)/$$b ./cmd/$$b || exit 1; done

.PHONY: manifests-check
manifests-check: ## Render every kustomize overlay in config/overlays; fail on the first error.
	@bash $(TOOLS) kustomize >/dev/null
	@for o in $(OVERLAYS); do \
		if ! out=$$($(KUSTOMIZE) build config/overlays/$$o 2>&1); then echo "config/overlays/$$o does not render:"; echo "$$out"; exit 1; fi; \
		echo "config/overlays/$$o: $$(grep -c '^kind:' <<<"$$out") objects"; done

.PHONY: release-snapshot
release-snapshot: tools-goreleaser ## Build the release archives `datumctl plugin install` fetches, and checksums.txt, into ./dist (nothing is published).
	$(GORELEASER) release --snapshot --clean
	@ls -1 dist/*.tar.gz dist/*.zip dist/checksums.txt

# What `make release` builds images of: the binaries that run in a cluster
# and the demo workload (datumctl-compute ships as the goreleaser archives;
# compute-local drives processes on a developer's machine and has no image).
RELEASE_BINARIES ?= compute-manager,compute-quota,compute-hello
RELEASE_PLATFORMS ?= linux/amd64,linux/arm64

.PHONY: release
release: tools-goreleaser ## Push multi-arch (amd64+arm64) images with SPDX SBOMs to REGISTRY, write dist/<overlay>.yaml pinned to their digests and the plugin archives (make release REGISTRY=registry.example.com/citycells).
	@if [ -z "$(REGISTRY)" ]; then echo "make release needs REGISTRY=<host>/<path>, e.g. make release REGISTRY=ghcr.io/citycells VERSION=v0.1.0"; exit 2; fi
	@bash $(TOOLS) kustomize >/dev/null
	go run ./hack/release --registry $(REGISTRY) --binaries $(RELEASE_BINARIES) --platforms $(RELEASE_PLATFORMS) \
		--version $(VERSION) --revision $(REVISION) --created $(SOURCE_DATE_EPOCH) \
		--kustomize $(KUSTOMIZE) --goreleaser $(GORELEASER) $(RELEASE_FLAGS)

.PHONY: images
images: ## Build the container images into ./bin/images (OCI layout + docker archive), without Docker.
	go run ./hack/images --out $(BIN_DIR)/images --platform $(PLATFORM) \
		--version $(VERSION) --revision $(REVISION) --created $(SOURCE_DATE_EPOCH)

##@ Local platform

.PHONY: up
up: tools-platform ## Start the local platform: project plane, Karmada federation plane, cells DFW/LHR/SIN (DFW with a real node and metrics-server when this machine can run one).
	go run ./cmd/compute-local up

.PHONY: down
down: ## Stop the local platform.
	go run ./cmd/compute-local down

##@ Toolchain

.PHONY: tools
tools: ## Build kube-apiserver, kube-controller-manager, kubelet, kube-scheduler, etcd, Karmada, metrics-server, controller-gen, golangci-lint, kustomize, goreleaser and promtool into the cache; install containerd, runc and the CNI plugins with apt-get (root) when missing.
	bash $(TOOLS) all

.PHONY: tools-goreleaser
tools-goreleaser: ## Build only goreleaser (make release-snapshot, and the release test of make test).
	bash $(TOOLS) goreleaser

.PHONY: tools-promtool
tools-promtool: ## Build only promtool (the alerts' unit tests of make test, config/components/prometheus).
	bash $(TOOLS) promtool

.PHONY: tools-platform
tools-platform: ## Build only the control-plane binaries the tests and the platform run (with metrics-server, for the cells with a real node).
	bash $(TOOLS) platform

##@ Test

.PHONY: test
test: tools-platform tools-goreleaser tools-promtool ## Run unit and integration tests against real API servers, with the race detector (builds the toolchain when missing).
	go test -race $(GO_TEST_FLAGS) -count=1 -timeout 30m ./...

.PHONY: test-e2e
test-e2e: tools-platform ## Run the end-to-end suite against the real local platform (compute-local, real Karmada).
	go test -tags e2e -count=1 -timeout 30m ./test/e2e/...

.PHONY: bench
bench: tools-platform ## Run the benchmarks on real planes and the local platform at full size (P4: 1,000 Workloads and the engine floor, Karmada alone at the same size; the chaos soak for 10 minutes); they print their figures.
	go test -tags bench -p 1 -run '^$$' -bench . -benchtime 1x -timeout 120m ./test/bench/...

.PHONY: bench-smoke
bench-smoke: tools-platform ## A short form of every benchmark (100 replicas, 3 runs, 5 Workloads at scale with the engine floor, one fault once, 10 Pods and an autoscaling load step on the real node, 90 s of chaos; about 14 minutes) so they cannot rot; CI runs it.
	COMPUTE_BENCH_CHAOS_DURATION=90s COMPUTE_BENCH_PODS=10 COMPUTE_BENCH_REPLICAS=100 COMPUTE_BENCH_RUNS=3 COMPUTE_BENCH_WORKLOADS=5 COMPUTE_BENCH_FAULTS=compute-manager-cell COMPUTE_BENCH_FAULT_RUNS=1 go test -tags bench -p 1 -run '^$$' -bench . -benchtime 1x -timeout 20m ./test/bench/...

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each; fails when a package does not build.
	FUZZTIME=$(FUZZTIME) bash hack/fuzz.sh
