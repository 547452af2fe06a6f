"""schemathesis hooks for scripts/conformance.sh (loaded by conformance.toml).

Hypothesis draws `Idempotency-Key` values from a small space (`0`, `!`, the
parameter's example), so most changes it sent carried a key that an earlier,
different request had used, and were answered 422 IDEMPOTENCY_KEY_REUSED:
documented and conforming, but the operations' own logic went untested. Here
a valid key is made unique before it is sent (its first characters kept, so
a key at the length limit stays at it); an invalid key is left as it is, for
the negative tests. Reuse, replays and the 422 are tested in
tests/idempotency.rs.

Every hook here serves a rule beyond the schema that a record's validation
module lists in its RULES (shared/src/records/beyond_schema.rs), by name:
register each with @schemathesis.hook("<hook point>") on a function named
for what it does. A unit test there fails when a listed hook is missing here,
or a hook here serves no listed rule.
"""

import re
import time
import uuid

import schemathesis
import yaml
from schemathesis.openapi.checks import IgnoredAuth
from schemathesis.specs.openapi.checks import ignored_auth

from gates.repo import ROOT

HEADER = "idempotency-key"
MAX_LENGTH = 255
# The parameter's pattern in openapi.yaml: printable ASCII, no space at either end.
VALID = re.compile(r"[!-~]([ -~]*[!-~])?\Z")


@schemathesis.hook("before_call")
def unique_idempotency_keys(ctx, case, **kwargs):
    """Serves the rule IdempotencyKey's RULES lists (records/idempotency_key.rs)."""
    headers = case.headers or {}
    for name, key in list(headers.items()):
        if name.lower() != HEADER or not isinstance(key, str):
            continue
        if len(key) <= MAX_LENGTH and VALID.match(key):
            fresh = "." + uuid.uuid4().hex
            headers[name] = key[: MAX_LENGTH - len(fresh)] + fresh


# --- Text beyond U+FFFF (contract section 1; added with the text rules) ------
#
# The patterns of openapi.yaml's text properties (each a TextField of a body
# type, records::TEXT_FIELDS) say what is refused up to U+FFFF; the hidden characters beyond it (format tags, plane 15 and 16
# private use) are listed in `x-refused-beyond-bmp`, since no pattern says
# them so that ECMA-262 without the `u` flag (Spectral, JavaScript clients)
# and code-point engines (Python, schemathesis's jsonschema-rs) agree.
# hypothesis draws from the patterns, so a "valid" body may hold such a
# character, which the service refuses as the document says: such bodies are
# not sent. Which properties: those listing `x-refused-beyond-bmp`, read
# from openapi.yaml (no list here). The refusals are tested in
# tests/refusals.rs, tests/values.rs and shared/src/records/text_tests.rs.

_SCHEMAS = yaml.safe_load((ROOT / "openapi.yaml").read_text())[
    "components"]["schemas"]


def _range(listed: str) -> str:
    first, _, last = listed.partition("-")
    first, last = chr(int(first[2:], 16)), chr(int((last or first)[2:], 16))
    return re.escape(first) + ("-" + re.escape(last) if last != first else "")


def _refused_beyond_bmp(schemas: dict) -> dict:
    """Each property that lists `x-refused-beyond-bmp` in some schema, by name,
    with the characters listed: openapi.yaml is the list, and the Rust text
    rules' test (records/text_tests.rs) holds each property to its rule."""
    refused: dict[str, set[str]] = {}
    for schema in schemas.values():
        for field, prop in (schema.get("properties") or {}).items():
            for listed in prop.get("x-refused-beyond-bmp", []):
                refused.setdefault(field, set()).add(_range(listed))
    return {field: re.compile("[" + "".join(sorted(ranges)) + "]") for field, ranges in refused.items()}


REFUSED_BEYOND_BMP = _refused_beyond_bmp(_SCHEMAS)


# Rule: the refused characters beyond U+FFFF (records/text.rs, RULES).
@schemathesis.hook("filter_body")
def bodies_without_refused_beyond_bmp(ctx, body):
    if not isinstance(body, dict):
        return True
    return not any(
        isinstance(body.get(field), str) and refused.search(body[field])
        for field, refused in REFUSED_BEYOND_BMP.items()
    )


# --- Webhook URLs (contract section 9) ----------------------------------------
#
# The schema says only `format: uri`; the service also wants https, no
# credentials, no fragment, and a host that resolves to public addresses,
# which no generated host does here (no DNS beyond the registries). So a
# generated URL of a valid length is replaced by a loopback https URL, which
# the conformance stack admits (WEBHOOKS_ALLOW_LOOPBACK=1, as `make run`).
# The URL rules themselves are tested in tests/webhooks and on the resolver
# the tests control (shared/src/webhooks/address).

WEBHOOK_URL = "https://127.0.0.1/hooks/conformance"


@schemathesis.hook("before_call")
def webhook_urls_within_the_rules(ctx, case, **kwargs):
    """Serves the rule webhooks::records::RULES lists (shared/src/webhooks/records.rs)."""
    if not case.path.startswith("/webhooks") or case.method.upper() not in ("POST", "PATCH"):
        return
    body = case.body
    if isinstance(body, dict) and isinstance(body.get("url"), str) and 1 <= len(body["url"]) <= 2048:
        body["url"] = WEBHOOK_URL


# --- The source limit under the auth probes (contract section 4) -------------
#
# schemathesis's `ignored_auth` check probes each operation without a key
# and with an invalid one, once per operation a run: about 60 requests
# without a valid key, which contract section 4 counts against their source
# (127.0.0.1, the free plan: 60 a minute). When a minute holds more of them
# than that, a probe is answered 429, the right answer, which the check does
# not retry and reported as auth not enforced (seen once under `make test`'s
# parallel load). This check is `ignored_auth` itself (conformance.sh
# excludes the built-in one), its probes sent again after a wait when, and
# only when, a probe met the source limit: any other answer fails as before.

SOURCE_LIMITED = "`429 "
# Waits before the probes go again, seconds: past a minute in all, the
# source limit's window.
PROBE_WAITS = (10, 20, 40)


@schemathesis.check
def ignored_auth_past_the_source_limit(ctx, response, case):
    for wait in PROBE_WAITS:
        try:
            return ignored_auth(ctx, response, case)
        except IgnoredAuth as failure:
            if SOURCE_LIMITED not in failure.message:
                raise
            time.sleep(wait)
    return ignored_auth(ctx, response, case)
