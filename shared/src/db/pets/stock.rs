//! A pet's stock item, `PET#<id>` / `STOCK`: its `stock`, its `openOrders`
//! and a copy of its `status`, beside the pet item in the pet's partition.
//!
//! Every order moves a pet's stock and open orders. On the pet item they
//! rewrote its entries in every list index (the list indexes carry the whole
//! item), so the pet lists had to be sharded with the order rate and each
//! pets page queried every shard. On an item of their own, in no list index,
//! an order writes the stock item and the inventory index's entry (`GSI5`,
//! which moves here with them), and the pet item only when its status moves
//! (then both in the one transaction, so the two statuses never differ).
//!
//! A pet written by release 1.0.0 (and by this release reading layout 1,
//! which 1.0.0 may still run beside) holds its stock itself, and is served
//! as it is until migration 0001's `stock-items` backfill moves it
//! ([`super::super::migration`]): every write reads the pet's partition
//! first and writes the form it found, on the condition that it still is.

use super::super::expr::Expr;
use super::super::{from_item, n, s, to_item, DbError, Item};
use super::{key, pk, PetItem, StoredPet, SK};
use crate::records::{Id, Pet, PetStatus};
use aws_sdk_dynamodb::types::TransactWriteItem;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The stock item's sort key.
pub const STOCK_SK: &str = "STOCK";

/// A stock item's attributes (its keys aside).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StockEntry {
    /// The pet's id (the inventory index's sort key).
    pub id: Id,
    /// The pet's status, written with the pet item's in one transaction.
    pub status: PetStatus,
    pub stock: u32,
    pub open_orders: u32,
}

/// The item written for a pet's stock.
#[derive(Serialize)]
struct StockItem<'a> {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: &'static str,
    /// The pet's entry in the inventory index: a partition of its own.
    #[serde(rename = "GSI5PK")]
    gsi5: String,
    #[serde(flatten)]
    entry: &'a StockEntry,
}

/// The key of pet `id`'s stock item.
pub(crate) fn stock_key(id: Id) -> Item {
    HashMap::from([
        ("PK".to_string(), s(pk(id))),
        ("SK".to_string(), s(STOCK_SK)),
    ])
}

/// A pet item as stored: the record, and its stock while it has no stock
/// item (written before migration 0001's `stock-items` backfill).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredPetItem {
    #[serde(flatten)]
    pub pet: Pet,
    pub stock: Option<u32>,
    pub open_orders: Option<u32>,
}

impl StoredPet {
    /// The pet its partition's items make: its pet item, and its stock item
    /// or, for a pet written before stock items, the pet item's own stock.
    /// `None` without a pet item.
    pub(crate) fn of_partition(items: Vec<Item>) -> Result<Option<StoredPet>, DbError> {
        let (mut pet, mut stock) = (None, None);
        for item in items {
            match item
                .get("SK")
                .and_then(|sk| sk.as_s().ok())
                .map(String::as_str)
            {
                Some(SK) => pet = Some(from_item::<StoredPetItem>(item)?),
                Some(STOCK_SK) => stock = Some(from_item::<StockEntry>(item)?),
                _ => {}
            }
        }
        let Some(item) = pet else {
            return Ok(None);
        };
        let (stock, open_orders, stock_item) = match (stock, item.stock, item.open_orders) {
            (Some(entry), _, _) => (entry.stock, entry.open_orders, true),
            (None, Some(stock), Some(open_orders)) => (stock, open_orders, false),
            (None, _, _) => {
                let id = item.pet.id;
                return Err(DbError::internal(format!("pet {id} has no stock")));
            }
        };
        Ok(Some(StoredPet {
            pet: item.pet,
            stock,
            open_orders,
            stock_item,
        }))
    }

    /// The entry of this pet's stock item.
    pub(crate) fn stock_entry(&self) -> StockEntry {
        StockEntry {
            id: self.pet.id,
            status: self.pet.status,
            stock: self.stock,
            open_orders: self.open_orders,
        }
    }

    /// What a write to this pet's stock updates: its stock item, or the pet
    /// item of a pet without one (on the condition that it still has none).
    pub(crate) fn stock_holder(&self) -> (Expr, Item) {
        if self.stock_item {
            (Expr::new().exists(), stock_key(self.pet.id))
        } else {
            (self.pet_item_expr(), key(self.pet.id))
        }
    }

    /// The condition every write to this pet's pet item starts from: it
    /// exists, and, when it holds the stock, still does (migration 0001's
    /// backfill may move it to a stock item between read and write).
    pub(crate) fn pet_item_expr(&self) -> Expr {
        let expr = Expr::new().exists();
        if self.stock_item {
            expr
        } else {
            expr.has("stock")
        }
    }
}

/// The put of `pet`'s stock item, which must not exist yet.
fn stock_put(pet: &StoredPet, table: &str) -> Result<TransactWriteItem, DbError> {
    let id = pet.pet.id;
    let item = StockItem {
        pk: pk(id),
        sk: STOCK_SK,
        gsi5: pk(id),
        entry: &pet.stock_entry(),
    };
    Expr::new().absent().put(table, to_item(&item)?)
}

/// A pet's items as created: the pet item and, unless the pet holds its own
/// stock (`stock_item` false: read as layout 1), its stock item.
pub(crate) fn created_items(
    pet_item: PetItem<'_>,
    pet: &StoredPet,
    table: &str,
) -> Result<Vec<TransactWriteItem>, DbError> {
    let mut items = vec![Expr::new().absent().put(table, to_item(&pet_item)?)?];
    if pet.stock_item {
        items.push(stock_put(pet, table)?);
    }
    Ok(items)
}

/// The writes that move a pet written before stock items to its stock item:
/// the pet item loses `stock`, `openOrders` and its inventory entry, on the
/// condition that they (and its status) are as read, and the stock item is
/// made with them. One transaction: the inventory index has the pet's entry
/// throughout (from one item, then the other).
pub(crate) fn moved_to_stock_item(
    pet: &StoredPet,
    table: &str,
) -> Result<Vec<TransactWriteItem>, DbError> {
    let pet_update = Expr::new()
        .exists()
        .when_equal("stock", n(pet.stock))
        .when_equal("openOrders", n(pet.open_orders))
        .when_equal("status", s(pet.pet.status.as_str()))
        .remove("stock")
        .remove("openOrders")
        .remove("GSI5PK")
        .update(table, key(pet.pet.id))?;
    Ok(vec![pet_update, stock_put(pet, table)?])
}
