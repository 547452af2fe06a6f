#!/usr/bin/env python3
"""The cost of a million webhook deliveries, all in (docs/webhooks.md, "Cost").

    .venv/bin/python scripts/webhook-cost.py [--template template.yaml] [--markdown]

Computed, not measured: from the template's settings (the function's memory,
each queue mapping's batch size) and the list prices the bench applies
(bench/src/prices.rs, read here so that one table of prices serves both;
SQS, which the bench does not price, is the one price held here). What each
delivery costs is counted from the delivery path as written
(shared/src/webhooks/deliver: the fan-out, the attempt, its records), under
the assumptions named in ASSUMED; change one and the figures follow.

Two cases: every delivery succeeds at its first attempt (the common case),
and every delivery fails all 10 attempts of the contract's schedule (the
worst case: an endpoint down for 3 days).
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRICES_RS = ROOT / "bench" / "src" / "prices.rs"

# SQS standard queues, per million requests after the first million a month
# (aws.amazon.com/sqs/pricing, us-east-1, as of 2026-11); each 64 KB of a
# request's payload is one request, a batch of up to 10 is one request.
SQS_PER_MILLION_REQUESTS = 0.40
# KB per DynamoDB write unit and read unit (a strongly consistent read).
WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096
GB = 1024**3

ASSUMED = {
    # The signed body: an order event's {type, timestamp, data} is ~0.5 KB.
    "body_bytes": 600,
    # The delivery item besides its body (keys, state, times) and per attempt kept.
    "delivery_item_overhead_bytes": 350,
    "attempt_entry_bytes": 110,
    # Endpoints subscribed per event: an order's owner's one endpoint.
    "endpoints_per_event": 1,
    # How full the mappings' batches are: 1 at a trickle, the batch size under load.
    "batch_fill": "batch size",
    # One attempt's wall time (the receiver's answer), and the rest of a
    # batch's work (reads, writes, the queue): a batch's attempts run side by side.
    "attempt_ms": 250,
    "batch_overhead_ms": 40,
    "fan_out_batch_ms": 40,
    # The lines written: one per attempt, its EMF line, one per fan-out.
    "attempt_log_bytes": 330,
    "emf_line_bytes": 420,
    "fan_out_log_bytes": 260,
}


def prices():
    """The bench's price table (bench/src/prices.rs), by field name."""
    text = PRICES_RS.read_text()
    body = text.split("pub const PRICES: Prices = Prices {", 1)[1].split("};", 1)[0]
    found = {name: float(value.replace("_", ""))
             for name, value in re.findall(r"(\w+):\s*([0-9][0-9_.]*),", body)}
    for name in ("lambda_per_million_requests", "lambda_per_gb_second", "dynamodb_per_million_writes",
                 "dynamodb_per_million_reads", "logs_per_gb"):
        if name not in found:
            sys.exit(f"webhook-cost: {PRICES_RS.relative_to(ROOT)} has no {name}")
    return found


def settings(template_path):
    """What the template sets: memory (its default) and each mapping's batch size."""
    from samtranslator.yaml_helper import yaml_parse

    template = yaml_parse(Path(template_path).read_text())
    function = template["Resources"]["WebhooksFunction"]["Properties"]
    memory = function.get("MemorySize") or template["Globals"]["Function"]["MemorySize"]
    if isinstance(memory, dict):
        memory = template["Parameters"][memory["Ref"]]["Default"]
    batches = {}
    for name, event in function["Events"].items():
        if event["Type"] == "SQS":
            queue = event["Properties"]["Queue"]["Fn::GetAtt"][0]
            batches[queue] = int(event["Properties"].get("BatchSize", 10))
    return {"memory_mb": int(memory), "events_batch": batches["WebhookEventsQueue"],
            "deliveries_batch": batches["WebhookDeliveriesQueue"]}


