//! The webhooks' fan-out, done here, from the stream batch this function
//! already reads (issue 47): every event published to the bus is also
//! fanned out to its endpoints (`petstore::webhooks::deliver`, the same code
//! and delivery ids as any fan-out), and an event whose fan-out failed
//! counts as unpublished, so its record is delivered again (batch item
//! failure, then Lambda's bisecting retries and the dead-letter queue) and
//! nothing is lost. A record delivered again creates no second delivery:
//! the fan-out writes nothing, and each message's first receipt (in the
//! `webhooks` function) puts its delivery only if absent, the id being its
//! endpoint's and its event's.
//!
//! This takes the place of the bus rule and events queue that carried each
//! event to the `webhooks` function: no SQS message per event, no receive
//! and delete, no second invocation; an event nobody takes costs nothing
//! while the subscriptions' cached view answers (section 9's bounds).

use crate::domain::DomainEvent;
use crate::publish::Publisher;
use petstore::webhooks::deliver::Deliverer;
use petstore::webhooks::types::EventType;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A publisher that publishes to `inner`, then fans each published event
/// out to the webhooks; an event whose fan-out failed is answered as failed.
pub struct WithWebhooks<P> {
    inner: P,
    deliverer: Arc<Deliverer>,
    totals: FanOutTotals,
}

/// What the fan-outs did since last taken, for the batch's one log line.
#[derive(Debug, Default)]
pub struct FanOutTotals {
    /// Events of a type webhooks carry, fanned out.
    events: AtomicUsize,
    /// Those of them that some endpoint took.
    taken: AtomicUsize,
    /// Endpoints that took them, summed over the events.
    endpoints: AtomicUsize,
    /// Delivery messages sent.
    enqueued: AtomicUsize,
    /// Events whose fan-out failed (each to be fanned out again).
    failed: AtomicUsize,
}

/// [`FanOutTotals`], read.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct FannedOut {
    pub events: usize,
    pub taken: usize,
    pub endpoints: usize,
    pub enqueued: usize,
    pub failed: usize,
}

impl FannedOut {
    /// One line per batch that carried an event webhooks take (none for a
    /// batch of other events): the deliveries' own lines are the attempts'.
    pub fn log(&self) {
        if self.events == 0 {
            return;
        }
        tracing::info!(
            events = self.events,
            taken = self.taken,
            endpoints = self.endpoints,
            enqueued = self.enqueued,
            failed = self.failed,
            "webhook fan-out"
        );
    }
}

impl<P: Publisher> WithWebhooks<P> {
    pub fn new(inner: P, deliverer: Arc<Deliverer>) -> WithWebhooks<P> {
        WithWebhooks {
            inner,
            deliverer,
            totals: FanOutTotals::default(),
        }
    }

    /// The publisher the events go to first.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The fan-outs' totals since the last call, and zero again.
    pub fn take_totals(&self) -> FannedOut {
        let take = |n: &AtomicUsize| n.swap(0, Ordering::Relaxed);
        FannedOut {
            events: take(&self.totals.events),
            taken: take(&self.totals.taken),
            endpoints: take(&self.totals.endpoints),
            enqueued: take(&self.totals.enqueued),
            failed: take(&self.totals.failed),
        }
    }
}

impl<P: Publisher> Publisher for WithWebhooks<P> {
    async fn publish(&self, events: &[DomainEvent]) -> Vec<Result<(), String>> {
        let mut results = self.inner.publish(events).await;
        // Only what reached the bus: an unpublished event is sent again
        // with its record, and fanned out then.
        let fanning: Vec<usize> = (0..events.len())
            .filter(|&i| matches!(results.get(i), Some(Ok(()))))
            .filter(|&i| EventType::from_detail_type(events[i].detail_type).is_some())
            .collect();
        if fanning.is_empty() {
            return results;
        }
        let batch: Vec<(&str, &serde_json::Value)> = fanning
            .iter()
            .map(|&i| (events[i].detail_type, &events[i].detail))
            .collect();
        let fanned_out = self.deliverer.fan_out_all(&batch);
        let fanned = petstore::aws_calls::within(crate::recorded_as_events(), fanned_out).await;
        for (index, fanned) in fanning.into_iter().zip(fanned) {
            self.totals.events.fetch_add(1, Ordering::Relaxed);
            match fanned {
                Ok(fanned) => {
                    if fanned.endpoints > 0 {
                        self.totals.taken.fetch_add(1, Ordering::Relaxed);
                    }
                    self.totals
                        .endpoints
                        .fetch_add(fanned.endpoints, Ordering::Relaxed);
                    self.totals
                        .enqueued
                        .fetch_add(fanned.enqueued, Ordering::Relaxed);
                }
                Err(error) => {
                    self.totals.failed.fetch_add(1, Ordering::Relaxed);
                    results[index] = Err(format!("webhook fan-out: {error}"));
                }
            }
        }
        results
    }

    fn end_batch(&self) {
        self.inner.end_batch();
        self.take_totals().log();
    }
}
