//! Inventory entries: the `stock` of each pet's stock item (`pets::stock`;
//! of its pet item, for a pet written before stock items), read and set.
//!
//! Stock changes on every order, so the only index holding it is the
//! inventory index (`GSI5`, [`pets::INVENTORY_INDEX`]), whose partition key
//! is each pet's own: an order writes its pet's entry and no partition shared
//! with other pets' orders (see `db/mod.rs`). A list of entries is that
//! sparse index scanned, a page's worth of entries a round trip (half a read
//! unit for a page of 20), in the index's order: stable from page to page,
//! not by id.

use super::pets::{self, PetCheck, INVENTORY_INDEX};
use super::query::{Projection, PAGE_ROUND_TRIPS};
use super::shards::item_id;
use super::write::{Step, Write};
use super::{classify, from_item, s, Changes, Db, DbError, Page};
use crate::records::{Id, InventoryItem, PetStatus, StockQuantity};
use crate::rules::{self, Guard};
use std::collections::HashMap;
use std::sync::LazyLock;

/// The attributes of a pet's stock item (or of a pet item holding its
/// stock) an inventory entry is made of, and which of the two it is.
#[derive(serde::Deserialize)]
struct StockRow {
    id: Id,
    stock: u32,
    status: PetStatus,
    #[serde(rename = "SK")]
    sk: String,
}

impl StockRow {
    /// Where a scan resumes after this entry ([`pets::inventory_entry_key`]).
    fn position(&self) -> u64 {
        pets::inventory_position(self.id.get(), &self.sk)
    }
}

/// What an inventory list reads: a [`StockRow`]'s attributes.
pub(crate) static STOCK_FIELDS: LazyLock<Projection> = LazyLock::new(Projection::of::<StockRow>);

fn inventory_item(pet_id: Id, stock: u32, status: PetStatus) -> Result<InventoryItem, DbError> {
    Ok(InventoryItem {
        pet_id,
        quantity: StockQuantity::new(stock)
            .ok_or_else(|| DbError::internal(format!("pet {pet_id} holds stock {stock}")))?,
        status,
    })
}

fn stored_inventory_item(pet: &pets::StoredPet) -> Result<InventoryItem, DbError> {
    inventory_item(pet.pet.id, pet.stock, pet.pet.status)
}

/// The position of the entry a scan examined last (its `LastEvaluatedKey`).
fn examined_position(key: &super::Item) -> Result<u64, DbError> {
    let sk = key.get("SK").and_then(|sk| sk.as_s().ok());
    Ok(pets::inventory_position(
        item_id(key)?,
        sk.map_or(pets::SK, String::as_str),
    ))
}

impl Db {
    pub async fn get_inventory(&self, pet: Id) -> Result<Option<InventoryItem>, DbError> {
        self.get_pet(pet)
            .await?
            .as_ref()
            .map(stored_inventory_item)
            .transpose()
    }

