#!/usr/bin/env bash
# make check-docs: the documentation holds together, offline.
#
# 1. Every relative link and #anchor in README.md, docs/ and every folder's
#    README.md resolves: remark-validate-links (pinned in package.json) checks links to
#    files and to headings, GitHub's way of making anchors, without a network.
# 2. Every `make TARGET` the pages show is a target of the Makefile.
# 3. Every pointer from the code to a page (`docs/deploy.md, "Releases"`,
#    `README, "Layout"`) names a page and a heading that exist
#    (gates.check_doc_pointers in tools/gates, standard library only, which first shows on its own fixtures
#    that a dead one fails); the looser forms it recognises are reported.
#    The layouts of README.md and docs/architecture.md list every tracked
#    top-level folder and every function.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Every tracked page but the frozen baseline's (contract/released/).
mapfile -t pages < <(git ls-files 'README.md' 'docs/*.md' '*/README.md' | grep -v '^contract/')

# --frail: a warning (a dead link) fails the run. The repository is not
# looked up on a forge: links are checked against the working tree only.
npx --no-install remark --quiet --frail --no-config --no-stdout \
  --use 'remark-validate-links=repository:false' "${pages[@]}"

# `make -qp` prints the database and exits 1 ("not up to date"): its status
# says nothing here, and pipefail would stop the script on it.
targets=$({ make -qp 2>/dev/null || true; } | awk -F: '/^[a-z][a-z0-9-]*:/ {print $1}' | sort -u)
missing=0
while read -r target; do
  if ! grep -qx -- "$target" <<<"$targets"; then
    echo "check-docs: the docs show \`make $target\`, which the Makefile does not have" >&2
    missing=1
  fi
done < <(grep -ohE '(^|`)make [a-z][a-z0-9-]*' "${pages[@]}" | awk '{print $NF}' | sort -u)
[[ $missing == 0 ]] || exit 1
echo "check-docs: links, anchors and make targets of ${#pages[@]} pages resolve"

PYTHONPATH=tools/gates/src python3 -m gates.check_doc_pointers --self-test
PYTHONPATH=tools/gates/src python3 -m gates.check_doc_pointers
