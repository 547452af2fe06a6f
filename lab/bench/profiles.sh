#!/usr/bin/env bash
# The effect of release-profile knobs on the arm64 zips: one full build per
# variant (3-8 minutes each on two cores), each in its own target directory
# under target/bench-profiles/ so the real build's artifacts are untouched.
# Not part of `make bench`; run by hand:
#
#   bash lab/bench/profiles.sh                    # the default variants below
#   bash lab/bench/profiles.sh opt3 nolto         # some of them
#
# Each variant is the workspace's [profile.release] with one change, made
# through CARGO_PROFILE_RELEASE_* variables. Prints a table and writes
# target/bench/profiles.json.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
[[ -x .venv/bin/cargo-lambda ]] || make --no-print-directory .venv/bin/cargo-lambda
export PATH="$ROOT/.venv/bin:$PATH"

declare -A CHANGE=(
  [baseline]=""
  [opt3]="CARGO_PROFILE_RELEASE_OPT_LEVEL=3"
  [optz]="CARGO_PROFILE_RELEASE_OPT_LEVEL=z"
  [nolto]="CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16"
  [nostrip]="CARGO_PROFILE_RELEASE_STRIP=false"
  [unwind]="CARGO_PROFILE_RELEASE_PANIC=unwind"
)
variants=("$@")
((${#variants[@]})) || variants=(opt3 optz)

OUT="$ROOT/target/bench"
mkdir -p "$OUT"
json="{"
for variant in "${variants[@]}"; do
  [[ -v "CHANGE[$variant]" ]] || { echo "unknown variant $variant (${!CHANGE[*]})" >&2; exit 2; }
  dir="$ROOT/target/bench-profiles/$variant"
  mkdir -p "$dir"
  echo "profiles: $variant (${CHANGE[$variant]:-as in Cargo.toml})" >&2
  start=$SECONDS
  # shellcheck disable=SC2086  # the change is a list of VAR=value words
  env ${CHANGE[$variant]} CARGO_TARGET_DIR="$dir" \
    cargo lambda build --release --arm64 --output-format zip -p pets -p store >"$dir.log" 2>&1 \
    || { echo "profiles: $variant failed, see $dir.log" >&2; continue; }
  took=$((SECONDS - start))
  pets=$(stat -c %s "$dir/lambda/pets/bootstrap.zip")
  store=$(stat -c %s "$dir/lambda/store/bootstrap.zip")
  printf '  %-9s pets %8.2f MB  store %8.2f MB  (built in %d s)\n' "$variant" \
    "$(echo "$pets / 1000000" | bc -l)" "$(echo "$store / 1000000" | bc -l)" "$took"
  json+="\"$variant\":{\"change\":\"${CHANGE[$variant]}\",\"pets_zip_bytes\":$pets,\"store_zip_bytes\":$store,\"build_seconds\":$took},"
done
echo "${json%,}}" >"$OUT/profiles.json"
echo "profiles: wrote target/bench/profiles.json" >&2
