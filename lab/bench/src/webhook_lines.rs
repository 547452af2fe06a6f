//! What the delivery path's log lines say, and a case's record made from
//! them and its counts: the webhooks step ([`crate::webhooks`]) reads its
//! service's lines as Lambda would write them (JSON, fields flattened).

use crate::calls::Sent;
use crate::operation_calls::{OperationCalls, StatusCounts};
use crate::webhook_results::MeasuredDeliveries;
use serde_json::Value;
use std::path::Path;

/// How many lines `file` has now (an events file a stream follower
/// appends to); none if it is not there yet.
pub fn count_lines(file: &Path) -> usize {
    std::fs::read_to_string(file).map_or(0, |text| text.lines().count())
}

/// The metrics line every attempt writes in Lambda (`deliver/observe.rs`),
/// after its attempt line; and the fan-out's line, one per stream batch
/// that carried events webhooks take (`functions/events/src/webhooks.rs`).
pub const ATTEMPT_METRICS: &str = "\"WebhookAttempts\"";
pub const FAN_OUT: &str = "\"webhook fan-out\"";

/// Whether a log line is the delivery path's: the fan-out's and attempts'
/// lines and the attempts' metrics lines all name webhooks; the order's
/// request line and the events consumer's lines do not.
pub fn is_delivery_line(line: &str) -> bool {
    line.contains("webhook") || line.contains("Webhook")
}

/// The log's lines so far that contain `needle`.
pub fn lines_with(log: &Path, needle: &str) -> usize {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().filter(|l| l.contains(needle)).count()
}

/// The events fanned out so far by the log's fan-out lines (each line
/// counts its batch's `events`; a line without the field, one event).
pub fn fanned_events(log: &Path) -> usize {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<String> = text
        .lines()
        .filter(|l| l.contains(FAN_OUT))
        .map(str::to_string)
        .collect();
    json_lines(&lines, "webhook fan-out")
        .map(|line| line["events"].as_u64().unwrap_or(1) as usize)
        .sum()
}

/// What an attempt line says (`deliver/observe.rs`'s `webhook attempt`).
pub struct AttemptLine {
    pub webhook_id: u64,
    pub event_id: String,
    pub status: u16,
    pub duration_ms: f64,
    pub state: String,
}

fn json_lines<'a>(lines: &'a [String], message: &'a str) -> impl Iterator<Item = Value> + 'a {
    lines
        .iter()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(move |line| line["message"] == message)
}

/// The attempt lines among `lines`.
pub fn attempt_fields(lines: &[String]) -> impl Iterator<Item = AttemptLine> + '_ {
    json_lines(lines, "webhook attempt").map(|line| AttemptLine {
        webhook_id: line["webhook_id"].as_u64().unwrap_or_default(),
        event_id: line["event_id"].as_str().unwrap_or_default().to_string(),
        status: line["status"].as_u64().map_or(0, |s| s as u16),
        // In Lambda the attempt's line is its metrics line (observe.rs).
        duration_ms: line["duration_ms"]
            .as_f64()
            .or_else(|| line["WebhookAttemptDuration"].as_f64())
            .unwrap_or_default(),
        state: line["state"].as_str().unwrap_or_default().to_string(),
    })
}

/// The fan-out lines among `lines` (one per stream batch): those that
/// enqueued deliveries (their number: the sends' groups), the events some
/// endpoint took, their endpoints and messages summed; and the events no
/// endpoint took (an order's `stock.changed`).
#[derive(Debug, PartialEq)]
pub struct FanOuts {
    pub delivering: usize,
    pub taken: usize,
    pub endpoints: f64,
    pub enqueued: f64,
    pub empty: usize,
}

pub fn fan_outs(lines: &[String]) -> FanOuts {
    let mut found = FanOuts {
        delivering: 0,
        taken: 0,
        endpoints: 0.0,
        enqueued: 0.0,
        empty: 0,
    };
    for line in json_lines(lines, "webhook fan-out") {
        let enqueued = line["enqueued"].as_f64().unwrap_or_default();
        // A line of one event (the events queue's) has no counts of events.
        let events = line["events"].as_u64().unwrap_or(1) as usize;
        let taken = line["taken"]
            .as_u64()
            .map_or(usize::from(enqueued > 0.0), |n| n as usize);
        if enqueued > 0.0 {
            found.delivering += 1;
            found.endpoints += line["endpoints"].as_f64().unwrap_or_default();
            found.enqueued += enqueued;
        }
        found.taken += taken;
        found.empty += events.saturating_sub(taken);
    }
    found
}

/// A case's record from what its deliveries made; the fan-outs of events
/// no endpoint took (`empty`, measured on their own) are taken off, so the
/// figures are the deliveries' alone.
pub fn summarize(
    (case, answers): (&str, &str),
    sent: Sent,
    empty: Option<&OperationCalls>,
) -> MeasuredDeliveries {
    let deliveries = sent.requests.max(1) as f64;
    let attempts: Vec<AttemptLine> = attempt_fields(&sent.lines).collect();
    let mut statuses = StatusCounts::new();
    for attempt in &attempts {
        *statuses.entry(attempt.status).or_insert(0) += 1;
    }
    let handed_back = attempts.iter().filter(|a| a.state == "pending").count();
    // Over no attempt, 0 (a float sum of nothing is -0.0).
    let attempt_ms = attempts
        .iter()
        .map(|a| a.duration_ms)
        .fold(0.0, |sum, ms| sum + ms);
    let fanned = fan_outs(&sent.lines);
    let per_fan_out = |n: f64| n / fanned.delivering.max(1) as f64;
    let per_event = |n: f64| n / fanned.taken.max(1) as f64;
    let other_fan_outs = fanned.empty as f64 / deliveries;
    let mut per_delivery = sent.per_request();
    if let Some(empty) = empty {
        take_off(&mut per_delivery, empty, other_fan_outs);
    }
    MeasuredDeliveries {
        case: case.into(),
        answers: answers.into(),
        deliveries: per_delivery.repeats,
        attempts_per_delivery: attempts.len() as f64 / deliveries,
        attempt_statuses: statuses,
        attempt_ms: attempt_ms / attempts.len().max(1) as f64,
        endpoints_per_event: per_event(fanned.endpoints),
        enqueued_per_fan_out: per_fan_out(fanned.enqueued),
        handed_back_per_delivery: handed_back as f64 / deliveries,
        other_fan_outs_per_delivery: other_fan_outs,
        per_delivery,
    }
}

