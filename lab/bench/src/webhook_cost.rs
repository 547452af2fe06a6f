//! What a million webhook deliveries cost, all in, from what the webhooks
//! step measured ([`crate::webhooks`]), by the rules and prices of
//! [`crate::cost`] and [`PRICES`]: SQS, Lambda, DynamoDB, CloudWatch Logs
//! and X-Ray. The event itself (EventBridge, and the events function's
//! invocation of its stream batch) is priced per change in the main cost
//! table; the fan-out runs inside that invocation (issue 47), so it adds
//! only its own calls, time and log bytes.
//!
//! Measured, per delivery: the DynamoDB calls and units, the delivery
//! path's log bytes, its handling time, its attempts, and from its lines the
//! endpoints per event, the messages the fan-out enqueued and the attempts
//! that handed their message back. SQS is not in the process (the local
//! queue stands in for it), so its requests are those counts applied to the
//! code path of `shared/src/webhooks/deliver/sqs.rs` and the mappings: no
//! request per event (no bus rule, no events queue: the events function
//! fans out from its stream batch); a `SendMessageBatch` per 10 messages
//! the fan-out of a full stream batch enqueues (the mapping's `BatchSize`
//! events, as under load; the run places its orders one at a time);
//! per batch of the deliveries queue a receive per message received, a
//! delete per message done; a `ChangeMessageVisibility` per message handed
//! back. A batch's messages are handled side by side (`handle_batch`), so an
//! invocation lasts about one message's handling: each delivery bills its
//! handling time once per invocation it shares, rounded up to the ms. The
//! fan-out's time is in that handling time, so it is billed once, at the
//! same memory as the events function it runs in.
//!
//! The all-fail case is measured whole, its 10 attempts a second apart;
//! what the deployed schedule adds is derived: each wait past SQS's 12
//! hours brings the message back early, to be read and handed back again.

use crate::prices::PRICES;
use crate::results::CostBasis;
use crate::webhook_results::{
    DeliveryCost, DeliveryServiceCosts, MeasuredDeliveries, WebhookBasis, Webhooks, ALL_FAILED,
    DELIVERED_FIRST, DELIVERED_SECOND, EMPTY_FAN_OUT,
};
use petstore_lab_template::Template;

/// The longest SQS keeps a received message invisible: 12 hours, less the
/// minute of margin the code keeps (`MAX_VISIBILITY`, `deliver/sqs.rs`).
const MAX_VISIBILITY_S: f64 = 12.0 * 3600.0 - 60.0;
/// Entries per `SendMessageBatch` (SQS's limit).
const SEND_BATCH: f64 = 10.0;
/// Each wait is jittered by 0.9 to 1.1 (`schedule::JITTER`).
const JITTER: (f64, f64) = (0.9, 1.1);
const GB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The deployed schedule's waits, seconds, from `DEFAULT_SCHEDULE` in
/// `shared/src/webhooks/schedule.rs` (the source is the schedule's one
/// statement; the bench links nothing of the service).
pub fn deployed_schedule(source: &str) -> Option<Vec<u64>> {
    let line = source.lines().find_map(|line| {
        line.trim()
            .strip_prefix("pub const DEFAULT_SCHEDULE: &str = \"")
    })?;
    let waits = line.split('"').next()?;
    waits.split(',').map(|w| w.trim().parse().ok()).collect()
}

/// Receives of a message that come before its delivery is due, over the
/// schedule: a wait `w` past the visibility limit comes back
/// `ceil(w / limit) - 1` times early, averaged over the jitter.
pub fn early_receives(waits: &[u64]) -> f64 {
    const STEPS: usize = 200;
    let mut total = 0.0;
    for wait in waits {
        let mut sum = 0.0;
        for step in 0..=STEPS {
            let jitter = JITTER.0 + (JITTER.1 - JITTER.0) * step as f64 / STEPS as f64;
            sum += (*wait as f64 * jitter / MAX_VISIBILITY_S).ceil().max(1.0) - 1.0;
        }
        total += sum / (STEPS + 1) as f64;
    }
    total
}

