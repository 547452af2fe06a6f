#!/usr/bin/env bash
# Debian's chromium for the API reference's browser test (scripts/docs-browser.sh),
# installed with apt when missing: the test never downloads a browser itself.
set -euo pipefail

CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
[[ -x "$CHROMIUM" ]] && exit 0
command -v apt-get >/dev/null || { echo "install-chromium: $CHROMIUM is missing and there is no apt-get" >&2; exit 1; }
SUDO=""
[[ "$(id -u)" == 0 ]] || SUDO="sudo"
echo "install-chromium: installing Debian's chromium (apt-get)" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
[[ -x "$CHROMIUM" ]] || { echo "install-chromium: apt installed no $CHROMIUM" >&2; exit 1; }
