#!/usr/bin/env bash
# Browsers on other origins (contract section 7) in a real headless browser
# (`make cors-browser`; `make test` runs it): installs Debian's chromium when
# missing (scripts/install-chromium.sh), starts `make run`'s stack on free
# ports (scripts/local-stack.sh) with ALLOWED_ORIGINS listing one free port's
# origin, and runs scripts/cors_browser.mjs, which serves a page on that port
# and on another and calls the API from both with a staff key and a key
# allowed one request a minute.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
[[ -f node_modules/playwright-core/package.json ]] || { echo "cors-browser: node_modules lacks playwright-core: run 'npm ci'" >&2; exit 1; }

scripts/install-chromium.sh
# shellcheck source=scripts/local-stack.sh
source scripts/local-stack.sh
LISTED_PORT="$(stack_free_port)"
OTHER_PORT="$(stack_free_port)"
while [[ "$OTHER_PORT" == "$LISTED_PORT" ]]; do OTHER_PORT="$(stack_free_port)"; done
export ALLOWED_ORIGINS="http://127.0.0.1:$LISTED_PORT"
stack_start cors-browser
KEY="$(stack_key)"
ONE_A_MINUTE_KEY="$(target/debug/petstore-admin keys create --plan enterprise --per-minute 1 --per-day 100 --name cors-browser \
  | "$STACK_VENV/bin/python" -c 'import json,sys; print(json.loads(sys.stdin.readline())["key"])')"
node scripts/cors_browser.mjs "$BASE_URL" "$KEY" "$ONE_A_MINUTE_KEY" "$LISTED_PORT" "$OTHER_PORT"
