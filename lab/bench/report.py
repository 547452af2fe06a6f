#!/usr/bin/env python3
"""Writes docs/performance.md from one `make bench` run.

    python3 lab/bench/report.py [BENCH_DIR] [--check]

BENCH_DIR (default target/bench) holds what the run wrote: run.json (commit,
dates), coldstart.json (lab/coldstart), results.json (the runner). The page
is lab/bench/pages/performance.md, whose `{{name}}` markers are replaced by the
tables below; every figure on the page comes from those files, none is typed
by hand. A marker whose figures the run did not produce says so in the page
("not measured in this run") rather than failing, so a partial run still
makes an honest page; `--check` fails instead (make bench-report uses it on
a full run's files).

Standard library only: it runs on a fresh machine before any install.
"""

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "lab" / "bench" / "pages" / "performance.md"
PAGE = ROOT / "docs" / "performance.md"


def load(directory, name):
    path = directory / name
    if not path.exists():
        return None
    with path.open() as f:
        return json.load(f)


def num(x, digits=1):
    """A figure as the page shows it: '-' for no sample (NaN or null)."""
    if x is None or (isinstance(x, float) and x != x):
        return "-"
    if isinstance(x, int) or (abs(x) >= 1000 and digits <= 1):
        return f"{x:,.0f}"
    return f"{x:,.{digits}f}"


def usd(x, digits=3):
    return "-" if x is None else f"${x:,.{digits}f}"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


class Missing(Exception):
    """The run did not produce what a marker needs."""


def need(value, what):
    if not value:
        raise Missing(what)
    return value


# --- the tables, one per marker ---------------------------------------------

def run_header(f):
    run, results, cold = f["run"], f["results"], f["coldstart"]
    machine = (results or cold or {}).get("machine")
    need(run, "run.json (lab/bench/run.sh writes it)")
    need(machine, "the machine (results.json or coldstart.json)")
    dirty = " (with uncommitted changes)" if run.get("dirty") else ""
    lines = [
        f"- **Commit**: `{run['commit']}`{dirty}",
        f"- **Run**: {run['started_at']} to {run.get('finished_at', '?')} (UTC)",
        f"- **Machine**: {machine['cpu']}, {machine['logical_cpus']} logical CPUs, "
        f"{machine['memory_gib']:.1f} GiB, kernel {machine.get('kernel') or '?'}; "
        f"{machine.get('rustc') or 'rustc ?'}; DynamoDB Local on {machine.get('java') or 'Java ?'}",
    ]
    if results:
        s = results["settings"]
        lines.append(
            f"- **Settings**: load {s['concurrency']} connections for {s['seconds']} s "
            f"after {s['warmup_seconds']} s; {s['cold_spawns']} full-CPU spawns; "
            f"each operation counted {s['count_repeats']} times"
        )
    if cold:
        lines.append(
            f"- **Lambda-like cold start**: {cold['spawns_per_bootstrap']} spawns per "
            f"bootstrap and size; {cold['throttle']}"
        )
    return "\n".join(lines)


def coldstart(f):
    cold = need(f["coldstart"], "coldstart.json (lab/coldstart)")
    rows = []
    for at in cold["by_memory"]:
        for b in at["bootstraps"]:
            rows.append([
                f"{at['memory_mb']} MB", b["label"],
                f"**{num(b['first_response']['p50_ms'])}** / {num(b['first_response']['p95_ms'])}",
                f"{num(b['init']['p50_ms'])} / {num(b['init']['p95_ms'])}",
                p50_p95(b.get("first_invocation")),
                floor_ratios(b),
                num(b["first_invocation_cpu"]["p50_ms"], 2),
                f"{num(b['warm']['p50_ms'])} / {num(b['warm']['p95_ms'])}",
                num(b["warm_cpu"]["p50_ms"], 2),
                f"{num(b['after_idle_close']['p50_ms'])} / {num(b['after_idle_close']['p95_ms'])}",
                f"{sum(v for k, v in b['statuses'].items() if k != '200')} of "
                f"{sum(b['statuses'].values())}",
            ])
    return table(
        ["Memory", "bootstrap", "first response p50 / p95", "its init p50 / p95 (full CPU)",
         "its first invocation p50 / p95", "÷ floor's: first response (init / invocation)",
         "first invocation CPU", "warm p50 / p95", "warm CPU",
         "after idle close p50 / p95", "not 200"],
        rows,
    )


