#!/usr/bin/env bash
# DynamoDB Local for development and tests, one part per job:
#
#   scripts/dynamodb-local.sh install          scripts/dynamodb-install.sh: download into
#                                              .local/dynamodb/ if missing
#   scripts/dynamodb-local.sh start [PORT]     scripts/dynamodb-local.py (installing first):
#   scripts/dynamodb-local.sh stop [PORT]      DynamoDB Locals per port, in the background
#   scripts/dynamodb-local.sh status [PORT|--all]  (pid files), or in the foreground for
#   scripts/dynamodb-local.sh serve PORT PARENT_PID  the test harness (see its usage)
#
# The Makefile's dynamodb-* targets, the scripts and the test harness call this
# one entry point.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
case "${1:-}" in
  install) exec "$HERE/dynamodb-install.sh" ;;
  start)
    "$HERE/dynamodb-install.sh"
    exec python3 "$HERE/dynamodb-local.py" "$@"
    ;;
  *) exec python3 "$HERE/dynamodb-local.py" "$@" ;;
esac
