# Ferry — the front door. `make help` lists every target.
SHELL := /bin/bash
GO ?= go
GOFLAGS_TEST ?=

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-16s %s\n", $$1, $$2}'

.PHONY: test
test: vet unit ## Run every test suite (what CI runs)

.PHONY: vet
vet: ## go vet the runtime module
	$(GO) vet ./...

.PHONY: unit
unit: ## Go tests of the runtime module, with the race detector
	$(GO) test -race -count=1 $(GOFLAGS_TEST) ./...