/// The queue the webhooks function's attempts are read from.
const DELIVERIES_QUEUE: &str = "WebhookDeliveriesQueue";
/// The function whose stream batch the fan-out sees at once, and so groups
/// into its `SendMessageBatch` calls.
const FAN_OUT_FUNCTION: &str = "EventsFunction";

/// The measured cases priced: a first success, and every attempt failed
/// over the deployed schedule; a retried success is priced as measured.
/// `basis` is the main cost model's (memory, Lambda's lines, tracing).
pub fn costs(mut webhooks: Webhooks, template: &Template, basis: &CostBasis) -> Webhooks {
    let Some(mut webhook_basis) = webhooks.basis.take() else {
        return webhooks;
    };
    webhook_basis.events_batch = template.stream_batch(FAN_OUT_FUNCTION).unwrap_or_else(|| {
        let note = "no stream mapping on the events function in template.yaml: batches of 1";
        webhooks.notes.push(note.to_string());
        1
    });
    let queue = DELIVERIES_QUEUE;
    webhook_basis.deliveries_batch = template.queue_batch(queue).unwrap_or_else(|| {
        let note = format!("no event source mapping on {queue} in template.yaml: batches of 1");
        webhooks.notes.push(note);
        1
    });
    webhook_basis.memory_mb = basis.memory_mb;
    webhook_basis.platform_log_bytes = basis.platform_log_bytes;
    webhook_basis.traced_share = basis.traced_share;
    webhook_basis.early_receives = early_receives(&webhook_basis.schedule_waits_s);
    let early = webhook_basis.early_receives;
    let waits = &webhook_basis.schedule_waits_s;
    let attempts = waits.len() + 1;
    let days = waits.iter().sum::<u64>() as f64 / 86400.0;
    let all_fail = format!("all {attempts} attempts fail ({days:.1} days)");
    let priced = [
        ("first attempt succeeds", DELIVERED_FIRST, 0.0),
        ("second attempt succeeds", DELIVERED_SECOND, 0.0),
        (all_fail.as_str(), ALL_FAILED, early),
        ("an event no endpoint takes (per event)", EMPTY_FAN_OUT, 0.0),
    ];
    for (name, measured, early_receives) in priced {
        let Some(measured) = webhooks.measured.iter().find(|m| m.case == measured) else {
            continue;
        };
        if early_receives > 0.0 && webhook_basis.early_receive_read_units.is_none() {
            let note = format!("{name} not priced: its delivery item was not found to size");
            webhooks.notes.push(note);
            continue;
        }
        let from = if early_receives > 0.0 {
            format!("measured, {attempts} attempts a second apart; {early_receives:.1} receives before the delivery is due (waits past SQS's 12 hours) derived")
        } else {
            "measured".to_string()
        };
        let case = Case {
            name,
            measured,
            early_receives,
            from,
        };
        let cost = price(&case, &webhook_basis);
        webhooks.costs.push(cost);
    }
    webhooks.basis = Some(webhook_basis);
    webhooks
}

/// What one priced case is made of: the measured case, and the early
/// receives the deployed schedule adds to it (none for a first success).
pub struct Case<'a> {
    pub name: &'a str,
    pub measured: &'a MeasuredDeliveries,
    pub early_receives: f64,
    pub from: String,
}

