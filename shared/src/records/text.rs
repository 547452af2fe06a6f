//! Free text the contract bounds: names and descriptions.

use super::ValidationError;
use serde::{Deserialize, Serialize};

/// A pet's or category's name: 1–100 characters after trimming, no control characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Name(String);

impl Name {
    pub fn parse(raw: &str, field: &str) -> Result<Name, ValidationError> {
        let trimmed = raw.trim();
        let length = trimmed.chars().count();
        if !(1..=100).contains(&length) {
            return Err(ValidationError::new(format!(
                "{field} must be 1 to 100 characters after trimming, got {length}"
            )));
        }
        if trimmed.chars().any(char::is_control) {
            return Err(ValidationError::new(format!(
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
    pub fn parse(raw: &str) -> Result<Description, ValidationError> {
        let length = raw.chars().count();
        if length > 500 {
            return Err(ValidationError::new(format!(
                "description must be at most 500 characters, got {length}"
            )));
        }
        Ok(Description(raw.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_bounded() -> Result<(), ValidationError> {
        assert_eq!(Name::parse("  Rex ", "name")?.as_str(), "Rex");
        assert!(Name::parse("   ", "name").is_err());
        assert!(Name::parse(&"x".repeat(100), "name").is_ok());
        assert!(Name::parse(&"x".repeat(101), "name").is_err());
        assert!(Name::parse("a\u{7}b", "name").is_err());
        // Characters, not bytes, are counted.
        assert!(Name::parse(&"é".repeat(100), "name").is_ok());
        Ok(())
    }
}
