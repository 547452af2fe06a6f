#!/usr/bin/env bash
# The API reference's renderer files, from the swagger-ui-dist npm package that
# package-lock.json pins, into functions/docs/assets/ (committed, so a fresh
# clone builds the `docs` function without npm):
#
#   scripts/docs-assets.sh          copy them (after changing swagger-ui-dist's version)
#   scripts/docs-assets.sh --check  fail unless the committed files are that version's
#
# The two large files are stored gzipped (gzip -9 -n: no name or time, so the
# same input gives the same bytes) and served as such; Apache-2.0 asks for the
# LICENSE and NOTICE to travel with them.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FROM="$ROOT/node_modules/swagger-ui-dist"
TO="$ROOT/functions/docs/assets"
GZIPPED=(swagger-ui-bundle.js swagger-ui.css)
PLAIN=(favicon-32x32.png LICENSE NOTICE)

die() { echo "docs-assets: $*" >&2; exit 1; }
[[ -f "$FROM/package.json" ]] || die "node_modules/swagger-ui-dist is missing: run 'npm ci'"
version="$(node -p "require('$FROM/package.json').version")"

if [[ "${1:-}" == "--check" ]]; then
  for file in "${GZIPPED[@]}"; do
    gzip -dc "$TO/$file.gz" | cmp -s - "$FROM/$file" \
      || die "functions/docs/assets/$file.gz is not swagger-ui-dist $version's $file: run scripts/docs-assets.sh"
  done
  for file in "${PLAIN[@]}"; do
    cmp -s "$TO/$file" "$FROM/$file" \
      || die "functions/docs/assets/$file is not swagger-ui-dist $version's: run scripts/docs-assets.sh"
  done
  echo "docs-assets: functions/docs/assets holds swagger-ui-dist $version" >&2
  exit 0
fi

mkdir -p "$TO"
for file in "${GZIPPED[@]}"; do
  gzip -9 -n -c "$FROM/$file" >"$TO/$file.gz"
done
for file in "${PLAIN[@]}"; do
  cp "$FROM/$file" "$TO/$file"
done
echo "docs-assets: copied swagger-ui-dist $version into functions/docs/assets" >&2
