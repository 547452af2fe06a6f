"""A caller's whole flow through the Python client generated from openapi.yaml.

Run by scripts/clients.sh (`make clients`), which generates the client into
.local/clients/python/petstore_client, starts the local stack, and puts the
generated package on the path (PYTHONPATH: it is never installed):

    PYTHONPATH=.local/clients/python PETSTORE_URL=http://127.0.0.1:PORT PETSTORE_API_KEY=psk_... \
        .venv/bin/petstore-client-flow

Category, pet, merge patch (`status: null` included; then with `If-Match`: a
stale validator's 412, the answer's own ETag's 200), stock, order, complete,
cancel, and Error records parsed, each step through the generated functions
and models only, as someone who generated the client from the document would
write it. Any status the document does not list for an operation raises
(`raise_on_unexpected_status`).
"""

import os
import sys
import uuid
from datetime import datetime

# The generated package (never committed).
from petstore_client import AuthenticatedClient
from petstore_client.api.pets import create_category, create_pet, list_pets, update_pet
from petstore_client.api.store import (
    cancel_order,
    get_inventory_item,
    get_order,
    list_orders,
    place_order,
    set_inventory,
    update_order,
)
from petstore_client.models import (
    Category,
    Error,
    ErrorCode,
    InventoryItem,
    InventoryUpdate,
    NewCategory,
    NewOrder,
    NewPet,
    Order,
    OrderPatch,
    Pet,
    PetPatch,
    PetPatchStatusType0,
    PetStatus,
)
from petstore_client.types import Response


class FlowError(Exception):
    pass


def expect(response: Response, status: int, model: type, step: str):
    """The answer has `status` and its body parsed into `model`."""
    if response.status_code != status or not isinstance(response.parsed, model):
        raise FlowError(
            f"{step}: expected {status} {model.__name__}, got {int(response.status_code)} "
            f"{type(response.parsed).__name__}: {response.content[:300]!r}"
        )
    return response.parsed


def expect_error(response: Response, status: int, code: ErrorCode, step: str) -> Error:
    error = expect(response, status, Error, step)
    if error.code != code or error.status != status or not error.message:
        raise FlowError(f"{step}: expected Error {status} {code}, got {error.to_dict()}")
    return error


def check(condition: bool, step: str, detail: object) -> None:
    if not condition:
        raise FlowError(f"{step}: {detail}")


def stock_of(client: AuthenticatedClient, pet_id: int, step: str) -> int:
    item = expect(get_inventory_item.sync_detailed(pet_id, client=client), 200, InventoryItem, step)
    return item.quantity


def always_present(model: type, *fields: str) -> None:
    """The generated `model` types each of `fields` as always present: a
    caller never checks it for `UNSET` (the document requires it)."""
    for field in fields:
        typed = str(model.__annotations__.get(field))
        check("Unset" not in typed, f"{model.__name__}.{field} always present", typed)