pub fn price(case: &Case<'_>, basis: &WebhookBasis) -> DeliveryCost {
    let m = case.measured;
    let calls = &m.per_delivery;
    let (events_batch, deliveries_batch) = (
        f64::from(basis.events_batch.max(1)),
        f64::from(basis.deliveries_batch.max(1)),
    );
    let early = case.early_receives;
    let received = m.attempts_per_delivery + early;
    // A fan-out that enqueued nothing never touches the deliveries queue.
    let deliveries_queue = if m.enqueued_per_fan_out > 0.0 {
        // The events function fans out a whole stream batch at once (full,
        // as under load), its messages ten a `SendMessageBatch`.
        let enqueued = m.enqueued_per_fan_out * events_batch;
        (enqueued / SEND_BATCH).ceil() / enqueued
            + received / deliveries_batch
            + (m.handed_back_per_delivery + early)
            + 1.0 / deliveries_batch
    } else {
        0.0
    };
    // Nothing per event: the fan-out is in the events function's
    // invocation of its stream batch, priced per change already.
    let sqs_requests = deliveries_queue;
    let invocations = received / deliveries_batch;
    // An early receive's handling: its one read, at the mean call's time.
    let call_ms = calls.dynamodb_ms / calls.calls_per_request.max(1.0);
    let handling_ms = calls.request_ms + early * call_ms;
    // Each invocation lasts one message's handling (a delivery's, its
    // fan-out included, spread over the messages it received).
    // An event no endpoint takes makes no invocation of its own: its
    // fan-out's time (any read) is billed inside the events function's.
    let billed_ms = match invocations > 0.0 {
        true => invocations * (handling_ms / received.max(1.0)).ceil().max(1.0),
        false => handling_ms.max(0.0),
    };
    let read_units =
        calls.read_units_per_request + early * basis.early_receive_read_units.unwrap_or_default();
    let write_units = calls.write_units_per_request;
    let log_bytes = calls.log_bytes_per_request + invocations * basis.platform_log_bytes;
    let p = &PRICES;
    let gb = f64::from(basis.memory_mb) / 1024.0;
    let mut usd = DeliveryServiceCosts {
        sqs: sqs_requests * p.sqs_per_million_requests,
        lambda: invocations * p.lambda_per_million_requests
            + 1e6 * billed_ms / 1e3 * gb * p.lambda_per_gb_second,
        dynamodb: read_units * p.dynamodb_per_million_reads
            + write_units * p.dynamodb_per_million_writes,
        logs: 1e6 * log_bytes / GB * p.logs_per_gb,
        xray: invocations * basis.traced_share * p.xray_per_million_traces,
        total: 0.0,
    };
    usd.total = usd.sqs + usd.lambda + usd.dynamodb + usd.logs + usd.xray;
    DeliveryCost {
        case: case.name.into(),
        from: case.from.clone(),
        attempts: m.attempts_per_delivery,
        sqs_requests,
        invocations,
        billed_ms,
        read_units,
        write_units,
        log_bytes,
        usd_per_million: usd,
    }
}

