//! The deliveries queue's messages, and the queue they go through: SQS in
//! Lambda, in process under `make run` and in the tests (webhooks-delivery
//! implements both; [`HeldQueue`] only keeps what it is sent).

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// One message of the deliveries queue: one (endpoint, event) to attempt.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryMessage {
    pub webhook_id: u64,
    /// The delivery's shard among its endpoint's partitions
    /// (`deliveries::shard_of_event`), so that the attempt reads the
    /// delivery and its endpoint in one call.
    #[serde(default)]
    pub shard: u16,
    pub event_id: String,
    /// A retry by hand (`POST .../retry`): one attempt now, whatever the state.
    #[serde(default)]
    pub manual: bool,
    /// This message's own name, the same at every receipt of it and
    /// different for every message sent: an attempt is claimed under it
    /// before it is sent, so a receipt that finds its own claim knows an
    /// earlier receipt of the message may have sent that attempt and did
    /// not live to record it. Empty in a message of a release before this
    /// field (the SQS handler then names it by SQS's `messageId`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// The event, as the fan-out sends it: the first receipt creates the
    /// delivery from it, its attempt claimed in the same write. Absent in a
    /// ping's or a retry's message (their delivery exists already).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<QueuedEvent>,
}

/// The event a fan-out's message carries: what its delivery is made of.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct QueuedEvent {
    /// Section 9's type (`order.placed`, ...).
    #[serde(rename = "type")]
    pub event_type: String,
    /// The exact compact JSON every attempt signs and sends.
    pub body: String,
    /// When the fan-out took it: the delivery's `createdAt`.
    pub fanned_out_at: chrono::DateTime<chrono::Utc>,
}

impl DeliveryMessage {
    /// A message for the delivery of `event_id` to endpoint `webhook_id`
    /// (in its partition `shard`), named afresh.
    pub fn new(webhook_id: u64, shard: u16, event_id: &str, manual: bool) -> DeliveryMessage {
        DeliveryMessage {
            webhook_id,
            shard,
            event_id: event_id.to_string(),
            manual,
            id: format!("{:016x}", rand::random::<u64>()),
            event: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the deliveries queue refused messages: {0}")]
pub struct QueueError(pub String);

/// Where delivery messages go: SQS in Lambda, an in-process queue locally.
pub trait DeliveryQueue: Send + Sync {
    fn send(&self, messages: Vec<DeliveryMessage>) -> BoxFuture<'_, Result<(), QueueError>>;
}

/// A queue that keeps every message it is sent, in order: the API's tests
/// read what a ping or a retry enqueued, and `make run` holds messages in it
/// until a local runner takes them.
#[derive(Debug, Default)]
pub struct HeldQueue {
    messages: std::sync::Mutex<Vec<DeliveryMessage>>,
}

impl HeldQueue {
    /// Every message sent so far, taken out of the queue.
    pub fn take(&self) -> Vec<DeliveryMessage> {
        match self.messages.lock() {
            Ok(mut held) => std::mem::take(&mut *held),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        }
    }
}

impl DeliveryQueue for HeldQueue {
    fn send(&self, messages: Vec<DeliveryMessage>) -> BoxFuture<'_, Result<(), QueueError>> {
        let held = self.messages.lock();
        let result = match held {
            Ok(mut held) => {
                held.extend(messages);
                Ok(())
            }
            Err(_) => Err(QueueError("the held queue's lock is poisoned".into())),
        };
        Box::pin(async move { result })
    }
}
