//! An attempt written down: the delivery's new state and attempts, and the
//! endpoint's failure state (`failingSince`, disabling), and the claim
//! written before an attempt is sent. Every write is conditional on what
//! was read, so two copies of one message (SQS delivers at least once)
//! record one outcome, never two.

use super::items::{
    delivery_key, endpoint_key, n, s, time, Claim, Delivery, DeliveryState, StoredAttempt,
    KEPT_ATTEMPTS,
};
use super::DeliverError;
use crate::webhooks::attempt::{Attempt, Outcome};
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// What becomes of a delivery after an attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct NextState {
    pub state: DeliveryState,
    /// When the next automatic attempt is due (pending only).
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The schedule's position after this attempt.
    pub schedule_step: u32,
}

pub fn stored(attempt: &Attempt, manual: bool) -> StoredAttempt {
    let (status_code, error) = match &attempt.outcome {
        Outcome::Delivered { status } => (Some(*status), None),
        Outcome::Failed(failure) => (failure.status, Some(failure.kind.as_str().to_string())),
    };
    StoredAttempt {
        at: time(attempt.at),
        status_code,
        error,
        duration_ms: attempt.duration_ms,
        manual,
    }
}

/// Claims an attempt of `delivery` as read under `name` for the message
/// named `message_id`, before it is sent: `false` when the name is taken
/// (another receipt claimed it) or the delivery changed so that the attempt
/// is not this message's to make. A scheduled attempt (not `manual`) is
/// also the schedule's claim at its step: while one is held no other is
/// made (`scheduleClaim`, which a build before step names also obeys).
pub async fn claim(
    client: &Client,
    table: &str,
    delivery: &Delivery,
    name: &str,
    message_id: &str,
    manual: bool,
    at: DateTime<Utc>,
) -> Result<bool, DeliverError> {
    let stored = Claim {
        at,
        by: Some(message_id.to_string()),
        manual,
    };
    let claim =
        serde_dynamo::to_attribute_value(&stored).map_err(|e| DeliverError::Item(e.to_string()))?;
    let mut update = client
        .update_item()
        .table_name(table)
        .set_key(Some(delivery_key(&delivery.partition, &delivery.event_id)))
        .expression_attribute_names("#claims", "claims");
    let (mut set, mut condition) = match delivery.claims {
        Some(_) => {
            update = update
                .expression_attribute_names("#claim", name)
                .expression_attribute_values(":claim", claim);
            let set = "SET #claims.#claim = :claim";
            let condition = "attribute_exists(#claims) AND attribute_not_exists(#claims.#claim)";
            (set.to_string(), condition.to_string())
        }
        None => {
            let claims = AttributeValue::M(HashMap::from([(name.to_string(), claim)]));
            update = update.expression_attribute_values(":claims", claims);
            let set = "SET #claims = :claims";
            (set.to_string(), "attribute_not_exists(#claims)".to_string())
        }
    };
    if !manual {
        set.push_str(", scheduleClaim = :name");
        condition.push_str(" AND scheduleStep = :step AND #state = :pending");
        condition.push_str(" AND attribute_not_exists(scheduleClaim)");
        update = update
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":name", s(name))
            .expression_attribute_values(":step", n(delivery.schedule_step))
            .expression_attribute_values(":pending", s("pending"));
    }
    let update = update
        .update_expression(set)
        .condition_expression(condition);
    conditional(update.send().await.map(|_| ()), "UpdateItem delivery")
}

/// Records `attempt`, claimed under `name`, on `delivery` as read, the
/// claim replaced by it: `false` when the item changed since it was read
/// (another attempt recorded first, or this write's answer was lost).
pub async fn record_attempt(
    client: &Client,
    table: &str,
    delivery: &Delivery,
    name: &str,
    attempt: StoredAttempt,
    next: &NextState,
) -> Result<bool, DeliverError> {
    let mut attempts = delivery.attempts.clone();
    attempts.push(attempt);
    let kept = attempts.split_off(attempts.len().saturating_sub(KEPT_ATTEMPTS));
    let attempts =
        serde_dynamo::to_attribute_value(kept).map_err(|e| DeliverError::Item(e.to_string()))?;
    // `expiresAt` is left as the delivery was made: its 30 days run from
    // its creation, never from its last attempt (section 9).
    let mut update = client
        .update_item()
        .table_name(table)
        .set_key(Some(delivery_key(&delivery.partition, &delivery.event_id)))
        .condition_expression("attemptCount = :seen AND attribute_exists(#claims.#claim)")
        .expression_attribute_names("#state", "state")
        .expression_attribute_names("#claims", "claims")
        .expression_attribute_names("#claim", name)
        .expression_attribute_values(":seen", n(delivery.attempt_count))
        .expression_attribute_values(":count", n(delivery.attempt_count + 1))
        .expression_attribute_values(":attempts", attempts)
        .expression_attribute_values(":state", s(next.state.as_str()))
        .expression_attribute_values(":step", n(next.schedule_step));
    let set =
        "SET attempts = :attempts, attemptCount = :count, #state = :state, scheduleStep = :step";
    let mut remove = "REMOVE #claims.#claim".to_string();
    if delivery.schedule_claim.as_deref() == Some(name) {
        remove.push_str(", scheduleClaim");
    }
    update = match next.next_attempt_at {
        Some(at) => update
            .update_expression(format!("{set}, nextAttemptAt = :next {remove}"))
            .expression_attribute_values(":next", s(time(at))),
        None => update.update_expression(format!("{set} {remove}, nextAttemptAt")),
    };
    conditional(update.send().await.map(|_| ()), "UpdateItem delivery")
}

