# Ferry — the front door. `make help` lists every target.
SHELL := /bin/bash
GO ?= go
GOFLAGS_TEST ?=

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "} {name[NR] = $$1; what[NR] = $$2; if (length($$1) > w) w = length($$1)} END {for (i = 1; i <= NR; i++) printf "  %s  %s\n", sprintf("%-" w "s", name[i]), what[i]}'

.PHONY: test
test: vet unit sim-ci infra-test lambda-local local-test console-browser ## Run every test suite (what CI runs)

.PHONY: vet
vet: ## go vet the runtime module
	$(GO) vet ./...

.PHONY: unit
unit: ## Go tests of the runtime module, with the race detector
	$(GO) test -race -count=1 $(GOFLAGS_TEST) ./...

# The version stamped into every binary (internal/version): git describe of
# the newest v* tag (v0.1.0, or v0.1.0-3-gcd6075f-dirty past it; the commit
# alone before the first tag). Without git, nothing is stamped and a binary
# reports its module version, else "devel". BUILD_VERSION=... overrides.
BUILD_VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --always --dirty 2>/dev/null)
STAMP := $(if $(BUILD_VERSION),-X github.com/ferryhq/ferry/internal/version.stamped=$(BUILD_VERSION))

# The Lambda functions (functions/*): one static bootstrap each, as Lambda's
# provided.al2023 runtime on arm64 (Graviton) expects. LAMBDA_ARCH and
# LAMBDA_BIN build them for another architecture elsewhere (make local builds
# this machine's into .cache/local/bin, never into bin/, which deploys).
FUNCTIONS := $(notdir $(wildcard functions/*))
LAMBDA_BUILD := -tags lambda.norpc -trimpath -ldflags "-s -w $(STAMP)"
LAMBDA_ARCH ?= arm64
LAMBDA_BIN ?= bin

.PHONY: build
build: ## Build each function as bin/<function>/bootstrap (linux/arm64, static, trimmed, version stamped)
	@for f in $(FUNCTIONS); do \
	  echo "$(LAMBDA_BIN)/$$f/bootstrap"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$(LAMBDA_ARCH) $(GO) build $(LAMBDA_BUILD) -o $(LAMBDA_BIN)/$$f/bootstrap ./functions/$$f || exit 1; \
	done
	@# The CDK stack tags itself with the version the bootstraps carry.
	@printf '%s\n' "$(or $(BUILD_VERSION),devel)" > $(LAMBDA_BIN)/VERSION
	@echo "$(LAMBDA_BIN)/VERSION: $(or $(BUILD_VERSION),devel)"

# ferry dev: the whole stack on this machine. DEV_FLAGS passes flags, e.g.
# make dev DEV_FLAGS=--allow-private-webhooks
DEV_FLAGS ?=

.PHONY: dev
dev: ferry ## Run the whole stack on this machine (flags: make dev DEV_FLAGS="--allow-private-webhooks")
	$(FERRY_BIN) dev $(DEV_FLAGS)

# The ferry command, version stamped like the bootstraps (make dev and
# make local run it from here).
FERRY_BIN ?= .cache/bin/ferry

.PHONY: ferry
ferry: ## Build the ferry command into .cache/bin/ferry, version stamped (FERRY_BIN=path elsewhere)
	$(GO) build -ldflags "$(STAMP)" -o $(FERRY_BIN) ./cmd/ferry

# The Lambda Runtime Interface Emulator, installed into the project's own
# .cache/bin (pinned; the stamp file re-installs it when the pin moves).
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
RIE := $(CURDIR)/.cache/bin/aws-lambda-rie

.cache/rie-$(RIE_VERSION).stamp:
	GOBIN=$(CURDIR)/.cache/bin $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)
	touch $@

# make local: the synthesized stack on this machine (ferry local): the
# bootstraps built for this machine under the emulator, wired from
# infra/cdk.out (synthesized from bin/, what deploys, when missing or older
# than infra/). LOCAL_FLAGS passes flags, e.g.
# make local LOCAL_FLAGS="--allow-private-webhooks --speedup 10"
LOCAL_FLAGS ?=
LOCAL_BIN := .cache/local/bin

.PHONY: local
local: .cache/rie-$(RIE_VERSION).stamp ferry ## The deployed functions on this machine, wired from the synthesized template (flags: make local LOCAL_FLAGS="--allow-private-webhooks")
	$(MAKE) --no-print-directory build
	$(MAKE) --no-print-directory build LAMBDA_ARCH=$$($(GO) env GOARCH) LAMBDA_BIN=$(LOCAL_BIN)
	$(FERRY_BIN) local --rie $(RIE) --bin-dir $(LOCAL_BIN) $(LOCAL_FLAGS)

.PHONY: local-test
local-test: .cache/rie-$(RIE_VERSION).stamp ## ferry local's stack tests: a webhook and an email through the front, the stream and schedules; a changed stream filter; one version in ferry version, tags, /healthz and cold starts
	LAMBDA_RIE=$(RIE) $(INFRA_ENV) $(GO) test -tags lambdastack -count=1 -v -run 'TestLocalStack' ./internal/lambdastack/

# make local-figures: enqueue-to-delivery p50/p99 of 200 webhooks through
# the stream poller and the stack's peak memory (a benchmark, not part of test).
.PHONY: local-figures
local-figures: .cache/rie-$(RIE_VERSION).stamp ## Measure ferry local: enqueue-to-delivery p50/p99 over 200 webhooks via the stream, peak memory
	LAMBDA_RIE=$(RIE) $(INFRA_ENV) $(GO) test -tags lambdastack -count=1 -run '^$$' -bench LocalStackDelivery -benchtime 1x ./internal/lambdastack/

.PHONY: lambda-local
lambda-local: .cache/rie-$(RIE_VERSION).stamp ## Run each function under the Lambda emulator with events/ samples; prints sizes, cold and warm times
	LAMBDA_RIE=$(RIE) $(GO) test -tags emulator -count=1 -v -run TestFunctionsUnderTheEmulator ./internal/emulatortest/

# The console's browser tests (internal/console, build tag browser): a
# whole ferry dev in the test process, driven in headless Chromium
# (Debian's chromium package, installed by make chromium) through
# chromedp, with axe-core (npm, pinned in the package-lock) for the
# accessibility check. Screenshots go to internal/console/testdata/screenshots.
CONSOLE_NPM := internal/console/testdata/browser

.PHONY: chromium
chromium: ## Install Debian's chromium for the console's browser tests (apt-get, as root; nothing when it is there)
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium (apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; }
	@chromium --version 2>/dev/null | head -1

$(CONSOLE_NPM)/node_modules/.package-lock.json: $(CONSOLE_NPM)/package.json $(CONSOLE_NPM)/package-lock.json
	cd $(CONSOLE_NPM) && npm ci --no-audit --no-fund

.PHONY: console-browser
console-browser: chromium $(CONSOLE_NPM)/node_modules/.package-lock.json ## The console in headless Chromium: click through every page, admit and cancel, XSS, axe-core, no console errors
	$(GO) test -tags browser -count=1 -v -run 'TestConsoleInABrowser' ./internal/console/

.PHONY: console-screenshots
console-screenshots: chromium $(CONSOLE_NPM)/node_modules/.package-lock.json ## Take docs/console/*.png again (the browser tests' screenshots)
	FERRY_CONSOLE_SCREENSHOTS=$(CURDIR)/docs/console $(GO) test -tags browser -count=1 -run 'TestConsoleInABrowser' ./internal/console/

# The deterministic simulator (internal/sim). Under -race the unit run keeps
# only a few seeds of its CI budget (the race detector slows the
# single-threaded simulation about tenfold, and its goroutines hand over
# through channels, so there is nothing for it to find); sim-ci runs the full
# budget without -race.
SEEDS ?= 100
STEPS ?= 500
SEED ?=

# It also prints the statement coverage of internal/outbox the budget
# reaches ("coverage: … of statements in …/internal/outbox"): a figure to
# watch, not a gate (make sim-coverage measures the full seed set).
.PHONY: sim-ci
sim-ci: ## The simulator's CI budget (300 seeds x 500 steps, a short exhaustive run; no -race), with the coverage of internal/outbox it reaches
	$(GO) test -count=1 -cover -coverpkg=github.com/ferryhq/ferry/internal/outbox -run 'TestCIBudget|TestRegressionSeeds|TestExhaustive' ./internal/sim/

.PHONY: sim-exhaustive
sim-exhaustive: ## Every schedule of the simulator's small worlds within their bounds (ferry-sim -exhaustive; WORLD=hole to pick)
	$(GO) run ./internal/sim/cmd/ferry-sim -exhaustive $(if $(WORLD),-world $(WORLD))

# make sim-coverage: the statement coverage of internal/outbox that the
# simulator reaches (ferry-sim built with -cover, 60 seeds x 1,000 steps in
# each random mode and the exhaustive mode's worlds with one fault and no
# preemption; each part's figure and the whole's; docs/design.md §11 keeps
# them), every function under 80 % and every exported Engine method no run
# reached (it fails on one).
.PHONY: sim-coverage
sim-coverage: ## The simulator's coverage of internal/outbox: per file, functions under 80 %, exported Engine methods never reached
	$(GO) run ./internal/sim/cmd/sim-coverage

# make sim-mutants: every planted bug (sim.Variants, one per guard of
# docs/design.md §11) on MUTANT_SEEDS fresh seeds of MUTANT_STEPS steps, in
# the mode it needs: the table guard -> variant -> seeds caught. It fails
# when a variant is caught in fewer than 16 of 20.
MUTANT_SEEDS ?= 20
MUTANT_STEPS ?= 800
MUTANT_FIRST ?= 100001

.PHONY: sim-mutants
sim-mutants: ## Every planted bug on 20 fresh seeds x 800 steps: guard -> variant -> seeds caught
	$(GO) run ./internal/sim/cmd/ferry-sim -mutants -first $(MUTANT_FIRST) -seeds $(MUTANT_SEEDS) -steps $(MUTANT_STEPS)

.PHONY: sim
sim: ## Simulate SEEDS seeds of STEPS steps (summary table); SEED=n replays one seed's trace
ifneq ($(SEED),)
	$(GO) run ./internal/sim/cmd/ferry-sim -seed $(SEED) -steps $(STEPS)
else
	$(GO) run ./internal/sim/cmd/ferry-sim -seeds $(SEEDS) -steps $(STEPS)
endif

# The log recovery fuzzer of the embedded DynamoDB (internal/ddblocal,
# TestWALRecoveryFuzz): `make test` runs a fixed sample of it; this runs
# every systematic damage case, then random ones for FUZZ_WAL_TIME.
# FERRY_WAL_FUZZ_SEED=n replays the random cases of one seed.
FUZZ_WAL_TIME ?= 2m

.PHONY: fuzz-wal
fuzz-wal: ## Damage a --data-dir log every way (then randomly for FUZZ_WAL_TIME=2m): start-up recovers or refuses
	FERRY_WAL_FUZZ=full FERRY_WAL_FUZZ_TIME=$(FUZZ_WAL_TIME) $(GO) test -count=1 -timeout 0 -run '^TestWALRecoveryFuzz$$' -v ./internal/ddblocal/

# Benchmarks (cmd/ferry-bench, internal/bench): request units, calls,
# latency under a 5 ms-per-call model, drain rate, drainer memory, bootstrap
# sizes and emulator timings. Writes docs/benchmarks.md and its PNG chart.
# Not part of test. BENCHFLAGS=-backlog=10000 scales the backlog down.
BENCHFLAGS ?=

.PHONY: bench
bench: .cache/rie-$(RIE_VERSION).stamp ## Measure what an action costs; write docs/benchmarks.md and docs/benchmarks.png
	LAMBDA_RIE=$(RIE) $(GO) run ./cmd/ferry-bench $(BENCHFLAGS)

# The CDK app (infra/, its own Go module). infra-test synthesizes offline
# through jsii (node, no npm); synth/diff/deploy use the aws-cdk CLI pinned in
# infra/package-lock.json. docs/deploy.md explains them.
INFRA_ENV := CDK_HOME=$(CURDIR)/infra/.cdk CDK_DISABLE_CLI_TELEMETRY=true JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
CDK := cd infra && $(INFRA_ENV) ./node_modules/.bin/cdk

.PHONY: infra-test
infra-test: ## Go tests of the CDK stack (assertions, cdk-nag, roles = internal/functionroles, cfn-lint; offline)
	cd infra && $(INFRA_ENV) $(GO) vet . ./cmd/... && $(INFRA_ENV) $(GO) test -count=1 $(GOFLAGS_TEST) . ./cmd/...

# npm ci, then a go.mod marker so Go's ./... in infra/ skips node_modules.
infra/node_modules/.package-lock.json: infra/package.json infra/package-lock.json
	cd infra && npm ci --no-audit --no-fund
	printf 'module ferry.invalid/nodemodules\n' > infra/node_modules/go.mod

.PHONY: synth
synth: infra/node_modules/.package-lock.json ## Build the functions, synthesize the stack into infra/cdk.out
	$(MAKE) build
	$(CDK) synth --quiet

.PHONY: diff
diff: infra/node_modules/.package-lock.json ## Show what deploy would change (needs AWS credentials)
	$(MAKE) build
	$(CDK) diff

.PHONY: deploy
deploy: infra/node_modules/.package-lock.json ## Deploy the stack (needs AWS credentials; see docs/deploy.md)
	$(MAKE) build
	$(CDK) deploy

# Releases (CONTRIBUTING.md). make release VERSION=v0.x.y, from a clean
# checkout: make test (RELEASE_SKIP_TEST=1 skips it: only for trying the
# target itself), CHANGELOG.md's Unreleased becomes the version (a commit),
# an annotated tag (local: nothing is pushed), the bootstraps built from the
# tag (their version is the tag) and dist/: one Lambda zip per function and
# SHA256SUMS. RELEASE_DATE (YYYY-MM-DD, default today in UTC) dates it.
RELEASE := $(GO) run ./internal/release/cmd/ferry-release
RELEASE_DATE ?= $(shell date -u +%F)
RELEASE_SKIP_TEST ?=

.PHONY: release
release: ## Cut release VERSION=v0.x.y: clean tree, make test, CHANGELOG, local tag, dist/ zips + SHA256SUMS (never pushes)
	@[[ "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$ ]] || { echo "release: VERSION=v0.x.y is required (got '$(VERSION)')" >&2; exit 2; }
	@[[ -z "$$(git status --porcelain)" ]] || { echo "release: the tree is not clean:" >&2; git status --short >&2; exit 1; }
	@! git rev-parse -q --verify "refs/tags/$(VERSION)" >/dev/null || { echo "release: tag $(VERSION) exists already" >&2; exit 1; }
ifeq ($(RELEASE_SKIP_TEST),)
	$(MAKE) --no-print-directory test
	@[[ -z "$$(git status --porcelain)" ]] || { echo "release: make test changed the tree:" >&2; git status --short >&2; exit 1; }
else
	@echo "release: make test SKIPPED (RELEASE_SKIP_TEST=$(RELEASE_SKIP_TEST)); a real release runs it"
endif
	$(RELEASE) cut -version $(VERSION) -date $(RELEASE_DATE) CHANGELOG.md
	git commit -q -m "Release $(VERSION)" -- CHANGELOG.md
	git tag -a $(VERSION) -m "Ferry $(VERSION)"
	rm -rf dist
	$(MAKE) --no-print-directory build
	@[[ "$$(cat bin/VERSION)" == "$(VERSION)" ]] || { echo "release: the bootstraps say $$(cat bin/VERSION), not $(VERSION)" >&2; exit 1; }
	$(RELEASE) dist -version $(VERSION) -functions "$(FUNCTIONS)" -bin bin -out dist -arch $(LAMBDA_ARCH) -date $(RELEASE_DATE)
	@echo "release: $(VERSION) tagged locally; push it yourself: git push origin $(VERSION)"

.PHONY: changelog-fingerprint
changelog-fingerprint: ## Print CHANGELOG.md's fingerprint line for the current table layout and OpenAPI document
	@$(RELEASE) fingerprint