/// The section `make bench` prints.
pub fn print(webhooks: &Webhooks) {
    if webhooks.measured.is_empty() && webhooks.notes.is_empty() {
        return;
    }
    println!("\nWebhooks: one order event to one endpoint, a receiver on 127.0.0.1 answering at once (per delivery)");
    println!(
        "  {:<34} {:>5} {:>8} {:>6} {:>6} {:>6} {:>7} {:>10} {:>11}",
        "receiver", "n", "attempts", "calls", "RU", "WU", "log B", "attempt ms", "handling ms"
    );
    for m in &webhooks.measured {
        let c = &m.per_delivery;
        println!(
            "  {:<34} {:>5} {:>8.2} {:>6.1} {:>6.2} {:>6.2} {:>7.0} {:>10.2} {:>11.2}",
            format!("{} ({})", m.case, m.answers),
            m.deliveries,
            m.attempts_per_delivery,
            c.calls_per_request,
            c.read_units_per_request,
            c.write_units_per_request,
            c.log_bytes_per_request,
            m.attempt_ms,
            c.request_ms,
        );
    }
    println!(
        "  {:<34} {:>6} {:>6} {:>8} {:>6} {:>6} {:>7} | {:>7} {:>11}",
        "$ per million deliveries",
        "SQS",
        "Lambda",
        "DynamoDB",
        "Logs",
        "X-Ray",
        "total",
        "SQS req",
        "invocations"
    );
    for cost in &webhooks.costs {
        let usd = &cost.usd_per_million;
        println!(
            "  {:<34} {:>6.2} {:>6.2} {:>8.2} {:>6.2} {:>6.2} {:>7.2} | {:>7.2} {:>11.2}",
            cost.case,
            usd.sqs,
            usd.lambda,
            usd.dynamodb,
            usd.logs,
            usd.xray,
            usd.total,
            cost.sqs_requests,
            cost.invocations,
        );
    }
    for note in &webhooks.notes {
        println!("  note: {note}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::OperationCalls;

    #[test]
    fn the_schedule_and_batches_are_read_from_their_sources() {
        let source = "pub const DEFAULT_SCHEDULE: &str = \"5,300,86400\";\n";
        assert_eq!(deployed_schedule(source), Some(vec![5, 300, 86400]));
        assert_eq!(deployed_schedule("const OTHER: &str = \"1\";"), None);
        // The template's own stream and deliveries mappings are found: the
        // fan-out's batch, and the attempts' (set by OrderRate: 10 at the
        // default).
        let deployed = Template::parse(include_str!("../../../template.yaml")).unwrap();
        let webhooks = || Webhooks {
            basis: Some(WebhookBasis::default()),
            ..Webhooks::default()
        };
        let basis = CostBasis::for_tests(256, "PassThrough", 0.0);
        let priced = costs(webhooks(), &deployed, &basis);
        let priced_basis = priced.basis.expect("a basis");
        assert_eq!(priced_basis.events_batch, 100);
        assert_eq!(priced_basis.deliveries_batch, 10);
        assert!(priced.notes.is_empty(), "{:?}", priced.notes);
        // Without the mappings: batches of 1, each noted.
        let bare = costs(webhooks(), &Template::default(), &basis);
        assert_eq!(bare.notes.len(), 2, "{:?}", bare.notes);
        let bare = bare.basis.expect("a basis");
        assert_eq!((bare.events_batch, bare.deliveries_batch), (1, 1));
    }

    #[test]
    fn only_waits_past_twelve_hours_come_back_early() {
        assert_eq!(early_receives(&[5, 300, 36000]), 0.0);
        assert!((early_receives(&[50400, 72000]) - 2.0).abs() < 1e-9);
        // 24 h jittered: past twice the limit about half the time.
        let day = early_receives(&[86400]);
        assert!((1.4..1.6).contains(&day), "{day}");
    }

    #[test]
    fn a_first_success_in_full_batches_is_priced_by_the_code_path() {
        let measured = MeasuredDeliveries {
            case: "delivered".into(),
            answers: "200".into(),
            deliveries: 1,
            attempts_per_delivery: 1.0,
            attempt_statuses: Default::default(),
            per_delivery: OperationCalls {
                repeats: 1,
                statuses: Default::default(),
                calls_per_request: 8.0,
                by_call: Default::default(),
                read_units_per_request: 2.0,
                write_units_per_request: 6.0,
                index_write_units_per_request: 0.0,
                refused_write_units_per_request: 0.0,
                write_units_by_table: Default::default(),
                dynamodb_bytes_per_request: 0.0,
                log_bytes_per_request: 1024.0,
                log_lines_per_request: 3.0,
                request_ms: 19.5,
                dynamodb_ms: 16.0,
            },
            attempt_ms: 1.0,
            endpoints_per_event: 1.0,
            enqueued_per_fan_out: 1.0,
            handed_back_per_delivery: 0.0,
            other_fan_outs_per_delivery: 1.0,
        };
        let basis = WebhookBasis {
            memory_mb: 256,
            events_batch: 10,
            deliveries_batch: 10,
            schedule_waits_s: vec![],
            schedule_run: String::new(),
            early_receives: 0.0,
            early_receive_read_units: Some(1.0),
            platform_log_bytes: 0.0,
            traced_share: 0.0,
        };
        let case = Case {
            name: "first attempt succeeds",
            measured: &measured,
            early_receives: 0.0,
            from: String::new(),
        };
        let cost = price(&case, &basis);
        // Nothing per event (the events function fans out its stream batch
        // of 10 at once): a tenth of a SendMessageBatch, of a receive and of
        // a delete.
        assert!((cost.sqs_requests - 0.3).abs() < 1e-9);
        // A tenth of a deliveries batch's invocation; none of its own.
        assert!((cost.invocations - 0.1).abs() < 1e-9);
        // Its 0.1 invocation lasts its 19.5 ms, rounded up.
        assert!((cost.billed_ms - 2.0).abs() < 1e-9);
        assert!((cost.usd_per_million.sqs - 0.12).abs() < 1e-9);
        assert!((cost.usd_per_million.dynamodb - (0.25 + 3.75)).abs() < 1e-9);
        let total = cost.usd_per_million;
        let sum = total.sqs + total.lambda + total.dynamodb + total.logs + total.xray;
        assert!((total.total - sum).abs() < 1e-12);
    }
}
