# orderly: the two commands a fresh machine needs are `make run` and
# `make test`; every other target is a step of those or a convenience.
SHELL := /bin/bash
.DEFAULT_GOAL := help

EMULATORS      := localstack/emulators.sh
WITH_EMULATORS := bash localstack/with-emulators.sh
FUNCTIONS := submit scheduler agent supervisor recorder
# The CDK (its CLI and the jsii runtime behind its Go bindings) runs on
# Node 22 or later: `make node` installs a pinned Node 22 into .tools/node
# when the machine's is older, and what runs the CDK puts it first on PATH
# (only that: the emulators' install is keyed on the machine's node).
NODE_BIN       := $(CURDIR)/.tools/node/bin
CDK_PATH       := PATH="$(NODE_BIN):$$PATH"
# Integration tests need the emulators; -p 2 matches the machine's cores.
GOTEST         := go test -count=1 -p 2

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

STATICCHECK_VERSION := v0.8.2
STATICCHECK        := .tools/bin/staticcheck

.PHONY: tools
tools: ## install the pinned emulators, Go modules and staticcheck (idempotent)
	bash $(EMULATORS) install
	go mod download
	@if [[ "$$($(STATICCHECK) -version 2>/dev/null)" != *"$(STATICCHECK_VERSION:v%=%)"* ]]; then \
		echo "[tools] installing staticcheck $(STATICCHECK_VERSION) into .tools/bin"; \
		GOBIN="$$PWD/.tools/bin" go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); \
	fi

.PHONY: run
run: tools ## run orderly locally on the emulators: API on 127.0.0.1:8080, the shipped workflow and the checkout and fulfilment examples
	bash $(EMULATORS) start
	@# By default the checkout and fulfilment examples run beside the
	@# shipped workflow; the simulator plays the fulfilment example's
	@# services that call back, its fraud analyst and its carrier.
	@# Whatever workflows are named, a fraud service at the simulator is
	@# called with an Authorization header from the local Secrets Manager,
	@# which the simulator checks (examples/services.local.json, for the
	@# services ORDERLY_SERVICES leaves out). Before it says it is ready,
	@# orderly warms the emulators' JVMs with throwaway orders on a stage
	@# of their own, deleted after (ORDERLY_WARMUP=0 skips it).
	eval "$$(bash $(EMULATORS) env)" && export ORDERLY_WORKFLOWS=$${ORDERLY_WORKFLOWS:-order,checkout,fulfilment} && \
		ORDERLY_SERVICES_DEFAULTS=$${ORDERLY_SERVICES_DEFAULTS-examples/services.local.json} \
		ORDERLY_WARMUP=$${ORDERLY_WARMUP:-1} go run ./cmd/orderly-local

.PHONY: events
events: ## print (and consume) the status events `make run` published, from its local status-events queue
	eval "$$(bash $(EMULATORS) env)" && $(TOOLS_VENV)/bin/python localstack/status_events.py $(or $(STAGE),local)

# The console's browser test drives Debian's Chromium (package chromium).
# Debian's security archive keeps only its current build, so the version is
# Debian's current one for this release; the test needs none in particular.
CHROMIUM ?= /usr/bin/chromium

.PHONY: browser
browser: ## install Debian's Chromium for the console's browser test (idempotent)
	@if [[ ! -x "$(CHROMIUM)" ]]; then \
		echo "[browser] installing Debian's chromium"; \
		sudo=""; [[ "$$(id -u)" == 0 ]] || sudo=sudo; \
		$$sudo apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 || \
		{ $$sudo apt-get update -qq && $$sudo apt-get install -y --no-install-recommends chromium; } || exit 1; \
	fi
	@"$(CHROMIUM)" --version 2>/dev/null

.PHONY: test
test: tools infra-tools browser lint build ## all tests: unit, integration against the emulators (the console in Chromium too), the CDK stack, cfn-lint, schemathesis on the local API and on the simulator (LocalStack's: make test-localstack)
	$(MAKE) --no-print-directory cfn-lint
	$(TOOLS_VENV)/bin/python -m unittest discover -s localstack/executor/tests -t localstack/executor
	@# The CDK stack's tests (infra/...) run the jsii runtime: on Node 22.
	$(WITH_EMULATORS) env $(CDK_PATH) ORDERLY_INTEGRATION=1 ORDERLY_CHROMIUM=$(CHROMIUM) $(GOTEST) $$(go list ./... | grep -v -e /internal/measure/cost$$ -e /internal/measure/soak$$)
	@# The loader as make build builds the functions, without the examples.
	$(GOTEST) -tags noexamples ./internal/definition
	@# The cost budget counts every request of a few orders: on a machine
	@# busy with the other packages, Supervisors act on orders only slow
	@# because of it, and their extra writes are counted (seen 2 in 7 runs).
	$(WITH_EMULATORS) env ORDERLY_INTEGRATION=1 $(GOTEST) ./internal/measure/cost
	$(WITH_EMULATORS) bash fuzz/run.sh
	$(MAKE) --no-print-directory contract

