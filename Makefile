# startupgate. `make help` lists the targets; docs/development.md explains them.
#
# The Kubernetes version is pinned once, by the k8s.io/api requirement in go.mod
# (staging v0.X.Y ships with Kubernetes v1.X.Y); everything else derives from it.
SHELL := /usr/bin/env bash
.DEFAULT_GOAL := help

KUBE_VERSION  ?= $(shell go list -m -f '{{.Version}}' k8s.io/api | sed 's/^v0\./v1./')
CACHE_DIR     ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/startupgate
CONTROLPLANE  ?= $(CACHE_DIR)/controlplane/$(KUBE_VERSION)
export KUBEBUILDER_ASSETS ?= $(CONTROLPLANE)
export STARTUPGATE_NODE_PARTS ?= $(CACHE_DIR)/node/$(KUBE_VERSION)

# One version source, the VERSION file: the binaries get it and the commit through -X, the
# image through its label, and hack/version_test.go holds the chart's versions equal to it.
VERSION       := $(shell cat VERSION)
COMMIT        ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
VERSION_PKG   := github.com/startupgate/startupgate/internal/version
# ${VERSION} and ${COMMIT} are written with braces, which make expands like $(...), so that
# the Dockerfile's RUN line (deploy/deploy_test.go holds it equal to make build's) is the
# same text; there the shell fills them from the build's ARGs.
VERSION_LDFLAGS := -X $(VERSION_PKG).Version=${VERSION} -X $(VERSION_PKG).Commit=${COMMIT}
GOFLAGS_BUILD := -trimpath -ldflags "-s -w $(VERSION_LDFLAGS)"
IMG           ?= ghcr.io/startupgate/startupgate:dev
OUT           ?= out
# Where the quiet set-up steps (module downloads, tool builds) keep their output.
SETUP_LOG     ?= $(OUT)/setup.log
SCENARIOS     ?= scenarios
TEST_TIMEOUT  ?= 40m
# The soak repeats the whole suite until it has run at least SOAK_RUNS scenarios.
SOAK_RUNS     ?= 1000
SOAK_SEED     ?= 1
SOAK_PARALLEL ?= 4
# make explore: cases per perturbation kind and scenario, the first seed, and how many at once;
# per kind for an autoscaler's scenario, whose cases run one at a time on a second plane (0: none).
EXPLORE_PER_KIND ?= 12
EXPLORE_ALONE_PER_KIND ?= 1
EXPLORE_SEED     ?= 1
EXPLORE_PARALLEL ?= 6
SOAK_REPEAT   ?= $(shell n=$$(ls $(SCENARIOS)/*.yaml | wc -l); echo $$(( ($(SOAK_RUNS) + n - 1) / n )))
BENCH_FLAGS   ?=

# deploy/helm and hack/image are modules of their own so that Helm and go-containerregistry
# never enter the gate's dependencies; deploy/modules_test.go runs their tests from the root's
# `go test ./deploy/...`. hack/tools pins the linter the same way.
GO_MODULES    := . deploy/helm hack/image hack/tools
LINT_MODULES  := . deploy/helm hack/image

# make test's flags, inherited through GOFLAGS by every go command the tests start, so that
# they all share one set of compiled packages: no DWARF and no symbol table (nothing reads
# them; race reports and panics use the runtime's own tables), and hack/buildgc, which says
# why it runs the compiler with less garbage collection and skips vet's facts pass over
# third-party packages. Vetting happens in go test itself (-vet=all) so that it reads the race
# build's packages instead of compiling everything a second time.
TEST_GOFLAGS  := $(strip $(GOFLAGS) -gcflags=all=-dwarf=false -ldflags=-s -toolexec=$(CURDIR)/hack/buildgc)
GO_TEST       := GOFLAGS='$(TEST_GOFLAGS)' go test -race -vet=all
# Three tests run the gate as a process (the scenario suite's, the benchmark's and the
# image's); make test builds it once and names it in STARTUPGATE_GATE_BINARY, since builds
# of it running at the same time would each compile everything.
TEST_GATE     := bin/test/gate
# The control plane's compiler flags (hack/controlplane.sh says why no inlining). The test
# gate uses the same so that it reuses the plane's compiled client-go, api and apimachinery;
# the gate that ships (make build, make image) is compiled with Go's defaults.
PLANE_GCFLAGS := all=-dwarf=false -l
TEST_PACKAGES := ./...

# make test, simulate, demo, soak and the benchmarks run under hack/leftovers, which fails
# the run when a process it started outlives it (a plane, a gate, a Karpenter).

# make test-unit: everything but the tests that need the embedded control plane. sim and
# deploy start one in TestMain; in cmd/gate, sim/bench, sim/autoscaler, sim/controlplane,
# sim/node and deploy/helm, the plane tests are skipped by name. docs/development.md tells how to add one.
PLANE_PACKAGES := sim|deploy
PLANE_TESTS    := ^(TestStatusOnEmbeddedPlane|TestBenchSmall|TestKarpenterScaleUp|TestRealNode|TestChartOnRealNodes|TestPlaneDiesWithItsParent)$$
UNIT_PACKAGES   = $(shell go list ./... | grep -vE '^github.com/startupgate/startupgate/($(PLANE_PACKAGES))$$')

# golangci-lint, pinned by hack/tools/go.mod and built once into the per-user cache.
TOOLS_DIR     := $(CACHE_DIR)/tools
GOLANGCI_LINT_VERSION := $(shell awk '$$1 == "github.com/golangci/golangci-lint/v2" { print $$2 }' hack/tools/go.mod)
GOLANGCI_LINT := $(TOOLS_DIR)/golangci-lint-$(GOLANGCI_LINT_VERSION)
# helm, pinned by deploy/helm/go.mod's tool directive (the SDK its tests install the chart
# with), built once into the same cache: make demo installs the chart with it.
HELM_VERSION  := $(shell awk '$$1 == "helm.sh/helm/v4" { print $$2 }' deploy/helm/go.mod)
HELM          := $(TOOLS_DIR)/helm-$(HELM_VERSION)
# make demo runs the gate from its chart on a real node when run as root, a real node's
# first need (simulate demo says which other one the machine lacks, if any).
DEMO_NODE     ?= $(filter 0,$(shell id -u))

# make fuzz: each target this long, one worker each (the machines have 2 cores).
FUZZTIME      ?= 5m
FUZZ_PARALLEL ?= 1

# The image: labels and timestamps come from the commit, so one commit gives one digest.
IMAGE_TAR     ?= $(OUT)/startupgate.tar
IMAGE_ARCH    ?= $(shell go env GOARCH)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

POLICY_FILE   := deploy/overlays/policy/policy.yaml
POLICY_HEADER := \# generated by: go run ./cmd/gate --print-policy > $(POLICY_FILE)

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make TARGET\n\nTargets:\n"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-14s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

.PHONY: modules
modules: ## Download the Go modules the build and tests need, saying so in one line (log in out/setup.log).
	@GOPROXY=off go mod download >/dev/null 2>&1 || \
		hack/quietly $(SETUP_LOG) "fetching the Go modules startupgate builds and tests with (first time only)" go mod download

.PHONY: controlplane
controlplane: ## Build the pinned etcd, kube-apiserver, kube-scheduler and kube-controller-manager into the per-user cache (first time only).
	@KUBE_VERSION=$(KUBE_VERSION) PLANE_GCFLAGS='$(PLANE_GCFLAGS)' hack/controlplane.sh $(CONTROLPLANE)

.PHONY: karpenter
karpenter: ## Build Karpenter's KWOK provider and its CRDs into the per-user cache (first time only), for the autoscaler tests.
	@KUBE_VERSION=$(KUBE_VERSION) PLANE_GCFLAGS='$(PLANE_GCFLAGS)' hack/karpenter.sh

.PHONY: node
node: ## Build a real node's kubelet, kube-proxy (and kubectl), containerd, runc and CNI plugins into the per-user cache (first time only; installs the Debian packages they need).
	@KUBE_VERSION=$(KUBE_VERSION) PLANE_GCFLAGS='$(PLANE_GCFLAGS)' hack/node.sh

.PHONY: build
build: modules ## Build bin/gate, bin/kubectl-startupgate (the same binary, as a kubectl plugin) and bin/simulate, static and stamped with VERSION.
	CGO_ENABLED=0 go build $(GOFLAGS_BUILD) -o bin/gate ./cmd/gate
	cp bin/gate bin/kubectl-startupgate
	CGO_ENABLED=0 go build $(GOFLAGS_BUILD) -o bin/simulate ./cmd/simulate

.PHONY: test-gate
test-gate: modules ## Build bin/test/gate, the gate that the tests run as a process, with the plane's compiler flags.
	GOFLAGS='$(TEST_GOFLAGS)' CGO_ENABLED=0 go build $(GOFLAGS_BUILD) -gcflags='$(PLANE_GCFLAGS)' -buildvcs=false -o $(TEST_GATE) ./cmd/gate

# The linter builds and then lints from the start, niced, beside the other builds and then
# the tests, so that it takes only the CPU they leave idle (module downloads, the scenario
# suite waiting out its timelines); in a session of its own, so that a failure or an
# interrupt can stop the whole build, and so with its session's nice raised too: the
# kernel's autogroup scheduling shares the CPU evenly between sessions whatever their
# processes' nice, and the plane built much slower beside it (docs/development.md). Niced,
# it finds almost every package it type-checks already compiled by the tests, with their
# flags; run after them instead, it was the last minutes of a cold run. verify runs before
# the tests: it fails in a minute where they take many. -p 3 lets the nested modules and
# sim/bench build and run beside the scenario suite for the same reason.
.PHONY: test
test: ## Everything: verify, then every test with the race detector (the scenario suite on the embedded plane and the nested modules included), lint beside them.
	@hack/thp $(MAKE) --no-print-directory test-all

# make test under hack/thp, which sets transparent huge pages for the run only when asked
# (STARTUPGATE_THP=always), and says why one would.
.PHONY: test-all
test-all:
	@mkdir -p $(OUT); setsid sh -c '{ echo 19 >/proc/self/autogroup; } 2>/dev/null; exec nice -n 19 "$$@"' sh \
		$(MAKE) --no-print-directory lint >$(OUT)/lint.log 2>&1 & linter=$$!; \
	trap 'kill -- -$$linter 2>/dev/null; exit 130' INT TERM; \
	$(MAKE) --no-print-directory test-setup || { kill -- -$$linter 2>/dev/null; exit 1; }; \
	STARTUPGATE_GATE_BINARY=$(abspath $(TEST_GATE)) hack/leftovers $(GO_TEST) -p 3 -parallel 4 -timeout $(TEST_TIMEOUT) $(TEST_PACKAGES); rc=$$?; \
	if wait $$linter; then echo "make lint: no issues ($(OUT)/lint.log)"; else echo "make lint failed:"; cat $(OUT)/lint.log; rc=1; fi; \
	exit $$rc

# The nested modules' tests run beside the root's, their output after it: each is one
# package that would otherwise hold the machine to one core while it runs.
.PHONY: test-unit
test-unit: test-gate promtool ## Every test that needs no control plane, with the race detector; the nested modules' too.
	@mkdir -p $(OUT); \
	(cd deploy/helm && $(GO_TEST) -skip '$(PLANE_TESTS)' ./...) >$(OUT)/test-unit-helm.log 2>&1 & helm=$$!; \
	(cd hack/image && STARTUPGATE_GATE_BINARY=$(abspath $(TEST_GATE)) $(GO_TEST) ./...) >$(OUT)/test-unit-image.log 2>&1 & image=$$!; \
	STARTUPGATE_GATE_BINARY=$(abspath $(TEST_GATE)) $(GO_TEST) -skip '$(PLANE_TESTS)' $(UNIT_PACKAGES); rc=$$?; \
	wait $$helm || rc=1; cat $(OUT)/test-unit-helm.log; \
	wait $$image || rc=1; cat $(OUT)/test-unit-image.log; \
	exit $$rc

.PHONY: test-deploy
test-deploy: controlplane node test-gate promtool ## The install paths only: the overlays and the chart rendered, proved equal and applied to the embedded plane; the image built and run; the chart installed onto real nodes.
	STARTUPGATE_GATE_BINARY=$(abspath $(TEST_GATE)) hack/leftovers $(GO_TEST) ./deploy/...

# What make test builds and checks before its tests.
.PHONY: test-setup
test-setup: controlplane karpenter node test-gate promtool verify

# The linter is built as the plane is: less garbage collection (hack/buildgc says why), no
# DWARF, no inlining, so that it compiles faster and reuses the plane's standard library.
$(GOLANGCI_LINT):
	@GOFLAGS="-toolexec=$(CURDIR)/hack/buildgc '-gcflags=$(PLANE_GCFLAGS)'" GOWORK=off hack/quietly $(TOOLS_DIR)/golangci-lint.log "building golangci-lint $(GOLANGCI_LINT_VERSION) into $(TOOLS_DIR) (first time only)" \
		go build -C hack/tools -trimpath -ldflags='-s -w' -o $(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

# lint type-checks against the packages that make test and make test-unit compile, with their
# flags and the race detector's, so that beside them it compiles almost nothing: each module's
# dependencies are not compiled a second time, which on a fresh machine was a tenth of make
# test's CPU (docs/development.md).
.PHONY: lint
lint: modules $(GOLANGCI_LINT) ## Run golangci-lint (.golangci.yml) over the root module, deploy/helm and hack/image.
	@rc=0; for m in $(LINT_MODULES); do \
		(cd $$m && GOGC=400 GOFLAGS='$(TEST_GOFLAGS) -race' $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...) || rc=1; \
	done; exit $$rc

.PHONY: verify
verify: verify-fmt verify-mod verify-policy shellcheck verify-docs ## Check that nothing generated or formatted is stale: gofmt, go mod tidy, the policy, shellcheck, the docs.

.PHONY: verify-fmt
verify-fmt: ## gofmt -l prints nothing.
	@files=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go' | while read -r f; do [[ -f $$f ]] && echo "$$f"; done)); \
		if [[ -n $$files ]]; then echo "gofmt -w these files:"; echo "$$files"; exit 1; fi

.PHONY: verify-mod
verify-mod: modules ## go mod tidy changes nothing, in every module.
	@rc=0; for m in $(GO_MODULES); do \
		(cd $$m && GOFLAGS= go mod tidy -diff 2> >(grep -v '^go: downloading' >&2)) || { echo "run go mod tidy in $$m"; rc=1; }; \
	done; exit $$rc

.PHONY: verify-policy
verify-policy: test-gate ## make policy would change nothing.
	@{ echo "$(POLICY_HEADER)"; $(TEST_GATE) --print-policy; } | diff -u $(POLICY_FILE) - || { echo "$(POLICY_FILE) is stale: run make policy"; exit 1; }

.PHONY: verify-docs
verify-docs: test-gate ## The docs' tests: the generated references are up to date and every relative link resolves.
	STARTUPGATE_GATE_BINARY=$(abspath $(TEST_GATE)) go test -count=1 ./docs/...

# Every tracked or new file whose first line runs a shell.
SHELL_SCRIPTS = $(shell git ls-files --cached --others --exclude-standard | while read -r f; do [[ -f $$f ]] && head -n1 "$$f" | grep -qE '^\#!.*[/ ](ba)?sh\b' && echo "$$f"; done)

.PHONY: promtool
promtool: ## Install Debian's prometheus package (for promtool) when missing: the chart's alert tests run it.
	@command -v promtool >/dev/null || hack/quietly $(SETUP_LOG) "installing promtool (Debian's prometheus) with apt-get" \
		bash -c '$$( [[ $$(id -u) == 0 ]] || echo sudo ) apt-get update && $$( [[ $$(id -u) == 0 ]] || echo sudo ) apt-get install -y --no-install-recommends prometheus'

.PHONY: shellcheck
shellcheck: ## Lint every shell script (installs Debian's shellcheck when missing).
	@command -v shellcheck >/dev/null || hack/quietly $(SETUP_LOG) "installing shellcheck with apt-get" \
		bash -c '$$( [[ $$(id -u) == 0 ]] || echo sudo ) apt-get update && $$( [[ $$(id -u) == 0 ]] || echo sudo ) apt-get install -y shellcheck'
	shellcheck $(SHELL_SCRIPTS)

.PHONY: simulate
simulate: controlplane karpenter build ## Run every scenario in scenarios/ on the embedded plane; reports in out/ (scenarios.json, .xml, .html), logs in out/gate.log and out/plane/.
	@mkdir -p $(OUT)
	STARTUPGATE_GATE_BINARY=$(CURDIR)/bin/gate hack/leftovers bin/simulate run --gate-log $(OUT)/gate.log --plane-logs $(OUT)/plane --parallel 4 --json $(OUT)/scenarios.json --junit $(OUT)/scenarios.xml --html $(OUT)/scenarios.html $(SCENARIOS)

.PHONY: demo
demo: controlplane karpenter build $(if $(DEMO_NODE),node image $(HELM)) ## The autoscale demo, no Docker: Karpenter launches nodes for a Deployment scaled from 0, the gate holds each until its init Pod is Ready; out/demo.html. As root, the gate runs from its chart and image on a real system node (DEMO_NODE= runs it in-process).
	@mkdir -p $(OUT)
	hack/leftovers bin/simulate demo $(if $(DEMO_NODE),--image $(IMAGE_TAR) --image-ref $(IMG) --helm $(HELM)) --html $(OUT)/demo.html --gate-log $(OUT)/demo-gate.log --plane-logs $(OUT)/demo-plane

.PHONY: helm
helm: $(HELM) ## Build the helm CLI that deploy/helm/go.mod pins into the per-user cache (first time only), for make demo.

$(HELM):
	@GOFLAGS="-toolexec=$(CURDIR)/hack/buildgc '-gcflags=$(PLANE_GCFLAGS)'" GOWORK=off hack/quietly $(TOOLS_DIR)/helm.log "building helm $(HELM_VERSION) into $(TOOLS_DIR) (first time only)" \
		go build -C deploy/helm -trimpath -ldflags='-s -w' -o $(HELM) helm.sh/helm/v4/cmd/helm

.PHONY: soak
soak: controlplane karpenter build ## Every scenario on consecutive seeds until SOAK_RUNS runs; out/soak.json has each run's seed, result and reproduce command.
	@mkdir -p $(OUT)
	STARTUPGATE_GATE_BINARY=$(CURDIR)/bin/gate hack/leftovers bin/simulate run --repeat $(SOAK_REPEAT) --seed $(SOAK_SEED) --parallel $(SOAK_PARALLEL) \
		--gate-log $(OUT)/soak-gate.log --plane-logs $(OUT)/soak-plane --json $(OUT)/soak.json --junit $(OUT)/soak.xml $(SCENARIOS)

.PHONY: explore
explore: controlplane build ## Perturbed runs of every scenario (crash points at the gate's writes, stale views, config edits), judged by the invariants, with their negative controls; out/explore.md has the table.
	@mkdir -p $(OUT)
	@set -o pipefail; go test -count=1 -timeout 2h -v ./gate/rule/model -args -max-states=0 | grep -E '^(---|ok|FAIL)|model_test.go:'
	STARTUPGATE_GATE_BINARY=$(CURDIR)/bin/gate hack/leftovers bin/simulate explore --per-kind $(EXPLORE_PER_KIND) --alone-per-kind $(EXPLORE_ALONE_PER_KIND) --seed $(EXPLORE_SEED) --parallel $(EXPLORE_PARALLEL) \
		--out $(OUT)/explore.md --json $(OUT)/explore.json --gate-log $(OUT)/explore-gate.log $(SCENARIOS)

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME in turn; a crasher lands in testdata/fuzz/ as a seed.
	@for t in gate:FuzzNodeWebhook gate:FuzzPodGuard gate:FuzzLoadConfig sim/scenario:FuzzScenarioParse gate/convert:FuzzConvertTainter gate/convert:FuzzConvertNRC; do \
		echo "== $${t#*:} ($(FUZZTIME))"; \
		go test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 100x -parallel $(FUZZ_PARALLEL) ./$${t%%:*} || exit 1; \
	done

.PHONY: bench
bench: controlplane build ## Benchmark the gate against the plane's floor at 100, 1000 and 5000 nodes (long; BENCH_FLAGS=--pairs-largest=1 shortens it); out/bench.*, then the Go benchmarks.
	@mkdir -p $(OUT)
	STARTUPGATE_GATE_BINARY=$(CURDIR)/bin/gate hack/leftovers bin/simulate bench --out $(OUT) --paced-for 30s $(BENCH_FLAGS)
	go test ./gate -run '^$$' -bench . -benchmem | tee $(OUT)/bench-go.txt

# make bench-large: the static cluster sizes, in nodes.
LARGE_SIZES ?= 10000,50000

.PHONY: bench-large
bench-large: controlplane build ## Benchmark the gate on 10,000 and 50,000 static cloud-sized nodes beside the empty plane, as far as memory allows (long; LARGE_SIZES, LARGE_FLAGS); out/bench-large.json and .md.
	@mkdir -p $(OUT)
	STARTUPGATE_GATE_BINARY=$(CURDIR)/bin/gate hack/leftovers bin/simulate bench --out $(OUT) --large=$(LARGE_SIZES) $(LARGE_FLAGS)

.PHONY: policy
policy: ## Regenerate deploy/overlays/policy/policy.yaml from the default configuration.
	@{ echo "$(POLICY_HEADER)"; go run ./cmd/gate --print-policy; } > $(POLICY_FILE)

.PHONY: image
image: modules ## Build the gate's OCI image without Docker into out/startupgate.tar and print its digest; same commit, same digest.
	@mkdir -p $(OUT)/image
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) go build $(GOFLAGS_BUILD) -buildvcs=false -o $(OUT)/image/gate ./cmd/gate
	cd hack/image && go run . -binary $(abspath $(OUT)/image/gate) -out $(abspath $(IMAGE_TAR)) -tag $(IMG) -arch $(IMAGE_ARCH) \
		-version $(VERSION) -revision $(COMMIT) -created $(SOURCE_DATE_EPOCH)

.PHONY: docker-build
docker-build: ## Build the image IMG with the Dockerfile (needs a Docker engine; make image does not).
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMG) .

.PHONY: clean
clean: ## Remove bin/ and out/ (the control-plane and tools caches stay).
	rm -rf bin $(OUT)

.PHONY: kind-demo
kind-demo: image ## Run deploy/kind/demo.sh: a kind cluster, make image's tarball loaded, the gate installed, node joins replayed (needs Docker and kind).
	IMG=$(IMG) IMAGE_TAR=$(IMAGE_TAR) deploy/kind/demo.sh
