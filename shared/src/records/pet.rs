//! Pets: the record, its status, and the bodies that create and change one.

use super::json::{optional, required, JsonObject};
use super::{BeyondSchema, Conformance, Id, Name, TextField, TextRule, ValidationError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// The rules on a pet that its schema cannot state ([`BeyondSchema`]).
pub const RULES: &[BeyondSchema] = &[
    BeyondSchema {
        field: "Pet.categoryId",
        rule: "names an existing category",
        conformance: Conformance::Refused {
            status: 422,
            code: "UNKNOWN_REFERENCE",
        },
    },
    BeyondSchema {
        field: "Pet.status",
        rule: "a change on PUT or PATCH is an allowed transition",
        conformance: Conformance::Refused {
            status: 409,
            code: "INVALID_STATUS_TRANSITION",
        },
    },
];

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

    pub fn parse(raw: &str, field: &str) -> Result<PetStatus, ValidationError> {
        PetStatus::ALL
            .into_iter()
            .find(|s| s.as_str() == raw)
            .ok_or_else(|| {
                ValidationError::new(format!("{field} must be one of available, pending, sold"))
            })
    }

    fn from_json(value: &Value) -> Result<PetStatus, ValidationError> {
        match value.as_str() {
            Some(raw) => PetStatus::parse(raw, "status"),
            None => Err(ValidationError::new(
                "status must be one of available, pending, sold",
            )),
        }
    }
}

impl fmt::Display for PetStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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

/// The body of `POST /pets` and `PUT /pets/{petId}`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPet {
    pub name: Name,
    pub category_id: Id,
    pub status: PetStatus,
}

impl NewPet {
    pub const NAME: TextField = TextField::new("name", TextRule::NAME);
    /// Its free-text fields (see [`TextField`]).
    pub const TEXT: &[TextField] = &[NewPet::NAME];

    pub fn parse(body: &JsonObject) -> Result<NewPet, ValidationError> {
        Ok(NewPet {
            name: NewPet::NAME.required(body)?,
            category_id: Id::from_json(required(body, "categoryId")?, "categoryId")?,
            status: optional(body, "status")
                .map(PetStatus::from_json)
                .transpose()?
                .unwrap_or(PetStatus::Available),
        })
    }

    /// The pet this body makes, with the id the service gave it. Destructured,
    /// so a field added to one and not carried is a compile error.
    pub fn into_pet(self, id: Id) -> Pet {
        let NewPet {
            name,
            category_id,
            status,
        } = self;
        Pet {
            id,
            name,
            category_id,
            status,
        }
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
    /// The same fields as [`NewPet`]'s, under the same rules.
    pub const TEXT: &[TextField] = NewPet::TEXT;

    /// In a merge patch `null` means "remove"; every NewPet field but `status`
    /// is required, so only `status: null` (back to its default) is meaningful,
    /// and a `null` name or category is refused.
    pub fn parse(body: &JsonObject) -> Result<PetPatch, ValidationError> {
        for field in ["name", "categoryId"] {
            if matches!(body.get(field), Some(Value::Null)) {
                return Err(ValidationError::new(format!(
                    "{field} is required and cannot be removed"
                )));
            }
        }
        Ok(PetPatch {
            name: NewPet::NAME.optional(body)?,
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

    /// The pet this patch would make of `pet`: each field the patch carries
    /// replaces the pet's. Both destructured, so a field added to either and
    /// not merged is a compile error.
    pub fn apply(&self, pet: &Pet) -> NewPet {
        let PetPatch {
            name,
            category_id,
            status,
        } = self.clone();
        let Pet {
            id: _,
            name: was_named,
            category_id: was_in,
            status: was,
        } = pet.clone();
        NewPet {
            name: name.unwrap_or(was_named),
            category_id: category_id.unwrap_or(was_in),
            status: status.unwrap_or(was),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::json::object;
    use super::*;
    use serde_json::json;

    #[test]
    fn a_new_pet_defaults_to_available_and_names_missing_fields(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let pet = NewPet::parse(&object(
            json!({"name": "Rex", "categoryId": 3, "id": 99, "x": 1}),
        ))?;
        assert_eq!(pet.status, PetStatus::Available);
        let names = |body: Value, field: &str| {
            NewPet::parse(&object(body)).is_err_and(|e| e.to_string().contains(field))
        };
        assert!(names(json!({"name": "Rex"}), "categoryId"));
        assert!(names(json!({"name": 5, "categoryId": 3}), "name"));
        assert!(names(
            json!({"name": "a", "categoryId": 3, "status": "lost"}),
            "status"
        ));
        assert!(names(json!({"name": "a", "categoryId": 1.5}), "categoryId"));
        Ok(())
    }

    #[test]
    fn a_pet_patch_merges_and_refuses_removing_required_fields(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let pet = Pet {
            id: Id::clamped(1),
            name: Name::parse("Rex", "name")?,
            category_id: Id::clamped(2),
            status: PetStatus::Pending,
        };
        let patch = PetPatch::parse(&object(json!({"name": "Max"})))?;
        let merged = patch.apply(&pet);
        assert_eq!(merged.name.as_str(), "Max");
        assert_eq!(merged.category_id, Id::clamped(2));
        assert_eq!(merged.status, PetStatus::Pending);
        assert!(PetPatch::parse(&object(json!({"name": null}))).is_err());
        assert_eq!(
            PetPatch::parse(&object(json!({"status": null})))?.status,
            Some(PetStatus::Available)
        );
        Ok(())
    }
}
