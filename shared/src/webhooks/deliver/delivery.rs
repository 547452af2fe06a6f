//! One delivery message to one attempt: is it due, may its endpoint still
//! receive, is a slot free; then the attempt, recorded, and the schedule's
//! answer (section 9, "Delivery").

use super::items::{self, Claim, Delivery, DeliveryState, Endpoint, Start};
use super::{read, record};
use super::{slots, DeliverError, Deliverer, Disposition};
use crate::db::cause_chain;
use crate::webhooks::attempt::{Attempt, AttemptRequest, FailureKind, Outcome};
use crate::webhooks::queue::DeliveryMessage;
use crate::webhooks::receiving::{takes, NotReceiving};
use crate::webhooks::schedule;
use crate::webhooks::types::EventType;
use chrono::{DateTime, Utc};
use std::sync::Arc;
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
    /// ([`read::deliveries_and_endpoints`]), then each attempt side by
    /// side; the answers in the messages' order. A read that fails fails
    /// every message: the queue hands them back.
    pub async fn deliver_batch(
        &self,
        messages: &[(&DeliveryMessage, u32)],
    ) -> Vec<Result<Disposition, DeliverError>> {
        let read = match read::deliveries_and_endpoints(&self.db(), messages).await {
            Ok(read) => read,
            Err(error) => {
                let error = Arc::new(error);
                return messages
                    .iter()
                    .map(|_| Err(DeliverError::Shared(error.clone())))
                    .collect();
            }
        };
        let handled = messages.iter().map(|(message, receives)| {
            let (delivery, endpoint) = read.of(message);
            self.deliver_read(message, *receives, delivery, endpoint)
        });
        futures::future::join_all(handled).await
    }

    /// One message, its delivery and endpoint as the batch read them (no
    /// delivery read: a fan-out's message at its first receipt, which
    /// makes it).
    async fn deliver_read(
        &self,
        message: &DeliveryMessage,
        receives: u32,
        stored: Option<Delivery>,
        endpoint: Option<Endpoint>,
    ) -> Result<Disposition, DeliverError> {
        let (client, table) = (&self.client, self.table.as_str());
        let mut delivery = match (stored, &message.event) {
            (Some(delivery), _) => delivery,
            (None, Some(event)) => Delivery::unstored(message, event),
            (None, None) => return Ok(Disposition::Done), // expired
        };
        // At most twice: a first receipt that finds its delivery made by
        // another decides again on the item as it is (then stored).
        loop {
            let now = Utc::now();
            match held(message, &delivery, now) {
                Held::No => {}
                Held::Elsewhere(disposition) => return Ok(disposition),
                Held::Interrupted(name, claim) => {
                    return self.interrupted(&delivery, &name, &claim).await;
                }
            }
            if let Some(not_now) = not_now(message, &delivery, now) {
                return Ok(not_now);
            }
            if !delivery.stored && endpoint.is_none() {
                return Ok(Disposition::Done); // deleted before its first attempt
            }
            let endpoint = match self.receiving(&delivery, endpoint.clone(), now).await? {
                Ok(endpoint) => endpoint,
                Err(held) => return self.not_attempted(message, &delivery, held).await,
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
            let name = claim_name(message, &delivery);
            let claimed = self.claim(message, &name, delivery, now).await;
            let claimed = match claimed {
                Ok(Claimed::Yes(claimed)) => claimed,
                other => {
                    if let Some(lease) = lease {
                        self.release(lease, endpoint.id).await;
                    }
                    match other? {
                        Claimed::Yes(_) | Claimed::No => return Ok(Disposition::Done),
                        Claimed::Existing(existing) => {
                            delivery = existing;
                            continue;
                        }
                    }
                }
            };
            let request = AttemptRequest {
                url: &endpoint.url,
                webhook_id: &claimed.event_id,
                body: &claimed.body,
                secrets: &secrets,
            };
            let attempt = self.attempter.attempt(&request).await;
            // Recorded before the slot goes back: a slot that cannot be given
            // back is free again when its lease ends.
            let recorded = self
                .record(&claimed, Some(&endpoint), &attempt, &name, message.manual)
                .await;
            if let Some(lease) = lease {
                self.release(lease, endpoint.id).await;
            }
            return recorded;
        }
    }

    /// Writes down that `message` makes an attempt of `delivery` under
    /// `name`, before it is sent: the first receipt of a fan-out's message
    /// makes the delivery so claimed ([`Claimed::Existing`] when another
    /// receipt or message of the event made it first); any other claims it
    /// on the item as read ([`Claimed::No`] when the name is taken or the
    /// attempt is no longer this message's to make).
    async fn claim(
        &self,
        message: &DeliveryMessage,
        name: &str,
        mut delivery: Delivery,
        now: DateTime<Utc>,
    ) -> Result<Claimed, DeliverError> {
        let db = self.db();
        let (id, manual) = (message.id.as_str(), message.manual);
        if delivery.stored {
            if !record::claim(&db, &delivery, name, id, manual, now).await? {
                return Ok(Claimed::No);
            }
        } else {
            let start = Start::Claimed { by: id, at: now };
            let made = items::create(&db, &delivery, message.shard, start).await?;
            if let Some(existing) = made {
                return Ok(Claimed::Existing(existing));
            }
            delivery.stored = true;
        }
        let claim = Claim {
            at: now,
            by: Some(id.to_string()),
            manual,
        };
        let claims = delivery.claims.get_or_insert_with(Default::default);
        claims.insert(name.to_string(), claim);
        if !manual {
            delivery.schedule_claim = Some(name.to_string());
        }
        Ok(Claimed::Yes(delivery))
    }

    async fn release(&self, lease: slots::Lease, webhook_id: u64) {
        if let Err(error) = slots::release(&self.client, &self.table, lease).await {
            let error = cause_chain(&error);
            tracing::warn!(%error, webhook_id, "webhook slot left to its lease");
        }
    }

    /// An attempt claimed under `name` by a receipt that ended before
    /// recording it (the claim is older than any receipt lives), recorded
    /// now as `interrupted` (a failure: the receiver may or may not have had
    /// it); a scheduled one moves the schedule as any failure does, so a
    /// process that keeps ending at the same attempt still comes to the
    /// schedule's end, and this message carries the schedule on.
    async fn interrupted(
        &self,
        delivery: &Delivery,
        name: &str,
        claim: &Claim,
    ) -> Result<Disposition, DeliverError> {
        let attempt = Attempt {
            at: claim.at,
            duration_ms: 0,
            outcome: Outcome::failed(FailureKind::Interrupted),
        };
        self.record(delivery, None, &attempt, name, claim.manual)
            .await
    }

    /// The endpoint, when it may receive the delivery now (section 9: its
    /// key's state and role now, read at most `ATTEMPT_KEY_AGE` ago, not at
    /// the fan-out); else why not, `None` when it is gone.
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
            .decide_for_attempt(endpoint.enabled, endpoint.owner_id, now)
            .await?;
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
    /// A retry by hand is not made, and changes nothing. A delivery not
    /// yet made is made so, for its owner to see.
    async fn not_attempted(
        &self,
        message: &DeliveryMessage,
        delivery: &Delivery,
        why: Option<NotReceiving>,
    ) -> Result<Disposition, DeliverError> {
        let db = self.db();
        if message.manual {
            return Ok(Disposition::Done);
        }
        let held_until = match why {
            Some(NotReceiving::KeyBanned { until: ban_end }) => {
                let ends = delivery.created_at.map(|at| at + self.schedule.span());
                ends.is_some_and(|ends| ban_end <= ends).then_some(ban_end)
            }
            _ => None,
        };
        if !delivery.stored {
            let start = match held_until {
                Some(until) => Start::Held { until },
                None => Start::Failed,
            };
            let made = items::create(&db, delivery, message.shard, start).await?;
            return Ok(match (made, held_until) {
                (None, Some(ban_end)) => Disposition::Later(until(Utc::now(), ban_end)),
                (None, None) => Disposition::Done,
                // Made by another message first: look again.
                (Some(_), _) => Disposition::Later(slot_wait(1)),
            });
        }
        if let Some(ban_end) = held_until {
            return Ok(match record::hold(&db, delivery, ban_end).await? {
                true => Disposition::Later(until(Utc::now(), ban_end)),
                false => Disposition::Later(slot_wait(1)), // changed meanwhile: look again
            });
        }
        record::give_up(&db, delivery).await?;
        Ok(Disposition::Done)
    }
}