def units(size, unit):
    return max(1, -(-size // unit))


def per_delivery(config, attempts, waits_over_12h):
    """Requests, units, seconds and bytes one delivery costs, `attempts` made."""
    a = ASSUMED
    e = a["endpoints_per_event"]
    fan_batch, del_batch = config["events_batch"], config["deliveries_batch"]
    item = a["body_bytes"] + a["delivery_item_overhead_bytes"]
    item_after = item + min(attempts, 20) * a["attempt_entry_bytes"]
    # SQS: the rule's SendMessage, the mapping's receive and delete per batch
    # (per event, shared by its endpoints); SendMessageBatch per 10
    # deliveries of an event; per attempt a receive and, but for the last,
    # ChangeMessageVisibility; a wait over 12 h one more of each; a delete.
    fan_out_sqs = (1 + 2 / fan_batch) / e
    sends = 1 / min(e, 10)
    receives = (attempts + waits_over_12h) / del_batch
    hand_backs = (attempts - 1) + waits_over_12h
    delete = 1 / del_batch
    sqs = fan_out_sqs + sends + receives + hand_backs + delete
    # DynamoDB: the fan-out's subscribers look-up (an index query, per event)
    # and the conditional put of the delivery; per receive the delivery
    # (consistent read), per attempt the endpoint and its owner's key
    # (consistent reads), the slot taken and given back, the attempt recorded
    # (an update bills the larger of the item before and after).
    reads = 0.5 / e + (attempts + waits_over_12h) * units(item_after, READ_UNIT_BYTES) + attempts * 2
    writes = units(item, WRITE_UNIT_BYTES) + attempts * (2 + units(item_after, WRITE_UNIT_BYTES))
    # Lambda: a fan-out invocation per batch of events, a delivery invocation
    # per batch of messages (a batch's attempts side by side: one attempt's
    # time and the batch's own work).
    invocations = 1 / (fan_batch * e) + (attempts + waits_over_12h) / del_batch
    seconds = (a["fan_out_batch_ms"] / (fan_batch * e)
               + attempts * (a["attempt_ms"] + a["batch_overhead_ms"]) / del_batch
               + waits_over_12h * a["batch_overhead_ms"] / del_batch) / 1000
    logs = a["fan_out_log_bytes"] / e + attempts * (a["attempt_log_bytes"] + a["emf_line_bytes"])
    return {"sqs": sqs, "reads": reads, "writes": writes, "invocations": invocations,
            "seconds": seconds, "log_bytes": logs}


def dollars(use, config, p):
    gb = config["memory_mb"] / 1024
    return {
        "SQS": use["sqs"] * SQS_PER_MILLION_REQUESTS,
        "Lambda": use["invocations"] * p["lambda_per_million_requests"]
        + 1e6 * use["seconds"] * gb * p["lambda_per_gb_second"],
        "DynamoDB": use["writes"] * p["dynamodb_per_million_writes"]
        + use["reads"] * p["dynamodb_per_million_reads"],
        "CloudWatch Logs": 1e6 * use["log_bytes"] / GB * p["logs_per_gb"],
    }


CASES = [
    ("first attempt succeeds", 1, 0),
    # The schedule's waits of 14, 20 and 24 hours each come back once early (SQS's 12-hour limit).
    ("all 10 attempts fail (3 days)", 10, 3),
]


def rows(template_path):
    config, p = settings(template_path), prices()
    out = []
    for name, attempts, waits in CASES:
        use = per_delivery(config, attempts, waits)
        cost = dollars(use, config, p)
        out.append((name, use, cost, sum(cost.values())))
    return config, out


def markdown(template_path):
    config, cases = rows(template_path)
    services = list(cases[0][2])
    lines = ["| case | " + " | ".join(services) + " | total | SQS requests | write units | read units |",
             "|---" * (len(services) + 5) + "|"]
    for name, use, cost, total in cases:
        lines.append(f"| {name} | " + " | ".join(f"${cost[s]:.2f}" for s in services)
                     + f" | **${total:.2f}** | {use['sqs']:.2f} | {use['writes']:.1f} | {use['reads']:.1f} |")
    lines.append("")
    lines.append(f"Per million deliveries, at the template's settings: {config['memory_mb']} MB, batches of "
                 f"{config['events_batch']} events and {config['deliveries_batch']} deliveries (full, as "
                 f"under load); {ASSUMED['endpoints_per_event']} endpoint per event, a "
                 f"{ASSUMED['body_bytes']}-byte body, {ASSUMED['attempt_ms']} ms per attempt. SQS at "
                 f"${SQS_PER_MILLION_REQUESTS:.2f} per million requests, the rest at the bench's prices "
                 f"(bench/src/prices.rs). Not included: the event itself (EventBridge, priced by the "
                 f"bench per change; a rule's delivery to SQS costs nothing more), and the queues' idle "
                 f"polling (Lambda's pollers' empty receives, about 1.3 million requests a month for "
                 f"the two queues, ${1.3 * SQS_PER_MILLION_REQUESTS:.2f}).")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--template", default=str(ROOT / "template.yaml"))
    args = parser.parse_args()
    print(markdown(args.template))


if __name__ == "__main__":
    main()
