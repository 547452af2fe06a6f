//! Reading the fields of a JSON object body, each named in its error.

use super::ValidationError;
use serde_json::Value;

/// A JSON object body, read leniently: unknown fields are ignored, and each
/// known field is checked by hand so the message can name it.
pub type JsonObject = serde_json::Map<String, Value>;

pub(super) fn required<'a>(
    body: &'a JsonObject,
    field: &str,
) -> Result<&'a Value, ValidationError> {
    match body.get(field) {
        None | Some(Value::Null) => Err(ValidationError::new(format!("{field} is required"))),
        Some(value) => Ok(value),
    }
}

pub(super) fn optional<'a>(body: &'a JsonObject, field: &str) -> Option<&'a Value> {
    body.get(field).filter(|v| !v.is_null())
}

pub(super) fn string<'a>(value: &'a Value, field: &str) -> Result<&'a str, ValidationError> {
    value
        .as_str()
        .ok_or_else(|| ValidationError::new(format!("{field} must be a string")))
}

/// The object inside a JSON value the tests write as a literal.
#[cfg(test)]
pub(super) fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}
