//! The contract's events (`API.md` section 8) of one change: a pure function
//! of the stream record, so every delivery of a record yields the same events.
//!
//! | item change | events |
//! |---|---|
//! | pet created | `PetCreated`, then `StockChanged` from 0 (its first level, even 0) |
//! | pet changed | `PetUpdated` if its record (name, category, status) changed; `StockChanged` if its stock did (a pet item that holds its stock) |
//! | pet removed | `PetDeleted` (its inventory entry goes with it: no `StockChanged`) |
//! | stock item changed | `StockChanged` if its stock did |
//! | stock item created or removed | none (the pet's creation or removal says it; a pet's stock moved to its stock item by migration 0001 did not change) |
//! | category created, changed, removed | `CategoryCreated`, `CategoryUpdated` (record changed: not its pet count), `CategoryDeleted` |
//! | order created | `OrderPlaced` |
//! | order changed from incomplete to complete | `OrderCompleted` (a new ship date alone: none) |
//! | incomplete order removed | `OrderCancelled` (with `lapsed: true` when its hold lapsed: it was marked `lapsing` first) |
//! | order marked `lapsing` | none (its removal follows) |
//! | anything else (API keys, idempotency records, name guards) | none |
//!
//! Each event's `eventId` is the change's time (11 hex digits of Unix
//! milliseconds, the record's approximate creation time), the stream
//! record's `eventID` and the event's index in that record: the time first
//! so that an endpoint's deliveries, keyed by it, sort newest first
//! (`petstore::webhooks::deliveries`); its `sequence` is the record's `SequenceNumber`
//! followed by that index (one digit: a record yields at most two events).
//! Sequence numbers rise per partition key, so for one record (a pet and its
//! stock item share the key `PET#<id>`) a later event has a larger
//! `sequence`, compared as integers.

use crate::change::Change;
use chrono::{DateTime, SecondsFormat, Utc};
use petstore::db::pets::stock::StoredPetItem;
use petstore::db::stored::Stored;
use petstore::db::DbError;
use petstore::db::{categories::StoredCategory, orders::StoredOrder};
use petstore::records::Id;
use petstore::rules;
use petstore::webhooks::deliveries::timed_event_id;
use serde_json::{json, Map, Value};

/// The `source` of every event.
pub const SOURCE: &str = "petstore";

/// Every `detail-type`, in the order of the contract's table.
pub const DETAIL_TYPES: &[&str] = &[
    "PetCreated",
    "PetUpdated",
    "PetDeleted",
    "CategoryCreated",
    "CategoryUpdated",
    "CategoryDeleted",
    "OrderPlaced",
    "OrderCompleted",
    "OrderCancelled",
    "StockChanged",
];

/// One domain event: its `detail-type` and its `detail`.
#[derive(Debug, Clone, PartialEq)]
pub struct DomainEvent {
    pub detail_type: &'static str,
    /// A JSON object: the event's own fields, `eventId`, `occurredAt`, `sequence`.
    pub detail: Value,
    /// When the change was made (`occurredAt`; EventBridge's `time`).
    pub occurred_at: DateTime<Utc>,
}

impl DomainEvent {
    /// The `eventId`: the same on every delivery.
    pub fn event_id(&self) -> &str {
        self.detail["eventId"].as_str().unwrap_or_default()
    }

    /// The `sequence`, a decimal string.
    pub fn sequence(&self) -> &str {
        self.detail["sequence"].as_str().unwrap_or_default()
    }
}

/// The events of `change`, in order; none for an internal item. An image that
/// names a record but does not hold one is an error (the record is not
/// skipped: it stays unpublished, and so retried, then set aside).
pub fn events_of(change: &Change) -> Result<Vec<DomainEvent>, DbError> {
    let stored = |image: &Option<petstore::db::Item>| match image {
        Some(item) => Stored::of(item.clone()),
        None => Ok(None),
    };
    let details = details(stored(&change.old)?, stored(&change.new)?)?;
    let occurred_at = change.at.to_rfc3339_opts(SecondsFormat::Millis, true);
    Ok(details
        .into_iter()
        .enumerate()
        .map(|(index, (detail_type, mut detail))| {
            let in_record = format!("{}-{index}", change.event_id);
            detail.insert(
                "eventId".into(),
                Value::String(timed_event_id(change.at, &in_record)),
            );
            detail.insert("occurredAt".into(), Value::String(occurred_at.clone()));
            detail.insert(
                "sequence".into(),
                Value::String(format!("{}{index}", change.sequence)),
            );
            DomainEvent {
                detail_type,
                detail: Value::Object(detail),
                occurred_at: change.at,
            }
        })
        .collect())
}

