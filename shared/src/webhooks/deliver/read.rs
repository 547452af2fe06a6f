//! The reads a batch of delivery messages starts with: their deliveries
//! and endpoints, each once, in one consistent `BatchGetItem`.

use super::items::{delivery_key, endpoint_key, Delivery, Endpoint};
use super::DeliverError;
use crate::db::{from_item, Db, Item};
use crate::webhooks::queue::DeliveryMessage;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

/// The delivery items of a batch of messages and their endpoints', each
/// endpoint once, read consistently in one call: a staff endpoint takes most
/// events, so a batch's attempts share one read of it, not one each (the
/// partition model's first limit for webhooks was reads of that one item).
#[derive(Debug, Default)]
pub struct BatchRead {
    deliveries: HashMap<(String, String), Delivery>,
    endpoints: HashMap<u64, Endpoint>,
}

impl BatchRead {
    /// The delivery `message` names (`None`: expired) and its endpoint
    /// (`None`: deleted), as the batch's read found them.
    pub fn of(&self, message: &DeliveryMessage) -> (Option<Delivery>, Option<Endpoint>) {
        let partition = crate::webhooks::deliveries::partition(message.webhook_id, message.shard);
        let delivery = self
            .deliveries
            .get(&(partition, message.event_id.clone()))
            .cloned();
        let endpoint = self.endpoints.get(&message.webhook_id).cloned();
        (delivery, endpoint)
    }
}

/// Reads the deliveries `messages` (each with its receive count) name and
/// each of their endpoints once, consistently, in one `BatchGetItem` per
/// 100 keys (a queue batch of 10 is one call; `Db::batch_get_consistent`).
pub async fn deliveries_and_endpoints(
    db: &Db,
    messages: &[(&DeliveryMessage, u32)],
) -> Result<BatchRead, DeliverError> {
    let mut keys: Vec<Item> = Vec::new();
    let mut endpoints_named = std::collections::HashSet::new();
    for (message, receives) in messages {
        let partition = crate::webhooks::deliveries::partition(message.webhook_id, message.shard);
        let key = delivery_key(&partition, &message.event_id);
        // A fan-out's message at its first receipt makes its delivery:
        // nothing to read (and when another message of the event made it,
        // the write that fails gives it back).
        let first_receipt = message.event.is_some() && *receives <= 1;
        if !first_receipt && !keys.contains(&key) {
            keys.push(key);
        }
        if endpoints_named.insert(message.webhook_id) {
            keys.push(endpoint_key(message.webhook_id));
        }
    }
    let mut read = BatchRead::default();
    let items = db
        .batch_get_consistent("read webhook deliveries", keys, None)
        .await?;
    for item in items {
        match item.get("SK") {
            Some(AttributeValue::S(sk)) if sk == "ENDPOINT" => {
                let endpoint: Endpoint = from_item(item)?;
                read.endpoints.insert(endpoint.id, endpoint);
            }
            _ => {
                let delivery: Delivery = from_item(item)?;
                let key = (delivery.partition.clone(), delivery.event_id.clone());
                read.deliveries.insert(key, delivery);
            }
        }
    }
    Ok(read)
}
