#!/usr/bin/env bash
# Adds up cargo test's "test result:" lines into one closing line, so the
# end of `make test` says how many tests ran, not the last (often empty)
# doc-test binary's count.
#
#   scripts/test-summary.sh LOG
set -euo pipefail
awk '
  /^test result:/ {
    for (i = 1; i <= NF; i++) {
      if ($(i) ~ /^passed;?$/) passed += $(i - 1)
      if ($(i) ~ /^failed;?$/) failed += $(i - 1)
      if ($(i) ~ /^ignored;?$/) ignored += $(i - 1)
    }
  }
  END { printf "tests: %d passed, %d failed, %d skipped\n", passed, failed, ignored }
' "$1"
