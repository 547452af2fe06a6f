//! An attempt written down: the delivery's new state and attempts, and the
//! endpoint's failure state (`failingSince`, disabling), and the claim
//! written before an attempt is sent. Every write is conditional on what
//! was read, so two copies of one message (SQS delivers at least once)
//! record one outcome, never two; each is one conditional `UpdateItem`
//! through the one write path ([`Db::write_decided`]), `false` when its
//! condition failed.

use super::items::{
    delivery_key, endpoint_key, time, Claim, Delivery, DeliveryCheck, DeliveryState, StoredAttempt,
    KEPT_ATTEMPTS,
};
use super::DeliverError;
use crate::db::expr::Expr;
use crate::db::{n, s, to_value, Check, Db, Decided, OnFailure, Write};
use crate::webhooks::attempt::{Attempt, Outcome};
use aws_sdk_dynamodb::types::AttributeValue;
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

/// The conditions of the endpoint's writes after an attempt: it is still
/// in the state the write moves it from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EndpointAsRead {
    /// It is failing (a success ends that).
    Failing,
    /// It exists (a failure marks it failing).
    Stored,
    /// It is enabled (disabling it).
    Enabled,
}

impl Check for EndpointAsRead {
    fn on_failure(self) -> OnFailure {
        OnFailure::ReadAgain
    }
}

/// Sends `write`, decided once: `true` when written, `false` when its
/// condition failed.
async fn written<C: Check>(
    db: &Db,
    operation: &'static str,
    write: Write<C>,
) -> Result<bool, DeliverError> {
    Ok(matches!(
        db.write_decided(operation, write).await?,
        Decided::Done
    ))
}

/// Claims an attempt of `delivery` as read under `name` for the message
/// named `message_id`, before it is sent: `false` when the name is taken
/// (another receipt claimed it) or the delivery changed so that the attempt
/// is not this message's to make. A scheduled attempt (not `manual`) is
/// also the schedule's claim at its step: while one is held no other is
/// made (`scheduleClaim`, which a build before step names also obeys).
pub async fn claim(
    db: &Db,
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
    let claim = to_value(&stored)?;
    let mut expr = match delivery.claims {
        Some(_) => Expr::new()
            .has("claims")
            .lacks_entry("claims", name)
            .set_entry("claims", name, claim),
        // An item made before claims were: its first claim writes the map.
        None => {
            let claims = AttributeValue::M(HashMap::from([(name.to_string(), claim)]));
            Expr::new().lacks("claims").set("claims", claims)
        }
    };
    if !manual {
        expr = expr
            .when_equal("scheduleStep", n(delivery.schedule_step))
            .when_equal("state", s(DeliveryState::Pending.as_str()))
            .lacks("scheduleClaim")
            .set("scheduleClaim", s(name));
    }
    let key = delivery_key(&delivery.partition, &delivery.event_id);
    let update = expr.update(db.table(), key)?;
    let write = Write::new().checked(DeliveryCheck::Claimable, update);
    written(db, "claim webhook attempt", write).await
}

/// Records `attempt`, claimed under `name`, on `delivery` as read, the
/// claim replaced by it: `false` when the item changed since it was read
/// (another attempt recorded first, or this write's answer was lost).
pub async fn record_attempt(
    db: &Db,
    delivery: &Delivery,
    name: &str,
    attempt: StoredAttempt,
    next: &NextState,
) -> Result<bool, DeliverError> {
    let mut attempts = delivery.attempts.clone();
    attempts.push(attempt);
    let kept = attempts.split_off(attempts.len().saturating_sub(KEPT_ATTEMPTS));
    // `expiresAt` is left as the delivery was made: its 30 days run from
    // its creation, never from its last attempt (section 9).
    let mut expr = Expr::new()
        .when_equal("attemptCount", n(delivery.attempt_count))
        .has_entry("claims", name)
        .set("attempts", to_value(&kept)?)
        .set("attemptCount", n(delivery.attempt_count + 1))
        .set("state", s(next.state.as_str()))
        .set("scheduleStep", n(next.schedule_step))
        .remove_entry("claims", name);
    if delivery.schedule_claim.as_deref() == Some(name) {
        expr = expr.remove("scheduleClaim");
    }
    expr = match next.next_attempt_at {
        Some(at) => expr.set("nextAttemptAt", s(time(at))),
        None => expr.remove("nextAttemptAt"),
    };
    let key = delivery_key(&delivery.partition, &delivery.event_id);
    let update = expr.update(db.table(), key)?;
    let write = Write::new().checked(DeliveryCheck::AsRead, update);
    written(db, "record webhook attempt", write).await
}

/// A delivery that will not be attempted (its endpoint is gone or disabled):
/// `failed`, no next attempt; a retry by hand can still try it.
pub async fn give_up(db: &Db, delivery: &Delivery) -> Result<bool, DeliverError> {
    let expr = Expr::new()
        .set("state", s(DeliveryState::Failed.as_str()))
        .remove("nextAttemptAt");
    unattempted(db, delivery, expr).await
}

/// A pending delivery whose next attempt waits until `at` (its key's ban
/// ends then): `false` when it changed since it was read.
pub async fn hold(db: &Db, delivery: &Delivery, at: DateTime<Utc>) -> Result<bool, DeliverError> {
    let expr = Expr::new().set("nextAttemptAt", s(time(at)));
    unattempted(db, delivery, expr).await
}

/// `expr`'s changes on a pending delivery as read, without an attempt.
async fn unattempted(db: &Db, delivery: &Delivery, expr: Expr) -> Result<bool, DeliverError> {
    let key = delivery_key(&delivery.partition, &delivery.event_id);
    let update = expr
        .when_equal("attemptCount", n(delivery.attempt_count))
        .when_equal("state", s(DeliveryState::Pending.as_str()))
        .update(db.table(), key)?;
    let write = Write::new().checked(DeliveryCheck::AsRead, update);
    written(db, "leave webhook delivery unattempted", write).await
}

/// A success: the endpoint is no longer failing.
pub async fn endpoint_succeeded(db: &Db, webhook_id: u64) -> Result<(), DeliverError> {
    let update = Expr::new()
        .has("failingSince")
        .remove("failingSince")
        .update(db.table(), endpoint_key(webhook_id))?;
    let write = Write::new().checked(EndpointAsRead::Failing, update);
    written(db, "webhook endpoint succeeded", write).await?;
    Ok(())
}

/// A failure of an endpoint that was not failing when read: it fails since
/// `now` unless another attempt marked it first (or it is gone).
pub async fn endpoint_failed(
    db: &Db,
    webhook_id: u64,
    now: DateTime<Utc>,
) -> Result<(), DeliverError> {
    let update = Expr::new()
        .exists()
        .set_if_absent("failingSince", s(time(now)))
        .update(db.table(), endpoint_key(webhook_id))?;
    let write = Write::new().checked(EndpointAsRead::Stored, update);
    written(db, "webhook endpoint failed", write).await?;
    Ok(())
}

/// Disables the endpoint (`enabled: false` with `disabledReason`), once:
/// `false` when it was already disabled or is gone.
pub async fn disable(db: &Db, webhook_id: u64, reason: &str) -> Result<bool, DeliverError> {
    let update = Expr::new()
        .when_equal("enabled", AttributeValue::Bool(true))
        .set("enabled", AttributeValue::Bool(false))
        .set("disabledReason", s(reason))
        .update(db.table(), endpoint_key(webhook_id))?;
    let write = Write::new().checked(EndpointAsRead::Enabled, update);
    written(db, "disable webhook endpoint", write).await
}
