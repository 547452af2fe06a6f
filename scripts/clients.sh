#!/usr/bin/env bash
# Clients generated from openapi.yaml, as the API's callers make them, and
# used (`make clients`; `make test` runs it):
#
#   1. TypeScript: openapi-typescript turns the document into types
#      (.local/clients/typescript/schema.d.ts) and tsc (strict) type-checks
#      scripts/client_flow.ts, which calls the API through openapi-fetch;
#   2. Python: openapi-python-client generates a client package
#      (.local/clients/python/petstore_client); any generator warning fails,
#      and every generated module must import;
#   3. gates.client_flow runs a whole flow with that Python client against
#      the local stack (scripts/local-stack.sh: DynamoDB Local, petstore-local
#      and a key on free ports, all stopped on exit).
#
# Generated code is never committed (.local/ is ignored). The generators come
# pinned from requirements-dev.txt (.venv) and package-lock.json (node_modules).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${VENV:-$ROOT/.venv}"
OUT="$ROOT/.local/clients"

log() { echo "clients: $*" >&2; }
die() { log "$*"; exit 1; }

[[ -x "$VENV/bin/openapi-python-client" ]] || die "$VENV/bin/openapi-python-client is missing: run 'make venv'"
[[ -x node_modules/.bin/openapi-typescript && -x node_modules/.bin/tsc ]] \
  || die "node_modules lacks openapi-typescript or tsc: run 'npm ci'"

log "TypeScript: openapi-typescript, then tsc on scripts/client_flow.ts"
rm -rf "$OUT/typescript"
mkdir -p "$OUT/typescript"
# --default-non-nullable false: a property with a `default` stays optional in
# the types. The default (true) would make NewPet.status, NewOrder.quantity and
# NewOrder.complete required in request bodies, which the document says are
# optional (the service fills in the default).
node_modules/.bin/openapi-typescript openapi.yaml --default-non-nullable false \
  -o "$OUT/typescript/schema.d.ts" >&2
node_modules/.bin/tsc -p scripts/client_flow.tsconfig.json

log "Python: openapi-python-client, then import every module"
rm -rf "$OUT/python"
mkdir -p "$OUT/python"
# PATH: the generator formats its output with ruff, from the same .venv.
PATH="$VENV/bin:$PATH" "$VENV/bin/openapi-python-client" generate --path openapi.yaml \
  --output-path "$OUT/python/petstore_client" --meta none --fail-on-warning >&2
"$VENV/bin/python" - "$OUT/python" <<'PY'
import importlib, pkgutil, sys
sys.path.insert(0, sys.argv[1])
import petstore_client
failed = []
names = [m.name for m in pkgutil.walk_packages(petstore_client.__path__, "petstore_client.")]
for name in names:
    try:
        importlib.import_module(name)
    except Exception as error:  # noqa: BLE001 - report every module that does not import
        failed.append(f"{name}: {type(error).__name__}: {error}")
if failed:
    sys.exit("clients: generated modules that do not import:\n  " + "\n  ".join(failed))
print(f"clients: {len(names)} generated modules import", file=sys.stderr)
PY

# shellcheck source=scripts/local-stack.sh
source "$ROOT/scripts/local-stack.sh"
stack_start clients
KEY="$(stack_key)"
log "Python flow (gates.client_flow) on $BASE_URL"
# The generated package is never installed: on the path for this run only.
PETSTORE_URL="$BASE_URL" PETSTORE_API_KEY="$KEY" PYTHONPATH="$OUT/python" \
  "$VENV/bin/petstore-client-flow"
