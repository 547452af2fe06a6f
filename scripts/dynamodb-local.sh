#!/usr/bin/env bash
# DynamoDB Local for development and tests, one part per job:
#
#   scripts/dynamodb-local.sh install          scripts/dynamodb-install.sh: download into
#                                              .local/dynamodb/ if missing
#   scripts/dynamodb-local.sh start [PORT]     gates.dynamodb_local (installing first):
#   scripts/dynamodb-local.sh stop [PORT]      DynamoDB Locals per port, in the background
#   scripts/dynamodb-local.sh status [PORT|--all]  (pid files), or in the foreground for
#   scripts/dynamodb-local.sh serve PORT PARENT_PID  the test harness (see its usage)
#
# The Makefile's dynamodb-* targets, the scripts and the test harness call this
# one entry point. The Python runs from the package's source on the standard
# library alone (tools/gates; no .venv needed: the tests and `make run` use it).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PYTHONPATH="$HERE/../tools/gates/src"
case "${1:-}" in
  install) exec "$HERE/dynamodb-install.sh" ;;
  start)
    "$HERE/dynamodb-install.sh"
    exec python3 -m gates.dynamodb_local "$@"
    ;;
  *) exec python3 -m gates.dynamodb_local "$@" ;;
esac
