//! Record ids.

use super::ValidationError;
use serde::{Deserialize, Serialize};
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
    pub fn parse_param(raw: &str, name: &str) -> Result<Id, ValidationError> {
        raw.trim()
            .parse::<u64>()
            .ok()
            .and_then(Id::new)
            .ok_or_else(|| out_of_range(name))
    }

    /// Reads an id from a JSON body field.
    pub(super) fn from_json(value: &Value, name: &str) -> Result<Id, ValidationError> {
        value
            .as_u64()
            .and_then(Id::new)
            .ok_or_else(|| out_of_range(name))
    }
}

fn out_of_range(name: &str) -> ValidationError {
    ValidationError::new(format!("{name} must be an integer from 1 to {MAX_ID}"))
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_positive_and_javascript_safe() {
        assert!(Id::new(0).is_none());
        assert!(Id::new(1).is_some());
        assert!(Id::new(MAX_ID).is_some());
        assert!(Id::new(MAX_ID + 1).is_none());
        assert!(Id::parse_param("abc", "petId").is_err_and(|e| e.to_string().contains("petId")));
    }
}
