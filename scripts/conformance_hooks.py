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
import uuid

import schemathesis

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
