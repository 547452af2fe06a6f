"""The release gate's own test (`make contract-check` runs it after the gate):
copies of openapi.yaml and asyncapi.yaml, each with one change a pull request
could make, go through the gate (gates.contract_gate) against the documents
as they are. Each breaking change must fail it, naming what broke; each
compatible one (and each breaking one declared as section 6 allows) must
pass. A gate that passed a removed field, or failed a new optional one, would
be switched off within a week.

The fixtures are evaluated together, as the gate evaluates a release (its
diff tools run once for all of them); `pytest -k TITLE` reports the ones
named.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from gates.contract_gate import ROOT, evaluate

pytestmark = pytest.mark.contract_check

Document = dict[str, Any]


def _unreleased_emptied(text):
    """CHANGELOG.md with nothing under `## [Unreleased]`: each fixture
    declares what it needs, whatever the working tree declares now."""
    head, marker, rest = text.partition("## [Unreleased]\n")
    if not marker:
        return text
    released = rest.find("\n## [")
    return head + marker + (rest[released:] if released >= 0 else "")


CHANGELOG = _unreleased_emptied((ROOT / "CHANGELOG.md").read_text())


def with_security(*names, section="## [Unreleased]"):
    """CHANGELOG.md with a Security entry naming these fields under `section`."""
    entry = "### Security\n\n- " + ", ".join(f"`{n}`" for n in names) + ": control characters refused.\n\n"
    return CHANGELOG.replace(section + "\n", section + "\n\n" + entry, 1)


def schemas(doc):
    return doc["components"]["schemas"]


def add_required_query(doc):
    doc["paths"]["/pets"]["get"]["parameters"].append(
        {"name": "region", "in": "query", "required": True, "schema": {"type": "string"}})


def add_optional_field(doc):
    schemas(doc)["Order"]["properties"]["holdExpiresAt"] = {
        "type": "string", "format": "date-time", "readOnly": True,
        "description": "When an unpaid hold lapses."}


def add_error_code(doc):
    schemas(doc)["Error"]["properties"]["code"]["enum"].append("TOO_MANY_OPEN_ORDERS")


def add_headers(doc):
    headers = doc["paths"]["/pets"]["get"]["responses"]["200"]["headers"]
    # The value the document states (1.3.0): the fixture adds headers, it does not change one.
    headers["Cache-Control"] = {"schema": {"type": "string", "enum": ["private, no-cache"]}}
    headers["X-Content-Type-Options"] = {"schema": {"type": "string", "enum": ["nosniff"]}}


def narrow_name(doc):
    for schema in ("NewPet", "PetPatch"):
        schemas(doc)[schema]["properties"]["name"]["pattern"] = "^[^\\x00-\\x1f\\x7f]{1,100}$"


def split_cancelled(doc):
    """A new optional field on OrderCancelled alone: its detail gets a schema of its own."""
    detail = copy.deepcopy(schemas(doc).get("OrderCancelledDetail") or schemas(doc)["OrderDetail"])
    # A name the documents do not use (they grew `lapsed` since 1.0.0).
    detail["properties"]["cancelledBy"] = {"type": "string", "description": "Who cancelled it."}
    schemas(doc)["OrderCancelledDetail"] = detail


def remove_message(doc):
    del doc["channels"]["petstore"]["messages"]["StockChanged"]
    doc["operations"]["publishDomainEvents"]["messages"].pop()


def major(doc):
    doc["info"]["version"] = "2.0.0"


def minor(doc):
    doc["info"]["version"] = "1.1.0"


# (name, document, edits, changelog, expected: "pass" or a text the failure names)
FIXTURES = [
    ("removed response field", "openapi.yaml",
     [lambda d: schemas(d)["Order"]["properties"].pop("shipDate")], CHANGELOG, "Property `shipDate` of `Order` was removed"),
    ("new required query parameter", "openapi.yaml", [add_required_query], CHANGELOG, "Required `region` query parameter"),
    ("new optional response field, in 1.1.0", "openapi.yaml", [add_optional_field, minor], CHANGELOG, "pass"),
    ("new error code", "openapi.yaml", [add_error_code], CHANGELOG, "pass"),
    ("new response headers", "openapi.yaml", [add_headers], CHANGELOG, "pass"),
    ("removed operation", "openapi.yaml", [lambda d: d["paths"].pop("/store/inventory")], CHANGELOG,
     "Path `/store/inventory` was removed"),
    ("removed success status", "openapi.yaml",
     [lambda d: d["paths"]["/pets"]["post"]["responses"].pop("201")], CHANGELOG, "Response `201` was removed"),
    ("new required request field", "openapi.yaml",
     [lambda d: schemas(d)["NewOrder"]["required"].append("quantity")], CHANGELOG, "became required: `quantity`"),
    ("a request field becoming required", "openapi.yaml",
     [lambda d: schemas(d)["NewPet"]["required"].append("status")], CHANGELOG, "became required: `status`"),
    # A client only reads a response: a field it must now find there breaks none.
    ("a response field becoming required", "openapi.yaml",
     [lambda d: schemas(d)["Category"]["required"].append("description")], CHANGELOG, "pass"),
    ("retyped request field", "openapi.yaml",
     [lambda d: schemas(d)["NewOrder"]["properties"]["shipDate"].update(type="integer")], CHANGELOG,
     "schema-type-changed"),
    ("removed enum value in a response", "openapi.yaml",
     [lambda d: schemas(d)["Pet"]["properties"]["status"]["enum"].remove("sold")], CHANGELOG,
     "enum value(s) removed: sold"),
    ("narrower request values, undeclared", "openapi.yaml", [narrow_name], CHANGELOG,
     "declare `NewPet.name` under `### Security`"),
    ("narrower request values, declared under Security", "openapi.yaml", [narrow_name],
     with_security("NewPet.name", "PetPatch.name"), "pass"),
    ("narrower request values, one of two fields declared", "openapi.yaml", [narrow_name],
     with_security("NewPet.name"), "declare `PetPatch.name`"),
    ("narrower request values, declared in a released section", "openapi.yaml", [narrow_name],
     with_security("NewPet.name", "PetPatch.name", section="## [1.0.0] - 2026-11-25"), "NewPet.name"),
    ("removed response field in a new major version", "openapi.yaml",
     [lambda d: schemas(d)["Order"]["properties"].pop("shipDate"), major], CHANGELOG, "pass"),
    ("removed event field", "asyncapi.yaml",
     [lambda d: schemas(d)["StockChangedDetail"]["properties"].pop("previousQuantity"),
      lambda d: schemas(d)["StockChangedDetail"]["required"].remove("previousQuantity")], CHANGELOG,
     "StockChanged payload /allOf/1/properties/detail/properties/previousQuantity: event field removed"),
    ("retyped event field", "asyncapi.yaml",
     [lambda d: schemas(d)["StockChangedDetail"]["properties"].update(quantity={"type": "string"})], CHANGELOG,
     "StockChanged payload /allOf/1/properties/detail/properties/quantity/type: retyped"),
    ("event field no longer required", "asyncapi.yaml",
     [lambda d: schemas(d)["OwnedOrder"]["required"].remove("complete")], CHANGELOG, "no longer required"),
    ("removed event", "asyncapi.yaml", [remove_message], CHANGELOG, "/channels/petstore/messages/StockChanged"),
    ("new optional event field (every order event)", "asyncapi.yaml",
     [lambda d: schemas(d)["OwnedOrder"]["properties"].update(giftWrapped={"type": "boolean"})], CHANGELOG, "pass"),
    ("new optional field on OrderCancelled alone, in 1.1.0", "asyncapi.yaml", [split_cancelled, minor], CHANGELOG,
     "pass"),
    ("removed event field in a new major version", "asyncapi.yaml",
     [lambda d: schemas(d)["OwnedOrder"]["properties"].pop("shipDate"), major], CHANGELOG, "pass"),
]


Verdict = tuple[list[str], list[str], tuple[str, str], int]


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Verdict]:
    """Each fixture's (breaking, allowed, versions, changes seen), by title."""
    scratch = tmp_path_factory.mktemp("contract-fixtures")
    cases = []
    for index, (_, name, edits, changelog, _) in enumerate(FIXTURES):
        document = yaml.safe_load((ROOT / name).read_text())
        for edit in edits:
            edit(document)
        folder = scratch / str(index)
        folder.mkdir()
        (folder / name).write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
        cases.append((ROOT / name, folder / name, changelog))
    return {title: verdict for (title, *_), verdict in zip(FIXTURES, evaluate(cases), strict=True)}


def test_fixture_titles_are_unique() -> None:
    assert len({title for title, *_ in FIXTURES}) == len(FIXTURES)


@pytest.mark.parametrize(("title", "name", "expected"), [(title, name, expected)
                                                           for title, name, _, _, expected in FIXTURES],
                         ids=[title for title, *_ in FIXTURES])
def test_fixture(verdicts: dict[str, Verdict], title: str, name: str, expected: str) -> None:
    breaking, allowed, _, seen = verdicts[title]
    report = "\n".join(breaking)
    if expected == "pass":
        assert not breaking, f"{name}: {title}: expected a pass; got:\n{report}"
        assert seen > 0, f"{name}: {title}: the diff saw no change: the fixture changes nothing"
    else:
        assert expected in report, f"{name}: {title}: expected {expected!r}; got:\n{report or '(a pass)'}"