# The short chaos soak takes 4 to 10 minutes (its bound, the engine's
# worst case for an order that loses two requests, is 18), too long to
# keep make test under 10: CI runs it after make test. -timeout leaves
# room for its bound and its reading of the status events after it, so a
# failing soak reports instead of panicking.
.PHONY: test-soak
test-soak: tools ## the short chaos soak: 200 orders under injected faults, kill -9 and an outage, fulfilment orders waiting among them (4 to 10 minutes; make soak runs the long one)
	$(WITH_EMULATORS) env ORDERLY_INTEGRATION=1 go test -count=1 -timeout 30m ./internal/measure/soak

.PHONY: contract
contract: ## the simulator against the remote-service contract: schemathesis from internal/adapter/remote/contract.json, then orderly conformance (no emulators)
	bash fuzz/simulator.sh

.PHONY: lint
lint: tools ## gofmt, go vet, staticcheck, and go mod tidy leaving go.mod as it is
	@# The packages' own files: gofmt on a directory would walk into infra/node_modules.
	@unformatted="$$(gofmt -l $$(go list -f '{{$$d := .Dir}}{{range .GoFiles}}{{$$d}}/{{.}} {{end}}{{range .TestGoFiles}}{{$$d}}/{{.}} {{end}}{{range .XTestGoFiles}}{{$$d}}/{{.}} {{end}}{{range .IgnoredGoFiles}}{{$$d}}/{{.}} {{end}}' ./...))"; \
	if [[ -n "$$unformatted" ]]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	go vet ./...
	$(STATICCHECK) ./...
	@# The loader's build without the examples (make build's functions).
	go vet -tags noexamples ./internal/definition
	$(STATICCHECK) -tags noexamples ./internal/definition
	@go mod tidy -diff >/dev/null || { echo "go.mod or go.sum is not tidy: run go mod tidy"; exit 1; }

.PHONY: bench
bench: tools ## benchmarks against the emulators (the engine's: 300 orders; the bursts: 1,000)
	$(WITH_EMULATORS) env ORDERLY_INTEGRATION=1 go test -run '^$$' -bench . -benchtime 3s $$(go list ./... | grep -v /internal/local/engine)
	$(WITH_EMULATORS) env ORDERLY_INTEGRATION=1 go test -run '^$$' -bench OrderEndToEnd -benchtime 300x ./internal/local/engine
	$(WITH_EMULATORS) env ORDERLY_INTEGRATION=1 go test -run '^$$' -bench 'Burst|EmulatorCeiling' -benchtime 1000x -timeout 30m ./internal/local/engine

# Against an orderly already running: it starts nothing itself, so that
# what it measures is exactly what `make run` serves.
.PHONY: load
load: ## measure a running `make run` as a client sees it (run `make run` first in another shell): a burst of 1,000 orders from 20 clients, sequential latency before and after it; LOAD_FLAGS passes cmd/orderly-load's flags
	go run ./cmd/orderly-load $(LOAD_FLAGS)

.PHONY: cost
cost: tools ## measure the cost per order on the emulators and price it (ORDERS=100 per scenario)
	$(WITH_EMULATORS) go run ./cmd/orderly-cost -orders $(or $(ORDERS),100)

.PHONY: soak
soak: tools ## the chaos soak: ORDERS=10000 orders under injected faults, kill -9 and an outage; report in .local/soak/results.json
	go build -o .local/bin/orderly-local ./cmd/orderly-local
	$(WITH_EMULATORS) go run ./cmd/orderly-soak -orders $(or $(ORDERS),10000) $(SOAK_FLAGS)