    /// A page of inventory entries after the entry of pet `after`, in the
    /// inventory index's order, those with `status` only when given.
    ///
    /// Each round trip scans the next `limit + 1` entries (a status is a
    /// filter on them, so a round may keep few or none) until the page holds
    /// more than `limit`, the index ends, or [`PAGE_ROUND_TRIPS`] are spent;
    /// the cursor is the last entry returned, or the last one examined (its
    /// position: the pet's id, marked when a stock item holds the entry).
    pub async fn list_inventory(
        &self,
        status: Option<PetStatus>,
        limit: usize,
        after: Option<u64>,
    ) -> Result<Page<InventoryItem>, DbError> {
        let mut rows: Vec<StockRow> = Vec::with_capacity(limit + 1);
        let mut examined_to = after;
        let mut index_ended = false;
        for _ in 0..PAGE_ROUND_TRIPS {
            let mut request = self
                .client
                .scan()
                .table_name(&self.table)
                .index_name(self.layout.index_of(INVENTORY_INDEX))
                .limit(i32::try_from(limit + 1).unwrap_or(i32::MAX))
                .projection_expression(&STOCK_FIELDS.expression)
                .set_exclusive_start_key(examined_to.map(pets::inventory_entry_key));
            for (placeholder, name) in &STOCK_FIELDS.names {
                request = request.expression_attribute_names(placeholder, name);
            }
            if let Some(status) = status {
                request = request
                    .filter_expression("#status = :status")
                    .expression_attribute_values(":status", s(status.as_str()));
            }
            let out = request.send().await.map_err(|e| classify(&self.table, e))?;
            for item in out.items.unwrap_or_default() {
                rows.push(from_item(item)?);
            }
            match out.last_evaluated_key {
                Some(key) => examined_to = Some(examined_position(&key)?),
                None => {
                    index_ended = true;
                    break;
                }
            }
            if rows.len() > limit {
                break;
            }
        }
        let next_after = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(StockRow::position)
        } else if index_ended {
            None
        } else {
            examined_to
        };
        Ok(Page {
            items: rows
                .into_iter()
                .map(|row| inventory_item(row.id, row.stock, row.status))
                .collect::<Result<Vec<_>, _>>()?,
            next_after,
        })
    }
}

impl Db {
    /// Gives every pet item that holds its stock and has no inventory index
    /// entry (`GSI5PK`) one, for a table whose pets were written before the
    /// index existed; returns
    /// how many it gave. An operator's tool (`petstore-admin data
    /// backfill-inventory`): it scans the whole table, a page at a time, and
    /// writes each such pet once, on the condition that the pet is still
    /// there and still without it. Safe to run again, and beside traffic.
    pub async fn backfill_inventory_index(&self) -> Result<usize, DbError> {
        let mut written = 0;
        // A pet with a stock item has its entry there (`pets::stock`).
        let filter = "SK = :pet AND attribute_exists(stock) AND attribute_not_exists(GSI5PK)";
        self.scan_each(filter, &[(":pet", pets::SK)], "PK", async |item| {
            let Some(pk) = item.get("PK").cloned() else {
                return Ok(());
            };
            let key = HashMap::from([
                ("PK".to_string(), pk.clone()),
                ("SK".to_string(), s(pets::SK)),
            ]);
            let update = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key))
                .update_expression("SET GSI5PK = :pk")
                .condition_expression(
                    "attribute_exists(PK) AND attribute_exists(stock) AND attribute_not_exists(GSI5PK)",
                )
                .expression_attribute_values(":pk", pk)
                .send()
                .await;
            match update {
                Ok(_) => written += 1,
                // Deleted, or given its entry meanwhile: nothing to do.
                Err(err)
                    if err
                        .as_service_error()
                        .is_some_and(|e| e.is_conditional_check_failed_exception()) => {}
                Err(err) => return Err(classify(&self.table, err)),
            }
            Ok(())
        })
        .await?;
        Ok(written)
    }
}

impl Changes {
    /// Sets a pet's stock, moving its status as the stock rules say, in one
    /// conditional write resting on what the decision was made from (see
    /// [`rules::set_stock`]).
    pub async fn set_stock(
        &self,
        pet_id: Id,
        quantity: StockQuantity,
    ) -> Result<InventoryItem, DbError> {
        self.run("set stock", move || async move {
            let pet = self.existing_pet(pet_id).await?;
            self.check_precondition("pet", pet_id, &stored_inventory_item(&pet)?)?;
            let mut decision = rules::set_stock(pet.state(), quantity);
            if self.names_validators() {
                // The entry as read: its stock and its status, on the item
                // that holds them (a stock item's copy of the status moves
                // with the pet item's, in one transaction).
                decision.guards.push(Guard::StockIs(pet.stock));
                decision.guards.push(Guard::StatusIs(pet.pet.status));
            }
            let write =
                Write::new().checked_each(PetCheck::AsRead, self.stock_write(&pet, &decision)?);
            let item = InventoryItem {
                pet_id,
                quantity,
                status: decision.next.status,
            };
            Ok(Step::Write(write, item))
        })
        .await
    }
}
