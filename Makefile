# Pet store: everyday tasks. `make` alone lists them.
#
#   make run     the whole API on http://127.0.0.1:$(PORT), on DynamoDB Local
#   make run-lambda  the same through the real function binaries (cargo lambda watch)
#   make invoke  a sample event to its function on the run-lambda stack (EVENT=events/...)
#   make test    what CI runs: format, lints, every test
#   make test-rust  every Rust test target, all run even when one fails (the inner loop)
#   make key     an API key for `make run` (ARGS="--plan pro --role staff" ...)

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:
MAKEFLAGS += --no-print-directory

# The lab (lab/: `make bench`, its tools and their checks) brings its own
# targets and what `make test` runs of it (LAB_CHECKS); a fork that deletes
# lab/ loses those and nothing else (lab/README.md, "Dropping the lab").
LAB_CHECKS :=
LAB_MANIFESTS :=
-include lab/lab.mk

PORT ?= 3000
DYNAMODB_PORT ?= 8000
LAMBDA_ARCH ?= --arm64
# make run-lambda: at most this many instances of each function.
CONCURRENCY ?= 4
# make run, make run-lambda: the origins whose pages may call the API from a
# browser, comma-separated (ALLOWED_ORIGINS=http://localhost:5173); empty, the
# default: no CORS, as a stack deployed with AllowedOrigins empty.
ALLOWED_ORIGINS ?=
export DYNAMODB_PORT

DYNAMODB := scripts/dynamodb-local.sh
VENV := .venv
# The Python tools (cargo-lambda, cfn-lint, sam, schemathesis), pinned in
# requirements-dev.txt, and the project's own Python (tools/gates, installed
# editable: its commands are .venv/bin/petstore-*); reinstalled when either
# file changes.
VENV_STAMP := $(VENV)/.requirements-dev.installed
GATES := tools/gates

# Where `make test` records every AWS call the functions make, for `make
# iam-check` (shared/src/aws_calls.rs; absolute: the tests run in tests/).
AWS_CALLS := $(CURDIR)/.local/aws-calls
RECORD_AWS_CALLS := PETSTORE_AWS_CALLS=$(AWS_CALLS)

# What the service and the admin tool need to reach DynamoDB Local. The dummy
# credentials are letters and digits only, which DynamoDB Local requires.
LOCAL_AWS := AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$(DYNAMODB_PORT) \
	AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1

.PHONY: help run run-lambda invoke test-run-lambda test iam-check key build test-without-lab check-docs dynamodb-install dynamodb-start dynamodb-stop dynamodb-status check-circles venv lint-template lint-openapi conformance clients docs-browser cors-browser lint-asyncapi deploy-rehearsal
.PHONY: test-rust test-lint-rust test-served-stacks test-gates contract-check layout-check contract-release release-check deploy-role-check lint-workflows restore-rehearsal front-rehearsal upgrade-rehearsal

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) \
		| awk 'BEGIN {FS = ":.*## "}; {printf "  make %-18s %s\n", $$1, $$2}'
	@echo
	@echo "  Variables: PORT=$(PORT) DYNAMODB_PORT=$(DYNAMODB_PORT) ALLOWED_ORIGINS=$(ALLOWED_ORIGINS) ARGS=..."

# The stop trap is set only once `start` has succeeded: a start refused because
# the port is taken must not stop the DynamoDB Local that holds it.
run: dynamodb-install ## Serve the API locally on PORT (3000) with DynamoDB Local on DYNAMODB_PORT (8000); Ctrl-C stops both
	@trap 'exit 130' INT TERM; \
	$(DYNAMODB) start; \
	trap '$(DYNAMODB) stop' EXIT; \
	$(LOCAL_AWS) WEBHOOKS_ALLOW_LOOPBACK=1 PORT=$(PORT) ALLOWED_ORIGINS='$(ALLOWED_ORIGINS)' cargo run --bin petstore-local

run-lambda: venv dynamodb-install ## Serve the API on PORT through the function binaries (cargo lambda watch, up to CONCURRENCY=4 instances each) on DynamoDB Local; Ctrl-C stops what it started
	@PORT=$(PORT) CONCURRENCY=$(CONCURRENCY) ALLOWED_ORIGINS='$(ALLOWED_ORIGINS)' scripts/run-lambda.sh

