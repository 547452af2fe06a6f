//! A whole record as an expression: written over the stored item, or
//! held to it as read, attribute by attribute of its stored shape.

use super::Expr;
use crate::db::{shape, to_item, DbError};
use aws_sdk_dynamodb::types::AttributeValue;
use serde::de::DeserializeOwned;
use serde::Serialize;

impl Expr {
    /// Writes `record` over the stored one, as creating it would have: sets
    /// each attribute of its stored shape ([`shape::fields`]) but its `id`
    /// (part of the item's keys, never changed), in field order, and
    /// removes each one an absent optional field leaves out. What else the
    /// item holds (keys, counters, an owner) is left as it is.
    pub(crate) fn replace<T: Serialize + DeserializeOwned>(
        self,
        record: &T,
    ) -> Result<Expr, DbError> {
        Ok(
            stored_attributes(record)?.fold(self, |expr, (field, value)| match value {
                Some(value) => expr.set(field, value),
                None => expr.remove(field),
            }),
        )
    }

    /// Conditions the write on the item holding `record` as read: each
    /// attribute of its stored shape ([`shape::fields`]) but its `id` (part
    /// of the key) equal to the record's, or absent where the record leaves
    /// an optional field out. The values are the record's own serialization,
    /// which is how every release stores it.
    pub(crate) fn when_record<T: Serialize + DeserializeOwned>(
        self,
        record: &T,
    ) -> Result<Expr, DbError> {
        Ok(
            stored_attributes(record)?.fold(self, |expr, (field, value)| {
                expr.when_as_read(field, value, None)
            }),
        )
    }
}

/// Each attribute of `record`'s stored shape ([`shape::fields`]) but its
/// `id` (part of the item's keys), in field order, with its stored value,
/// or `None` where an absent optional field leaves it out: what
/// [`Expr::replace`] writes and [`Expr::when_record`] holds the item to.
fn stored_attributes<T: Serialize + DeserializeOwned>(
    record: &T,
) -> Result<impl Iterator<Item = (&'static str, Option<AttributeValue>)>, DbError> {
    let mut item = to_item(record)?;
    Ok(shape::fields::<T>()
        .iter()
        .filter(|field| **field != shape::ID)
        .map(move |field| (*field, item.remove(*field))))
}
