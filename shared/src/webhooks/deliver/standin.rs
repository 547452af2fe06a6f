//! Stand-ins for what the webhooks-api branch writes in
//! `shared/src/webhooks/{queue,types}.rs`, with the design's exact names and
//! shapes, so this branch builds and is tested alone. The merge deletes this
//! file and points the `use` lines of `deliver` at `webhooks::queue` and
//! `webhooks::types`; nothing else changes.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// One message of the deliveries queue: one (endpoint, event) to attempt.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryMessage {
    pub webhook_id: u64,
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

/// Section 9's types, from section 8's detail-types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    OrderPlaced,
    OrderCompleted,
    OrderCancelled,
    PetCreated,
    PetUpdated,
    PetDeleted,
    CategoryCreated,
    CategoryUpdated,
    CategoryDeleted,
    StockChanged,
    Ping,
}

impl EventType {
    pub fn all() -> &'static [EventType] {
        use EventType::*;
        &[
            OrderPlaced,
            OrderCompleted,
            OrderCancelled,
            PetCreated,
            PetUpdated,
            PetDeleted,
            CategoryCreated,
            CategoryUpdated,
            CategoryDeleted,
            StockChanged,
            Ping,
        ]
    }

    pub fn as_str(self) -> &'static str {
        use EventType::*;
        match self {
            OrderPlaced => "order.placed",
            OrderCompleted => "order.completed",
            OrderCancelled => "order.cancelled",
            PetCreated => "pet.created",
            PetUpdated => "pet.updated",
            PetDeleted => "pet.deleted",
            CategoryCreated => "category.created",
            CategoryUpdated => "category.updated",
            CategoryDeleted => "category.deleted",
            StockChanged => "stock.changed",
            Ping => "webhook.ping",
        }
    }

    pub fn from_detail_type(detail_type: &str) -> Option<EventType> {
        use EventType::*;
        Some(match detail_type {
            "OrderPlaced" => OrderPlaced,
            "OrderCompleted" => OrderCompleted,
            "OrderCancelled" => OrderCancelled,
            "PetCreated" => PetCreated,
            "PetUpdated" => PetUpdated,
            "PetDeleted" => PetDeleted,
            "CategoryCreated" => CategoryCreated,
            "CategoryUpdated" => CategoryUpdated,
            "CategoryDeleted" => CategoryDeleted,
            "StockChanged" => StockChanged,
            _ => return None,
        })
    }

    pub fn is_order(self) -> bool {
        matches!(
            self,
            EventType::OrderPlaced | EventType::OrderCompleted | EventType::OrderCancelled
        )
    }
}
