//! One delivery message to one attempt: is it due, may its endpoint still
//! receive, is a slot free; then the attempt, recorded, and the schedule's
//! answer (section 9, "Delivery").

use super::items::{self, Delivery, DeliveryState, Endpoint};
use super::record::{self, NextState};
use super::{slots, DeliverError, Deliverer, Disposition};
use crate::webhooks::attempt::{Attempt, AttemptRequest, FailureKind, Outcome};
use crate::webhooks::queue::DeliveryMessage;
use crate::webhooks::receiving::{takes, NotReceiving};
use crate::webhooks::schedule;
use crate::webhooks::types::EventType;
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
/// How many times an attempt is written down against other writes to its
/// delivery before the message is handed back (then tried again whole).
const RECORD_TRIES: u32 = 5;
/// The first wait before writing an attempt down again after an error
/// (doubling): a throttled or unreachable table, for a few seconds at most.
const RECORD_BACKOFF: Duration = Duration::from_millis(100);

impl Deliverer {
    /// Handles one message of the deliveries queue, handed over for the
    /// `receives`th time (SQS's `ApproximateReceiveCount`).
    pub async fn deliver(
        &self,
        message: &DeliveryMessage,
        receives: u32,
    ) -> Result<Disposition, DeliverError> {
        let mut handled = self.deliver_batch(&[(message, receives)]).await;
        handled.pop().unwrap_or(Ok(Disposition::Done))
    }

    /// Handles a batch of messages (each with its `receives`), their
    /// deliveries and endpoints read in one call
    /// ([`items::deliveries_and_endpoints`]), then each attempt side by
    /// side; the answers in the messages' order. A read that fails fails
    /// every message: the queue hands them back.
    pub async fn deliver_batch(
        &self,
        messages: &[(&DeliveryMessage, u32)],
    ) -> Vec<Result<Disposition, DeliverError>> {
        let (client, table) = (&self.client, self.table.as_str());
        let named: Vec<&DeliveryMessage> = messages.iter().map(|(m, _)| *m).collect();
        let read = match items::deliveries_and_endpoints(client, table, &named).await {
            Ok(read) => read,
            Err(error) => {
                let error = error.to_string();
                return messages
                    .iter()
                    .map(|_| Err(DeliverError::Db(error.clone())))
                    .collect();
            }
        };
        let handled = messages.iter().map(|(message, receives)| {
            let (delivery, endpoint) = read.of(message);
            self.deliver_read(message, *receives, delivery, endpoint)
        });
        futures::future::join_all(handled).await
    }