def keyed_floor(f):
    """The keyed rows against both floors: the bare one (one `GetItem`) and
    `floor-keyed` (the bare SDK making the calls contract section 4 leaves a
    keyed page), so what is DynamoDB's and what is the pet store's shows."""
    cold = need(f["coldstart"], "coldstart.json (lab/coldstart)")
    rows = []
    for at in cold["by_memory"]:
        by_label = {b["label"]: b for b in at["bootstraps"]}
        floor, keyed = by_label.get("floor"), by_label.get("floor-keyed")
        if not floor or not keyed:
            continue

        def over(b, base, figure):
            value, under = b[figure]["p50_ms"], base[figure]["p50_ms"]
            return "-" if not under else f"{value / under:.2f}"

        for label in ("floor-keyed", "pets", "store", "webhooks"):
            b = by_label.get(label)
            if not b:
                continue
            rows.append([
                f"{at['memory_mb']} MB", label,
                f"**{over(b, floor, 'warm')}** / {over(b, keyed, 'warm')}",
                f"{over(b, floor, 'first_response')} / **{over(b, keyed, 'first_response')}**",
                f"{over(b, floor, 'first_invocation')} / {over(b, keyed, 'first_invocation')}",
                num(b["warm_cpu"]["p50_ms"] - keyed["warm_cpu"]["p50_ms"], 2),
            ])
    if not rows:
        return "*The floor-keyed row was not run.*"
    return table(
        ["Memory", "bootstrap", "warm p50 ÷ floor / ÷ floor-keyed",
         "first response ÷ floor / ÷ floor-keyed", "first invocation ÷ floor / ÷ floor-keyed",
         "warm CPU over floor-keyed's (ms)"],
        rows,
    )


def p50_p95(summary):
    """A summary's p50 / p95; "-" for one a run did not record."""
    if not summary:
        return "-"
    return f"{num(summary['p50_ms'])} / {num(summary['p95_ms'])}"


def floor_ratios(b):
    """The first response's p50 over the floor's, and its two parts' (runs
    before the parts were recorded show the first response's alone)."""
    def ratio(key):
        value = b.get(key)
        return "-" if value is None else f"{value:.2f}"
    if "init_vs_floor" not in b:
        return ratio("first_response_vs_floor")
    return (f"**{ratio('first_response_vs_floor')}** "
            f"({ratio('init_vs_floor')} / {ratio('first_invocation_vs_floor')})")


def memory_size(f):
    cold = need(f["coldstart"], "coldstart.json (lab/coldstart)")
    rows = []
    for at in cold["by_memory"]:
        for b in at["bootstraps"]:
            if b["label"] == "floor":
                continue
            share = at.get("cpu_share")
            rows.append([
                f"{at['memory_mb']} MB", b["label"],
                "-" if share is None else f"{100 * share:.0f}%",
                num(b["first_response"]["p50_ms"]),
                f"{num(b['warm']['p50_ms'])} / {num(b['warm']['p95_ms'])}",
                usd(b["lambda_dollars_per_million"]),
            ])
    return table(
        ["Memory", "function", "CPU share", "first response p50 (ms)",
         "warm p50 / p95 (ms)", "Lambda $ per million warm requests"],
        rows,
    )


def full_cpu(f):
    results = need(f["results"], "results.json")
    cold = need(results.get("cold_start"), "the full-CPU cold starts")
    rows = [[
        c["function"], c["request"], c["spawns"],
        f"{num(c['ready']['p50_ms'], 2)} / {num(c['ready']['p95_ms'], 2)}",
        f"{num(c['first_response']['p50_ms'])} / {num(c['first_response']['p95_ms'])}",
        num(c["warm_invocation"]["p50_ms"], 2),
    ] for c in cold]
    return table(
        ["function", "request", "spawns", "ready p50 / p95 (ms)",
         "first response p50 / p95 (ms)", "warm invocation p50 (ms)"],
        rows,
    )


