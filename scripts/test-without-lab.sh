#!/usr/bin/env bash
# A fork that deletes lab/ (the bench, its tools, their checks) keeps a
# service that builds and is checked as before (lab/README.md, "Dropping the
# lab"). Proven on the tree as it is, copied without lab/ to a scratch folder:
# - the service's workspace resolves from its own Cargo.lock, unchanged;
# - `make test` and `make check-circles` still resolve, and name nothing of
#   the lab; `make bench` is gone with it;
# - no code, build or template file outside lab/ names a path in it (docs
#   may link to it: lab/README.md says which pages go with it), but the
#   workspace's `exclude` and this script.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' file; do
  [[ $file == lab/* || ! -e $file ]] && continue
  mkdir -p "$scratch/$(dirname "$file")"
  cp -p "$file" "$scratch/$file"
done

fail() { echo "test-without-lab: $*" >&2; exit 1; }

(cd "$scratch" && cargo metadata --locked --format-version 1 >/dev/null) \
  || fail "the service's workspace does not resolve from its Cargo.lock without lab/"
for target in test check-circles; do
  plan=$(cd "$scratch" && make -n "$target" 2>&1) || fail "make -n $target fails without lab/: $plan"
  if grep -n 'lab/' <<<"$plan"; then
    fail "make $target still names the lab without lab/"
  fi
done
if (cd "$scratch" && make -n bench >/dev/null 2>&1); then
  fail "make bench still exists without lab/"
fi
named=$(cd "$scratch" && grep -rIlE '(^|[^A-Za-z0-9_./-])lab/' \
  --include='*.rs' --include='*.toml' --include='*.yaml' --include='*.yml' \
  --include='*.sh' --include='*.py' --include='*.mjs' --include='*.json' . \
  | grep -vxE '\./(Cargo\.toml|scripts/test-without-lab\.sh)' || true)
[[ -z $named ]] || fail "files outside lab/ name paths in it: $named"
echo "test-without-lab: without lab/ the service resolves from its lock file, make test and check-circles name nothing of it, make bench is gone"
