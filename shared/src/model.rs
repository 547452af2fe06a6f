//! The contract's records, and the types that can only hold valid values.
//!
//! Requests are parsed in two steps: serde reads the JSON into loose `*Body`
//! structs (every field optional, so a missing field is our 400 with its name,
//! not serde's), then `parse` turns them into the validated types below.

use crate::error::ApiError;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use std::fmt;

/// The largest id a JavaScript client can hold exactly: 2^53-1.
pub const MAX_ID: u64 = (1 << 53) - 1;

/// A record id: positive and at most 2^53-1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Id(u64);

impl Id {
    pub fn new(value: u64) -> Option<Id> {
        (1..=MAX_ID).contains(&value).then_some(Id(value))
    }

    pub fn get(self) -> u64 {
        self.0
    }

    /// Clamps any number into the id range; for ids the service makes itself.
    pub(crate) fn clamped(value: u64) -> Id {
        Id(value.clamp(1, MAX_ID))
    }

    /// Parses a path or query parameter, naming it in the error.
    pub fn parse_param(raw: &str, name: &str) -> Result<Id, ApiError> {
        raw.trim()
            .parse::<u64>()
            .ok()
            .and_then(Id::new)
            .ok_or_else(|| {
                ApiError::Validation(format!("{name} must be an integer from 1 to {MAX_ID}"))
            })
    }

    /// Reads an id from a JSON body field.
    fn from_json(value: &Value, name: &str) -> Result<Id, ApiError> {
        value.as_u64().and_then(Id::new).ok_or_else(|| {
            ApiError::Validation(format!("{name} must be an integer from 1 to {MAX_ID}"))
        })
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A pet's or category's name: 1–100 characters after trimming, no control characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Name(String);

impl Name {
    pub fn parse(raw: &str, field: &str) -> Result<Name, ApiError> {
        let trimmed = raw.trim();
        let length = trimmed.chars().count();
        if !(1..=100).contains(&length) {
            return Err(ApiError::Validation(format!(
                "{field} must be 1 to 100 characters after trimming, got {length}"
            )));
        }
        if trimmed.chars().any(char::is_control) {
            return Err(ApiError::Validation(format!(
                "{field} must not contain control characters"
            )));
        }
        Ok(Name(trimmed.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The form names are compared in: category names are unique case-insensitively.
    pub fn folded(&self) -> String {
        self.0.to_lowercase()
    }
}

/// A category description: at most 500 characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Description(String);

impl Description {
    pub fn parse(raw: &str) -> Result<Description, ApiError> {
        let length = raw.chars().count();
        if length > 500 {
            return Err(ApiError::Validation(format!(
                "description must be at most 500 characters, got {length}"
            )));
        }
        Ok(Description(raw.to_string()))
    }
}

/// A pet's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PetStatus {
    Available,
    Pending,
    Sold,
}

impl PetStatus {
    pub const ALL: [PetStatus; 3] = [PetStatus::Available, PetStatus::Pending, PetStatus::Sold];

    pub fn as_str(self) -> &'static str {
        match self {
            PetStatus::Available => "available",
            PetStatus::Pending => "pending",
            PetStatus::Sold => "sold",
        }
    }

    pub fn parse(raw: &str, field: &str) -> Result<PetStatus, ApiError> {
        PetStatus::ALL
            .into_iter()
            .find(|s| s.as_str() == raw)
            .ok_or_else(|| {
                ApiError::Validation(format!("{field} must be one of available, pending, sold"))
            })
    }

    fn from_json(value: &Value) -> Result<PetStatus, ApiError> {
        match value.as_str() {
            Some(raw) => PetStatus::parse(raw, "status"),
            None => Err(ApiError::Validation(
                "status must be one of available, pending, sold".into(),
            )),
        }
    }
}

impl fmt::Display for PetStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Units in one order: 1–1000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OrderQuantity(u32);

impl OrderQuantity {
    pub fn new(value: u32) -> Option<OrderQuantity> {
        (1..=1000).contains(&value).then_some(OrderQuantity(value))
    }
    pub fn get(self) -> u32 {
        self.0
    }
}

/// Units in stock: 0–1,000,000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StockQuantity(u32);

impl StockQuantity {
    pub const MAX: u32 = 1_000_000;
    pub fn new(value: u32) -> Option<StockQuantity> {
        (value <= Self::MAX).then_some(StockQuantity(value))
    }
    pub fn get(self) -> u32 {
        self.0
    }
}

/// Writes an instant as RFC 3339 in UTC with millisecond precision.
fn rfc3339<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::Millis, true)),
        None => s.serialize_none(),
    }
}