def load_runs(f):
    results = need(f["results"], "results.json")
    warm = need(results.get("warm"), "the warm load runs")
    rows = [[
        r["mix"], r["concurrency"], num(r["seconds"]), num(r["requests_per_second"], 0),
        num(r["latency"]["p50_ms"]), num(r["latency"]["p99_ms"]), r["errors"],
    ] for r in warm]
    out = table(["mix", "connections", "seconds", "requests/s", "p50 (ms)", "p99 (ms)", "errors"], rows)
    oha = results.get("oha")
    if oha:
        orows = []
        for url, run in sorted(oha["runs"].items()):
            if "error" in run:
                orows.append([f"`{url}`", "failed", "-", "-"])
            else:
                orows.append([f"`{url}`", num(run.get("requests_per_second"), 0),
                              num(run.get("p50_ms")), num(run.get("p99_ms"))])
        out += "\n\noha, one URL at a time (a cross-check):\n\n" + table(
            ["URL", "requests/s", "p50 (ms)", "p99 (ms)"], orows)
    return out


def calls(f):
    results = need(f["results"], "results.json")
    ops = need(results.get("dynamodb_calls"), "the DynamoDB call counts")
    rows = []
    for name, c in sorted(ops.items()):
        by = ", ".join(f"{v:g} {k}" for k, v in sorted(c["by_call"].items()))
        rows.append([f"`{name}`", num(c["calls_per_request"], 2), by,
                     num(c["read_units_per_request"], 2), num(c["write_units_per_request"], 2),
                     num(c["index_write_units_per_request"], 2),
                     f"{num(c['log_bytes_per_request'], 0)} / {num(c['log_lines_per_request'], 1)}",
                     num(c["request_ms"])])
    out = table(["Operation", "calls per request", "by call (rate limiter's included)",
                 "read units", "write units", "of which indexes", "log bytes / lines",
                 "request (ms, DynamoDB Local)"], rows)
    me, read = ops.get("GET /me"), ops.get("GET /store/orders/{id}")
    if me and read:
        # Contract 4d: a key's own view costs at most a warm keyed read.
        within = (me["calls_per_request"] <= read["calls_per_request"]
                  and me["read_units_per_request"] <= read["read_units_per_request"])
        out += (f"\n\n`GET /me` made {num(me['calls_per_request'], 2)} calls and "
                f"{num(me['read_units_per_request'], 2)} read units a request; a warm keyed read of one "
                f"record (`GET /store/orders/{{id}}`) {num(read['calls_per_request'], 2)} and "
                f"{num(read['read_units_per_request'], 2)}: "
                + ("within it, as section 4d of the contract asks." if within else
                   "**more than it, which section 4d of the contract does not allow.**"))
    return out


def abuse(f):
    results = need(f["results"], "results.json")
    kinds = need(results.get("abuse"), "the abuse run")
    rows = []
    for name, c in sorted(kinds.items()):
        by = ", ".join(f"{v:.3g} {k}" for k, v in sorted(c["by_call"].items())) or "none"
        statuses = ", ".join(f"{n}× {s}" for s, n in sorted(c["statuses"].items()))
        rows.append([name, num(c["calls_per_request"], 3), by, statuses])
    return table(["Requests", "calls per request", "by call", "answers"], rows)


