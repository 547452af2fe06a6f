#!/usr/bin/env bash
# The API reference (GET /docs) in a real headless browser (`make docs-browser`;
# `make test` runs it): checks the committed Swagger UI files are the pinned
# npm version, installs Debian's chromium when missing (scripts/install-chromium.sh),
# starts the local stack on free ports (scripts/local-stack.sh; a `make run`
# on 3000 is left alone) and runs scripts/docs_browser.mjs with a staff key.
# The screenshot it takes: .local/docs-browser.png.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
[[ -f node_modules/playwright-core/package.json ]] || { echo "docs-browser: node_modules lacks playwright-core: run 'npm ci'" >&2; exit 1; }

scripts/docs-assets.sh --check
scripts/install-chromium.sh
# shellcheck source=scripts/local-stack.sh
source scripts/local-stack.sh
stack_start docs-browser
KEY="$(stack_key)"
# A category and a pet, so the page's GET /pets answers a record, not [].
category="$(curl -fsS -H "X-API-Key: $KEY" -H 'Content-Type: application/json' \
  -d '{"name":"Dogs"}' "$BASE_URL/categories" | "$STACK_VENV/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["id"])')"
curl -fsS -o /dev/null -H "X-API-Key: $KEY" -H 'Content-Type: application/json' \
  -d "{\"name\":\"Rex\",\"categoryId\":$category}" "$BASE_URL/pets"
node scripts/docs_browser.mjs "$BASE_URL" "$KEY" "$ROOT/.local/docs-browser.png"
