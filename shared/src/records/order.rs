//! Orders: the record and the bodies that place and change one.

use super::json::{optional, required, JsonObject};
use super::{BeyondSchema, Conformance, Id, OrderQuantity, TextField, ValidationError};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

/// Writes an instant as RFC 3339 in UTC with millisecond precision.
fn rfc3339<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::Millis, true)),
        None => s.serialize_none(),
    }
}

/// The rules on an order that its schema cannot state ([`BeyondSchema`]).
pub const RULES: &[BeyondSchema] = &[
    BeyondSchema {
        field: "Order.petId",
        rule: "names an existing pet",
        conformance: Conformance::Refused {
            status: 422,
            code: "UNKNOWN_REFERENCE",
        },
    },
    BeyondSchema {
        field: "Order.complete",
        rule: "goes from false to true only; a complete order takes no change",
        conformance: Conformance::Refused {
            status: 409,
            code: "ORDER_COMPLETE",
        },
    },
];

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
    /// When this incomplete order's hold on stock lapses (contract 3, "Holds
    /// lapse"); absent on complete orders, and on orders placed before holds
    /// lapsed, which never lapse.
    #[serde(
        serialize_with = "rfc3339",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub lapses_at: Option<DateTime<Utc>>,
}

/// The body of `POST /store/orders`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewOrder {
    pub pet_id: Id,
    pub quantity: OrderQuantity,
    pub ship_date: Option<DateTime<Utc>>,
}

fn ship_date(value: &Value) -> Result<DateTime<Utc>, ValidationError> {
    value
        .as_str()
        .and_then(|raw| DateTime::parse_from_rfc3339(raw).ok())
        .map(|t| t.with_timezone(&Utc))
        .ok_or_else(|| ValidationError::new("shipDate must be an RFC 3339 date-time"))
}

impl NewOrder {
    /// Its free-text fields (see [`TextField`]): none yet.
    pub const TEXT: &[TextField] = &[];

    pub fn parse(body: &JsonObject) -> Result<NewOrder, ValidationError> {
        let quantity = match optional(body, "quantity") {
            None => OrderQuantity::DEFAULT,
            Some(v) => v
                .as_u64()
                .and_then(|q| u32::try_from(q).ok())
                .and_then(OrderQuantity::new)
                .ok_or_else(|| {
                    ValidationError::new("quantity must be an integer from 1 to 1000")
                })?,
        };
        match optional(body, "complete") {
            None | Some(Value::Bool(false)) => {}
            Some(_) => {
                return Err(ValidationError::new(
                    "complete must be absent or false when placing an order",
                ))
            }
        }
        Ok(NewOrder {
            pet_id: Id::from_json(required(body, "petId")?, "petId")?,
            quantity,
            ship_date: optional(body, "shipDate").map(ship_date).transpose()?,
        })
    }

    /// The order this body places: an incomplete one, with the id the service
    /// gave it and when its hold lapses. Destructured, so a field added to
    /// one and not carried is a compile error.
    pub fn into_order(self, id: Id, lapses_at: DateTime<Utc>) -> Order {
        let NewOrder {
            pet_id,
            quantity,
            ship_date,
        } = self;
        Order {
            id,
            pet_id,
            quantity,
            ship_date,
            complete: false,
            lapses_at: Some(lapses_at),
        }
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
    /// The same free-text fields as [`NewOrder`]'s, under the same rules.
    pub const TEXT: &[TextField] = NewOrder::TEXT;

    pub fn parse(body: &JsonObject) -> Result<OrderPatch, ValidationError> {
        Ok(OrderPatch {
            complete: optional(body, "complete")
                .map(|v| {
                    v.as_bool()
                        .ok_or_else(|| ValidationError::new("complete must be a boolean"))
                })
                .transpose()?,
            ship_date: optional(body, "shipDate").map(ship_date).transpose()?,
        })
    }

    /// Whether the patch changes nothing (`{}`): the only one a complete
    /// order accepts.
    pub fn is_empty(&self) -> bool {
        *self == OrderPatch::default()
    }

    /// `order` with each field this patch carries replacing its own, as
    /// sent: what completing implies (a ship date, the hold) is the rules'
    /// (`rules::patch_order`). Both destructured, so a field added to either
    /// and not merged is a compile error.
    pub fn merged(&self, order: &Order) -> Order {
        let OrderPatch {
            complete,
            ship_date,
        } = self.clone();
        let Order {
            id,
            pet_id,
            quantity,
            ship_date: was_shipping,
            complete: was_complete,
            lapses_at,
        } = order.clone();
        Order {
            id,
            pet_id,
            quantity,
            ship_date: ship_date.or(was_shipping),
            complete: complete.unwrap_or(was_complete),
            lapses_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::json::object;
    use super::*;
    use serde_json::json;

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
    fn absent_optional_fields_are_omitted_not_null() -> Result<(), Box<dyn std::error::Error>> {
        let order = Order {
            id: Id::clamped(1),
            pet_id: Id::clamped(2),
            quantity: OrderQuantity::DEFAULT,
            ship_date: None,
            complete: false,
            lapses_at: None,
        };
        assert_eq!(
            serde_json::to_value(&order)?,
            json!({"id": 1, "petId": 2, "quantity": 1, "complete": false})
        );
        Ok(())
    }
}