def webhooks(f):
    results = need(f["results"], "results.json")
    hooks = need(results.get("webhooks"), "the webhooks step")
    measured = need(hooks.get("measured"), "the webhooks step's deliveries")
    basis = need(hooks.get("basis"), "the webhooks step's basis")
    rows = []
    for m in measured:
        c = m["per_delivery"]
        by = ", ".join(f"{v:.3g} {k}" for k, v in sorted(c["by_call"].items()))
        statuses = ", ".join(f"{n}× {s}" for s, n in sorted(m["attempt_statuses"].items()))
        rows.append([f"{m['case']} ({m['answers']})", m["deliveries"], num(m["attempts_per_delivery"], 1),
                     statuses, num(c["calls_per_request"], 1), by, num(c["read_units_per_request"], 2),
                     num(c["write_units_per_request"], 2), num(c["log_bytes_per_request"], 0),
                     num(m["attempt_ms"], 2), num(c["request_ms"], 1)])
    out = "Measured, per delivery:\n\n" + table(
        ["receiver", "deliveries", "attempts", "answers", "DynamoDB calls", "by call", "read units",
         "write units", "log bytes", "attempt (ms)", "handling (ms)"], rows)
    services = [("sqs", "SQS"), ("lambda", "Lambda"), ("dynamodb", "DynamoDB"), ("logs", "CloudWatch Logs"),
                ("xray", "X-Ray")]
    costs = need(hooks.get("costs"), "the webhooks step's priced cases")
    rows = [[c["case"]] + [usd(c["usd_per_million"][k], 2) for k, _ in services]
            + [f"**{usd(c['usd_per_million']['total'], 2)}**", num(c["sqs_requests"], 2),
               num(c["invocations"], 2), num(c["billed_ms"], 1), num(c["read_units"], 2),
               num(c["write_units"], 2), num(c["log_bytes"], 0), c["from"]]
            for c in costs]
    out += "\n\nA million deliveries, $ (per delivery: the requests, invocations, billed ms, units and log bytes):\n\n" + table(
        ["case"] + [name for _, name in services]
        + ["total", "SQS requests", "invocations", "billed ms", "read units", "write units", "log bytes",
           "figures"], rows)
    waits = basis["schedule_waits_s"]
    early = basis.get("early_receive_read_units")
    out += (f"\n\nThe fan-out runs in the events function, on the stream batch it reads to publish "
            f"to the bus: no SQS request or invocation per event; its messages go ten to a "
            f"`SendMessageBatch` (priced at a full stream batch's, {basis['events_batch']} events), its time "
            f"is billed once inside the handling time. At the template's settings: "
            f"{basis['memory_mb']} MB, batches of {basis['deliveries_batch']} deliveries (full, as "
            f"under load; at a trickle, batches of one, the fan-out's sends and the deliveries queue's receives and deletes "
            f"and Lambda's invocations are up to that many times more); Lambda's own lines {num(basis['platform_log_bytes'], 0)} bytes an invocation; "
            f"{100 * basis['traced_share']:.0f}% of invocations traced. The deployed schedule waits "
            f"{', '.join(str(w) for w in waits)} s ({len(waits) + 1} attempts); the run's "
            f"(`WEBHOOK_RETRY_SCHEDULE={basis['schedule_run']}`) as many, a second each. A wait past "
            f"SQS's 12 hours brings the message back before it is due: {num(basis['early_receives'], 1)} "
            f"such receives over the schedule, each a `ChangeMessageVisibility` and a read of the "
            f"delivery item ({num(early, 1) if early is not None else '-'} read units, the failed "
            f"delivery's item by DynamoDB's rules). Not included: the event itself (EventBridge and the "
            f"events function's invocation, in the cost per change above), the write that marks an endpoint failing and the one that "
            f"disables it (once per endpoint, not per delivery), and the queues' idle polling "
            f"(Lambda's pollers' empty receives, by the month).")
    for note in hooks.get("notes", []):
        out += f"\n\n*Note: {note}.*"
    return out


def overhead(f):
    results = need(f["results"], "results.json")
    o = need(results.get("in_process_overhead"), "the criterion bench (overhead.json)")
    rows = [[f"`{name}`", c["status"], num(c["p50_us"]), num(c["p99_us"]),
             num(c.get("criterion_median_us"))]
            for name, c in sorted(o["benches"].items())]
    return (f"{o['runtime']}; DynamoDB: {o['dynamodb']}.\n\n"
            + table(["case", "status", "p50 (µs)", "p99 (µs)", "criterion median (µs)"], rows))


def sizes(f):
    results = need(f["results"], "results.json")
    size = need(results.get("size"), "the zip sizes")
    rows = [[name,
             "-" if s.get("arm64_zip_bytes") is None else f"{s['arm64_zip_bytes'] / 1e6:.2f} MB",
             "-" if s.get("arm64_binary_bytes") is None else f"{s['arm64_binary_bytes'] / 1e6:.2f} MB",
             "-" if s.get("x86_64_binary_bytes") is None else f"{s['x86_64_binary_bytes'] / 1e6:.2f} MB"]
            for name, s in sorted(size.items())]
    return table(["function", "arm64 zip", "arm64 binary", "x86_64 binary"], rows)


