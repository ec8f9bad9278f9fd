# Ferry — the front door. `make help` lists every target.
SHELL := /bin/bash
GO ?= go
GOFLAGS_TEST ?=

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-16s %s\n", $$1, $$2}'

.PHONY: test
test: vet unit sim-ci infra-test ## Run every test suite (what CI runs)

.PHONY: vet
vet: ## go vet the runtime module
	$(GO) vet ./...

.PHONY: unit
unit: ## Go tests of the runtime module, with the race detector
	$(GO) test -race -count=1 $(GOFLAGS_TEST) ./...

# The deterministic simulator (internal/sim). Under -race the unit run keeps
# only a few seeds of its CI budget (the race detector slows the
# single-threaded simulation about tenfold, and its goroutines hand over
# through channels, so there is nothing for it to find); sim-ci runs the full
# budget without -race.
SEEDS ?= 100
STEPS ?= 500
SEED ?=

.PHONY: sim-ci
sim-ci: ## The simulator's CI budget (300 seeds x 500 steps, no -race)
	$(GO) test -count=1 -run 'TestCIBudget|TestRegressionSeeds' ./internal/sim/

.PHONY: sim
sim: ## Simulate SEEDS seeds of STEPS steps (summary table); SEED=n replays one seed's trace
ifneq ($(SEED),)
	$(GO) run ./internal/sim/cmd/ferry-sim -seed $(SEED) -steps $(STEPS)
else
	$(GO) run ./internal/sim/cmd/ferry-sim -seeds $(SEEDS) -steps $(STEPS)
endif

# The CDK app (infra/, its own Go module). infra-test synthesizes offline
# through jsii (node, no npm); synth/diff/deploy use the aws-cdk CLI pinned in
# infra/package-lock.json. docs/deploy.md explains them.
INFRA_ENV := CDK_HOME=$(CURDIR)/infra/.cdk CDK_DISABLE_CLI_TELEMETRY=true JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
CDK := cd infra && $(INFRA_ENV) ./node_modules/.bin/cdk

.PHONY: infra-test
infra-test: ## Go tests of the CDK stack (assertions and cdk-nag, offline)
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
