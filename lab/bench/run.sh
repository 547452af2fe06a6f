#!/usr/bin/env bash
# `make bench`: builds what it measures, then measures. Reports, never fails on
# a figure. See lab/bench/README.md for what each step measures and the knobs.
#
#   BENCH_SECONDS=10 BENCH_CONCURRENCY=16 BENCH_COLD_SPAWNS=30   the defaults
#   BENCH_ZIP=0        skip the arm64 zip build (3-7 min when not up to date)
#   BENCH_OVERHEAD=0   skip the criterion in-process bench
#   BENCH_OHA=0        skip installing/running oha
#   BENCH_ONLY=partitions   the partition model (lab/partitions) alone
#   BENCH_COLDSTART=0  skip the cold starts (lab/coldstart: Lambda-like, knobs
#                      COLDSTART_SPAWNS=32 COLDSTART_MEMORY=128,256,512,1024; then
#                      at full CPU, BENCH_COLD_SPAWNS=30, a file the runner reads;
#                      COLDSTART_FULL_CPU=0 skips that second run)
#   BENCH_ONLY=coldstart  the cold starts alone
#   BENCH_ONLY=cost    the call counts, units, log bytes, the webhook
#                      deliveries and the cost model alone (no load runs,
#                      cold starts or abuse; the cold starts of an earlier
#                      run are read if there)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
# The lab's own crates (lab/Cargo.toml, a workspace of their own), built into
# the service's target directory beside the service's binaries.
lab_cargo() {
  local command=$1
  shift
  CARGO_TARGET_DIR="$TARGET" cargo "$command" --manifest-path lab/Cargo.toml "$@"
}
OUT="$TARGET/bench"
mkdir -p "$OUT"
log() { echo "bench: $*" >&2; }

scripts/dynamodb-local.sh install

# Debug builds: they only send requests. petstore-admin issues the keys.
log "building petstore-admin and the partition model (lab/partitions)"
cargo build -p petstore-admin
lab_cargo build -p petstore-partitions

if [[ "${BENCH_ONLY:-}" == partitions ]]; then
  [[ -n "${BENCH_PARTITION_SERVICE:-}" ]] || cargo build --release -p petstore-local
  exec "$TARGET/debug/petstore-partitions"
fi

if [[ "${BENCH_ONLY:-}" == cost ]]; then
  cargo build --release -p petstore-local
  lab_cargo build --release -p petstore-bench
  exec "$TARGET/release/petstore-bench"
fi

# What the run measures, for the generated page (lab/bench/report.py).
# The files of an older run are removed, so the page never mixes two runs.
rm -f "$OUT"/{run,results,coldstart,cold-start-full-cpu,overhead,partitions,partitions-top}.json
STARTED_AT=$(date -u +%Y-%m-%dT%H:%M:%SZ)
COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
DIRTY=false
[[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]] && DIRTY=true
run_info() {
  printf '{"commit": "%s", "dirty": %s, "started_at": "%s", "finished_at": "%s"}\n' \
    "$COMMIT" "$DIRTY" "$STARTED_AT" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$OUT/run.json"
}

# oha, project-local: the warm runs' cross-check.
OHA="$ROOT/.local/bin/oha"
if [[ "${BENCH_OHA:-1}" != 0 && ! -x "$OHA" ]]; then
  log "installing oha into .local/bin (once)"
  cargo install --quiet --locked oha --root "$ROOT/.local" || log "oha did not install; the oha cross-check is skipped"
fi
[[ "${BENCH_OHA:-1}" == 0 ]] && export BENCH_OHA=/nonexistent

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
# The functions alone, as `cargo lambda build -p pets -p store -p events -p webhooks` builds
# them (the lab's crates are another workspace: their features never join).
log "building the functions' release bootstraps for this host"
cargo build --release -p pets -p store -p events -p webhooks
log "building the bench's own release binaries"
cargo build --release -p petstore-local
lab_cargo build --release -p petstore-bench -p petstore-coldstart

if [[ "${BENCH_COLDSTART:-1}" != 0 ]]; then
  # The floor, in its own workspace, with the pet store's [profile.release].
  log "building the floor function (lab/coldstart/floor)"
  mapfile -t FLOOR_PROFILE < <(python3 - <<'EOF'
import json, tomllib
with open("Cargo.toml", "rb") as manifest:
    release = tomllib.load(manifest)["profile"]["release"]
for key, value in release.items():
    # Per-package overrides name the pet store's crates, not the floor's.
    if key == "package":
        continue
    print(f"--config=profile.release.{key}={json.dumps(value)}")
EOF
  )
  CARGO_TARGET_DIR="$TARGET" cargo build --release --locked \
    --manifest-path lab/coldstart/floor/Cargo.toml "${FLOOR_PROFILE[@]}"
  log "cold start as Lambda runs it, then at full CPU (lab/coldstart)"
  rm -f "$OUT/cold-start-full-cpu.json"
  "$TARGET/release/petstore-coldstart" || log "the cold start failed; its figures are missing"
fi
[[ "${BENCH_ONLY:-}" == coldstart ]] && { run_info; exit 0; }

# The arm64 zips, as deployed. cargo-lambda is the SAM build's (.venv), shared.
if [[ "${BENCH_ZIP:-1}" != 0 ]]; then
  if [[ ! -x .venv/bin/cargo-lambda ]]; then
    make --no-print-directory venv || log "cargo-lambda did not install (make venv failed); sizes are skipped"
  fi
  if [[ -x .venv/bin/cargo-lambda ]]; then
    log "building arm64 zips (cargo lambda build --release --arm64 --output-format zip)"
    PATH="$ROOT/.venv/bin:$PATH" cargo lambda build --release --arm64 --output-format zip -p pets -p store -p events -p webhooks \
      || log "cargo lambda build failed; sizes are skipped"
  fi
fi

if [[ "${BENCH_OVERHEAD:-1}" != 0 ]]; then
  log "in-process router + wrapper overhead (criterion)"
  rm -f "$OUT/overhead.json"
  lab_cargo bench -p petstore-bench --bench overhead -- --noplot 2> >(grep -v '^Gnuplot not found' >&2) \
    || log "the overhead bench failed; its figures are missing"
fi

# The partition model: its own DynamoDB Local and petstore-local. The runner
# carries what it writes into results.json and the table (so its own print
# of its section is not shown twice).
rm -f "$OUT/partitions.json" "$OUT/partitions.txt"
"$TARGET/debug/petstore-partitions" >/dev/null || log "the partition model failed; its figures are missing"
# Again at the highest OrderRate the parameter allows (`top`: the model reads
# it from template.yaml): what the knob turned all the way up holds (the
# webhooks' first limit is a target there).
rm -f "$OUT/partitions-top.json" "$OUT/partitions-top.txt"
BENCH_ORDER_RATE=top BENCH_PARTITIONS_STEM=partitions-top "$TARGET/debug/petstore-partitions" >/dev/null \
  || log "the partition model at the highest OrderRate failed; its figures are missing"

"$TARGET/release/petstore-bench"
run_info
python3 lab/bench/report.py "$OUT"