invoke: venv ## Send a sample event to its function on the running run-lambda stack (make invoke EVENT=events/pets-list.json)
	@PORT=$(PORT) scripts/invoke-event.sh $(EVENT)

test-run-lambda: venv dynamodb-install ## Check run-lambda: the sample events and tests/lambda.rs through several instances of each function, then Ctrl-C
	scripts/test-run-lambda.sh

test: ## What CI runs: rustfmt, clippy (warnings are errors), every test on DynamoDB Local, every AWS call they make checked against the deployed IAM policies, the gate on breaking contract changes, the workflow lints and the deploy roles' trust, the template and OpenAPI lints, the deploy rehearsal in moto, the conformance run, the generated clients, the real function binaries behind cargo lambda watch, /docs and CORS in a headless browser
	cargo fmt --all -- --check
	@mkdir -p .local
	$(MAKE) --no-print-directory -j4 --output-sync=target test-lint-rust venv node_modules/.package-lock.json dynamodb-install
	$(RECORD_AWS_CALLS) scripts/iam-check.sh --begin
	$(RECORD_AWS_CALLS) cargo test --workspace -- --test-threads=$(TEST_THREADS) 2>&1 | tee .local/cargo-test.log
	$(RECORD_AWS_CALLS) scripts/test-local-stacks.sh
	$(RECORD_AWS_CALLS) $(MAKE) test-run-lambda
	$(RECORD_AWS_CALLS) scripts/iam-check.sh --end
	$(MAKE) --no-print-directory -j3 --output-sync=target test-gates iam-check contract-check layout-check lint-workflows deploy-role-check lint-template deploy-rehearsal restore-rehearsal front-rehearsal upgrade-rehearsal lint-openapi lint-asyncapi check-docs test-served-stacks test-without-lab $(LAB_CHECKS)
	@scripts/test-summary.sh .local/cargo-test.log

# The checks that serve a local stack to a client (schemathesis, the generated
# clients, two headless browsers), one after the other, as one job beside
# make test's other checks: they mostly wait on their stacks, and two cores
# ran the two groups one after the other in 195 s and 224 s.
test-served-stacks:
	$(MAKE) --no-print-directory -j1 conformance clients docs-browser cors-browser

# The same cargo invocation as `make test`'s (the workspace's features), so
# the two share one build; `cargo test -p petstore-tests --test api` resolves
# features for that package alone and recompiles much of the workspace.
# --no-fail-fast: every test target runs, and the summary lists each failure.
# The integration tests mostly wait on DynamoDB Local, so more of them run at
# once than the machine has cores (libtest's default): the API binary took
# 180 s at 2, 127 to 180 s at 6, on two cores loaded by other builds.
TEST_THREADS ?= 6
test-rust: dynamodb-install ## Every Rust test target (unit, integration, doc), not stopping at the first failing one, on make test's build; ARGS=pets:: filters by test name
	cargo test --workspace --no-fail-fast -- --test-threads=$(TEST_THREADS) $(ARGS)

# The Python and npm tools download while clippy compiles (two minutes each
# on a fresh clone, most of it waiting on the registries).
test-lint-rust:
	cargo clippy --workspace --all-targets -- -D warnings
	$(MAKE) --no-print-directory check-circles

# A recording exists after `make test` (or a first `make iam-check`), stamped
# with the code and tests it was made from: while they are unchanged, a
# policy edit is checked in seconds; once they change, the check records
# afresh (scripts/iam-check.sh), so it judges the tree as it is.
iam-check: venv dynamodb-install node_modules/.package-lock.json ## Check every AWS call the tests recorded (.local/aws-calls; recorded afresh, running the tests, when missing or when the code or tests changed since) against each function's deployed IAM policy, and that the check catches a removed action or index
	scripts/iam-check.sh

key: ## Create an API key on the running local stack (make key ARGS="--plan pro --role staff")
	$(LOCAL_AWS) cargo run -q --bin petstore-admin -- keys create $(ARGS)

