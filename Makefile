# startupgate. `make help` lists the targets.
#
# The Kubernetes version is pinned once, by the k8s.io/api requirement in go.mod
# (staging v0.X.Y ships with Kubernetes v1.X.Y); everything else derives from it.
SHELL := /usr/bin/env bash
.DEFAULT_GOAL := help

KUBE_VERSION  ?= $(shell go list -m -f '{{.Version}}' k8s.io/api | sed 's/^v0\./v1./')
CONTROLPLANE  ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/startupgate/controlplane/$(KUBE_VERSION)
export KUBEBUILDER_ASSETS ?= $(CONTROLPLANE)

GOFLAGS_BUILD := -trimpath -ldflags "-s -w"
IMG           ?= ghcr.io/startupgate/startupgate:dev
OUT           ?= out
SCENARIOS     ?= scenarios
TEST_TIMEOUT  ?= 40m
# The soak repeats the whole suite until it has run at least SOAK_RUNS scenarios.
SOAK_RUNS     ?= 1000
SOAK_SEED     ?= 1
SOAK_PARALLEL ?= 4
SOAK_REPEAT   ?= $(shell n=$$(ls $(SCENARIOS)/*.yaml | wc -l); echo $$(( ($(SOAK_RUNS) + n - 1) / n )))
BENCH_FLAGS   ?=
# Modules of their own, so that Helm and go-containerregistry never enter the gate's
# dependencies: the root ./... does not reach them, and no go.work joins them (a workspace
# would resolve one version of every module for all of them, the gate's build included).
# Their tests run from the root's own `go test ./deploy/...` (deploy/modules_test.go runs
# `go test` in each), in one of go test's slots beside the scenario suite.
# Every module is vetted by go test itself: -vet=all is go vet's full set, and it reads the
# race build's own compiled packages, where a separate `go vet ./...` would compile every
# dependency a second time without -race (minutes on a cold cache). Vet's facts pass over
# third-party packages is skipped (hack/buildgc says what that costs and what it loses).
# Test builds generate no DWARF: nothing reads it (panics and race reports use the runtime's
# own tables), and it is about a sixth of a cold build's CPU (the race build of ./sim/...:
# 361 against 428 CPU-s). Through GOFLAGS, so that every go command of the tests inherits it,
# the nested modules', the simulator's gate binary and hack/image's, and they still share
# their compiled packages. For the same reason they are linked without a symbol table
# (-ldflags=-s): a cold run links some twenty race-built test binaries, and the race
# detector's reports and panics read the runtime's own tables, not the ELF symbols. (One
# word: GOFLAGS splits at spaces, and -s alone also omits DWARF.) The tools run through
# hack/buildgc, with a garbage collector that runs a quarter as often (GOGC=400): the same
# packages, a tenth to a seventh less CPU; the tests and what they start keep Go's default.
TEST_GOFLAGS  := $(strip $(GOFLAGS) -gcflags=all=-dwarf=false -ldflags=-s -toolexec=$(CURDIR)/hack/buildgc)
# How make test and make test-deploy run go test: race detector on, vet's full set.
GO_TEST       := GOFLAGS='$(TEST_GOFLAGS)' go test -race -vet=all
# Three tests run the gate as a process: the scenario suite's process-mode gate, the
# benchmark's and the image's. make test builds it once, as `make image` does, and names it
# in STARTUPGATE_GATE_BINARY: left to themselves, they built it at the same time in a cold CI
# run, and the build cache saves nothing for builds that overlap.
TEST_GATE     := bin/test/gate
# The control plane's compiler flags (hack/controlplane.sh says why no inlining). The test
# gate is compiled with the same, so that it reuses the plane's compiled client-go, api,
# apimachinery and std instead of compiling them again; the gate that ships (make build,
# make image) is compiled with Go's defaults.
PLANE_GCFLAGS := all=-dwarf=false -l
# -p 3: go test runs at most -p builds or test binaries at once (default: the cores, 2). The
# scenario suite (sim) spends much of its time waiting out timelines; with 2 it ran alone at
# the end of a cold run while the CPU idled a third of the time, and with 3, deploy (the
# nested modules) and sim/bench run beside it (cold runs 4 and 5). Naming sim first, so that
# it started as soon as it was built (go test starts test binaries in the order of its
# arguments), with -p 4, ran the suite under every compile, and three timing hazards of the
# scenarios showed at once (cold run 9); the machine was no less busy (100 % from minute 1 to
# 23), so it won nothing, and the order stays ./...'s.
TEST_PACKAGES := ./...

# make fuzz: each target this long, one worker each (the machines have 2 cores).
FUZZTIME      ?= 5m
FUZZ_PARALLEL ?= 1

# The image: labels and timestamps come from the commit, so one commit gives one digest.
IMAGE_TAR     ?= $(OUT)/startupgate.tar
IMAGE_ARCH    ?= $(shell go env GOARCH)
VERSION       ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION      ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make TARGET\n\nTargets:\n"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-14s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

.PHONY: controlplane
controlplane: ## Build the pinned etcd, kube-apiserver, kube-scheduler and kube-controller-manager into the per-user cache (first time 8 to 9 min on 2 cores).
	@KUBE_VERSION=$(KUBE_VERSION) PLANE_GCFLAGS='$(PLANE_GCFLAGS)' hack/controlplane.sh $(CONTROLPLANE)

.PHONY: build
build: ## Build bin/gate, bin/kubectl-startupgate (the same binary, as a kubectl plugin) and bin/simulate (static, the Dockerfile's flags).
	CGO_ENABLED=0 go build $(GOFLAGS_BUILD) -o bin/gate ./cmd/gate
	cp bin/gate bin/kubectl-startupgate
	CGO_ENABLED=0 go build $(GOFLAGS_BUILD) -o bin/simulate ./cmd/simulate

.PHONY: test
test: controlplane ## Run every test with the race detector, vetted with go vet's full set: unit, integration, the scenario suite on the embedded plane, the Helm chart's and the image's modules.
	GOFLAGS='$(TEST_GOFLAGS)' CGO_ENABLED=0 go build $(GOFLAGS_BUILD) -gcflags='$(PLANE_GCFLAGS)' -buildvcs=false -o $(TEST_GATE) ./cmd/gate
	STARTUPGATE_GATE_BINARY=$(abspath $(TEST_GATE)) $(GO_TEST) -p 3 -parallel 4 -timeout $(TEST_TIMEOUT) $(TEST_PACKAGES)

.PHONY: test-deploy
test-deploy: controlplane ## The install paths only: the kustomize overlays and the Helm chart rendered, proved equal, and applied to the embedded plane; the image built and run.
	$(GO_TEST) ./deploy/...

.PHONY: simulate
simulate: controlplane build ## Run every scenario in scenarios/ on the embedded plane; reports in out/ (scenarios.json, .xml, .html), logs in out/gate.log and out/plane/.
	@mkdir -p $(OUT)
	STARTUPGATE_GATE_BINARY=$(CURDIR)/bin/gate go run ./cmd/simulate run --gate-log $(OUT)/gate.log --plane-logs $(OUT)/plane --parallel 4 --json $(OUT)/scenarios.json --junit $(OUT)/scenarios.xml --html $(OUT)/scenarios.html $(SCENARIOS)

.PHONY: soak
soak: controlplane build ## Soak: every scenario on consecutive seeds until at least SOAK_RUNS (1000) runs; per-scenario table, out/soak.json with every run's seed, result and reproduce command; logs in out/soak-gate.log and out/soak-plane/.
	@mkdir -p $(OUT)
	STARTUPGATE_GATE_BINARY=$(CURDIR)/bin/gate go run ./cmd/simulate run --repeat $(SOAK_REPEAT) --seed $(SOAK_SEED) --parallel $(SOAK_PARALLEL) \
		--gate-log $(OUT)/soak-gate.log --plane-logs $(OUT)/soak-plane --json $(OUT)/soak.json --junit $(OUT)/soak.xml $(SCENARIOS)

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (5m) in turn: the Node webhook, the Pod guard, config and rules decoding, scenario decoding, gate convert. A crasher lands in testdata/fuzz/ as a seed.
	@for t in gate:FuzzNodeWebhook gate:FuzzPodGuard gate:FuzzLoadConfig sim/scenario:FuzzScenarioParse gate/convert:FuzzConvert; do \
		echo "== $${t#*:} ($(FUZZTIME))"; \
		go test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 100x -parallel $(FUZZ_PARALLEL) ./$${t%%:*} || exit 1; \
	done

.PHONY: bench
bench: controlplane build ## Benchmark (~95 min on 2 cores; BENCH_FLAGS=--pairs-largest=1 for ~1 h): 3 gate/floor pairs on the same admission at 100, 1000 and 5000 nodes, the webhook gate, zero-jitter and paced bursts taken apart by stage, writes, CPU, memory (out/bench.json, .md, .html), then the Go benchmarks.
	@mkdir -p $(OUT)
	STARTUPGATE_GATE_BINARY=$(CURDIR)/bin/gate go run ./cmd/simulate bench --out $(OUT) --paced-for 30s $(BENCH_FLAGS)
	go test ./gate -run '^$$' -bench . -benchmem | tee $(OUT)/bench-go.txt

.PHONY: policy
policy: ## Regenerate deploy/overlays/policy/policy.yaml from the default gate.Config.
	@{ echo "# generated by: go run ./cmd/gate --print-policy > deploy/overlays/policy/policy.yaml"; go run ./cmd/gate --print-policy; } > deploy/overlays/policy/policy.yaml

.PHONY: image
image: ## Build the gate's OCI image without Docker into out/startupgate.tar (static /gate, 65532:65532) and print its digest; same commit, same digest.
	@mkdir -p $(OUT)/image
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) go build $(GOFLAGS_BUILD) -buildvcs=false -o $(OUT)/image/gate ./cmd/gate
	cd hack/image && go run . -binary $(abspath $(OUT)/image/gate) -out $(abspath $(IMAGE_TAR)) -tag $(IMG) -arch $(IMAGE_ARCH) \
		-version $(VERSION) -revision $(REVISION) -created $(SOURCE_DATE_EPOCH)

.PHONY: docker-build
docker-build: ## Build the container image IMG with the Dockerfile (needs a Docker engine; none on the CI machines; `make image` does not).
	docker build -t $(IMG) .

.PHONY: clean
clean: ## Remove bin/ and out/ (the control-plane cache stays).
	rm -rf bin $(OUT)

.PHONY: kind-demo
kind-demo: image ## Run deploy/kind/demo.sh: a kind cluster, `make image`'s tarball loaded, the gate installed, node joins replayed with a timeline (needs Docker and kind).
	IMG=$(IMG) IMAGE_TAR=$(IMAGE_TAR) deploy/kind/demo.sh

.PHONY: shellcheck
shellcheck: ## Lint the shell scripts under deploy/ (generate-certs.sh, kind/demo.sh).
	shellcheck deploy/overlays/self-signed/generate-certs.sh deploy/kind/demo.sh
