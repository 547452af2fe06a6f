//! Categories: the record and the body that creates or replaces one.

use super::json::JsonObject;
use super::{
    BeyondSchema, Conformance, Description, Id, Name, TextField, TextRule, ValidationError,
};
use serde::{Deserialize, Serialize};

/// The rules on a category that its schema cannot state ([`BeyondSchema`]).
pub const RULES: &[BeyondSchema] = &[BeyondSchema {
    field: "Category.name",
    rule: "no other category has the name, compared folded (Name::folded)",
    conformance: Conformance::Refused {
        status: 409,
        code: "CATEGORY_EXISTS",
    },
}];

/// A category, as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Category {
    pub id: Id,
    pub name: Name,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<Description>,
}

/// The body of `POST /categories` and `PUT /categories/{categoryId}`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewCategory {
    pub name: Name,
    pub description: Option<Description>,
}

impl NewCategory {
    pub const NAME: TextField = TextField::new("name", TextRule::NAME);
    pub const DESCRIPTION: TextField = TextField::new("description", TextRule::free_text(500));
    /// Its free-text fields (see [`TextField`]).
    pub const TEXT: &[TextField] = &[NewCategory::NAME, NewCategory::DESCRIPTION];

    pub fn parse(body: &JsonObject) -> Result<NewCategory, ValidationError> {
        Ok(NewCategory {
            name: NewCategory::NAME.required(body)?,
            description: NewCategory::DESCRIPTION.optional(body)?,
        })
    }

    /// The category this body makes, with the id the service gave it.
    /// Destructured, so a field added to one and not carried is a compile
    /// error.
    pub fn into_category(self, id: Id) -> Category {
        let NewCategory { name, description } = self;
        Category {
            id,
            name,
            description,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_optional_fields_are_omitted_not_null() -> Result<(), Box<dyn std::error::Error>> {
        let category = Category {
            id: Id::clamped(1),
            name: Name::parse("Dogs", "name")?,
            description: None,
        };
        assert_eq!(
            serde_json::to_value(&category)?,
            json!({"id": 1, "name": "Dogs"})
        );
        Ok(())
    }
}
