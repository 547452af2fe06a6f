//! One delivery message to one attempt: is it due, may its endpoint still
//! receive, is a slot free; then the attempt, recorded, and the schedule's
//! answer (section 9, "Delivery").

use super::items::{self, Delivery, DeliveryState, Endpoint};
use super::record::{self, NextState};
use super::{slots, DeliverError, Deliverer, Disposition};
use crate::webhooks::attempt::{Attempt, AttemptRequest, FailureKind, Outcome};
use crate::webhooks::queue::DeliveryMessage;
use crate::webhooks::schedule;
use crate::webhooks::secrets::signing_secrets;
use chrono::{DateTime, Utc};
use std::time::Duration;

/// How long a message waits when its endpoint has every slot taken: half a
/// second the first time it finds them so (a burst: attempts are short),
/// doubling with each time the queue handed it over, up to a minute (a slow
/// endpoint with a backlog: its waiting messages must not keep asking).
/// Jittered, so that the waiting ones spread out.
pub fn slot_wait(receives: u32) -> Duration {
    let doublings = receives.clamp(1, 8) - 1;
    let wait = Duration::from_millis(500 << doublings).min(Duration::from_secs(60));
    wait.mul_f64(schedule::jitter())
}

/// Why an endpoint is disabled, as `disabledReason` says it.
pub const GONE_REASON: &str = "the endpoint answered 410 Gone";
pub const FAILING_REASON: &str = "every attempt failed for 3 days";

impl Deliverer {
    /// Handles one message of the deliveries queue, handed over for the
    /// `receives`th time (SQS's `ApproximateReceiveCount`).
    pub async fn deliver(
        &self,
        message: &DeliveryMessage,
        receives: u32,
    ) -> Result<Disposition, DeliverError> {
        let (client, table) = (&self.client, self.table.as_str());
        let Some(delivery) =
            items::delivery(client, table, message.webhook_id, &message.event_id).await?
        else {
            return Ok(Disposition::Done); // expired, or its endpoint deleted
        };
        let now = Utc::now();
        if !message.manual {
            match (delivery.state, delivery.next_attempt_at) {
                (DeliveryState::Pending, Some(at)) if at > now => {
                    return Ok(Disposition::Later(until(now, at)))
                }
                (DeliveryState::Pending, _) => {}
                _ => return Ok(Disposition::Done),
            }
        }
        let Some(endpoint) = items::deliverable(client, table, message.webhook_id).await? else {
            if !message.manual {
                record::give_up(client, table, &delivery).await?;
            }
            return Ok(Disposition::Done);
        };
        let secrets = signing_secrets(endpoint.id, &endpoint.active_secrets(now))
            .await
            .map_err(|e| DeliverError::Item(e.to_string()))?;
        let Some(lease) = slots::take(client, table, endpoint.id, now).await? else {
            return Ok(Disposition::Later(slot_wait(receives)));
        };
        let request = AttemptRequest {
            url: &endpoint.url,
            webhook_id: &delivery.event_id,
            body: &delivery.body,
            secrets: &secrets,
        };
        let attempt = self.attempter.attempt(&request).await;
        slots::release(client, table, lease).await?;
        self.record(&delivery, &endpoint, &attempt, message.manual)
            .await
    }

    /// Writes the attempt down and says what becomes of the message.
    async fn record(
        &self,
        delivery: &Delivery,
        endpoint: &Endpoint,
        attempt: &Attempt,
        manual: bool,
    ) -> Result<Disposition, DeliverError> {
        let (client, table) = (&self.client, self.table.as_str());
        let next = self.next_state(delivery, attempt, manual);
        // The endpoint first: the delivery's new state is the last write,
        // so whoever sees it sees the endpoint's too (410: disabled).
        self.endpoint_state(endpoint, &attempt.outcome, attempt.at)
            .await?;
        let stored = record::stored(attempt, manual);
        if !record::record_attempt(client, table, delivery, stored, &next).await? {
            return Ok(Disposition::Done); // another copy of the message recorded first
        }
        super::observe::attempt_made(delivery, attempt, &next, manual);
        Ok(match (manual, next.next_attempt_at) {
            (false, Some(at)) if next.state == DeliveryState::Pending => {
                Disposition::Later(until(Utc::now(), at))
            }
            _ => Disposition::Done,
        })
    }

    /// The delivery after `attempt`: delivered; or pending until the
    /// schedule's next time; or failed after the last (or on 410 or a
    /// payload too large, which no retry mends). An attempt by hand
    /// changes nothing but success: the schedule goes on as it was.
    fn next_state(&self, delivery: &Delivery, attempt: &Attempt, manual: bool) -> NextState {
        let step = if manual {
            delivery.schedule_step
        } else {
            delivery.schedule_step + 1
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
        if manual {
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
        let (client, table) = (&self.client, self.table.as_str());
        if let Outcome::Delivered { .. } = outcome {
            if endpoint.failing_since.is_some() {
                record::endpoint_succeeded(client, table, endpoint.id).await?;
            }
            return Ok(());
        }
        if outcome.is_gone() {
            record::disable(client, table, endpoint.id, GONE_REASON).await?;
            return Ok(());
        }
        let since = match endpoint.failing_since {
            Some(since) => Some(since),
            None => record::endpoint_failed(client, table, endpoint.id, at).await?,
        };
        if since.is_some_and(|since| schedule::disables(since, at)) {
            record::disable(client, table, endpoint.id, FAILING_REASON).await?;
        }
        Ok(())
    }
}

fn until(now: DateTime<Utc>, at: DateTime<Utc>) -> Duration {
    (at - now).to_std().unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_endpoint_s_messages_wait_longer_each_time_up_to_a_minute() {
        let bounds = |wait: Duration| (wait.as_secs_f64() / 1.1, wait.as_secs_f64() / 0.9);
        let (low, high) = bounds(slot_wait(1));
        assert!((low..=high).contains(&0.5), "{low}..{high}");
        let (low, high) = bounds(slot_wait(3));
        assert!((low..=high).contains(&2.0), "{low}..{high}");
        let (low, high) = bounds(slot_wait(100));
        assert!((low..=high).contains(&60.0), "{low}..{high}");
        assert!(slot_wait(0) <= Duration::from_millis(550));
    }
}
