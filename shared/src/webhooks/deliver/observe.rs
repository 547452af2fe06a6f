//! What an attempt leaves for the operator: one line. Off Lambda, a log
//! line; in Lambda, one CloudWatch Embedded Metric Format line that is also
//! the attempt's log line (its ids, status, state, `manual`, as properties
//! beside the metrics: no second line repeating them; issue 47, log bytes
//! per delivery). Its metrics (namespace `PetStore`, dimension
//! `Function = webhooks`): `WebhookAttempts` (count), `WebhookAttemptDuration`
//! (ms), `WebhookDeliveryDelay` (ms from the event to its successful
//! attempt), and `WebhookFailures` by `ErrorKind`. The deliveries queue's
//! oldest message age is SQS's own metric (`ApproximateAgeOfOldestMessage`).
//! Nothing a caller wrote goes into either line but ids (no URL, no body).

use super::items::Delivery;
use super::record::NextState;
use crate::webhooks::attempt::{Attempt, Outcome};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

pub(super) fn attempt_made(delivery: &Delivery, attempt: &Attempt, next: &NextState, manual: bool) {
    if std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some() {
        let line = attempt_line(delivery, attempt, next, manual, Utc::now());
        println!("{line}");
        return;
    }
    let error = match &attempt.outcome {
        Outcome::Failed(failure) => failure.kind.as_str(),
        Outcome::Delivered { .. } => "",
    };
    tracing::info!(
        webhook_id = delivery.webhook_id,
        event_id = %delivery.event_id.escape_debug(),
        status = attempt.outcome.status().unwrap_or(0),
        error,
        duration_ms = attempt.duration_ms,
        state = next.state.as_str(),
        manual,
        "webhook attempt"
    );
}

/// The attempt's one line in Lambda: its EMF document, with the attempt's
/// ids, status, next state and `manual` (its duration and error kind are
/// the metrics' own `WebhookAttemptDuration` and `ErrorKind`).
fn attempt_line(
    delivery: &Delivery,
    attempt: &Attempt,
    next: &NextState,
    manual: bool,
    now: DateTime<Utc>,
) -> Value {
    let mut line = emf(delivery, attempt, now);
    line["message"] = json!("webhook attempt");
    line["webhook_id"] = json!(delivery.webhook_id);
    line["event_id"] = json!(delivery.event_id);
    line["status"] = json!(attempt.outcome.status().unwrap_or(0));
    line["state"] = json!(next.state.as_str());
    line["manual"] = json!(manual);
    line
}

/// The attempt's EMF document, as of `now`.
fn emf(delivery: &Delivery, attempt: &Attempt, now: DateTime<Utc>) -> Value {
    let mut metrics = vec![
        json!({"Name": "WebhookAttempts", "Unit": "Count"}),
        json!({"Name": "WebhookAttemptDuration", "Unit": "Milliseconds"}),
    ];
    let mut document = json!({
        "Function": "webhooks",
        "WebhookAttempts": 1,
        "WebhookAttemptDuration": attempt.duration_ms,
    });
    let mut directives = Vec::new();
    match &attempt.outcome {
        Outcome::Delivered { .. } => {
            if let Some(occurred) = occurred_at(&delivery.body) {
                let delay = (now - occurred).num_milliseconds().max(0);
                metrics.push(json!({"Name": "WebhookDeliveryDelay", "Unit": "Milliseconds"}));
                document["WebhookDeliveryDelay"] = json!(delay);
            }
        }
        Outcome::Failed(failure) => {
            document["ErrorKind"] = json!(failure.kind.as_str());
            document["WebhookFailures"] = json!(1);
            directives.push(json!({
                "Namespace": crate::metrics::NAMESPACE,
                "Dimensions": [["Function", "ErrorKind"]],
                "Metrics": [{"Name": "WebhookFailures", "Unit": "Count"}],
            }));
        }
    }
    directives.insert(
        0,
        json!({"Namespace": crate::metrics::NAMESPACE, "Dimensions": [["Function"]], "Metrics": metrics}),
    );
    document["_aws"] =
        json!({"Timestamp": now.timestamp_millis(), "CloudWatchMetrics": directives});
    document
}

/// The payload's `timestamp` (the event's `occurredAt`).
fn occurred_at(body: &str) -> Option<DateTime<Utc>> {
    let payload: Value = serde_json::from_str(body).ok()?;
    payload["timestamp"].as_str()?.parse().ok()
}

#[cfg(test)]
mod tests;
