"""One order's webhook from end to end on a running local stack, as a caller
sees it: a customer registers a receiver on this machine for `order.placed`,
places an order, and the receiver (gates.webhook_receiver, which
verifies with the Standard Webhooks Python library) gets the event, signed
with the secret the registration answered; the endpoint's deliveries list
shows it delivered. With --fail-first N the receiver answers 500 N times
first: the same event (the same `webhook-id`) comes N + 1 times, each signed,
and the list shows N + 1 attempts (keep the stack's WEBHOOK_RETRY_SCHEDULE
short for this).

    check-webhook-delivery.py --base-url URL --staff-key KEY --customer-key KEY

The staff key makes a pet in stock to order. Exits 0 and prints the delay
from the order's answer to the receiver's request; exits 1 naming what
failed. `make test` runs it on `make run-lambda`'s stack
(scripts/test-run-lambda.sh), where the path is the real binaries': the
stream to `events`, EventBridge and SQS (gates.run_lambda_aws), the
fan-out and the attempt in `webhooks`.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from queue import Empty, Queue
from typing import Any


def call(base: str, key: str, method: str, path: str, body: dict | None = None) -> Any:
    request = urllib.request.Request(
        base + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={"x-api-key": key, "content-type": "application/json"},
        method=method,
    )
    # cargo lambda watch answers a rare 500 while it recycles an instance.
    for attempt in range(5):
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            text = error.read().decode(errors="replace")
            if error.code != 500 or attempt == 4:
                sys.exit(f"webhook check: {method} {path}: {error.code} {text}")
        time.sleep(1)
    raise AssertionError("unreachable")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--staff-key", required=True)
    parser.add_argument("--customer-key", required=True)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()
    base, staff, customer = args.base_url.rstrip("/"), args.staff_key, args.customer_key

    category = call(base, staff, "POST", "/categories", {"name": f"webhook-check-{uuid.uuid4().hex[:8]}"})
    pet = call(base, staff, "POST", "/pets", {"name": "Hook", "categoryId": category["id"], "status": "available"})
    call(base, staff, "PUT", f"/store/inventory/{pet['id']}", {"quantity": 1})

    port = free_port()
    endpoint = call(
        base, customer, "POST", "/webhooks", {"url": f"http://127.0.0.1:{port}/hooks", "events": ["order.placed"]}
    )
    receiver = subprocess.Popen(
        [sys.executable, "-m", "gates.webhook_receiver", "--port", str(port), "--secret", endpoint["secret"],
         "--answers", ",".join(["500"] * args.fail_first + ["200"])],
        stdout=subprocess.PIPE,
        text=True,
    )
    lines: Queue[str] = Queue()
    output = receiver.stdout
    assert output is not None  # stdout=PIPE

    def forward() -> None:
        for line in output:
            lines.put(line)
    threading.Thread(target=forward, daemon=True).start()
    try:
        if not lines.get(timeout=10).startswith("listening"):
            sys.exit("webhook check: the receiver did not start")
        order = call(base, customer, "POST", "/store/orders", {"petId": pet["id"], "quantity": 1})
        placed_at = time.monotonic()
        attempts: list[dict] = []
        while len(attempts) < args.fail_first + 1:
            left = args.timeout - (time.monotonic() - placed_at)
            try:
                line = json.loads(lines.get(timeout=max(left, 0.01)))
            except Empty:
                sys.exit(f"webhook check: order {order['id']}'s order.placed came {len(attempts)} times "
                         f"within {args.timeout:.0f} s, not {args.fail_first + 1}")
            payload = json.loads(line["body"])
            if payload.get("type") == "order.placed" and payload["data"]["order"]["id"] == order["id"]:
                attempts.append(line)
                if len(attempts) == 1:
                    delay = time.monotonic() - placed_at
        if any(a["verified"] != [True] for a in attempts):
            sys.exit(f"webhook check: an attempt's signature did not verify: {attempts}")
        if len({a["webhookId"] for a in attempts}) != 1:
            sys.exit(f"webhook check: the attempts carry different webhook-ids: {attempts}")
        event_id = attempts[0]["webhookId"]
        for _ in range(20):
            deliveries = call(base, customer, "GET", f"/webhooks/{endpoint['id']}/deliveries")
            shown = [(d["state"], d["attemptCount"]) for d in deliveries if d["eventId"] == event_id]
            if shown == [("delivered", len(attempts))]:
                break
            time.sleep(0.5)
        else:
            sys.exit(f"webhook check: the deliveries list does not show the delivery delivered after "
                     f"{len(attempts)} attempts: {deliveries}")
        print(f"order.placed for order {order['id']} arrived {delay:.2f} s after the order's answer, "
              f"{len(attempts)} attempt(s) with one webhook-id, each verified")
    finally:
        receiver.terminate()
        receiver.wait()
        call(base, customer, "DELETE", f"/webhooks/{endpoint['id']}")


if __name__ == "__main__":
    main()