def targets(f):
    results = need(f["results"], "results.json")
    t = need(results.get("targets"), "the targets")
    rows = [[x["target"], num(x["measured"], 2), num(x["limit"], 2), "met" if x["met"] else "**missed**"]
            for x in t]
    return table(["target", "measured", "limit", ""], rows)


def partitions(f):
    results = need(f["results"], "results.json")
    model = need(results.get("partitions"), "the partition model (lab/partitions)")
    mix = model["mix"]

    def hot(h):
        return "-" if not h else f"`{h['partition']}` ({100 * h['share']:.1f}%)"

    rows = [[s["scope"], hot(s.get("hottest_write")), num(s["write_units"]),
             num(s.get("write_ceiling_orders_per_second"), 0), hot(s.get("hottest_read")),
             num(s.get("read_ceiling_orders_per_second"), 0)] for s in model["scopes"]]
    head = (f"{mix['orders']:,} orders and {mix['reads']:,} reads by {mix['workers']} workers "
            f"({mix['pets']} pets in {mix['categories']} categories, {mix['customers']} customers), "
            f"{num(mix['seconds'])} s. {mix['description']}\n\n")
    tail = (f"\n\n**Ceiling**: {num(model.get('ceiling_orders_per_second'), 0)} orders/s with "
            f"{num(model.get('ceiling_reads_per_second'), 0)} reads/s; the first limit reached: "
            f"{model.get('first_limit') or '-'}.")
    return head + table(["scope", "busiest write partition (share)", "write units",
                         "orders/s at 1,000 WCU", "busiest read partition (share)",
                         "orders/s at 3,000 RCU"], rows) + tail + webhook_partitions(model) + at_top_rate(results)


def at_top_rate(results):
    """The same model with the capacity knob at its highest: the first limits only."""
    top = results.get("partitions_at_top_rate")
    if not top:
        return "\n\n*The model at the highest OrderRate: not run.*"
    hooks = top.get("webhooks") or {}
    settings = ", ".join(f"`{pair}`" for pair in top["mix"].get("service_env", []))
    return (f"\n\n**At OrderRate {top.get('order_rate', '?')}**, the highest the `Capacity` mapping allows "
            f"(the same replay, {settings}): the store's ceiling "
            f"{num(top.get('ceiling_orders_per_second'), 0)} orders/s (first limit: {top.get('first_limit') or '-'}); "
            f"the webhooks' first limit {num(hooks.get('ceiling_orders_per_second'), 0)} orders/s "
            f"({hooks.get('first_limit') or '-'}).")


def webhook_partitions(model):
    """The webhooks' partitions (keyed `WEBHOOK…`), which the store's rows leave out."""
    hooks = model.get("webhooks")
    if not hooks:
        return "\n\n*The webhooks' partitions: not modelled in this run.*"

    def hot(h):
        return "-" if not h else f"`{h['partition']}` ({100 * h['share']:.1f}%)"

    rows = [[p["scope"], f"`{p['pattern']}`", num(p["partitions_written"]), hot(p.get("hottest_write")),
             num(p["write_units"]), num(p.get("write_ceiling_orders_per_second"), 0),
             num(p["partitions_read"]), hot(p.get("hottest_read")),
             num(p.get("read_ceiling_orders_per_second"), 0)] for p in hooks["partitions"]]
    head = (f"\n\n**Webhooks**: {hooks['staff_endpoints']} staff endpoint (every type) and "
            f"{hooks['customer_endpoints']} customer endpoints (each its own orders' events), "
            f"registered through the API before the mix at a receiver answering 200 at once; "
            f"{num(hooks['deliveries'])} deliveries in {num(hooks['attempts'])} attempts while the mix ran "
            f"({num(hooks['deliveries_per_order'], 2)} an order), every one attempted before the model "
            f"was taken ({num(hooks['listed'])} listed at the end, {num(hooks['undelivered'])} not "
            f"delivered). Their partitions, by pattern of key:\n\n")
    tail = (f"\n\n**Webhooks' first limit**: {num(hooks.get('ceiling_orders_per_second'), 0)} orders/s; "
            f"{hooks.get('first_limit') or '-'}.")
    return head + table(["scope", "partitions", "written", "busiest write partition (share)",
                         "write units", "orders/s at 1,000 WCU", "read", "busiest read partition (share)",
                         "orders/s at 3,000 RCU"], rows) + tail