/// The name `message`'s attempt of `delivery` is claimed under: a
/// scheduled one the step's, a retry by hand its message's.
fn claim_name(message: &DeliveryMessage, delivery: &Delivery) -> String {
    match message.manual {
        true => items::manual_claim(&message.id),
        false => items::step_claim(delivery.schedule_step),
    }
}

/// Whether the attempt `message` would make is claimed already, and by whom.
enum Held {
    /// Not claimed: this message may claim it.
    No,
    /// Claimed by a receipt that may still be making it: not this one's to
    /// make (what the queue does with the message instead).
    Elsewhere(Disposition),
    /// Claimed by a receipt that ended before recording it: to be recorded
    /// as interrupted, under this name.
    Interrupted(String, Claim),
}

/// [`Held`] for `message` and `delivery` at `now`: a retry by hand looks for
/// its own claim (also as a build before step names made it, named by the
/// message's id), a scheduled message for its step's (`scheduleClaim`).
/// A live claim of the same message is another receipt of it under way:
/// this one comes back when that claim would have ended, to record it as
/// interrupted if it was never recorded (the queue then holds one message,
/// as both receipts share it). A live claim of another message (the event
/// fanned out twice) is that message's to carry on: this one is done.
fn held(message: &DeliveryMessage, delivery: &Delivery, now: DateTime<Utc>) -> Held {
    let names = match message.manual {
        true => vec![items::manual_claim(&message.id), message.id.clone()],
        false => delivery.schedule_claim.iter().cloned().collect(),
    };
    let Some((name, claim)) = names
        .into_iter()
        .find_map(|name| Some((name.clone(), delivery.claim_of(&name)?.clone())))
    else {
        return match (message.manual, &delivery.schedule_claim) {
            // A step claimed with no claim to show: a write this code never makes.
            (false, Some(_)) => Held::Elsewhere(Disposition::Done),
            _ => Held::No,
        };
    };
    if !claim.live(now) {
        return Held::Interrupted(name, claim);
    }
    let by = claim.by.as_deref().unwrap_or(&name);
    match by == message.id {
        true => Held::Elsewhere(Disposition::Later(until(
            now,
            claim.at + items::CLAIM_LEASE,
        ))),
        false => Held::Elsewhere(Disposition::Done),
    }
}

/// What a scheduled message does instead of an attempt, if anything: wait
/// for its delivery's next attempt, or stop, the delivery no longer pending.
/// A retry by hand is made whatever the state.
fn not_now(
    message: &DeliveryMessage,
    delivery: &Delivery,
    now: DateTime<Utc>,
) -> Option<Disposition> {
    if message.manual {
        return None;
    }
    match (delivery.state, delivery.next_attempt_at) {
        (DeliveryState::Pending, Some(at)) if at > now => Some(Disposition::Later(until(now, at))),
        (DeliveryState::Pending, _) => None,
        _ => Some(Disposition::Done),
    }
}

/// What [`Deliverer::claim`] came to.
enum Claimed {
    /// Claimed: the delivery as it now is, the claim on it.
    Yes(Delivery),
    /// Not this message's attempt to make (its name is taken, another
    /// message has the schedule's, the schedule moved on, or the delivery
    /// expired).
    No,
    /// A fan-out's message at its first receipt found its delivery made
    /// already: the item as it is.
    Existing(Delivery),
}

pub(super) fn until(now: DateTime<Utc>, at: DateTime<Utc>) -> Duration {
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
