//! The endpoint and delivery items as delivery reads and writes them.
//!
//! Who receives an event and the delivery's creation are the stored items'
//! own modules' (`endpoints::subscribers`, `deliveries::create`):
//! the functions here call them and read their items in the form delivery
//! works with ([`Endpoint`], [`Delivery`]), their errors as delivery's.
//! Recording attempts and the endpoint's failure state is this module's:
//! conditional `UpdateItem`s on the item's key.

use super::DeliverError;
use crate::webhooks::queue::DeliveryMessage;
use crate::webhooks::receiving::KeyStates;
use crate::webhooks::types::EventType;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

type Item = HashMap<String, AttributeValue>;

/// The endpoint item's key, as the stored endpoints spell it.
pub fn endpoint_key(webhook_id: u64) -> Item {
    crate::webhooks::endpoints::key(webhook_id)
}

/// The delivery item's key, as the stored deliveries spell it: its
/// partition (`WEBHOOK#<id>#<shard>`) and its event.
pub fn delivery_key(partition: &str, event_id: &str) -> Item {
    crate::webhooks::deliveries::key_in(partition, event_id)
}

pub(super) fn key(webhook_id: u64, sort: String) -> Item {
    HashMap::from([
        (
            "PK".to_string(),
            AttributeValue::S(format!("WEBHOOK#{webhook_id}")),
        ),
        ("SK".to_string(), AttributeValue::S(sort)),
    ])
}

pub fn s(text: impl Into<String>) -> AttributeValue {
    AttributeValue::S(text.into())
}

pub fn n(number: impl ToString) -> AttributeValue {
    AttributeValue::N(number.to_string())
}

/// RFC 3339 with milliseconds, UTC, as every stored time.
pub fn time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// An endpoint item, as far as delivery reads it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub id: u64,
    pub owner_id: u64,
    pub url: String,
    #[serde(default)]
    pub events: Vec<String>,
    pub enabled: bool,
    #[serde(default)]
    pub secrets: Vec<StoredSecret>,
    pub failing_since: Option<DateTime<Utc>>,
    /// The partitions its deliveries spread over (`deliveries::shard_of_event`).
    #[serde(default = "crate::webhooks::deliveries::one_shard")]
    pub delivery_shards: u16,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredSecret {
    pub secret: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retires_at: Option<DateTime<Utc>>,
}

impl Endpoint {
    /// The secrets that sign at `now` (not yet retired), newest first.
    pub fn active_secrets(&self, now: DateTime<Utc>) -> Vec<String> {
        let active = self
            .secrets
            .iter()
            .filter(|s| s.retires_at.is_none_or(|at| at > now));
        active.map(|s| s.secret.clone()).collect()
    }
}

/// A delivery item, as delivery reads it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// Its partition key (`WEBHOOK#<id>#<shard>`): where its updates go.
    #[serde(rename = "PK")]
    pub partition: String,
    pub webhook_id: u64,
    pub event_id: String,
    /// Section 9's type (`order.placed`, `webhook.ping`, ...).
    #[serde(rename = "type")]
    pub event_type: String,
    pub body: String,
    pub state: DeliveryState,
    #[serde(default)]
    pub attempts: Vec<StoredAttempt>,
    #[serde(default)]
    pub attempt_count: u32,
    /// Automatic attempts made: the schedule's position (attempts by hand
    /// do not move it).
    #[serde(default)]
    pub schedule_step: u32,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub created_at: Option<DateTime<Utc>>,
}

impl Delivery {
    /// Its event's type, and for an order's event the order's owner: what
    /// decides whether an endpoint still takes it.
    pub fn event(&self) -> (Option<EventType>, Option<u64>) {
        let owner = serde_json::from_str::<serde_json::Value>(&self.body)
            .ok()
            .and_then(|payload| payload["data"]["order"]["ownerId"].as_u64());
        (EventType::parse(&self.event_type), owner)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryState {
    Pending,
    Delivered,
    Failed,
}

impl DeliveryState {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Delivered => "delivered",
            DeliveryState::Failed => "failed",
        }
    }
}

/// One entry of a delivery's `attempts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredAttempt {
    pub at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub manual: bool,
}

/// The last attempts a delivery keeps.
pub const KEPT_ATTEMPTS: usize = 20;

fn db_error(operation: &'static str) -> impl Fn(aws_sdk_dynamodb::Error) -> DeliverError {
    move |error| DeliverError::Db(format!("{operation}: {error}"))
}

pub use crate::webhooks::deliveries::{Created, NewDelivery};

fn stored_error(error: crate::db::DbError) -> DeliverError {
    DeliverError::Db(error.to_string())
}

/// The API's endpoint item as delivery reads it: the same stored attributes.
fn as_read(endpoint: crate::webhooks::endpoints::Endpoint) -> Result<Endpoint, DeliverError> {
    let item: Item =
        serde_dynamo::to_item(&endpoint).map_err(|e| DeliverError::Item(e.to_string()))?;
    serde_dynamo::from_item(item).map_err(|e| DeliverError::Item(e.to_string()))
}

/// Every endpoint that takes this event now (`endpoints::subscribers`,
/// its owner's key's state decided by `keys`).
pub async fn subscribers(
    client: &Client,
    table: &str,
    keys: &KeyStates,
    event_type: EventType,
    order_owner: Option<u64>,
) -> Result<Vec<Endpoint>, DeliverError> {
    crate::webhooks::endpoints::subscribers(client, table, keys, event_type, order_owner)
        .await
        .map_err(stored_error)?
        .into_iter()
        .map(as_read)
        .collect()
}

/// A pending delivery unless the event's exists (`deliveries::create`).
pub async fn create(
    client: &Client,
    table: &str,
    new: &NewDelivery<'_>,
    now: DateTime<Utc>,
) -> Result<Created, DeliverError> {
    crate::webhooks::deliveries::create(client, table, new, now)
        .await
        .map_err(stored_error)
}

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

/// Reads every delivery `messages` name and each of their endpoints once,
/// consistently, in one `BatchGetItem` per 100 keys (a queue batch of 10
/// is one call).
pub async fn deliveries_and_endpoints(
    client: &Client,
    table: &str,
    messages: &[&DeliveryMessage],
) -> Result<BatchRead, DeliverError> {
    let mut keys: Vec<Item> = Vec::new();
    let mut endpoints_named = std::collections::HashSet::new();
    for message in messages {
        let partition = crate::webhooks::deliveries::partition(message.webhook_id, message.shard);
        let key = delivery_key(&partition, &message.event_id);
        if !keys.contains(&key) {
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

/// The secrets that sign an attempt of `endpoint` at `now`, newest first:
/// the one place an attempt reads them.
pub async fn signing_secrets(
    endpoint: &Endpoint,
    now: DateTime<Utc>,
) -> Result<Vec<String>, DeliverError> {
    crate::webhooks::secrets::signing_secrets(endpoint.id, &endpoint.active_secrets(now))
        .await
        .map_err(|e| DeliverError::Item(e.to_string()))
}

/// The delivery item in `partition`, read consistently.
pub async fn delivery(
    client: &Client,
    table: &str,
    partition: &str,
    event_id: &str,
) -> Result<Option<Delivery>, DeliverError> {
    let got = client
        .get_item()
        .table_name(table)
        .set_key(Some(delivery_key(partition, event_id)))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| db_error("GetItem delivery")(e.into()))?;
    got.item
        .map(|item| serde_dynamo::from_item(item).map_err(|e| DeliverError::Item(e.to_string())))
        .transpose()
}
