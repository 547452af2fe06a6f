//! Delivery items: one per (endpoint, event), made by the fan-out (or a
//! ping), attempted by the delivery handler, listed newest first.
//!
//! | PK | SK | GSI3PK | id | attributes |
//! |---|---|---|---|---|
//! | `WEBHOOK#<webhookId>` | `DELIVERY#<eventId>` | `WEBHOOKDELIVERY#<webhookId>` | creation order (an id from the allocator) | `webhookId`, `eventId`, `type`, `body`, `state`, `attempts`, `attemptCount`, `scheduleStep`, `nextAttemptAt`, `createdAt`, `expiresAt` |
//!
//! `eventId`s are not in time order, so the list runs on GSI3 (an existing
//! index, sorted on the numeric `id`), where each delivery's `id` is an id
//! the service's allocator made at its creation: highest first is newest
//! first ([`crate::db::new_id`]).

use super::endpoints::time;
use super::list::{keys_page, KeyList};
use super::records::WebhookDelivery;
use super::types::EventType;
use crate::db::{classify, from_item, n, new_id, s, Db, DbError, Item, Page};
use crate::records::Id;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Duration, Utc};
use std::collections::HashMap;

/// How long a delivery is kept after its last change (contract 9).
pub const KEPT_DAYS: i64 = 30;

pub fn key(webhook_id: u64, event_id: &str) -> Item {
    HashMap::from([
        ("PK".to_string(), s(format!("WEBHOOK#{webhook_id}"))),
        ("SK".to_string(), s(format!("DELIVERY#{event_id}"))),
    ])
}

fn list(webhook_id: u64) -> KeyList {
    KeyList::new("GSI3", format!("WEBHOOKDELIVERY#{webhook_id}"))
}

/// The table's TTL attribute for an item last changed at `now`.
pub fn expires_at(now: DateTime<Utc>) -> i64 {
    (now + Duration::days(KEPT_DAYS)).timestamp()
}

/// A delivery to create.
pub struct NewDelivery<'a> {
    pub webhook_id: u64,
    pub event_id: &'a str,
    pub event_type: EventType,
    /// The exact compact JSON signed on every attempt.
    pub body: &'a str,
}

/// Whether the caller must enqueue a message for the delivery.
#[derive(Debug, PartialEq)]
pub enum Created {
    /// Created now.
    New,
    /// Made by an earlier run and still at the schedule's start: that run
    /// may have stopped before its message went out, so send it again (an
    /// attempt by hand does not count: it carries no schedule).
    Unattempted,
    /// Made before, its schedule under way: its message went out.
    Existing,
}

/// Creates a pending delivery, due now, unless the event's delivery to the
/// endpoint exists already (`attribute_not_exists(PK)`: the fan-out runs at
/// least once per event).
pub async fn create(
    client: &Client,
    table: &str,
    new: &NewDelivery<'_>,
    now: DateTime<Utc>,
) -> Result<Created, DbError> {
    let mut item = key(new.webhook_id, new.event_id);
    item.extend([
        ("GSI3PK".to_string(), s(list(new.webhook_id).partition)),
        ("id".to_string(), n(new_id(now))),
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
        ("expiresAt".to_string(), n(expires_at(now))),
    ]);
    let put = client
        .put_item()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression("attribute_not_exists(PK)")
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .send()
        .await;
    match put {
        Ok(_) => Ok(Created::New),
        Err(error) => match error {
            aws_sdk_dynamodb::error::SdkError::ServiceError(ref service)
                if matches!(
                    service.err(),
                    PutItemError::ConditionalCheckFailedException(_)
                ) =>
            {
                let old = match service.err() {
                    PutItemError::ConditionalCheckFailedException(failed) => failed.item.clone(),
                    _ => None,
                };
                let started = old.is_none_or(|old| {
                    old.get("scheduleStep") != Some(&n(0))
                        || old.get("state") != Some(&s("pending"))
                });
                Ok(if started {
                    Created::Existing
                } else {
                    Created::Unattempted
                })
            }
            other => Err(classify(table, other)),
        },
    }
}

/// A delivery of endpoint `webhook_id`, read consistently.
pub async fn get(
    client: &Client,
    table: &str,
    webhook_id: u64,
    event_id: &str,
) -> Result<Option<WebhookDelivery>, DbError> {
    let got = client
        .get_item()
        .table_name(table)
        .set_key(Some(key(webhook_id, event_id)))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| classify(table, e))?;
    got.item.map(from_item).transpose()
}

/// A page of an endpoint's deliveries, newest first.
pub async fn list_page(
    db: &Db,
    webhook_id: Id,
    limit: usize,
    after: Option<u64>,
) -> Result<Page<WebhookDelivery>, DbError> {
    let page = keys_page(db, &list(webhook_id.get()), limit, after).await?;
    let order: Vec<Item> = page.items.clone();
    let items = db
        .batch_get_consistent("list deliveries", page.items, None)
        .await?;
    let mut by_key: Vec<(usize, WebhookDelivery)> = Vec::with_capacity(items.len());
    for item in items {
        let position = order
            .iter()
            .position(|k| k.get("SK") == item.get("SK"))
            .unwrap_or(usize::MAX);
        by_key.push((position, from_item(item)?));
    }
    by_key.sort_by_key(|(position, _)| *position);
    Ok(Page {
        items: by_key.into_iter().map(|(_, delivery)| delivery).collect(),
        next_after: page.next_after,
    })
}
