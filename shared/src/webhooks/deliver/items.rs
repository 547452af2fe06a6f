//! The endpoint and delivery items as delivery reads and writes them.
//!
//! Who receives an event and the delivery's creation are the stored items'
//! own modules' (`endpoints::subscribers`, `deliveries::create`):
//! the functions here call them and read their items in the form delivery
//! works with ([`Endpoint`], [`Delivery`]), their errors as delivery's.
//! Recording attempts and the endpoint's failure state is `record`'s.

use super::DeliverError;
use crate::db::{from_item, s, to_item, Db, Item};
use crate::webhooks::queue::{DeliveryMessage, QueuedEvent};
use crate::webhooks::receiving::KeyStates;
use crate::webhooks::types::EventType;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The endpoint item's key, as the stored endpoints spell it.
pub fn endpoint_key(webhook_id: u64) -> Item {
    crate::webhooks::endpoints::key(webhook_id)
}

/// The delivery item's key, as the stored deliveries spell it: its
/// partition (`WEBHOOK#<id>#<shard>`) and its event.
pub fn delivery_key(partition: &str, event_id: &str) -> Item {
    crate::webhooks::deliveries::key_in(partition, event_id)
}

/// The key of an item of endpoint `webhook_id`'s own partition (its slots).
pub(super) fn key(webhook_id: u64, sort: String) -> Item {
    HashMap::from([
        ("PK".to_string(), s(format!("WEBHOOK#{webhook_id}"))),
        ("SK".to_string(), s(sort)),
    ])
}

/// RFC 3339 with milliseconds, UTC, as every stored time.
pub use crate::webhooks::endpoints::time;

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
    /// The attempts claimed and not yet recorded, by the name of the
    /// message that claimed each ([`DeliveryMessage::id`]): written before
    /// an attempt is sent, replaced by the attempt when it is recorded.
    /// `None` on an item made before claims were (its first claim writes
    /// the whole map).
    pub claims: Option<HashMap<String, Claim>>,
    /// The claim among them that is the schedule's attempt at
    /// `scheduleStep` (one at a time: a second copy of the message does not
    /// send it again).
    pub schedule_claim: Option<String>,
    /// Whether the item exists: `false` for the one a fan-out's message
    /// describes before its first receipt has made it.
    #[serde(skip_deserializing, default = "stored_item")]
    pub stored: bool,
}

fn stored_item() -> bool {
    true
}

/// An attempt claimed before it is sent, under a name no other attempt
/// takes ([`step_claim`], [`manual_claim`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    pub at: DateTime<Utc>,
    /// The message whose receipt claimed it ([`DeliveryMessage::id`]);
    /// absent on a claim of a build before names were (its name is then
    /// the message's id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub manual: bool,
}

/// How long a claimed attempt may still be under way: the `webhooks`
/// function's timeout (60 s, `template.yaml`), which no invocation
/// outlives; an attempt itself ends within its 15 seconds. A claim older
/// than this was made by a receipt that ended before recording it.
pub const CLAIM_LEASE: chrono::Duration = chrono::Duration::seconds(60);

impl Claim {
    /// Whether the receipt that made it may still be making its attempt.
    pub fn live(&self, now: DateTime<Utc>) -> bool {
        self.at + CLAIM_LEASE > now
    }
}

/// The name the scheduled attempt at schedule step `step` is claimed under:
/// one per step, so two receipts (of one message, or of two messages of
/// one event) never both make it.
pub fn step_claim(step: u32) -> String {
    format!("s{step}")
}

/// The name a retry by hand is claimed under: its message's, so two
/// receipts of that message never both make it.
pub fn manual_claim(message_id: &str) -> String {
    format!("m{message_id}")
}

impl Delivery {
    /// The attempt claimed under `name` and not yet recorded.
    pub fn claim_of(&self, name: &str) -> Option<&Claim> {
        self.claims.as_ref().and_then(|claims| claims.get(name))
    }