def quotas(f):
    """Where the account's default quotas bind, for each mix, and the increases the target needs."""
    results = need(f["results"], "results.json")
    model = need(results.get("quotas"), "the quota model (results.json quotas)")
    mixes = model["by_mix"]
    names = []
    for m in mixes:
        names += [b["quota"] for b in m["binds"] if b["quota"] not in names]
    at = {(m["mix"], b["quota"]): b["binds_at_requests_per_second"] for m in mixes for b in m["binds"]}
    rank = {(m["mix"], b["quota"]): i + 1 for m in mixes for i, b in enumerate(m["binds"])}
    rows = [[q] + [f"{num(at[(m['mix'], q)], 0)} ({rank[(m['mix'], q)]})" if (m["mix"], q) in at else "-"
                   for m in mixes] for q in names]
    out = table(["quota"] + [f"{m['mix']} mix, requests/s (order)" for m in mixes], rows)
    out += ("\n\nA request's time in Lambda as the model takes it: " + ", ".join(
        f"{m['mix']} {num(m['lambda_ms_per_request'], 1)} ms" for m in mixes)
        + f" (the measured request less DynamoDB Local's time, plus {num(model['dynamodb_round_trip_ms'], 0)} ms "
        f"per DynamoDB call, as on AWS). Defaults of {model['region']}.")
    needs = [[n["service"], n["quota"], f"`{n['code']}`" if n["code"] else "template parameter",
              f"{num(n['default'], 0)} {n['unit']}", num(n["needed"], 0),
              num(n["request"], 0) if n["request"] else "enough"] for n in model["needs"]]
    out += (f"\n\n**For {num(model['target_orders_per_second'], 0)} orders/s with "
            f"{num(model['target_reads_per_second'], 0)} reads/s** "
            f"({num(model['target_requests_per_second'], 0)} requests/s in all):\n\n")
    out += table(["service", "quota", "code", "default", "needed", "ask for"], needs)
    out += (f"\n\nLambda's scaling rate (1,000 environments per function every 10 s, fixed) "
            f"takes about {num(model['lambda_ramp_seconds'], 0)} s to reach that concurrency from none.")
    return out


def cost(f):
    """The all-in cost per million requests of each mix, by service."""
    results = need(f["results"], "results.json")
    model = need(results.get("cost"), "the cost model (results.json cost)")
    need(model.get("mixes"), "the cost model's mixes")
    return cost_tables(model)


