//! A delivery made: one per (endpoint, event), by a conditional put on the
//! event's key, however often the event is fanned out and its messages
//! received; and the conditions of every write of a delivery item.

use super::key;
use crate::db::expr::Expr;
use crate::db::{n, s, Check, Db, DbError, Decided, Item, OnFailure, Write};
use crate::webhooks::endpoints::time;
use crate::webhooks::schedule::expires_at;
use crate::webhooks::types::EventType;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// The conditions of a delivery item's writes (this module's, and the
/// delivery worker's, `deliver::record`). Each is decided once from what
/// was read: a failure is the writer's answer (someone else wrote first),
/// read again where it must know what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryCheck {
    /// No delivery of the event to the endpoint exists yet.
    New,
    /// The attempt's name is free; for a scheduled attempt, the delivery is
    /// pending at the step read and no other claim holds the schedule.
    Claimable,
    /// The delivery is as read: the same attempts counted, and the
    /// attempt's claim held (recording it) or the delivery still pending
    /// (leaving it unattempted).
    AsRead,
}

impl Check for DeliveryCheck {
    fn on_failure(self) -> OnFailure {
        OnFailure::ReadAgain
    }
}

/// A delivery to create.
pub struct NewDelivery<'a> {
    pub webhook_id: u64,
    /// Its partition among the endpoint's: [`shard_of_event`] of its event
    /// and the endpoint's `deliveryShards`.
    pub shard: u16,
    pub event_id: &'a str,
    pub event_type: EventType,
    /// The exact compact JSON signed on every attempt.
    pub body: &'a str,
}

/// How a delivery begins.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Start<'a> {
    /// Pending and due now, for the message sent after it (a ping).
    Due,
    /// Pending, its first attempt claimed by the message named `by`
    /// (`DeliveryMessage::id`): a fan-out's message at its first receipt,
    /// which sends the attempt once this write is made.
    Claimed { by: &'a str, at: DateTime<Utc> },
    /// Pending, not to be attempted before `until` (its endpoint's key is
    /// banned until then).
    Held { until: DateTime<Utc> },
    /// Failed without an attempt (its endpoint may not receive it now); a
    /// retry by hand can still try it.
    Failed,
}

/// The name of the schedule's first attempt's claim: step 0's.
const FIRST_CLAIM: &str = "s0";

/// What [`create`] found.
#[derive(Debug, PartialEq)]
pub enum Created {
    /// Made now.
    New,
    /// Made before (another message of the event, or an earlier receipt of
    /// this one): the item as it is, when DynamoDB gave it back.
    Existing(Option<Item>),
}

/// Creates the delivery as `start` says, unless the event's delivery to
/// the endpoint exists already (`attribute_not_exists(PK)`: an event may be
/// fanned out more than once, and each of its messages may be received more
/// than once). `now` is its `createdAt`: for a fan-out's message, when
/// the fan-out took the event.
pub async fn create(
    client: &Client,
    table: &str,
    new: &NewDelivery<'_>,
    start: Start<'_>,
    now: DateTime<Utc>,
) -> Result<Created, DbError> {
    let mut item = key(new.webhook_id, new.shard, new.event_id);
    item.extend([
        ("webhookId".to_string(), n(new.webhook_id)),
        ("eventId".to_string(), s(new.event_id)),
        ("type".to_string(), s(new.event_type.as_str())),
        ("body".to_string(), s(new.body)),
        ("attempts".to_string(), AttributeValue::L(vec![])),
        ("attemptCount".to_string(), n(0)),
        ("scheduleStep".to_string(), n(0)),
        ("createdAt".to_string(), s(time(now))),
        // Fixed here: no later write moves it (30 days from its creation).
        ("expiresAt".to_string(), n(expires_at(now))),
    ]);
    let mut claims = HashMap::new();
    let (state, next) = match start {
        Start::Due => ("pending", Some(now)),
        Start::Claimed { by, at } => {
            // The first scheduled attempt's claim (`deliver::items::step_claim(0)`).
            let claim = HashMap::from([("at".to_string(), s(time(at))), ("by".to_string(), s(by))]);
            claims.insert(FIRST_CLAIM.to_string(), AttributeValue::M(claim));
            item.insert("scheduleClaim".to_string(), s(FIRST_CLAIM));
            ("pending", Some(at))
        }
        Start::Held { until } => ("pending", Some(until)),
        Start::Failed => ("failed", None),
    };
    item.insert("claims".to_string(), AttributeValue::M(claims));
    item.insert("state".to_string(), s(state));
    if let Some(next) = next {
        item.insert("nextAttemptAt".to_string(), s(time(next)));
    }
    // A plain conditional put (`Db::write` sends a lone put so), the item
    // there given back when it fails: no second read to see it.
    let put = Expr::new().absent().returning_old().put(table, item)?;
    let write = Write::new().checked(DeliveryCheck::New, put);
    let db = Db::new(client.clone(), table);
    Ok(match db.write_decided("create delivery", write).await? {
        Decided::Done => Created::New,
        Decided::Failed(_, found) => Created::Existing(found),
    })
}
