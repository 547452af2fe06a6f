# The lab's targets, included by the Makefile while lab/ exists.

# What `make test` runs of the lab, beside the service's checks, and the
# lab's workspaces for `make check-circles`.
LAB_CHECKS := test-lab
LAB_MANIFESTS := lab/Cargo.toml lab/coldstart/floor/Cargo.toml

.PHONY: bench bench-report test-lab

bench: dynamodb-install ## Measure cold start, warm latency, DynamoDB calls and cost, overhead, zip size (target/bench/*.json), then write docs/performance.md
	bash lab/bench/run.sh

bench-report: ## Write docs/performance.md again from the last make bench run's files (target/bench/*.json)
	python3 lab/bench/report.py target/bench

# Its own workspace, so the service's fmt, clippy and tests never reach it:
# checked here to the same bar, into the same target directory
# (lab/.cargo/config.toml). The floor builds in make bench alone.
test-lab: dynamodb-install ## The lab's own checks (lab/): rustfmt, clippy with warnings as errors, its tests
	cd lab && cargo fmt --all -- --check
	cd lab && cargo clippy --workspace --all-targets -- -D warnings
	cd lab && cargo test --workspace
