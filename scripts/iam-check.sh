#!/usr/bin/env bash
# `make iam-check`: every AWS call the functions made in the tests, evaluated
# against the IAM policies they get once deployed (gates.iam_check), then
# the check's own test: a policy with one action or one index removed fails it
# (tools/gates/tests/test_iam_check_mutations.py).
#
# It judges the tree as it is. A recording (.local/aws-calls, written by `make
# test`) carries a stamp beside it (.local/aws-calls.tree): a digest of every
# file that decides which calls are made (STAMPED below, uncommitted edits and
# new files included). When the stamp is the tree's, the recording is reused,
# so a policy edit (template.yaml, not stamped) is checked in seconds; when
# there is no recording, no stamp, or the code or the tests changed since, the
# recording is thrown away and made afresh, running the tests with
# PETSTORE_AWS_CALLS set: a call only the new code makes is judged, never
# passed over because an older recording lacks it.
#
#   scripts/iam-check.sh           judge (recording afresh when stale)
#   scripts/iam-check.sh --begin   make test: a recording starts (drops the old one)
#   scripts/iam-check.sh --end     make test: it ended whole; stamp it
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
RECORDING="${PETSTORE_AWS_CALLS:-$ROOT/.local/aws-calls}"
STAMP="$RECORDING.tree"
# `--begin`'s stamp, kept until `--end`: a run that stopped half-way (a test
# failed) leaves no stamp, so its partial recording is never reused.
PENDING="$RECORDING.tree.pending"
cd "$ROOT"
mkdir -p .local

# What the recorded calls follow from: the code of every crate, the tests
# and the sample events they replay, the migrations the admin tool runs, the
# dependencies; and the scripts that record beside `cargo test` in make test
# (the run-lambda stack's Python is in tools/gates, under tools).
STAMPED=(Cargo.toml Cargo.lock shared functions tools tests events migrations
  scripts/test-local-stacks.sh scripts/test-run-lambda.sh scripts/run-lambda.sh)

# A digest of the stamped files' paths and contents as they are on disk.
tree_stamp() {
  local files
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files --cached --others --exclude-standard -- "${STAMPED[@]}" | sort -u)
  else
    files=$(find "${STAMPED[@]}" -type f 2>/dev/null | sort -u)
  fi
  # A tracked file deleted on disk is listed but unreadable: left out, so
  # its deletion changes the digest as an edit does.
  local present=() file
  while IFS= read -r file; do
    if [[ -f "$file" ]]; then present+=("$file"); fi
  done <<<"$files"
  if ((${#present[@]})); then sha256sum -- "${present[@]}"; fi | sha256sum | cut -d' ' -f1
}

case "${1:-}" in
  --begin)
    rm -rf "$RECORDING" "$STAMP"
    tree_stamp >"$PENDING"
    exit 0
    ;;
  --end)
    mv "$PENDING" "$STAMP"
    exit 0
    ;;
  "") ;;
  *)
    echo "usage: $0 [--begin | --end]" >&2
    exit 2
    ;;
esac

current="$(tree_stamp)"
stale=""
if ! compgen -G "$RECORDING/*.jsonl" >/dev/null; then
  stale="there is no recording in ${RECORDING#"$ROOT"/}"
elif [[ ! -f "$STAMP" ]]; then
  stale="the recording in ${RECORDING#"$ROOT"/} has no stamp (a run that stopped part-way, or one made before stamps)"
elif [[ "$(cat "$STAMP")" != "$current" ]]; then
  stale="the code or the tests changed since ${RECORDING#"$ROOT"/} was recorded"
fi
if [[ -n "$stale" ]]; then
  echo "iam-check: $stale: running the tests to record afresh"
  rm -rf "$RECORDING" "$STAMP"
  scripts/dynamodb-local.sh install
  PETSTORE_AWS_CALLS="$RECORDING" cargo test --workspace
  # The tree as it was when the recording started: an edit made while the
  # tests ran makes the next check record again.
  echo "$current" >"$STAMP"
else
  echo "iam-check: judging ${RECORDING#"$ROOT"/}, recorded from the tree as it is now"
fi
"$VENV/bin/petstore-iam-check" "$RECORDING"
PETSTORE_AWS_CALLS="$RECORDING" "$VENV/bin/pytest" -q tools/gates -m recording