/// A delivery that will not be attempted (its endpoint is gone or disabled):
/// `failed`, no next attempt; a retry by hand can still try it.
pub async fn give_up(
    client: &Client,
    table: &str,
    delivery: &Delivery,
) -> Result<bool, DeliverError> {
    let set = "SET #state = :failed REMOVE nextAttemptAt";
    let values = [(":failed", s("failed"))];
    unattempted(client, table, delivery, set, values).await
}

/// A pending delivery whose next attempt waits until `at` (its key's ban
/// ends then): `false` when it changed since it was read.
pub async fn hold(
    client: &Client,
    table: &str,
    delivery: &Delivery,
    at: DateTime<Utc>,
) -> Result<bool, DeliverError> {
    let values = [(":at", s(time(at)))];
    unattempted(client, table, delivery, "SET nextAttemptAt = :at", values).await
}

/// `expression` on a pending delivery as read, without an attempt.
async fn unattempted<const N: usize>(
    client: &Client,
    table: &str,
    delivery: &Delivery,
    expression: &str,
    values: [(&str, AttributeValue); N],
) -> Result<bool, DeliverError> {
    let mut update = client
        .update_item()
        .table_name(table)
        .set_key(Some(delivery_key(&delivery.partition, &delivery.event_id)))
        .condition_expression("attemptCount = :seen AND #state = :pending")
        .update_expression(expression)
        .expression_attribute_names("#state", "state")
        .expression_attribute_values(":seen", n(delivery.attempt_count))
        .expression_attribute_values(":pending", s("pending"));
    for (name, value) in values {
        update = update.expression_attribute_values(name, value);
    }
    conditional(update.send().await.map(|_| ()), "UpdateItem delivery")
}

/// A success: the endpoint is no longer failing.
pub async fn endpoint_succeeded(
    client: &Client,
    table: &str,
    webhook_id: u64,
) -> Result<(), DeliverError> {
    let update = client
        .update_item()
        .table_name(table)
        .set_key(Some(endpoint_key(webhook_id)))
        .condition_expression("attribute_exists(failingSince)")
        .update_expression("REMOVE failingSince")
        .send()
        .await;
    conditional(update.map(|_| ()), "UpdateItem endpoint").map(|_| ())
}

/// A failure: the endpoint fails since now unless it already did; answers
/// since when it fails (`None`: the endpoint is gone).
pub async fn endpoint_failed(
    client: &Client,
    table: &str,
    webhook_id: u64,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, DeliverError> {
    let update = client
        .update_item()
        .table_name(table)
        .set_key(Some(endpoint_key(webhook_id)))
        .condition_expression("attribute_exists(PK)")
        .update_expression("SET failingSince = if_not_exists(failingSince, :now)")
        .expression_attribute_values(":now", s(time(now)))
        .return_values(aws_sdk_dynamodb::types::ReturnValue::UpdatedNew)
        .send()
        .await;
    let since = match update {
        Ok(out) => out.attributes.and_then(|a| match a.get("failingSince") {
            Some(AttributeValue::S(text)) => text.parse().ok(),
            _ => None,
        }),
        Err(error) => {
            conditional(Err(error), "UpdateItem endpoint")?;
            None
        }
    };
    Ok(since)
}

/// Disables the endpoint (`enabled: false` with `disabledReason`), once:
/// `false` when it was already disabled or is gone.
pub async fn disable(
    client: &Client,
    table: &str,
    webhook_id: u64,
    reason: &str,
) -> Result<bool, DeliverError> {
    let update = client
        .update_item()
        .table_name(table)
        .set_key(Some(endpoint_key(webhook_id)))
        .condition_expression("enabled = :true")
        .update_expression("SET enabled = :false, disabledReason = :reason")
        .expression_attribute_values(":true", AttributeValue::Bool(true))
        .expression_attribute_values(":false", AttributeValue::Bool(false))
        .expression_attribute_values(":reason", s(reason))
        .send()
        .await;
    conditional(update.map(|_| ()), "UpdateItem endpoint")
}

/// `true` when the write was made, `false` when its condition failed.
fn conditional<E>(
    result: Result<(), aws_sdk_dynamodb::error::SdkError<E>>,
    operation: &str,
) -> Result<bool, DeliverError>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match result {
        Ok(()) => Ok(true),
        Err(error)
            if ProvideErrorMetadata::code(&error) == Some("ConditionalCheckFailedException") =>
        {
            Ok(false)
        }
        Err(error) => Err(DeliverError::Db(format!(
            "{operation}: {}",
            aws_sdk_dynamodb::error::DisplayErrorContext(error)
        ))),
    }
}