    /// The delivery a fan-out's message describes, as its first receipt
    /// will make it: pending, due now, nothing attempted.
    pub fn unstored(message: &DeliveryMessage, event: &QueuedEvent) -> Delivery {
        let partition = crate::webhooks::deliveries::partition(message.webhook_id, message.shard);
        Delivery {
            partition,
            webhook_id: message.webhook_id,
            event_id: message.event_id.clone(),
            event_type: event.event_type.clone(),
            body: event.body.clone(),
            state: DeliveryState::Pending,
            attempts: Vec::new(),
            attempt_count: 0,
            schedule_step: 0,
            next_attempt_at: None,
            created_at: Some(event.fanned_out_at),
            claims: Some(HashMap::new()),
            schedule_claim: None,
            stored: false,
        }
    }

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
pub use crate::webhooks::deliveries::KEPT_ATTEMPTS;

pub use crate::webhooks::deliveries::{Created, DeliveryCheck, NewDelivery, Start};

/// The API's endpoint item as delivery reads it: the same stored attributes.
fn as_read(endpoint: crate::webhooks::endpoints::Endpoint) -> Result<Endpoint, DeliverError> {
    Ok(from_item(to_item(&endpoint)?)?)
}

/// Every endpoint that takes this event now (`endpoints::subscribers`,
/// its owner's key's state decided by `keys`).
pub async fn subscribers(
    db: &Db,
    keys: &KeyStates,
    event_type: EventType,
    order_owner: Option<u64>,
) -> Result<Vec<Endpoint>, DeliverError> {
    let (client, table) = (db.client(), db.table());
    crate::webhooks::endpoints::subscribers(client, table, keys, event_type, order_owner)
        .await?
        .into_iter()
        .map(as_read)
        .collect()
}

/// The delivery as `start` makes it unless the event's exists
/// (`deliveries::create`): `None` when made now, else the item as it is.
pub async fn create(
    db: &Db,
    delivery: &Delivery,
    shard: u16,
    start: Start<'_>,
) -> Result<Option<Delivery>, DeliverError> {
    let event_type = EventType::parse(&delivery.event_type)
        .ok_or_else(|| DeliverError::UnknownEvent(delivery.event_type.clone()))?;
    let new = NewDelivery {
        webhook_id: delivery.webhook_id,
        shard,
        event_id: &delivery.event_id,
        event_type,
        body: &delivery.body,
    };
    let created_at = delivery.created_at.unwrap_or_else(Utc::now);
    let (client, table) = (db.client(), db.table());
    let created = crate::webhooks::deliveries::create(client, table, &new, start, created_at);
    match created.await? {
        Created::New => Ok(None),
        Created::Existing(Some(item)) => Ok(Some(from_item(item)?)),
        Created::Existing(None) => {
            let found = self::delivery(db, &delivery.partition, &delivery.event_id);
            match found.await? {
                Some(found) => Ok(Some(found)),
                None => Err(DeliverError::Vanished {
                    webhook_id: delivery.webhook_id,
                    event_id: delivery.event_id.clone(),
                }),
            }
        }
    }
}

/// The secrets that sign an attempt of `endpoint` at `now`, newest first:
/// the one place an attempt reads them.
pub async fn signing_secrets(
    endpoint: &Endpoint,
    now: DateTime<Utc>,
) -> Result<Vec<String>, DeliverError> {
    let active = endpoint.active_secrets(now);
    Ok(crate::webhooks::secrets::signing_secrets(endpoint.id, &active).await?)
}

/// The delivery item in `partition`, read consistently.
pub async fn delivery(
    db: &Db,
    partition: &str,
    event_id: &str,
) -> Result<Option<Delivery>, DeliverError> {
    let sort = crate::webhooks::deliveries::sort_key(event_id);
    let got = db.get_item(partition.to_string(), &sort).await?;
    Ok(got.map(from_item).transpose()?)
}
