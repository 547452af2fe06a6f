//! The reads a batch of delivery messages starts with: their deliveries
//! and endpoints, each once, in one consistent `BatchGetItem`.

use super::items::{db_error, delivery_key, endpoint_key, Delivery, Endpoint, Item};
use super::DeliverError;
use crate::webhooks::queue::DeliveryMessage;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use aws_sdk_dynamodb::Client;
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

/// The most keys one `BatchGetItem` takes.
const BATCH_GET_KEYS: usize = 100;

/// Reads the deliveries `messages` (each with its receive count) name and
/// each of their endpoints once, consistently, in one `BatchGetItem` per
/// 100 keys (a queue batch of 10 is one call).
pub async fn deliveries_and_endpoints(
    client: &Client,
    table: &str,
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
    for chunk in keys.chunks(BATCH_GET_KEYS) {
        for item in batch_get(client, table, chunk.to_vec()).await? {
            let as_read = |e: serde_dynamo::Error| DeliverError::Item(e.to_string());
            match item.get("SK") {
                Some(AttributeValue::S(sk)) if sk == "ENDPOINT" => {
                    let endpoint: Endpoint = serde_dynamo::from_item(item).map_err(as_read)?;
                    read.endpoints.insert(endpoint.id, endpoint);
                }
                _ => {
                    let delivery: Delivery = serde_dynamo::from_item(item).map_err(as_read)?;
                    let key = (delivery.partition.clone(), delivery.event_id.clone());
                    read.deliveries.insert(key, delivery);
                }
            }
        }
    }
    Ok(read)
}

/// The items under `keys` (at most 100), read consistently; unprocessed
/// keys (throttling) are asked again, as the SDK does not.
async fn batch_get(
    client: &Client,
    table: &str,
    keys: Vec<Item>,
) -> Result<Vec<Item>, DeliverError> {
    let keys = KeysAndAttributes::builder()
        .set_keys(Some(keys))
        .consistent_read(true)
        .build()
        .map_err(|e| DeliverError::Db(e.to_string()))?;
    let mut pending = Some(keys);
    let mut found = Vec::new();
    for _ in 0..5 {
        let Some(keys) = pending.take() else { break };
        let out = client
            .batch_get_item()
            .request_items(table, keys)
            .send()
            .await
            .map_err(|e| db_error("BatchGetItem delivery")(e.into()))?;
        found.extend(
            out.responses
                .and_then(|mut r| r.remove(table))
                .unwrap_or_default(),
        );
        pending = out.unprocessed_keys.and_then(|mut r| r.remove(table));
    }
    match pending {
        None => Ok(found),
        Some(_) => Err(DeliverError::Db(
            "BatchGetItem delivery: keys left unprocessed".into(),
        )),
    }
}
