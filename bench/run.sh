#!/usr/bin/env bash
# `make bench`: builds what it measures, then measures. Reports, never fails on
# a figure. See bench/README.md for what each step measures and the knobs.
#
#   BENCH_SECONDS=10 BENCH_CONCURRENCY=16 BENCH_COLD_SPAWNS=30   the defaults
#   BENCH_ZIP=0        skip the arm64 zip build (3-7 min when not up to date)
#   BENCH_OVERHEAD=0   skip the criterion in-process bench
#   BENCH_OHA=0        skip installing/running oha
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${CARGO_TARGET_DIR:-$ROOT/target}/bench"
mkdir -p "$OUT"
log() { echo "bench: $*" >&2; }

# oha, project-local: the warm runs' cross-check.
OHA="$ROOT/.local/bin/oha"
if [[ "${BENCH_OHA:-1}" != 0 && ! -x "$OHA" ]]; then
  log "installing oha into .local/bin (once)"
  cargo install --quiet --locked oha --root "$ROOT/.local" || log "oha did not install; the oha cross-check is skipped"
fi
[[ "${BENCH_OHA:-1}" == 0 ]] && export BENCH_OHA=/nonexistent

scripts/dynamodb-local.sh install

log "building release binaries for this host"
cargo build --release -p pets -p store -p petstore-local -p petstore-bench

# The arm64 zips, as deployed. cargo-lambda is the SAM build's (.venv), shared.
if [[ "${BENCH_ZIP:-1}" != 0 ]]; then
  if [[ ! -x .venv/bin/cargo-lambda ]]; then
    make --no-print-directory .venv/bin/cargo-lambda || log "cargo-lambda did not install; sizes are skipped"
  fi
  if [[ -x .venv/bin/cargo-lambda ]]; then
    log "building arm64 zips (cargo lambda build --release --arm64 --output-format zip)"
    PATH="$ROOT/.venv/bin:$PATH" cargo lambda build --release --arm64 --output-format zip -p pets -p store -p events \
      || log "cargo lambda build failed; sizes are skipped"
  fi
fi

if [[ "${BENCH_OVERHEAD:-1}" != 0 ]]; then
  log "in-process router + wrapper overhead (criterion)"
  rm -f "$OUT/overhead.json"
  cargo bench -p petstore-bench --bench overhead -- --noplot 2> >(grep -v '^Gnuplot not found' >&2) \
    || log "the overhead bench failed; its figures are missing"
fi

exec "${CARGO_TARGET_DIR:-$ROOT/target}/release/petstore-bench"
