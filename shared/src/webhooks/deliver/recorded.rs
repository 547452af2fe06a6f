//! An attempt written down in its claim's place: the delivery's next
//! state by the schedule, the endpoint's failure state, and what becomes of
//! the message (section 9, "Delivery").

use super::delivery::until;
use super::items::{self, Delivery, DeliveryState, Endpoint};
use super::record::{self, NextState};
use super::{DeliverError, Deliverer, Disposition};
use crate::db::{cause_chain, DbError, Pause, Retry};
use crate::webhooks::attempt::{Attempt, FailureKind, Outcome};
use crate::webhooks::schedule;
use chrono::{DateTime, Utc};

/// Why an endpoint is disabled, as `disabledReason` says it.
pub const GONE_REASON: &str = "the endpoint answered 410 Gone";
pub const FAILING_REASON: &str = "every attempt failed for 3 days";

impl Deliverer {
    /// Writes the attempt down in place of its claim (named `name`) and
    /// says what becomes of the message.
    ///
    /// Every attempt made is recorded: when another attempt of the delivery
    /// recorded first (a retry by hand beside a scheduled one), the
    /// delivery is read again and this attempt is added to it as it now
    /// is. Only the scheduled attempt at the step it read moves the
    /// schedule, and its message then carries the next attempt; any other
    /// attempt leaves the schedule to the message that owns it, so a
    /// pending delivery always keeps one. The endpoint's failure state
    /// follows the attempt's outcome (not an interrupted one's: `endpoint`
    /// `None`).
    ///
    /// Written down under the one retry policy ([`Retry`]): another write
    /// first reads the delivery again at once; a table that is throttled or
    /// unreachable is waited out a little (the attempt was sent: its
    /// outcome is worth the wait), then the message is handed back, its
    /// claim left for the next receipt to record as interrupted.
    pub(super) async fn record(
        &self,
        delivery: &Delivery,
        endpoint: Option<&Endpoint>,
        attempt: &Attempt,
        name: &str,
        manual: bool,
    ) -> Result<Disposition, DeliverError> {
        let db = self.db();
        // The endpoint first: the delivery's new state is the last write,
        // so whoever sees it sees the endpoint's too (410: disabled).
        if let Some(endpoint) = endpoint {
            self.endpoint_state(endpoint, &attempt.outcome, attempt.at)
                .await?;
        }
        let stored = record::stored(attempt, manual);
        let mut seen = delivery.clone();
        let mut retry = Retry::new("record webhook attempt");
        loop {
            let moves_schedule = !manual
                && seen.state == DeliveryState::Pending
                && seen.schedule_step == delivery.schedule_step;
            let next = self.next_state(&seen, attempt, moves_schedule);
            let pause = match record::record_attempt(&db, &seen, name, stored.clone(), &next).await
            {
                Ok(true) => {
                    super::observe::attempt_made(&seen, attempt, &next, manual);
                    return Ok(match next.next_attempt_at {
                        Some(at) if moves_schedule && next.state == DeliveryState::Pending => {
                            Disposition::Later(until(Utc::now(), at))
                        }
                        _ => Disposition::Done,
                    });
                }
                Ok(false) => Pause::None, // another write came first: read it
                Err(DeliverError::Db(error @ DbError::Unavailable(_))) => {
                    let error = cause_chain(&error);
                    tracing::warn!(%error, webhook_id = seen.webhook_id, "webhook attempt not yet recorded");
                    Pause::Backoff
                }
                Err(error) => return Err(error),
            };
            // Out of attempts, the claim stays: the message's next receipt
            // records the attempt as interrupted.
            retry.again(pause).await?;
            let fresh = items::delivery(&db, &seen.partition, &seen.event_id).await?;
            let Some(fresh) = fresh else {
                return Ok(Disposition::Done); // expired meanwhile
            };
            if fresh.claim_of(name).is_none() {
                // Only this write takes a live claim away (a claim is
                // recorded as interrupted only once it is older than any
                // receipt lives): one whose answer was lost was made.
                return Ok(carried(&fresh, manual));
            }
            seen = fresh;
        }
    }

    /// The delivery after `attempt`: delivered; or pending until the
    /// schedule's next time; or failed after the last (or on 410 or a
    /// payload too large, which no retry mends). An attempt that does not
    /// move the schedule (by hand, or one another attempt overtook) changes
    /// nothing but on success: the schedule goes on as it was.
    fn next_state(
        &self,
        delivery: &Delivery,
        attempt: &Attempt,
        moves_schedule: bool,
    ) -> NextState {
        let step = if moves_schedule {
            delivery.schedule_step + 1
        } else {
            delivery.schedule_step
        };
        let failure = match &attempt.outcome {
            Outcome::Delivered { .. } => {
                return NextState {
                    state: DeliveryState::Delivered,
                    next_attempt_at: None,
                    schedule_step: step,
                }
            }
            Outcome::Failed(failure) => failure,
        };
        let failed = NextState {
            state: DeliveryState::Failed,
            next_attempt_at: None,
            schedule_step: step,
        };
        if attempt.outcome.is_gone() || failure.kind == FailureKind::TooLarge {
            return failed;
        }
        if !moves_schedule {
            let (state, next_attempt_at) = (delivery.state, delivery.next_attempt_at);
            return NextState {
                state,
                next_attempt_at,
                schedule_step: step,
            };
        }
        let retry_after = failure.retry_after;
        match self
            .schedule
            .next_attempt(step, attempt.at, retry_after, schedule::jitter())
        {
            Some(at) => NextState {
                state: DeliveryState::Pending,
                next_attempt_at: Some(at),
                schedule_step: step,
            },
            None => failed,
        }
    }

    /// The endpoint after an attempt: no longer failing on success; failing
    /// since its first failure, disabled after 3 days of them or at once on 410.
    async fn endpoint_state(
        &self,
        endpoint: &Endpoint,
        outcome: &Outcome,
        at: DateTime<Utc>,
    ) -> Result<(), DeliverError> {
        let db = self.db();
        if let Outcome::Delivered { .. } = outcome {
            if endpoint.failing_since.is_some() {
                record::endpoint_succeeded(&db, endpoint.id).await?;
            }
            return Ok(());
        }
        if outcome.is_gone() {
            record::disable(&db, endpoint.id, GONE_REASON).await?;
            return Ok(());
        }
        match endpoint.failing_since {
            Some(since) if schedule::disables(since, at) => {
                record::disable(&db, endpoint.id, FAILING_REASON).await?;
            }
            Some(_) => {}
            // Failing from now on. Another attempt may have marked it since
            // the read, seconds ago at most: not the 3 days that disable it.
            None => record::endpoint_failed(&db, endpoint.id, at).await?,
        }
        Ok(())
    }
}

/// What becomes of a message whose attempt `delivery` already shows: a
/// scheduled one goes on carrying the schedule while the delivery is
/// pending (at worst a second message carries it: at least once).
fn carried(delivery: &Delivery, manual: bool) -> Disposition {
    match (manual, delivery.state, delivery.next_attempt_at) {
        (false, DeliveryState::Pending, Some(at)) => Disposition::Later(until(Utc::now(), at)),
        _ => Disposition::Done,
    }
}