    /// One message, its delivery and endpoint as the batch read them.
    async fn deliver_read(
        &self,
        message: &DeliveryMessage,
        receives: u32,
        delivery: Option<Delivery>,
        endpoint: Option<Endpoint>,
    ) -> Result<Disposition, DeliverError> {
        let (client, table) = (&self.client, self.table.as_str());
        let Some(delivery) = delivery else {
            return Ok(Disposition::Done); // expired
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
        let endpoint = match self.receiving(&delivery, endpoint, now).await? {
            Ok(endpoint) => endpoint,
            Err(held) => return self.not_attempted(&delivery, held, message.manual).await,
        };
        // Opened before a slot is taken: a secret that cannot be opened holds none.
        let secrets = items::signing_secrets(&endpoint, now).await?;
        let lease = match endpoint.failing_since {
            // A healthy endpoint's attempts end quickly: no slot to take.
            None => None,
            Some(_) => match slots::take(client, table, endpoint.id, now).await? {
                Some(lease) => Some(lease),
                None => return Ok(Disposition::Later(slot_wait(receives))),
            },
        };
        let request = AttemptRequest {
            url: &endpoint.url,
            webhook_id: &delivery.event_id,
            body: &delivery.body,
            secrets: &secrets,
        };
        let attempt = self.attempter.attempt(&request).await;
        // Recorded before the slot goes back: a slot that cannot be given
        // back is free again when its lease ends, an attempt not recorded
        // would be sent again with nothing to show for it.
        let recorded = self
            .record(&delivery, &endpoint, &attempt, message.manual)
            .await;
        if let Some(lease) = lease {
            if let Err(error) = slots::release(client, table, lease).await {
                tracing::warn!(%error, webhook_id = endpoint.id, "webhook slot left to its lease");
            }
        }
        recorded
    }

    /// The endpoint, when it may receive the delivery now (section 9: its
    /// key's state and role now, not at the fan-out); else why not, `None`
    /// when it is gone.
    async fn receiving(
        &self,
        delivery: &Delivery,
        endpoint: Option<Endpoint>,
        now: DateTime<Utc>,
    ) -> Result<Result<Endpoint, Option<NotReceiving>>, DeliverError> {
        let Some(endpoint) = endpoint else {
            return Ok(Err(None));
        };
        let decided = self
            .keys
            .decide(endpoint.enabled, endpoint.owner_id, now)
            .await
            .map_err(|e| DeliverError::Db(e.to_string()))?;
        let role = match decided {
            Ok(role) => role,
            Err(why) => return Ok(Err(Some(why))),
        };
        let still_taken = match delivery.event() {
            (Some(EventType::Ping), _) => true,
            (Some(event_type), owner) => {
                takes(role, endpoint.owner_id, &endpoint.events, event_type, owner)
            }
            (None, _) => false,
        };
        Ok(if still_taken { Ok(endpoint) } else { Err(None) })
    }

    /// A delivery its endpoint may not receive now: a banned key's waits
    /// for the ban's end if that comes within its schedule; any other fails
    /// (a retry by hand can still try it once its key may receive again).
    /// A retry by hand is not made, and changes nothing.
    async fn not_attempted(
        &self,
        delivery: &Delivery,
        why: Option<NotReceiving>,
        manual: bool,
    ) -> Result<Disposition, DeliverError> {
        let (client, table) = (&self.client, self.table.as_str());
        if manual {
            return Ok(Disposition::Done);
        }
        if let Some(NotReceiving::KeyBanned { until: ban_end }) = why {
            let ends = delivery.created_at.map(|at| at + self.schedule.span());
            if ends.is_some_and(|ends| ban_end <= ends) {
                return Ok(
                    match record::hold(client, table, delivery, ban_end).await? {
                        true => Disposition::Later(until(Utc::now(), ban_end)),
                        false => Disposition::Later(slot_wait(1)), // changed meanwhile: look again
                    },
                );
            }
        }
        record::give_up(client, table, delivery).await?;
        Ok(Disposition::Done)
    }

    /// Writes the attempt down and says what becomes of the message.
    ///
    /// Every attempt made is recorded: when another attempt of the delivery
    /// recorded first (a retry by hand beside a scheduled one, or a second
    /// copy of a message), the delivery is read again and this attempt is
    /// added to it as it now is. Only the scheduled attempt at the step it
    /// read moves the schedule, and its message then carries the next
    /// attempt; any other attempt leaves the schedule to the message that
    /// owns it, so a pending delivery always keeps one.
    async fn record(
        &self,
        delivery: &Delivery,
        endpoint: &Endpoint,
        attempt: &Attempt,
        manual: bool,
    ) -> Result<Disposition, DeliverError> {
        let (client, table) = (&self.client, self.table.as_str());
        // The endpoint first: the delivery's new state is the last write,
        // so whoever sees it sees the endpoint's too (410: disabled).
        self.endpoint_state(endpoint, &attempt.outcome, attempt.at)
            .await?;
        let stored = record::stored(attempt, manual);
        let mut seen = delivery.clone();
        for tried in 1..=RECORD_TRIES {
            let moves_schedule = !manual
                && seen.state == DeliveryState::Pending
                && seen.schedule_step == delivery.schedule_step;
            let next = self.next_state(&seen, attempt, moves_schedule);
            match record::record_attempt(client, table, &seen, stored.clone(), &next).await {
                Ok(true) => {
                    super::observe::attempt_made(&seen, attempt, &next, manual);
                    return Ok(match next.next_attempt_at {
                        Some(at) if moves_schedule && next.state == DeliveryState::Pending => {
                            Disposition::Later(until(Utc::now(), at))
                        }
                        _ => Disposition::Done,
                    });
                }
                Ok(false) => {} // another write came first: read it
                Err(error) if tried < RECORD_TRIES => {
                    tracing::warn!(%error, webhook_id = seen.webhook_id, "webhook attempt not yet recorded");
                    tokio::time::sleep(RECORD_BACKOFF * (1 << tried)).await;
                }
                Err(error) => return Err(error),
            }
            let fresh = items::delivery(client, table, &seen.partition, &seen.event_id).await?;
            let Some(fresh) = fresh else {
                return Ok(Disposition::Done); // expired meanwhile
            };
            if fresh.attempts.contains(&stored) {
                // A write whose answer was lost was made after all.
                return Ok(carried(&fresh, manual));
            }
            seen = fresh;
        }
        Err(DeliverError::Db(format!(
            "the attempt on {}/{} met {RECORD_TRIES} other writes in a row",
            delivery.webhook_id, delivery.event_id
        )))
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

/// What becomes of a message whose attempt `delivery` already shows: a
/// scheduled one goes on carrying the schedule while the delivery is
/// pending (at worst a second message carries it: at least once).
fn carried(delivery: &Delivery, manual: bool) -> Disposition {
    match (manual, delivery.state, delivery.next_attempt_at) {
        (false, DeliveryState::Pending, Some(at)) => Disposition::Later(until(Utc::now(), at)),
        _ => Disposition::Done,
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
