# Pet store: everyday tasks. `make` alone lists them.
#
#   make run     the whole API on http://127.0.0.1:$(PORT), on DynamoDB Local
#   make test    what CI runs: format, lints, every test
#   make key     an API key for `make run` (ARGS="--plan pro" ...)

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:
MAKEFLAGS += --no-print-directory

PORT ?= 3000
DYNAMODB_PORT ?= 8000
LAMBDA_ARCH ?= --arm64
export DYNAMODB_PORT

DYNAMODB := scripts/dynamodb-local.sh
VENV := .venv
CARGO_LAMBDA := $(VENV)/bin/cargo-lambda
CARGO_LAMBDA_VERSION := 1.9.2

# What the service and the admin tool need to reach DynamoDB Local. The dummy
# credentials are letters only: DynamoDB Local rejects some other characters.
LOCAL_AWS := AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$(DYNAMODB_PORT) \
	AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1

.PHONY: help run test key build bench dynamodb-install dynamodb-start dynamodb-stop

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) \
		| awk 'BEGIN {FS = ":.*## "}; {printf "  make %-18s %s\n", $$1, $$2}'
	@echo
	@echo "  Variables: PORT=$(PORT) DYNAMODB_PORT=$(DYNAMODB_PORT) ARGS=..."

run: dynamodb-install ## Serve the API locally on PORT (3000) with DynamoDB Local on DYNAMODB_PORT (8000); Ctrl-C stops both
	@trap '$(DYNAMODB) stop' EXIT; trap 'exit 130' INT TERM; \
	$(DYNAMODB) start; \
	$(LOCAL_AWS) PORT=$(PORT) cargo run --release -p petstore-local

test: ## What CI runs: rustfmt check, clippy (warnings are errors), all tests on DynamoDB Local
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(DYNAMODB) install
	cargo test --workspace

key: ## Create an API key on the running local stack (make key ARGS="--plan pro")
	$(LOCAL_AWS) cargo run -q -p petstore-admin -- keys create $(ARGS)

build: $(CARGO_LAMBDA) ## Build both functions for Lambda (cargo lambda build --release --arm64)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" cargo lambda build --release $(LAMBDA_ARCH) -p pets -p store

bench: ## Load test (not written yet)
	@echo "make bench: not written yet" >&2; exit 1

dynamodb-install: ## Download DynamoDB Local into .local/dynamodb (once)
	@$(DYNAMODB) install

dynamodb-start: dynamodb-install ## Start DynamoDB Local in the background on DYNAMODB_PORT
	@$(DYNAMODB) start

dynamodb-stop: ## Stop the DynamoDB Local that dynamodb-start started
	@$(DYNAMODB) stop

$(CARGO_LAMBDA):
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check cargo-lambda==$(CARGO_LAMBDA_VERSION)