/// A pet, as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pet {
    pub id: Id,
    pub name: Name,
    pub category_id: Id,
    pub status: PetStatus,
}

/// A category, as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Category {
    pub id: Id,
    pub name: Name,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<Description>,
}

/// An order, as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Order {
    pub id: Id,
    pub pet_id: Id,
    pub quantity: OrderQuantity,
    #[serde(
        serialize_with = "rfc3339",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub ship_date: Option<DateTime<Utc>>,
    pub complete: bool,
}

/// One pet's stock, as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InventoryItem {
    pub pet_id: Id,
    pub quantity: StockQuantity,
    pub status: PetStatus,
}

/// A JSON object body, read leniently: unknown fields are ignored, and each
/// known field is checked by hand so the message can name it.
pub type JsonObject = serde_json::Map<String, Value>;

fn required<'a>(body: &'a JsonObject, field: &str) -> Result<&'a Value, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Err(ApiError::Validation(format!("{field} is required"))),
        Some(value) => Ok(value),
    }
}

fn optional<'a>(body: &'a JsonObject, field: &str) -> Option<&'a Value> {
    body.get(field).filter(|v| !v.is_null())
}

fn string<'a>(value: &'a Value, field: &str) -> Result<&'a str, ApiError> {
    value
        .as_str()
        .ok_or_else(|| ApiError::Validation(format!("{field} must be a string")))
}

/// The body of `POST /pets` and `PUT /pets/{petId}`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPet {
    pub name: Name,
    pub category_id: Id,
    pub status: PetStatus,
}

impl NewPet {
    pub fn parse(body: &JsonObject) -> Result<NewPet, ApiError> {
        Ok(NewPet {
            name: Name::parse(string(required(body, "name")?, "name")?, "name")?,
            category_id: Id::from_json(required(body, "categoryId")?, "categoryId")?,
            status: optional(body, "status")
                .map(PetStatus::from_json)
                .transpose()?
                .unwrap_or(PetStatus::Available),
        })
    }
}

/// The body of `PATCH /pets/{petId}`: a JSON merge patch of NewPet's fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PetPatch {
    pub name: Option<Name>,
    pub category_id: Option<Id>,
    pub status: Option<PetStatus>,
}

impl PetPatch {
    /// In a merge patch `null` means "remove"; every NewPet field but `status`
    /// is required, so only `status: null` (back to its default) is meaningful,
    /// and a `null` name or category is refused.
    pub fn parse(body: &JsonObject) -> Result<PetPatch, ApiError> {
        for field in ["name", "categoryId"] {
            if matches!(body.get(field), Some(Value::Null)) {
                return Err(ApiError::Validation(format!(
                    "{field} is required and cannot be removed"
                )));
            }
        }
        Ok(PetPatch {
            name: optional(body, "name")
                .map(|v| Name::parse(string(v, "name")?, "name"))
                .transpose()?,
            category_id: optional(body, "categoryId")
                .map(|v| Id::from_json(v, "categoryId"))
                .transpose()?,
            status: match body.get("status") {
                None => None,
                Some(Value::Null) => Some(PetStatus::Available),
                Some(v) => Some(PetStatus::from_json(v)?),
            },
        })
    }

    /// The pet this patch would make of `pet`.
    pub fn apply(&self, pet: &Pet) -> NewPet {
        NewPet {
            name: self.name.clone().unwrap_or_else(|| pet.name.clone()),
            category_id: self.category_id.unwrap_or(pet.category_id),
            status: self.status.unwrap_or(pet.status),
        }
    }
}

