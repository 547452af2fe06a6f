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