# The functions embed the workflows under workflows/ only: EXAMPLES=1
# builds the examples (examples/workflows/) in too, for a stage that runs
# them (context workflowsDir naming ../examples/workflows, as deploy-local
# does). Synth refuses an example the functions were built without, and so
# does each function at start.
EXAMPLES       ?=
comma          := ,
FUNCTION_TAGS   = lambda.norpc$(if $(filter 1,$(EXAMPLES)),,$(comma)noexamples)

.PHONY: build
build: ## build the Lambda functions: bin/<function>/bootstrap (linux/arm64); EXAMPLES=1 embeds the examples too
	@for f in $(FUNCTIONS); do \
		echo "build $$f"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags '$(FUNCTION_TAGS)' -trimpath -ldflags='-s -w' \
			-o bin/$$f/bootstrap ./functions/$$f || exit 1; \
	done

# The operator's CLI, for this machine (`go run ./cmd/orderly` runs it
# without building). -buildvcs=auto stamps the commit it is built from,
# which `orderly version` prints, even where GOFLAGS turns stamping off.
.PHONY: cli
cli: ## build the operator CLI for this machine: bin/orderly (bin/orderly --help lists its commands)
	go build -buildvcs=auto -trimpath -o bin/orderly ./cmd/orderly

.PHONY: emulators
emulators: tools ## start the emulators in the background
	bash $(EMULATORS) start

.PHONY: stop
stop: ## stop the emulators
	bash $(EMULATORS) stop

.PHONY: clean
clean: ## remove build output and emulator state (not the installed tools)
	rm -rf bin .local infra/cdk.out

# ------------------------------------------------------------ infrastructure ---
# The CDK app lives in infra/ (`go run .`). Its tools are pinned:
# infra/package-lock.json (CDK CLI, cdklocal) and infra/requirements.txt +
# constraints.txt (cfn-lint, installed into the emulators' venv).
#
# CONTEXT passes context overrides to every cdk command, e.g.
#   make synth CONTEXT="-c stage=prod -c alarmEmail=ops@example.com"
# STACKS picks the stacks to deploy or destroy (default: all of them).
CONTEXT            ?=
STACKS             ?= --all
REQUIRE_APPROVAL   ?= broadening
CDK                := ./node_modules/.bin/cdk
CDKLOCAL           := ./node_modules/.bin/cdklocal
TOOLS_VENV         := .tools/venv
CFN_LINT           := $(TOOLS_VENV)/bin/cfn-lint
# W3005 (DependsOn already implied by GetAtt): CDK itself adds DependsOn on
# every Lambda's role and policy, so it is noise in a synthesized template.
CFN_LINT_FLAGS     ?= --ignore-checks W3005
INFRA_NPM_STAMP    := infra/node_modules/.orderly-infra.stamp
CFN_LINT_STAMP     := $(TOOLS_VENV)/.orderly-cfnlint.stamp
SHA256             := $(shell command -v sha256sum >/dev/null 2>&1 && echo sha256sum || echo 'shasum -a 256')
# synth needs no AWS account: default the region only if none is set, and
# never wait on the EC2 metadata service while looking for credentials.
SYNTH_ENV          := AWS_REGION="$${AWS_REGION:-$${AWS_DEFAULT_REGION:-us-east-1}}" \
                      CDK_DEFAULT_REGION="$${CDK_DEFAULT_REGION:-$${AWS_REGION:-$${AWS_DEFAULT_REGION:-us-east-1}}}" \
                      AWS_EC2_METADATA_DISABLED="$${AWS_EC2_METADATA_DISABLED:-true}"

.PHONY: node
node: ## install Node 22 for the CDK into .tools/node when the machine's node is missing or older (idempotent)
	@bash localstack/node.sh install