/// The body of `POST /categories` and `PUT /categories/{categoryId}`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewCategory {
    pub name: Name,
    pub description: Option<Description>,
}

impl NewCategory {
    pub fn parse(body: &JsonObject) -> Result<NewCategory, ApiError> {
        Ok(NewCategory {
            name: Name::parse(string(required(body, "name")?, "name")?, "name")?,
            description: optional(body, "description")
                .map(|v| Description::parse(string(v, "description")?))
                .transpose()?,
        })
    }
}

/// The body of `POST /store/orders`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewOrder {
    pub pet_id: Id,
    pub quantity: OrderQuantity,
    pub ship_date: Option<DateTime<Utc>>,
}

fn ship_date(value: &Value) -> Result<DateTime<Utc>, ApiError> {
    value
        .as_str()
        .and_then(|raw| DateTime::parse_from_rfc3339(raw).ok())
        .map(|t| t.with_timezone(&Utc))
        .ok_or_else(|| ApiError::Validation("shipDate must be an RFC 3339 date-time".into()))
}

impl NewOrder {
    pub fn parse(body: &JsonObject) -> Result<NewOrder, ApiError> {
        let quantity = match optional(body, "quantity") {
            None => OrderQuantity(1),
            Some(v) => v
                .as_u64()
                .and_then(|q| u32::try_from(q).ok())
                .and_then(OrderQuantity::new)
                .ok_or_else(|| {
                    ApiError::Validation("quantity must be an integer from 1 to 1000".into())
                })?,
        };
        match optional(body, "complete") {
            None | Some(Value::Bool(false)) => {}
            Some(_) => {
                return Err(ApiError::Validation(
                    "complete must be absent or false when placing an order".into(),
                ))
            }
        }
        Ok(NewOrder {
            pet_id: Id::from_json(required(body, "petId")?, "petId")?,
            quantity,
            ship_date: optional(body, "shipDate").map(ship_date).transpose()?,
        })
    }
}

/// The body of `PATCH /store/orders/{orderId}`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OrderPatch {
    /// `Some(true)` completes the order; `Some(false)` is accepted only on an
    /// incomplete order (no change).
    pub complete: Option<bool>,
    pub ship_date: Option<DateTime<Utc>>,
}

impl OrderPatch {
    pub fn parse(body: &JsonObject) -> Result<OrderPatch, ApiError> {
        Ok(OrderPatch {
            complete: optional(body, "complete")
                .map(|v| {
                    v.as_bool()
                        .ok_or_else(|| ApiError::Validation("complete must be a boolean".into()))
                })
                .transpose()?,
            ship_date: optional(body, "shipDate").map(ship_date).transpose()?,
        })
    }
}

/// The body of `PUT /store/inventory/{petId}`.
#[derive(Debug, Clone, PartialEq)]
pub struct InventoryUpdate {
    pub quantity: StockQuantity,
}