build: venv ## Build the functions for Lambda: target/lambda/{pets,store,events,docs}/bootstrap.zip (release, arm64)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" cargo lambda build --release $(LAMBDA_ARCH) --output-format zip -p pets -p store -p events -p docs
	@ls -l target/lambda/pets/bootstrap.zip target/lambda/store/bootstrap.zip target/lambda/events/bootstrap.zip target/lambda/docs/bootstrap.zip

lint-template: venv ## Lint template.yaml offline (cfn-lint, sam validate --lint, the dashboard's JSON)
	scripts/lint-template.sh

# One moto server, two stacks side by side: a dev stage at the defaults (no
# reservations, no domain) and a prod stage with the shield's suggested
# reservations and a custom domain, so both branches of their conditions are
# created; then checked to share nothing (gates.deploy_rehearsal, STAGES).
# moto checks no permission: gates.deploy_permissions_rehearsal evaluates
# with the IAM simulator what creating each stage needs of its roles.
deploy-rehearsal: venv node_modules/.package-lock.json ## Create template.yaml's dev and prod stacks side by side offline in moto's CloudFormation and check them (outputs, tables, functions, aliases and releases, stream, routes, domain; nothing shared); what moto cannot create is named; then every resource operation of each stage (samconfig.toml's stack and parameters, prod with the front too) simulated against its execution and deploy roles
	$(VENV)/bin/petstore-deploy-rehearsal
	$(VENV)/bin/petstore-deploy-permissions-rehearsal

# The restore runbook's steps on the deploy rehearsal's stack, with the
# operator's own commands (docs/restore.md, "The rehearsal").
restore-rehearsal: venv ## Rehearse restoring the data table in moto: write, back up, damage, restore (backup and point in time), check, point the stack at it
	cargo build --bin petstore-admin
	$(VENV)/bin/petstore-restore-rehearsal

# docs/upgrade.md, "The rehearsal": the last release's stack and data, taken
# to this release's layout while shoppers shop; without the backfills the
# same walk must fail.
upgrade-rehearsal: venv ## Rehearse upgrading the last release's stack and data to this release in moto: migration 0001 walked while shoppers place, cancel and complete orders; data check sound, lists complete, no 5xx; and the same without the backfills fails
	cargo build --bin petstore-admin --bin petstore-local
	$(VENV)/bin/petstore-upgrade-rehearsal
	$(VENV)/bin/petstore-upgrade-rehearsal --skip-backfills --expect-failure
	$(VENV)/bin/petstore-rebuild-rehearsal

front-rehearsal: venv ## Create the stack with the optional CloudFront+WAF front in moto (us-east-1, another region, a domain) and check the front; about a minute
	$(VENV)/bin/petstore-front-rehearsal

lint-openapi: node_modules/.package-lock.json ## Lint openapi.yaml with Spectral (spectral:oas, every rule)
	npx --no-install spectral lint openapi.yaml --fail-severity=warn

# The AsyncAPI CLI's usage metrics are off (a config file of our own): lints stay offline.
lint-asyncapi: node_modules/.package-lock.json ## Lint asyncapi.yaml (the domain events) with the AsyncAPI CLI
	@mkdir -p .local
	@echo '{"analyticsEnabled":"false","infoMessageShown":"true","userID":"offline"}' > .local/asyncapi-analytics.json
	ASYNCAPI_METRICS_CONFIG_PATH=.local/asyncapi-analytics.json npx --no-install asyncapi validate asyncapi.yaml --fail-severity=warn

node_modules/.package-lock.json: package-lock.json
	npm ci --no-audit --no-fund

conformance: venv dynamodb-install ## Run schemathesis against the local stack (openapi.yaml vs the service)
	scripts/conformance.sh

clients: venv dynamodb-install node_modules/.package-lock.json ## Generate Python and TypeScript clients from openapi.yaml (.local/clients), type-check the TypeScript flow, run the Python flow on the local stack
	scripts/clients.sh

docs-browser: venv dynamodb-install node_modules/.package-lock.json ## Open /docs on a local stack in headless chromium (installed with apt when missing): every operation listed, GET /pets tried; screenshot in .local/docs-browser.png
	scripts/docs-browser.sh

cors-browser: venv dynamodb-install node_modules/.package-lock.json ## Call the API from pages on two other origins in headless chromium: the one ALLOWED_ORIGINS lists may (and reads the rate-limit headers), the other is blocked
	scripts/cors-browser.sh