def cost_tables(model):
    basis = model["basis"]
    services = [("api_gateway", "API Gateway"), ("lambda", "Lambda"), ("dynamodb", "DynamoDB"),
                ("logs", "CloudWatch Logs"), ("xray", "X-Ray"), ("eventbridge", "EventBridge")]
    rows = [[f"**{m['mix']}**"] + [usd(m["usd_per_million"][k]) for k, _ in services]
            + [f"**{usd(m['usd_per_million']['total'])}**", num(m["read_units"], 2),
               num(m["write_units"], 2), num(m["log_bytes"], 0)]
            for m in model["mixes"]]
    out = table(["mix"] + [name for _, name in services]
                + ["total", "read units", "write units", "function log bytes"], rows)
    out += "\n\nThe mixes, by weight:\n\n" + "\n".join(
        f"- **{m['mix']}**: " + ", ".join(f"{100 * w:.0f}% `{op}`" for op, w in m["weights"])
        for m in model["mixes"])
    out += (f"\n\n**Write units by DynamoDB's rules**: placing an order "
            f"{num(model['write_units_place_order'], 2)} (the rate limiter's included), an order's "
            f"whole life in the order mix {num(model['write_units_per_order'], 2)}.")
    out += (f"\n\nAt the template's defaults: {basis['memory_mb']} MB, tracing "
            f"`{basis['tracing']}` ({100 * basis['traced_share']:.0f}% of requests traced at scale), "
            f"{num(basis['cold_starts_per_million'], 0)} cold starts per million requests assumed, each "
            f"billing {num(basis['init_ms'], 1)} ms of init (the full-CPU figure); "
            f"{num(basis['events_per_change'], 2)} events per change. The function's own lines per "
            f"request are counted with the service logging as in Lambda (its metrics line, the one "
            f"line at `INFO`, is {num(basis['metrics_line_bytes'], 0)} bytes in the real bootstraps' "
            f"cold-start runs); besides them, Lambda's `platform.start` and `platform.report` "
            f"{num(basis['platform_log_bytes'], 0)} bytes, the API's access log line "
            f"{num(basis['access_log_bytes'], 0)}.")
    monthly = [[m["item"], num(m["quantity"], 0), usd(m["usd_per_month"], 2)] for m in model["monthly"]]
    out += "\n\nBy the month, whatever the traffic:\n\n" + table(["item", "quantity", "$ a month"], monthly)
    prices = [[p["item"], "$" + f"{p['usd']:.10f}".rstrip("0").rstrip("."), p["per"]]
              for p in model["prices"]]
    out += f"\n\nPrices ({model['prices_as_of']}):\n\n" + table(["item", "price", "per"], prices)
    ops = [[f"`{name}`", usd(c["api_gateway"]), usd(c["lambda"]), usd(c["dynamodb"]), usd(c["logs"]),
            usd(c["xray"]), usd(c["eventbridge"]), usd(c["total"])]
           for name, c in sorted(model["per_operation"].items())]
    out += "\n\nBy operation, $ per million requests:\n\n" + table(
        ["Operation"] + [name for _, name in services] + ["total"], ops)
    for note in basis.get("notes", []):
        out += f"\n\n*Note: {note}.*"
    return out


def notes(f):
    out = []
    for source in ("coldstart", "results"):
        data = f[source]
        if data:
            out += [f"- {source}: {n}" for n in data.get("notes", [])]
    return "\n".join(out) or "None."


MARKERS = {
    "run": run_header, "coldstart": coldstart, "keyed_floor": keyed_floor,
    "memory_size": memory_size,
    "full_cpu": full_cpu, "load": load_runs, "calls": calls, "abuse": abuse,
    "overhead": overhead, "sizes": sizes, "targets": targets,
    "partitions": partitions, "quotas": quotas, "cost": cost, "notes": notes,
    "webhooks": webhooks,
}


def render(template, figures, strict):
    missing = []

    def fill(match):
        name = match.group(1)
        if name not in MARKERS:
            raise SystemExit(f"bench-report: unknown marker {{{{{name}}}}} in {TEMPLATE}")
        try:
            return MARKERS[name](figures)
        except Missing as m:
            missing.append(f"{name}: {m}")
            return f"*Not measured in this run: {m}.*"

    page = re.sub(r"\{\{([a-z_]+)\}\}", fill, template)
    if strict and missing:
        raise SystemExit("bench-report: the run lacks " + "; ".join(missing))
    return page, missing


def main(argv):
    strict = "--check" in argv
    args = [a for a in argv if not a.startswith("--")]
    directory = Path(args[0]) if args else ROOT / "target" / "bench"
    figures = {
        "run": load(directory, "run.json"),
        "coldstart": load(directory, "coldstart.json"),
        "results": load(directory, "results.json"),
    }
    if not any(figures.values()):
        raise SystemExit(f"bench-report: no bench files in {directory}: run `make bench` first")
    page, missing = render(TEMPLATE.read_text(), figures, strict)
    banner = ("<!-- Generated by lab/bench/report.py from one `make bench` run; "
              "edit lab/bench/pages/performance.md, not this file. -->\n")
    PAGE.write_text(banner + page)
    print(f"bench-report: wrote {PAGE.relative_to(ROOT)}"
          + (f" ({len(missing)} sections not measured)" if missing else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
