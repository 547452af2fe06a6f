"""schemathesis hooks for scripts/conformance.sh (loaded by conformance.toml).

Hypothesis draws `Idempotency-Key` values from a small space (`0`, `!`, the
parameter's example), so most changes it sent carried a key that an earlier,
different request had used, and were answered 422 IDEMPOTENCY_KEY_REUSED:
documented and conforming, but the operations' own logic went untested. Here
a valid key is made unique before it is sent (its first characters kept, so
a key at the length limit stays at it); an invalid key is left as it is, for
the negative tests. Reuse, replays and the 422 are tested in
tests/idempotency.rs.
"""

import re
import uuid
from pathlib import Path

import schemathesis
import yaml

HEADER = "idempotency-key"
MAX_LENGTH = 255
# The parameter's pattern in openapi.yaml: printable ASCII, no space at either end.
VALID = re.compile(r"[!-~]([ -~]*[!-~])?\Z")


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    headers = case.headers or {}
    for name, key in list(headers.items()):
        if name.lower() != HEADER or not isinstance(key, str):
            continue
        if len(key) <= MAX_LENGTH and VALID.match(key):
            fresh = "." + uuid.uuid4().hex
            headers[name] = key[: MAX_LENGTH - len(fresh)] + fresh


# --- Text beyond U+FFFF (contract section 1; added with the text rules) ------
#
# openapi.yaml's name and description patterns refuse a hidden character
# beyond U+FFFF (a tag character, plane 15 and 16 private use) by a look-ahead
# on its UTF-16 surrogate pair: that is how ECMA-262 (Spectral, JavaScript
# clients) reads a pattern. Python's `re` reads code points, so those
# look-aheads never match there and hypothesis may draw such a character in a
# "valid" body, which the service refuses as the document says. A body is
# sent only when both readings of its text agree; the refusals themselves are
# tested in tests/values.rs and shared/src/records/text_tests.rs.

_SCHEMAS = yaml.safe_load((Path(__file__).resolve().parent.parent / "openapi.yaml").read_text())["components"]["schemas"]
TEXT_PATTERNS = {
    "name": re.compile(_SCHEMAS["NewCategory"]["properties"]["name"]["pattern"]),
    "description": re.compile(_SCHEMAS["NewCategory"]["properties"]["description"]["pattern"]),
}


def utf16_units(text: str) -> str:
    """`text` as ECMA-262 sees it: one character per UTF-16 code unit."""
    data = text.encode("utf-16-le", "surrogatepass")
    return "".join(chr(int.from_bytes(data[i:i + 2], "little")) for i in range(0, len(data), 2))


@schemathesis.hook
def filter_body(ctx, body):
    if not isinstance(body, dict):
        return True
    for field, pattern in TEXT_PATTERNS.items():
        text = body.get(field)
        if isinstance(text, str) and bool(pattern.search(text)) != bool(pattern.search(utf16_units(text))):
            return False
    return True
