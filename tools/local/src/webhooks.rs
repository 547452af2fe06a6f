//! `make run`'s webhooks: every event the local consumer publishes also
//! goes to the webhooks fan-out, as the bus's rule sends it to the events
//! queue in AWS, and the deliveries run on the in-process queue
//! (`petstore::webhooks::deliver::local`), through the same handlers.

use events::publish::Delivered;
use events::{DomainEvent, Publisher};
use petstore::webhooks::deliver::{recorded_as_webhooks, Deliverer};
use std::sync::Arc;
use std::time::Duration;

/// How often a fan-out that failed is tried again (the events queue hands
/// a message back the same way), and when it is given up (its DLQ).
const FAN_OUT_TRIES: u32 = 5;
const FAN_OUT_AGAIN_AFTER: Duration = Duration::from_secs(2);

/// A publisher that publishes to `inner`, then fans each published event
/// out to the webhooks, in the background (the stream is never held up).
pub struct WebhookTee<P> {
    inner: P,
    deliverer: Arc<Deliverer>,
    region: String,
}

impl<P: Publisher> WebhookTee<P> {
    pub fn new(inner: P, deliverer: Arc<Deliverer>, region: impl Into<String>) -> WebhookTee<P> {
        WebhookTee {
            inner,
            deliverer,
            region: region.into(),
        }
    }
}

impl<P: Publisher> Publisher for WebhookTee<P> {
    async fn publish(&self, events: &[DomainEvent]) -> Vec<Result<(), String>> {
        let results = self.inner.publish(events).await;
        for (event, result) in events.iter().zip(&results) {
            if result.is_err() {
                continue;
            }
            let delivered = Delivered::of(event, "000000000000", &self.region);
            let Ok(event) = serde_json::to_value(delivered) else {
                continue;
            };
            tokio::spawn(fan_out(self.deliverer.clone(), event));
        }
        results
    }
}

async fn fan_out(deliverer: Arc<Deliverer>, event: serde_json::Value) {
    for _ in 0..FAN_OUT_TRIES {
        match petstore::aws_calls::within(recorded_as_webhooks(), deliverer.fan_out(&event)).await {
            Ok(fanned) => return fanned.log(),
            Err(error) => tracing::warn!(%error, "webhook fan-out handed back"),
        }
        tokio::time::sleep(FAN_OUT_AGAIN_AFTER).await;
    }
    tracing::error!(event_id = %event["detail"]["eventId"], "webhook fan-out given up");
}