def run(client: AuthenticatedClient) -> list[str]:
    done: list[str] = []
    always_present(Pet, "id", "status")
    always_present(Category, "id")
    suffix = uuid.uuid4().hex[:8]

    category = expect(
        create_category.sync_detailed(client=client, body=NewCategory(name=f"Dogs {suffix}", description="Loyal")),
        201,
        Category,
        "create category",
    )
    check(isinstance(category.id, int) and category.description == "Loyal", "create category", category.to_dict())
    done.append(f"category {category.id}")

    created = create_pet.sync_detailed(client=client, body=NewPet(name="Rex", category_id=category.id))
    pet = expect(created, 201, Pet, "create pet")
    check(pet.status == PetStatus.AVAILABLE and pet.category_id == category.id, "create pet", pet.to_dict())
    check(created.headers.get("location", "").endswith(f"/pets/{pet.id}"), "create pet", dict(created.headers))
    done.append(f"pet {pet.id}")

    patched = expect(
        update_pet.sync_detailed(
            pet.id, client=client, body=PetPatch(name="Rex II", status=PetPatchStatusType0.PENDING)
        ),
        200,
        Pet,
        "patch name and status",
    )
    check(patched.name == "Rex II" and patched.status == PetStatus.PENDING, "patch name and status", patched.to_dict())
    # `status: null` in a merge patch: back to the default, `available`.
    answered = update_pet.sync_detailed(pet.id, client=client, body=PetPatch(status=None))
    reset = expect(answered, 200, Pet, "patch null")
    check(reset.status == PetStatus.AVAILABLE and reset.name == "Rex II", "patch status null", reset.to_dict())
    # Updating safely (1.3.0): the answer's ETag, sent back in If-Match.
    etag = answered.headers.get("etag", "")
    check(etag.startswith('"'), "a patch's ETag", dict(answered.headers))
    stale = update_pet.sync_detailed(pet.id, client=client, body=PetPatch(name="Rex III"), if_match='"stale"')
    expect_error(stale, 412, ErrorCode.PRECONDITION_FAILED, "patch with a stale If-Match")
    same = update_pet.sync_detailed(pet.id, client=client, body=PetPatch(name="Rex II"), if_match=etag)
    check(expect(same, 200, Pet, "patch with its ETag").name == "Rex II", "patch with its ETag", same.content)
    # One id only: openapi-python-client 0.29 ignores the parameter's `explode: false` and
    # sends `ids=1&ids=2` instead of `ids=1,2`.
    listed = expect(list_pets.sync_detailed(client=client, ids=[pet.id]), 200, list, "list pets by id")
    check([p.name for p in listed] == ["Rex II"], "list pets by id", [p.to_dict() for p in listed])
    done.append("patch (and status: null)")

    item = expect(
        set_inventory.sync_detailed(pet.id, client=client, body=InventoryUpdate(quantity=5)),
        200,
        InventoryItem,
        "set stock",
    )
    check(item.quantity == 5 and item.pet_id == pet.id, "set stock", item.to_dict())
    done.append("stock 5")

    order = expect(
        place_order.sync_detailed(client=client, body=NewOrder(pet_id=pet.id, quantity=2)), 201, Order, "place order"
    )
    check(order.complete is False and order.quantity == 2, "place order", order.to_dict())
    check(stock_of(client, pet.id, "stock after order") == 3, "stock after order", "expected 3")
    done.append(f"order {order.id}")

    completed = expect(
        update_order.sync_detailed(order.id, client=client, body=OrderPatch(complete=True)),
        200,
        Order,
        "complete order",
    )
    # Completing without a ship date sets it to now; the client parses it into a datetime.
    shipped = completed.ship_date
    check(
        completed.complete is True and isinstance(shipped, datetime) and shipped.tzinfo is not None, "complete",
        completed.to_dict()
    )
    done.append("complete")

    second = expect(
        place_order.sync_detailed(client=client, body=NewOrder(pet_id=pet.id)), 201, Order, "place second order"
    )
    check(second.quantity == 1 and stock_of(client, pet.id, "stock after second") == 2, "second order", "stock 2")
    cancelled = cancel_order.sync_detailed(second.id, client=client)
    check(cancelled.status_code == 204, "cancel order", int(cancelled.status_code))
    check(stock_of(client, pet.id, "stock after cancel") == 3, "cancel order", "stock back to 3")
    done.append("cancel")

    # Error records, parsed into the generated Error model.
    expect_error(get_order.sync_detailed(second.id, client=client), 404, ErrorCode.NOT_FOUND, "get cancelled order")
    expect_error(
        cancel_order.sync_detailed(order.id, client=client), 409, ErrorCode.ORDER_COMPLETE, "cancel complete order"
    )
    expect_error(
        create_pet.sync_detailed(client=client, body=NewPet(name="Ghost", category_id=9007199254740991)),
        422,
        ErrorCode.UNKNOWN_REFERENCE,
        "pet in an unknown category",
    )
    done.append("errors 404, 409, 422")

    orders = expect(list_orders.sync_detailed(client=client, pet_id=pet.id), 200, list, "list orders")
    check([(o.id, o.complete) for o in orders] == [(order.id, True)], "list orders", [o.to_dict() for o in orders])
    done.append("list orders")
    return done


def main() -> int:
    url = os.environ.get("PETSTORE_URL", "")
    key = os.environ.get("PETSTORE_API_KEY", "")
    if not url or not key:
        print("client flow: set PETSTORE_URL and PETSTORE_API_KEY", file=sys.stderr)
        return 2
    client = AuthenticatedClient(
        base_url=url, token=key, prefix="", auth_header_name="X-API-Key", raise_on_unexpected_status=True, timeout=10
    )
    with client:
        try:
            done = run(client)
        except FlowError as error:
            print(f"client flow: FAILED at {error}", file=sys.stderr)
            return 1
    print(f"client flow: ok ({'; '.join(done)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