.PHONY: infra-tools
infra-tools: node ## install the pinned CDK CLI, cdklocal and cfn-lint (idempotent)
	@export $(CDK_PATH); \
	want="$$( { cat infra/package.json infra/package-lock.json; node --version; } | $(SHA256) | cut -d' ' -f1 )"; \
	if [[ -x infra/$(CDK) && -x infra/$(CDKLOCAL) && "$$(cat $(INFRA_NPM_STAMP) 2>/dev/null)" == "$$want" ]]; then \
		echo "[infra] CDK CLI and cdklocal up to date (infra/node_modules, Node $$(node --version))"; \
	else \
		echo "[infra] installing the CDK CLI and cdklocal with npm ci (pinned by infra/package-lock.json), for Node $$(node --version)"; \
		(cd infra && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) && \
		printf '%s\n' "$$want" > $(INFRA_NPM_STAMP); \
	fi
	@# The CLI ships Go template files; a go.mod makes node_modules a module
	@# of its own, which ./... patterns skip.
	@if [[ ! -f infra/node_modules/go.mod ]]; then printf 'module ignored\n' > infra/node_modules/go.mod; \
	fi
	@bash $(EMULATORS) install
	@want="$$( { cat infra/requirements.txt infra/constraints.txt localstack/constraints.txt; \
		$(TOOLS_VENV)/bin/python -c 'import sys; print(sys.version)'; } | $(SHA256) | cut -d' ' -f1 )"; \
	if [[ -x $(CFN_LINT) && "$$(cat $(CFN_LINT_STAMP) 2>/dev/null)" == "$$want" ]]; then \
		echo "[infra] cfn-lint up to date ($(TOOLS_VENV))"; \
	else \
		echo "[infra] installing cfn-lint into $(TOOLS_VENV) (pinned by infra/requirements.txt + constraints.txt)"; \
		$(TOOLS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
			-r infra/requirements.txt -c localstack/constraints.txt -c infra/constraints.txt || { \
			echo "error: infra/constraints.txt and localstack/constraints.txt disagree; both are installed into $(TOOLS_VENV)" >&2; exit 1; }; \
		$(TOOLS_VENV)/bin/python -m pip check --disable-pip-version-check && \
		printf '%s\n' "$$want" > $(CFN_LINT_STAMP); \
	fi

.PHONY: synth
synth: build infra-tools ## synthesize the CDK app into infra/cdk.out (no AWS account needed)
	rm -rf infra/cdk.out
	cd infra && $(CDK_PATH) $(SYNTH_ENV) $(CDK) synth --quiet $(CONTEXT)

.PHONY: cfn-lint
cfn-lint: synth ## lint the synthesized CloudFormation templates with cfn-lint
	$(CFN_LINT) $(CFN_LINT_FLAGS) -- infra/cdk.out/*.template.json

.PHONY: deploy
deploy: build infra-tools ## deploy to the configured AWS account (asks before IAM/security changes)
	cd infra && $(CDK_PATH) $(CDK) deploy $(STACKS) --require-approval $(REQUIRE_APPROVAL) $(CONTEXT)

.PHONY: destroy
destroy: build infra-tools ## delete the deployed stack (tables are retained)
	cd infra && $(CDK_PATH) $(CDK) destroy $(STACKS) --force $(CONTEXT)

# ------------------------------------------------------------- LocalStack ---
# LocalStack runs as a host process (no Docker; localstack/localstack.sh),
# and so do the deployed Lambdas: orderly's executor plugin
# (localstack/executor) runs each bootstrap, built for this host, on
# LocalStack's behalf. The agents call the simulator on SIMULATOR_ADDR.
LOCALSTACK         := localstack/localstack.sh
SIMULATOR          := localstack/simulator.sh
HOST_BIN           := .local/lambda-host
LOCAL_STAGE        ?= local
SIMULATOR_ADDR     ?= 127.0.0.1:8091
LOCAL_OUTPUTS      := .local/localstack-outputs.json
# LocalStack's API Gateway passes no caller identity: the stack names one.
# Every service is the simulator (cdk.json's services are dropped); the
# checkout example's fraud service takes an Authorization header, whose
# value deploy-local puts in LocalStack's Secrets Manager and gives the
# simulator to check (a fresh one per deploy, never printed). The API's
# own URL names a host that does not resolve, so services that call back
# (the simulator, on this host) are told its path form on LocalStack.
LOCAL_FRAUD_SECRET := orderly-$(LOCAL_STAGE)/fraud-token
LOCAL_SERVICES     := {"fraud":{"url":"http://$(SIMULATOR_ADDR)","auth":{"type":"header","header":"Authorization","secret":"$(LOCAL_FRAUD_SECRET)"}}}
LOCAL_CONTEXT      := -c stage=$(LOCAL_STAGE) -c assetsDir=../$(HOST_BIN) -c 'services=$(LOCAL_SERVICES)' \
                      -c remoteUrl=http://$(SIMULATOR_ADDR) -c anonymousCaller=LOCALSTACK \
                      -c workflowsDir=../workflows,../examples/workflows \
                      -c 'callbackUrl=http://127.0.0.1:4566/_aws/execute-api/{apiId}/{stage}/callbacks'
# cdklocal would use localhost.localstack.cloud, a name that needs public
# DNS; the emulators' variables would point it at moto.
LOCAL_ENV          := env -u AWS_ENDPOINT_URL_DYNAMODB -u AWS_ENDPOINT_URL_DYNAMODB_STREAMS -u AWS_ENDPOINT_URL_SQS \
                      AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_ENDPOINT_URL_S3=http://127.0.0.1:4566 \
                      AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1

.PHONY: build-host
build-host: ## build the Lambda functions for this host, for LocalStack's host executor: .local/lambda-host/<function>/bootstrap; EXAMPLES=1 embeds the examples too
	@for f in $(FUNCTIONS); do \
		CGO_ENABLED=0 GOOS=linux go build -tags '$(FUNCTION_TAGS)' -trimpath -ldflags='-s -w' \
			-o $(HOST_BIN)/$$f/bootstrap ./functions/$$f || exit 1; \
	done

.PHONY: localstack
localstack: ## start LocalStack on 127.0.0.1:4566 as a host process (no Docker, no auth token)
	bash $(LOCALSTACK) start

.PHONY: localstack-stop
localstack-stop: ## stop LocalStack (its state is not kept)
	bash $(LOCALSTACK) stop

# The LocalStack stage runs the checkout and fulfilment examples
# (LOCAL_CONTEXT's workflowsDir): its functions are built with them.
deploy-local destroy-local: EXAMPLES := 1

.PHONY: deploy-local
deploy-local: build-host infra-tools localstack ## deploy the stack to LocalStack (stage local), with the simulator for its agents
	@export ORDERLY_SECRET_VALUE="Bearer local-$$(head -c 18 /dev/urandom | base64 | tr -d '/+=')"; \
	$(LOCAL_ENV) $(TOOLS_VENV)/bin/python localstack/secret.py $(LOCAL_FRAUD_SECRET) && \
	{ bash $(SIMULATOR) stop >/dev/null 2>&1 || true; } && \
	ORDERLY_SIM_REQUIRE_HEADER='fraud=Authorization=$$ORDERLY_SECRET_VALUE' bash $(SIMULATOR) start
	cd infra && $(CDK_PATH) $(LOCAL_ENV) $(CDKLOCAL) bootstrap $(LOCAL_CONTEXT) $(CONTEXT)
	cd infra && $(CDK_PATH) $(LOCAL_ENV) $(CDKLOCAL) deploy $(STACKS) --require-approval never \
		--outputs-file ../$(LOCAL_OUTPUTS) $(LOCAL_CONTEXT) $(CONTEXT)

.PHONY: destroy-local
destroy-local: build-host infra-tools ## delete the stack from LocalStack, then stop LocalStack and the simulator
	@if curl -fsS -o /dev/null -m 2 http://127.0.0.1:4566/_localstack/health 2>/dev/null; then \
		cd infra && $(CDK_PATH) $(LOCAL_ENV) $(CDKLOCAL) destroy $(STACKS) --force $(LOCAL_CONTEXT) $(CONTEXT); \
	else \
		echo "[localstack] not running: nothing to destroy"; \
	fi
	bash $(SIMULATOR) stop
	bash $(LOCALSTACK) stop

# The end-to-end tests deploy with an 8 s allowance and no heartbeats, so a
# hung call (given up after STEP_TRY_TIMEOUT, 10 s) outlasts its attempt and
# the Supervisor's schedule retries it. The simulated services call back
# after 6 s, so that the agent's reply (the call accepted) is written
# first and the order's history shows each wait for a callback (on a busy
# machine the reply has been seen to take 2.6 s).
E2E_CONTEXT        := -c stepAllowance=8s -c maxHeartbeats=0
E2E_CALLBACK_DELAY := 6s

.PHONY: test-localstack
test-localstack: tools ## deploy to LocalStack, run the end-to-end tests through its API Gateway, tear it all down
	@status=0; \
	ORDERLY_SIM_CALLBACK_DELAY=$(E2E_CALLBACK_DELAY) $(MAKE) --no-print-directory deploy-local CONTEXT="$(E2E_CONTEXT) $(CONTEXT)" && \
	$(LOCAL_ENV) ORDERLY_LOCALSTACK_OUTPUTS="$$PWD/$(LOCAL_OUTPUTS)" go test -count=1 -v -timeout 15m ./e2e || status=$$?; \
	$(MAKE) --no-print-directory destroy-local || true; \
	exit $$status