# The release pipeline (docs/releases.md).
contract-check: venv node_modules/.package-lock.json ## Fail on a change to openapi.yaml or asyncapi.yaml that breaks a client, against the last released contract (contract/released/); then the gate's own fixtures
	$(VENV)/bin/petstore-contract-gate
	$(VENV)/bin/pytest -q $(GATES) -m contract_check

# docs/upgrade.md: what a release may change in the stored layout.
layout-check: venv ## Fail on a change to the stored layout (the tables, their keys, indexes, stream, TTL, policies) that CloudFormation cannot apply over the last release in one update, unless a migration in migrations/ carries it; then the gate's own fixtures, and the dev job's index rebuild planned on the standard library alone (python3 -S, no site-packages)
	$(VENV)/bin/petstore-layout-check
	$(VENV)/bin/pytest -q $(GATES) -m layout_check

contract-release: venv ## Move the released-contract baseline (contract/released/) to the documents, once CHANGELOG.md has the version's heading
	$(VENV)/bin/petstore-contract-gate --move-baseline

release-check: venv node_modules/.package-lock.json ## What a version tag's run checks first (make release-check TAG=v1.1.0): the gate, the tag is the documents' version, CHANGELOG.md has it, the baseline moved
	$(VENV)/bin/petstore-contract-gate --release "$(TAG)"

deploy-role-check: venv node_modules/.package-lock.json ## Prove the pipeline's deploy roles with the IAM simulator: main and v tags admitted, pull requests, forks, other repositories denied; each role confined to its stage; a loosened role fails it
	$(VENV)/bin/petstore-deploy-role-check

lint-workflows: venv ## Lint .github/workflows offline (check-jsonschema, zizmor, nothing built where an OIDC token may be asked for, prod only in its environment from main), show a broken workflow fails it; test the build artifacts (written once, digests checked)
	scripts/lint-workflows.sh

venv: $(VENV_STAMP) ## Install the pinned Python tools and the project's own (tools/gates, editable) into .venv (requirements-dev.txt)

# The project's Python held to the Rust side's standards: ruff (lints, import
# order), mypy (types), import-linter (the package's layers: no circle, the
# deploy jobs' tools on the standard library), then the pytest tests no other
# target runs (the gates' own fixtures run with their gates: contract-check,
# layout-check, lint-workflows, iam-check).
test-gates: venv ## Lint, type-check and test the project's Python (tools/gates): ruff, mypy, lint-imports, pytest
	cd $(GATES) && $(CURDIR)/$(VENV)/bin/ruff check
	cd $(GATES) && $(CURDIR)/$(VENV)/bin/mypy
	cd $(GATES) && $(CURDIR)/$(VENV)/bin/lint-imports
	$(VENV)/bin/pytest -q $(GATES) -m "not (contract_check or layout_check or lint_workflows or recording)"

test-without-lab: ## Show that a fork which deletes lab/ keeps the service's build and checks (the tree copied without it)
	scripts/test-without-lab.sh

check-docs: node_modules/.package-lock.json ## Check the docs offline: every relative link and #anchor resolves, every make command shown is a target, every pointer from the code names a heading that exists, the layouts list every folder and function
	scripts/check-docs.sh

# The lab's workspaces (lab.mk's LAB_MANIFESTS) are checked too.
check-circles: ## Fail on a module circle (two files of a crate that import each other, directly or around a ring) or an import up the layers shared/src/lib.rs declares (tools/circles)
	cargo run -q -p petstore-circles -- Cargo.toml $(LAB_MANIFESTS)

dynamodb-install: ## Download DynamoDB Local into .local/dynamodb (once)
	@$(DYNAMODB) install

dynamodb-start: dynamodb-install ## Start DynamoDB Local in the background on DYNAMODB_PORT
	@$(DYNAMODB) start

dynamodb-stop: ## Stop the DynamoDB Local that dynamodb-start started on DYNAMODB_PORT (nothing else)
	@$(DYNAMODB) stop

dynamodb-status: ## Which DynamoDB Locals started by dynamodb-start or run are running, per port
	@$(DYNAMODB) status --all

$(VENV_STAMP): requirements-dev.txt $(GATES)/pyproject.toml
	test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@
