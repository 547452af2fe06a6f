"""openapi.yaml writes what its operations share once (`make test-gates`;
docs/contributing.md, "Add an operation to a function").

The headers every answer carries, the error answers every operation has and
the text rules its free-text fields share are each written once, as a YAML
anchor (`&answer-headers`, `&key-errors`, `&body-errors`, `&errors`, `&name-rule`,
`&free-text-rule`...), and merged everywhere else (`<<: *answer-headers`).
So a new operation adds its own lines and no copies. Held two ways:

- in the text: each shared header's and error answer's `$ref`, each
  `pattern`, each `x-refused-beyond-bmp` list, the record id's schema
  (`&record-id`) and the IDEMPOTENCY_KEY_IN_USE example is written once; a
  copy where a merge belongs fails, naming the merge;
- in the document as every reader resolves it (PyYAML applies `<<`, as
  shared/build.rs does for `GET /openapi.json`): every answer still has the
  headers and every operation the error answers, so an operation that
  leaves the merge out fails too.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest
import yaml

from gates.repo import ROOT

DOCUMENT = ROOT / "openapi.yaml"
RECIPE = 'docs/contributing.md, "Add an operation to a function"'

# The headers every answer carries (the contract's section 7): `&answer-headers`.
ANSWER_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy",
                  "RateLimit", "X-Request-Id", "Cache-Control", "X-Content-Type-Options")
# The error answers of every operation (`&errors`), of every one that takes a key (`&key-errors`) and
# of every one that takes a JSON body (`&body-errors`; a beta operation's 400 and 415 are its Beta ones).
ERRORS = {"429": "TooManyRequests", "500": "InternalError", "503": "ServiceUnavailable"}
KEY_ERRORS = {"401": "Unauthorized", "403": "Forbidden"}
BODY_ERRORS = {"400": "BadRequest", "413": "PayloadTooLarge", "415": "UnsupportedMediaType"}
BETA = {"400", "415"}
METHODS = ("get", "put", "post", "patch", "delete", "head", "options", "trace")


@pytest.fixture(scope="module")
def text() -> str:
    return DOCUMENT.read_text()


@pytest.fixture(scope="module")
def document(text: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


def ref_lines(text: str, target: str) -> int:
    return len(re.findall(rf"^\s*\$ref: '{re.escape(target)}'\s*$", text, re.M))


def operations(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(f"{method.upper()} {path}", operation)
            for path, item in document["paths"].items()
            for method, operation in item.items() if method in METHODS]


def answers(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every response object written in the document: an operation's own and components/responses."""
    found = [(f"{name} {status}", answer) for name, operation in operations(document)
             for status, answer in operation["responses"].items() if "$ref" not in answer]
    found += [(f"components/responses/{name}", answer)
              for name, answer in document["components"]["responses"].items()]
    return found


@pytest.mark.parametrize("header", ANSWER_HEADERS)
def test_each_answer_header_is_written_once(text: str, header: str) -> None:
    count = ref_lines(text, f"#/components/headers/{header}")
    assert count == 1, (f"openapi.yaml: the $ref to {header} is written {count} times: an answer's headers "
                        f"merge the set every answer carries, `<<: *answer-headers` ({RECIPE})")


@pytest.mark.parametrize(("status", "response"), [*KEY_ERRORS.items(), *BODY_ERRORS.items(), *ERRORS.items()])
def test_each_common_error_answer_is_written_once(text: str, status: str, response: str) -> None:
    count = ref_lines(text, f"#/components/responses/{response}")
    assert count == 1, (f"openapi.yaml: the {status} answer ({response}) is written {count} times: an "
                        f"operation merges the error answers, `<<: [*key-errors, *errors]`, "
                        f"`<<: [*key-errors, *body-errors, *errors]` with a body ({RECIPE})")


def test_each_text_rule_is_written_once(text: str) -> None:
    patterns = Counter(re.findall(r"^\s*pattern: (.+)$", text, re.M))
    copied = [pattern[:60] for pattern, count in patterns.items() if count > 1]
    assert patterns and not copied, (f"openapi.yaml: patterns written more than once {copied}: a field "
                                     f"with a rule already written merges its anchor (`<<: *name-rule`, "
                                     f"`<<: *free-text-rule`)")
    lists = Counter(re.findall(r"^\s*x-refused-beyond-bmp: (?:&[\w-]+ )?(\[.*)$", text, re.M))
    copied = [listed[:60] for listed, count in lists.items() if count > 1]
    assert lists and not copied, (f"openapi.yaml: x-refused-beyond-bmp lists written more than once {copied}: "
                                  f"name the anchor, `x-refused-beyond-bmp: *refused-beyond-bmp`")


@pytest.mark.parametrize(("line", "anchor"), [("maximum: 9007199254740991", "record-id"),
                                              ("code: IDEMPOTENCY_KEY_IN_USE", "idempotency-key-in-use")])
def test_each_shared_schema_and_example_is_written_once(text: str, line: str, anchor: str) -> None:
    count = len(re.findall(rf"^\s*{re.escape(line)}\s*$", text, re.M))
    assert count == 1, (f"openapi.yaml: `{line}` is written {count} times: name the anchor (`*{anchor}`, "
                        f"or `<<: *{anchor}` beside the field's own keys)")


def test_every_answer_carries_the_answer_headers(document: dict[str, Any]) -> None:
    missing = [f"{name}: {', '.join(h for h in ANSWER_HEADERS if h not in (answer.get('headers') or {}))}"
               for name, answer in answers(document)
               if not set(ANSWER_HEADERS) <= set(answer.get("headers") or {})]
    assert len(answers(document)) > 40, "the answers were read"
    assert not missing, ("answers without the headers every answer carries (their headers merge them, "
                         f"`<<: *answer-headers`, {RECIPE}):\n  " + "\n  ".join(missing))


def test_every_operation_has_the_common_error_answers(document: dict[str, Any]) -> None:
    missing = []
    for name, operation in operations(document):
        expected = dict(KEY_ERRORS) if operation.get("security", document["security"]) else {}
        if "application/json" in (operation.get("requestBody") or {}).get("content", {}):
            beta = operation.get("x-beta") is True
            expected |= {status: f"Beta{response}" if beta and status in BETA else response
                         for status, response in BODY_ERRORS.items()}
        expected |= ERRORS
        lacking = [status for status, response in expected.items()
                   if operation["responses"].get(status) != {"$ref": f"#/components/responses/{response}"}]
        if lacking:
            missing.append(f"{name}: {', '.join(lacking)}")
    assert len(operations(document)) > 20, "the operations were read"
    assert not missing, ("operations without the error answers every operation has (they merge them, "
                         "`<<: [*key-errors, *errors]`, `<<: [*key-errors, *body-errors, *errors]` with a "
                         f"JSON body, `<<: *errors` when public; {RECIPE}):\n  " + "\n  ".join(missing))
