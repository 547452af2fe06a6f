//! The contract's records as the table's items hold them, for the readers of
//! its stream (the `events` function): which record an item is, if any.
//!
//! An item's sort key says what it is (see the layout in [`super`]): `PET`,
//! `CATEGORY` and `ORDER` items are records, and `STOCK` a pet's stock;
//! every other item (API keys, idempotency records, category name guards)
//! is the service's own bookkeeping, and no reader outside it is told about
//! it.

use super::categories::{self, StoredCategory};
use super::orders::{self, StoredOrder};
use super::pets;
use super::pets::stock::{StockEntry, StoredPetItem, STOCK_SK};
use super::{from_item, DbError, Item};
use aws_sdk_dynamodb::types::AttributeValue;

/// The sort keys of the items [`Stored::of`] reads a record from: the only
/// items whose changes can announce anything (template.yaml's stream filter
/// on the events function lets exactly these through).
pub const RECORD_SORT_KEYS: &[&str] = &[pets::SK, STOCK_SK, categories::SK, orders::SK];

/// A record as stored, with what the API does not show (stock, owner, counts).
#[derive(Debug, Clone)]
pub enum Stored {
    /// A pet item: the record, with its stock if it has no stock item.
    Pet(StoredPetItem),
    /// A pet's stock item.
    Stock(StockEntry),
    Category(StoredCategory),
    Order(StoredOrder),
}

impl Stored {
    /// The record `item` holds; `None` for an internal item. An item whose
    /// sort key names a record but whose attributes do not make one is an
    /// error: the stream's reader must not skip it silently.
    pub fn of(item: Item) -> Result<Option<Stored>, DbError> {
        let kind = match item.get("SK") {
            Some(AttributeValue::S(sk)) => sk.as_str(),
            _ => return Ok(None),
        };
        Ok(Some(match kind {
            pets::SK => Stored::Pet(from_item(item)?),
            STOCK_SK => Stored::Stock(from_item(item)?),
            categories::SK => Stored::Category(from_item(item)?),
            orders::SK => Stored::Order(from_item(item)?),
            _ => return Ok(None),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::{n, s};
    use std::collections::HashMap;

    fn item(pairs: &[(&str, AttributeValue)]) -> Item {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect::<HashMap<_, _>>()
    }

    #[test]
    fn records_are_known_by_their_sort_key_and_internal_items_are_none(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let pet = item(&[
            ("PK", s("PET#5")),
            ("SK", s("PET")),
            ("GSI1PK", s("PET#1")),
            ("id", n(5)),
            ("name", s("Rex")),
            ("categoryId", n(2)),
            ("status", s("available")),
            ("stock", n(3)),
            ("openOrders", n(0)),
        ]);
        assert!(matches!(Stored::of(pet)?, Some(Stored::Pet(p)) if p.stock == Some(3)));
        let stock = item(&[
            ("PK", s("PET#5")),
            ("SK", s("STOCK")),
            ("id", n(5)),
            ("status", s("available")),
            ("stock", n(2)),
            ("openOrders", n(1)),
        ]);
        assert!(matches!(Stored::of(stock)?, Some(Stored::Stock(e)) if e.stock == 2));
        let order = item(&[
            ("PK", s("ORDER#9")),
            ("SK", s("ORDER")),
            ("id", n(9)),
            ("petId", n(5)),
            ("quantity", n(1)),
            ("complete", AttributeValue::Bool(false)),
            ("ownerId", n(7)),
        ]);
        assert!(
            matches!(Stored::of(order)?, Some(Stored::Order(o)) if o.owner_id.map(|i| i.get()) == Some(7))
        );
        for internal in ["CATEGORYNAME", "APIKEY", "IDEMPOTENCY"] {
            let guard = item(&[("PK", s(format!("{internal}#x"))), ("SK", s(internal))]);
            assert!(Stored::of(guard)?.is_none(), "{internal}");
        }
        let broken = item(&[("PK", s("PET#5")), ("SK", s("PET"))]);
        assert!(Stored::of(broken).is_err());
        Ok(())
    }
}
