# orderly: the two commands a fresh machine needs are `make run` and
# `make test`; every other target is a step of those or a convenience.
SHELL := /bin/bash
.DEFAULT_GOAL := help

EMULATORS      := localstack/emulators.sh
WITH_EMULATORS := bash localstack/with-emulators.sh
FUNCTIONS      := submit scheduler agent supervisor
# Integration tests need the emulators; -p 2 matches the machine's cores.
GOTEST         := go test -count=1 -p 2

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

.PHONY: tools
tools: ## install the pinned emulators and Go modules (idempotent)
	bash $(EMULATORS) install
	go mod download

.PHONY: run
run: tools ## run orderly locally on the emulators: API on 127.0.0.1:8080
	bash $(EMULATORS) start
	eval "$$(bash $(EMULATORS) env)" && go run ./cmd/orderly-local

.PHONY: test
test: tools lint ## all tests, unit and integration, against the emulators
	$(WITH_EMULATORS) env ORDERLY_INTEGRATION=1 $(GOTEST) ./...

.PHONY: lint
lint: ## gofmt and go vet
	@unformatted="$$(gofmt -l .)"; if [[ -n "$$unformatted" ]]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	go vet ./...

.PHONY: bench
bench: tools ## benchmarks against the emulators
	$(WITH_EMULATORS) env ORDERLY_INTEGRATION=1 go test -run '^$$' -bench . -benchtime 3s ./...

.PHONY: build
build: ## build the Lambda functions: bin/<function>/bootstrap (linux/arm64)
	@for f in $(FUNCTIONS); do \
		echo "build $$f"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -trimpath -ldflags='-s -w' \
			-o bin/$$f/bootstrap ./functions/$$f || exit 1; \
	done

.PHONY: emulators
emulators: tools ## start the emulators in the background
	bash $(EMULATORS) start

.PHONY: stop
stop: ## stop the emulators
	bash $(EMULATORS) stop

.PHONY: clean
clean: ## remove build output and emulator state (not the installed tools)
	rm -rf bin .local