type Details = Vec<(&'static str, Map<String, Value>)>;

/// The events' own fields for a change from `old` to `new`.
fn details(old: Option<Stored>, new: Option<Stored>) -> Result<Details, DbError> {
    use Stored::{Category, Order, Pet, Stock};
    Ok(match (old, new) {
        (None, Some(Pet(new))) => vec![
            ("PetCreated", fields([("pet", record(&new.pet)?)])),
            stock_changed(new.pet.id, first_stock(&new), 0),
        ],
        (Some(Pet(old)), Some(Pet(new))) => {
            let mut events = Vec::new();
            if old.pet != new.pet {
                events.push(changed("PetUpdated", "pet", &new.pet, &old.pet)?);
            }
            // Both images hold the stock: not its move to a stock item.
            if let (Some(before), Some(now)) = (old.stock, new.stock) {
                if before != now {
                    events.push(stock_changed(new.pet.id, now, before));
                }
            }
            events
        }
        (Some(Stock(old)), Some(Stock(new))) if old.stock != new.stock => {
            vec![stock_changed(new.id, new.stock, old.stock)]
        }
        (Some(Pet(old)), None) => vec![changed("PetDeleted", "pet", &old.pet, &old.pet)?],
        (None, Some(Category(new))) => vec![(
            "CategoryCreated",
            fields([("category", record(&new.category)?)]),
        )],
        (Some(Category(old)), Some(Category(new))) if old.category != new.category => {
            vec![category_changed("CategoryUpdated", &new, &old)?]
        }
        (Some(Category(old)), None) => vec![category_changed("CategoryDeleted", &old, &old)?],
        (None, Some(Order(new))) => vec![("OrderPlaced", order(&new)?)],
        (Some(Order(old)), Some(Order(new))) if !old.order.complete && new.order.complete => {
            vec![("OrderCompleted", order(&new)?)]
        }
        (Some(Order(old)), None) if !old.order.complete => {
            let mut cancelled = order(&old)?;
            // Marked before its cancellation: the service ended the hold.
            if old.lapsing {
                cancelled.insert("lapsed".into(), Value::Bool(true));
            }
            vec![("OrderCancelled", cancelled)]
        }
        _ => Vec::new(),
    })
}

fn record<T: serde::Serialize>(value: &T) -> Result<Value, DbError> {
    serde_json::to_value(value).map_err(DbError::internal)
}

fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// `{name: now, previous: before}`.
fn changed<T: serde::Serialize>(
    detail_type: &'static str,
    name: &str,
    now: &T,
    before: &T,
) -> Result<(&'static str, Map<String, Value>), DbError> {
    Ok((
        detail_type,
        fields([(name, record(now)?), ("previous", record(before)?)]),
    ))
}

fn category_changed(
    detail_type: &'static str,
    now: &StoredCategory,
    before: &StoredCategory,
) -> Result<(&'static str, Map<String, Value>), DbError> {
    changed(detail_type, "category", &now.category, &before.category)
}

/// A new pet's first stock: its pet item's, or, when its stock item holds
/// it (made in the same transaction, and publishing nothing), what every new
/// pet starts with.
fn first_stock(pet: &StoredPetItem) -> u32 {
    pet.stock
        .unwrap_or_else(|| rules::initial_stock(pet.pet.status))
}

fn stock_changed(pet: Id, quantity: u32, previous: u32) -> (&'static str, Map<String, Value>) {
    (
        "StockChanged",
        fields([
            ("petId", json!(pet)),
            ("quantity", json!(quantity)),
            ("previousQuantity", json!(previous)),
        ]),
    )
}

/// `{order}`, the order record with `ownerId` (when it has one).
fn order(stored: &StoredOrder) -> Result<Map<String, Value>, DbError> {
    let mut order = record(&stored.order)?;
    if let (Some(owner), Value::Object(fields)) = (stored.owner_id, &mut order) {
        fields.insert("ownerId".into(), json!(owner));
    }
    Ok(fields([("order", order)]))
}

#[cfg(test)]
mod tests;