impl InventoryUpdate {
    pub fn parse(body: &JsonObject) -> Result<InventoryUpdate, ApiError> {
        let quantity = required(body, "quantity")?
            .as_u64()
            .and_then(|q| u32::try_from(q).ok())
            .and_then(StockQuantity::new)
            .ok_or_else(|| {
                ApiError::Validation("quantity must be an integer from 0 to 1000000".into())
            })?;
        Ok(InventoryUpdate { quantity })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("tests pass objects"),
        }
    }

    #[test]
    fn ids_are_positive_and_javascript_safe() {
        assert!(Id::new(0).is_none());
        assert!(Id::new(1).is_some());
        assert!(Id::new(MAX_ID).is_some());
        assert!(Id::new(MAX_ID + 1).is_none());
        assert!(Id::parse_param("abc", "petId")
            .unwrap_err()
            .to_string()
            .contains("petId"));
    }

    #[test]
    fn names_are_trimmed_and_bounded() -> Result<(), ApiError> {
        assert_eq!(Name::parse("  Rex ", "name")?.as_str(), "Rex");
        assert!(Name::parse("   ", "name").is_err());
        assert!(Name::parse(&"x".repeat(100), "name").is_ok());
        assert!(Name::parse(&"x".repeat(101), "name").is_err());
        assert!(Name::parse("a\u{7}b", "name").is_err());
        // Characters, not bytes, are counted.
        assert!(Name::parse(&"é".repeat(100), "name").is_ok());
        Ok(())
    }

    #[test]
    fn a_new_pet_defaults_to_available_and_names_missing_fields(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let pet = NewPet::parse(&object(
            json!({"name": "Rex", "categoryId": 3, "id": 99, "x": 1}),
        ))?;
        assert_eq!(pet.status, PetStatus::Available);
        let err = NewPet::parse(&object(json!({"name": "Rex"}))).unwrap_err();
        assert!(err.to_string().contains("categoryId"));
        let err = NewPet::parse(&object(json!({"name": 5, "categoryId": 3}))).unwrap_err();
        assert!(err.to_string().contains("name"));
        let err = NewPet::parse(&object(
            json!({"name": "a", "categoryId": 3, "status": "lost"}),
        ))
        .unwrap_err();
        assert!(err.to_string().contains("status"));
        let err = NewPet::parse(&object(json!({"name": "a", "categoryId": 1.5}))).unwrap_err();
        assert!(err.to_string().contains("categoryId"));
        Ok(())
    }

    #[test]
    fn a_pet_patch_merges_and_refuses_removing_required_fields(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let pet = Pet {
            id: Id(1),
            name: Name("Rex".into()),
            category_id: Id(2),
            status: PetStatus::Pending,
        };
        let patch = PetPatch::parse(&object(json!({"name": "Max"})))?;
        let merged = patch.apply(&pet);
        assert_eq!(merged.name.as_str(), "Max");
        assert_eq!(merged.category_id, Id(2));
        assert_eq!(merged.status, PetStatus::Pending);
        assert!(PetPatch::parse(&object(json!({"name": null}))).is_err());
        assert_eq!(
            PetPatch::parse(&object(json!({"status": null})))?.status,
            Some(PetStatus::Available)
        );
        Ok(())
    }

    #[test]
    fn order_quantities_default_and_are_bounded() -> Result<(), Box<dyn std::error::Error>> {
        let order = NewOrder::parse(&object(json!({"petId": 4})))?;
        assert_eq!(order.quantity.get(), 1);
        assert!(NewOrder::parse(&object(json!({"petId": 4, "quantity": 0}))).is_err());
        assert!(NewOrder::parse(&object(json!({"petId": 4, "quantity": 1001}))).is_err());
        assert!(NewOrder::parse(&object(json!({"petId": 4, "complete": true}))).is_err());
        assert!(NewOrder::parse(&object(json!({"petId": 4, "shipDate": "tomorrow"}))).is_err());
        assert!(NewOrder::parse(&object(
            json!({"petId": 4, "shipDate": "2026-01-02T03:04:05Z"})
        ))
        .is_ok());
        Ok(())
    }

    #[test]
    fn stock_is_bounded() {
        assert!(InventoryUpdate::parse(&object(json!({"quantity": 0}))).is_ok());
        assert!(InventoryUpdate::parse(&object(json!({"quantity": 1_000_000}))).is_ok());
        assert!(InventoryUpdate::parse(&object(json!({"quantity": 1_000_001}))).is_err());
        assert!(InventoryUpdate::parse(&object(json!({"quantity": -1}))).is_err());
        assert!(InventoryUpdate::parse(&object(json!({}))).is_err());
    }

    #[test]
    fn absent_optional_fields_are_omitted_not_null() -> Result<(), Box<dyn std::error::Error>> {
        let category = Category {
            id: Id(1),
            name: Name("Dogs".into()),
            description: None,
        };
        assert_eq!(
            serde_json::to_value(&category)?,
            json!({"id": 1, "name": "Dogs"})
        );
        let order = Order {
            id: Id(1),
            pet_id: Id(2),
            quantity: OrderQuantity(1),
            ship_date: None,
            complete: false,
        };
        assert_eq!(
            serde_json::to_value(&order)?,
            json!({"id": 1, "petId": 2, "quantity": 1, "complete": false})
        );
        Ok(())
    }
}
