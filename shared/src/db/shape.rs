//! A record's stored shape, read from the record itself: the attribute names
//! its serde derive stores it under. The lists' projections
//! ([`Projection::of`](super::query::Projection::of)) and the updates'
//! attributes ([`Expr::replace`](super::expr::Expr::replace)) come from here,
//! so a field added to a record is read by every list and written by every
//! update with no list of names to keep in step (see `docs/contributing.md`).
//!
//! The names are serde's own: the field list its derive hands a
//! deserializer, in declaration order, renames applied. A test below holds
//! them to what serializing each record writes.

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use std::fmt;

/// Every record's id: the GSIs' sort key, so in every index, and never
/// changed by an update.
pub(crate) const ID: &str = "id";

/// The attribute names a record of type `T` is stored under, in field order:
/// also the properties its schemas in `openapi.yaml` and `asyncapi.yaml`
/// must list (`tests/responses.rs`).
///
/// Empty for a type that is not a plain struct (a `#[serde(flatten)]` field
/// makes serde read a map, with no list): the tests below fail on one.
pub fn fields<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut names: &'static [&'static str] = &[];
    // The probe always ends in its own error, once the names are taken.
    let _ = T::deserialize(FieldProbe(&mut names));
    names
}

/// A deserializer that keeps the field list serde hands it, and stops.
struct FieldProbe<'a>(&'a mut &'static [&'static str]);

#[derive(Debug)]
struct Probed;

impl fmt::Display for Probed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a record's field names were read")
    }
}

impl std::error::Error for Probed {}

impl de::Error for Probed {
    fn custom<T: fmt::Display>(_: T) -> Probed {
        Probed
    }
}

impl<'de> Deserializer<'de> for FieldProbe<'_> {
    type Error = Probed;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Probed> {
        Err(Probed)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Probed> {
        *self.0 = fields;
        Err(Probed)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Category, Description, Id, Name, Order, OrderQuantity, Pet, PetStatus};
    use chrono::{TimeZone, Utc};
    use serde::Serialize;
    use std::collections::BTreeSet;

    /// `record`, which must have every optional field set, is stored as
    /// exactly the attributes [`fields`] names.
    fn stored_as_its_fields<T: Serialize + DeserializeOwned>(
        record: &T,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let written: BTreeSet<String> = serde_dynamo::to_item::<_, crate::db::Item>(record)?
            .into_keys()
            .collect();
        let named: BTreeSet<String> = fields::<T>().iter().map(|f| f.to_string()).collect();
        assert!(
            !named.is_empty(),
            "{}: no field names; a record must be a plain struct (no #[serde(flatten)])",
            std::any::type_name::<T>()
        );
        assert_eq!(
            written,
            named,
            "{}: the attributes serializing it writes (left; set every optional field in this \
             sample) are not the fields the lists read and the updates write (right)",
            std::any::type_name::<T>()
        );
        Ok(())
    }

    // Each sample sets every field: a new optional field left `None` here
    // fails its test, which is what makes the lists read it.
    #[test]
    fn every_record_is_stored_as_the_fields_lists_read_and_updates_write(
    ) -> Result<(), Box<dyn std::error::Error>> {
        stored_as_its_fields(&Pet {
            id: Id::clamped(1),
            name: Name::parse("Rex", "name")?,
            category_id: Id::clamped(2),
            status: PetStatus::Sold,
        })?;
        stored_as_its_fields(&Category {
            id: Id::clamped(2),
            name: Name::parse("Dogs", "name")?,
            description: Some(Description::parse(
                "Loyal",
                &crate::records::NewCategory::DESCRIPTION,
            )?),
        })?;
        stored_as_its_fields(&Order {
            id: Id::clamped(3),
            pet_id: Id::clamped(1),
            quantity: OrderQuantity::DEFAULT,
            ship_date: Some(
                Utc.with_ymd_and_hms(2026, 7, 1, 12, 0, 0)
                    .single()
                    .ok_or("date")?,
            ),
            complete: true,
            lapses_at: Some(
                Utc.with_ymd_and_hms(2026, 7, 31, 12, 0, 0)
                    .single()
                    .ok_or("date")?,
            ),
        })?;
        Ok(())
    }

    #[test]
    fn fields_are_in_declaration_order_with_serde_s_renames() {
        assert_eq!(fields::<Pet>(), ["id", "name", "categoryId", "status"]);
    }
}
