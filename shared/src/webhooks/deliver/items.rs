//! The endpoint and delivery items (the design's attribute names), as
//! delivery reads and writes them.
//!
//! Three functions here stand in for the webhooks-api branch's
//! (`endpoints::deliverable`, `endpoints::subscribers`, `deliveries::create`):
//! same item format, simplest access (`subscribers` scans, where the merge
//! uses webhooks-api's index, and neither checks the owner's key for
//! revocation). Recording attempts and the endpoint's failure state is this
//! module's own, final code: conditional `UpdateItem`s on the item's key.

use super::standin::EventType;
use super::DeliverError;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

type Item = HashMap<String, AttributeValue>;

pub fn endpoint_key(webhook_id: u64) -> Item {
    key(webhook_id, "ENDPOINT".to_string())
}

pub fn delivery_key(webhook_id: u64, event_id: &str) -> Item {
    key(webhook_id, format!("DELIVERY#{event_id}"))
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

/// Stand-in for `endpoints::deliverable`: the endpoint when it exists and is enabled.
pub async fn deliverable(
    client: &Client,
    table: &str,
    webhook_id: u64,
) -> Result<Option<Endpoint>, DeliverError> {
    let got = client
        .get_item()
        .table_name(table)
        .set_key(Some(endpoint_key(webhook_id)))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| db_error("GetItem endpoint")(e.into()))?;
    let Some(item) = got.item else {
        return Ok(None);
    };
    let endpoint: Endpoint =
        serde_dynamo::from_item(item).map_err(|e| DeliverError::Item(e.to_string()))?;
    Ok(endpoint.enabled.then_some(endpoint))
}

/// Stand-in for `endpoints::subscribers`: every enabled endpoint that receives this event.
pub async fn subscribers(
    client: &Client,
    table: &str,
    event_type: EventType,
    order_owner: Option<u64>,
) -> Result<Vec<Endpoint>, DeliverError> {
    let mut found = Vec::new();
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(table)
            .filter_expression("SK = :endpoint AND enabled = :true")
            .expression_attribute_values(":endpoint", s("ENDPOINT"))
            .expression_attribute_values(":true", AttributeValue::Bool(true))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| db_error("Scan endpoints")(e.into()))?;
        for item in page.items.unwrap_or_default() {
            let endpoint: Endpoint =
                serde_dynamo::from_item(item).map_err(|e| DeliverError::Item(e.to_string()))?;
            if endpoint.receives(event_type, order_owner) {
                found.push(endpoint);
            }
        }
        start = page.last_evaluated_key;
        if start.is_none() {
            return Ok(found);
        }
    }
}

/// What a fan-out asks to create.
pub struct NewDelivery<'a> {
    pub webhook_id: u64,
    pub event_id: &'a str,
    pub event_type: EventType,
    pub body: &'a str,
}

/// Whether the fan-out must enqueue a message for the delivery.
#[derive(Debug, PartialEq)]
pub enum Created {
    /// Created now.
    New,
    /// Made by an earlier run of this fan-out and never attempted: that
    /// run may have stopped before its message went out, so send it again
    /// (a duplicate message costs at most a duplicate attempt).
    Unattempted,
    /// Made before and already attempted: its message went out.
    Existing,
}

/// Stand-in for `deliveries::create`: the item, `attribute_not_exists(PK)`.
pub async fn create(
    client: &Client,
    table: &str,
    new: &NewDelivery<'_>,
    now: DateTime<Utc>,
) -> Result<Created, DeliverError> {
    let mut item = delivery_key(new.webhook_id, new.event_id);
    item.extend([
        ("webhookId".to_string(), n(new.webhook_id)),
        ("eventId".to_string(), s(new.event_id)),
        ("type".to_string(), s(new.event_type.as_str())),
        ("body".to_string(), s(new.body)),
        ("state".to_string(), s("pending")),
        ("attempts".to_string(), AttributeValue::L(vec![])),
        ("attemptCount".to_string(), n(0)),
        ("scheduleStep".to_string(), n(0)),
        ("nextAttemptAt".to_string(), s(time(now))),
        ("createdAt".to_string(), s(time(now))),
        (
            "expiresAt".to_string(),
            n(super::super::schedule::expires_at(now)),
        ),
    ]);
    let put = client
        .put_item()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression("attribute_not_exists(PK)")
        .return_values_on_condition_check_failure(
            aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
        )
        .send()
        .await;
    match put {
        Ok(_) => Ok(Created::New),
        Err(error) => match error.into_service_error() {
            aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(failed) => {
                let attempted = failed.item.and_then(|old| old.get("attemptCount").cloned()) != Some(n(0));
                Ok(if attempted { Created::Existing } else { Created::Unattempted })
            }
            other => Err(db_error("PutItem delivery")(other.into())),
        },
    }
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
