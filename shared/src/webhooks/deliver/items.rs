//! The endpoint and delivery items as delivery reads and writes them.
//!
//! Who receives an event, whether an endpoint may be called, and the
//! delivery's creation are the stored items' own modules'
//! (`endpoints::deliverable`, `endpoints::subscribers`, `deliveries::create`):
//! the functions here call them and read their items in the form delivery
//! works with ([`Endpoint`], [`Delivery`]), their errors as delivery's.
//! Recording attempts and the endpoint's failure state is this module's:
//! conditional `UpdateItem`s on the item's key.

use super::DeliverError;
use crate::webhooks::types::EventType;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

type Item = HashMap<String, AttributeValue>;

/// The endpoint item's key, as the stored endpoints spell it.
pub fn endpoint_key(webhook_id: u64) -> Item {
    crate::webhooks::endpoints::key(webhook_id)
}

/// The delivery item's key, as the stored deliveries spell it.
pub fn delivery_key(webhook_id: u64, event_id: &str) -> Item {
    crate::webhooks::deliveries::key(webhook_id, event_id)
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
    pub owner_role: String,
    pub url: String,
    #[serde(default)]
    pub events: Vec<String>,
    pub enabled: bool,
    #[serde(default)]
    pub secrets: Vec<StoredSecret>,
    pub failing_since: Option<DateTime<Utc>>,
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

    /// Whether this endpoint receives an event of `event_type` (section 9,
    /// "Who"): its owner's orders' events, and staff every type; each as
    /// `events` subscribes (empty: every type it may receive).
    pub fn receives(&self, event_type: EventType, order_owner: Option<u64>) -> bool {
        let allowed = match self.owner_role.as_str() {
            "staff" => true,
            _ => event_type.is_order() && order_owner == Some(self.owner_id),
        };
        let subscribed =
            self.events.is_empty() || self.events.iter().any(|e| e == event_type.as_str());
        allowed && subscribed
    }
}

/// A delivery item, as delivery reads it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub webhook_id: u64,
    pub event_id: String,
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

/// The endpoint when it exists, is enabled and its owner's key is not
/// revoked (`endpoints::deliverable`).
pub async fn deliverable(
    client: &Client,
    table: &str,
    webhook_id: u64,
) -> Result<Option<Endpoint>, DeliverError> {
    crate::webhooks::endpoints::deliverable(client, table, webhook_id)
        .await
        .map_err(stored_error)?
        .map(as_read)
        .transpose()
}

/// Every deliverable endpoint that receives this event
/// (`endpoints::subscribers`, on the lists' indexes).
pub async fn subscribers(
    client: &Client,
    table: &str,
    event_type: EventType,
    order_owner: Option<u64>,
) -> Result<Vec<Endpoint>, DeliverError> {
    crate::webhooks::endpoints::subscribers(client, table, event_type.as_str(), order_owner)
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

/// The delivery item, read consistently.
pub async fn delivery(
    client: &Client,
    table: &str,
    webhook_id: u64,
    event_id: &str,
) -> Result<Option<Delivery>, DeliverError> {
    let got = client
        .get_item()
        .table_name(table)
        .set_key(Some(delivery_key(webhook_id, event_id)))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| db_error("GetItem delivery")(e.into()))?;
    got.item
        .map(|item| serde_dynamo::from_item(item).map_err(|e| DeliverError::Item(e.to_string())))
        .transpose()
}