/// `calls` less `times` the per-request figures of `other`.
fn take_off(calls: &mut OperationCalls, other: &OperationCalls, times: f64) {
    if times == 0.0 {
        return;
    }
    calls.calls_per_request -= times * other.calls_per_request;
    for (call, n) in &other.by_call {
        let left = calls.by_call.entry(call.clone()).or_default();
        *left -= times * n;
    }
    calls.by_call.retain(|_, n| n.abs() > 1e-9);
    calls.read_units_per_request -= times * other.read_units_per_request;
    calls.write_units_per_request -= times * other.write_units_per_request;
    calls.index_write_units_per_request -= times * other.index_write_units_per_request;
    calls.refused_write_units_per_request -= times * other.refused_write_units_per_request;
    for (table, units) in &other.write_units_by_table {
        *calls.write_units_by_table.entry(table.clone()).or_default() -= times * units;
    }
    calls.dynamodb_bytes_per_request -= times * other.dynamodb_bytes_per_request;
    calls.log_bytes_per_request -= times * other.log_bytes_per_request;
    calls.log_lines_per_request -= times * other.log_lines_per_request;
    calls.request_ms -= times * other.request_ms;
    calls.dynamodb_ms -= times * other.dynamodb_ms;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines() -> Vec<String> {
        [
            r#"{"level":"INFO","message":"webhook fan-out","event_type":"order.placed","endpoints":1,"enqueued":1}"#,
            r#"{"level":"INFO","message":"webhook fan-out","event_type":"stock.changed","endpoints":0,"enqueued":0}"#,
            r#"{"level":"INFO","message":"webhook attempt","webhook_id":7,"event_id":"e:0","status":500,"error":"status","duration_ms":2,"state":"pending","manual":false}"#,
            r#"{"Function":"webhooks","WebhookAttempts":1,"_aws":{}}"#,
        ]
        .iter()
        .map(|l| l.to_string())
        .collect()
    }

    #[test]
    fn the_delivery_path_s_lines_are_read_from_the_json_lines() {
        assert!(lines().iter().all(|line| is_delivery_line(line)));
        assert!(!is_delivery_line(
            r#"{"Function":"store","Route":"POST /store/orders"}"#
        ));
        let lines = lines();
        let attempt = attempt_fields(&lines).next().unwrap();
        assert_eq!((attempt.webhook_id, attempt.status), (7, 500));
        assert_eq!(attempt.event_id, "e:0");
        assert_eq!(attempt.state, "pending");
        // In Lambda, the attempt's one line is its metrics line.
        let emf = [
            r#"{"Function":"webhooks","WebhookAttempts":1,"WebhookAttemptDuration":3,"message":"webhook attempt","webhook_id":8,"event_id":"e:1","status":200,"state":"delivered","manual":false,"_aws":{}}"#.to_string(),
        ];
        let attempt = attempt_fields(&emf).next().unwrap();
        assert_eq!((attempt.webhook_id, attempt.status), (8, 200));
        assert_eq!(attempt.duration_ms, 3.0);
        let fanned = fan_outs(&lines);
        let expected = FanOuts {
            delivering: 1,
            taken: 1,
            endpoints: 1.0,
            enqueued: 1.0,
            empty: 1,
        };
        assert_eq!(fanned, expected);
        // The events function's line: one per stream batch, its events counted.
        let batch = [
            r#"{"level":"INFO","message":"webhook fan-out","events":3,"taken":2,"endpoints":3,"enqueued":3,"failed":0}"#.to_string(),
        ];
        let expected = FanOuts {
            delivering: 1,
            taken: 2,
            endpoints: 3.0,
            enqueued: 3.0,
            empty: 1,
        };
        assert_eq!(fan_outs(&batch), expected);
    }

    #[test]
    fn an_empty_fan_out_measured_alone_is_taken_off_the_delivery() {
        let mut sent = Sent {
            requests: 1,
            lines: lines(),
            ..Sent::default()
        };
        sent.units.read = 3.0;
        let mut empty = Sent {
            requests: 1,
            ..Sent::default()
        };
        empty.units.read = 0.5;
        let empty = empty.per_request();
        let measured = summarize(("case", "500"), sent, Some(&empty));
        assert_eq!(measured.handed_back_per_delivery, 1.0);
        assert_eq!(measured.attempts_per_delivery, 1.0);
        assert_eq!(measured.other_fan_outs_per_delivery, 1.0);
        assert_eq!(measured.attempt_statuses.get(&500), Some(&1));
        assert_eq!(measured.per_delivery.read_units_per_request, 2.5);
    }
}
