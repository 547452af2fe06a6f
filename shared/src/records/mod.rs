//! The contract's records, and the types that can only hold valid values.
//!
//! Requests are parsed in two steps: the HTTP edge reads the body into a JSON
//! object, then each body type's `parse` checks the fields it knows, naming
//! the field at fault in a [`ValidationError`] (a 400 at the edge). Once
//! parsed, a value is valid: an [`Id`] is in range, a [`Name`] is trimmed and
//! bounded, an [`OrderQuantity`] is 1–1000.
//!
//! This layer depends on nothing else in the crate.

mod beyond_schema;
mod caller;
mod category;
mod id;
mod idempotency_key;
mod inventory;
mod json;
mod order;
mod pet;
mod quantity;
mod schema_rule;
mod ship_date;
mod text;
mod validator;
mod webhook_endpoint;

pub use beyond_schema::ALL as RULES_BEYOND_SCHEMA;
pub use caller::{Caller, OwnerScope, Role};
pub use category::{Category, NewCategory};
pub use id::{Id, MAX_ID};
pub use idempotency_key::{IdempotencyKey, MAX_IDEMPOTENCY_KEY_LEN};
pub use inventory::{InventoryItem, InventoryUpdate};
pub use json::JsonObject;
pub use order::{NewOrder, Order, OrderPatch};
pub use pet::{NewPet, Pet, PetPatch, PetStatus};
pub use quantity::{OrderQuantity, StockQuantity};
pub use schema_rule::{BeyondSchema, Conformance};
pub use ship_date::{in_ship_window, SHIP_DATE_GRACE, SHIP_DATE_HORIZON};
pub use text::{Description, Name, TextField, TextRule};
pub use validator::{none_match_names, ETag, IfMatch};
pub use webhook_endpoint::RULES as WEBHOOK_ENDPOINT_RULES;

/// Every request body's free-text fields, by the name of its schema in
/// `openapi.yaml`: each body type declares its own (`TEXT`), and every body
/// is listed, with none yet or some, so a text field added to a body is
/// declared in that body's module only. The tests hold each to its property
/// in `openapi.yaml` (`text_tests.rs`), and a string property of a body
/// schema that is no declared field fails them.
pub const TEXT_FIELDS: &[(&str, &[TextField])] = &[
    ("NewPet", NewPet::TEXT),
    ("PetPatch", PetPatch::TEXT),
    ("NewCategory", NewCategory::TEXT),
    ("NewOrder", NewOrder::TEXT),
    ("OrderPatch", OrderPatch::TEXT),
    ("InventoryUpdate", InventoryUpdate::TEXT),
    ("NewWebhookEndpoint", WEBHOOK_TEXT),
    ("WebhookEndpointPatch", WEBHOOK_TEXT),
    // `expireOldAfterSeconds` alone: no free text.
    ("WebhookSecretRotation", &[]),
];

/// The free text of the webhook bodies (`crate::webhooks::records`, which
/// reads it through this): a description, under a category's rule. Here,
/// not there, so the records layer depends on no layer below it.
pub const WEBHOOK_TEXT: &[TextField] = &[NewCategory::DESCRIPTION];

/// A field or parameter that is missing, of the wrong type or out of range;
/// the message names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ValidationError(String);

impl ValidationError {
    pub fn new(message: impl Into<String>) -> ValidationError {
        ValidationError(message.into())
    }
}
