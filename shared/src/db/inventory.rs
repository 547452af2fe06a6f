//! Inventory entries: the `stock` of each pet item, read and set.
//!
//! Stock changes on every order, so it is in no index: an index holding it
//! would take a write per order on the pet's partition (see `db/mod.rs`). A
//! list of entries is a page of pet ids from the pet lists' index, then one
//! `BatchGetItem` of those pets' stock and status from the table.

use super::pets::{self, PetCheck, PetFilter};
use super::query::{Projection, PAGE_ROUND_TRIPS};
use super::shards::item_id;
use super::write::{Step, Write};
use super::{from_item, Changes, Db, DbError, Page};
use crate::records::{Id, InventoryItem, PetStatus, StockQuantity};
use crate::rules;
use std::collections::HashMap;

/// The attributes of a pet item an inventory entry is made of.
#[derive(serde::Deserialize)]
struct StockRow {
    id: Id,
    stock: u32,
    status: PetStatus,
}

const STOCK_FIELDS: Projection = Projection {
    expression: "id, stock, #status",
    names: &[("#status", "status")],
};

/// What a list's index query reads: the ids, for the batch read of stock.
const IDS: Projection = Projection {
    expression: "id",
    names: &[],
};

fn inventory_item(row: StockRow) -> Result<InventoryItem, DbError> {
    Ok(InventoryItem {
        pet_id: row.id,
        quantity: StockQuantity::new(row.stock).ok_or_else(|| {
            DbError::internal(format!("pet {} holds stock {}", row.id, row.stock))
        })?,
        status: row.status,
    })
}

fn stored_inventory_item(pet: &pets::StoredPet) -> Result<InventoryItem, DbError> {
    inventory_item(StockRow {
        id: pet.pet.id,
        stock: pet.stock,
        status: pet.pet.status,
    })
}

impl Db {
    pub async fn get_inventory(&self, pet: Id) -> Result<Option<InventoryItem>, DbError> {
        self.get_pet(pet)
            .await?
            .as_ref()
            .map(stored_inventory_item)
            .transpose()
    }

    pub async fn list_inventory(
        &self,
        status: Option<PetStatus>,
        limit: usize,
        after: Option<u64>,
    ) -> Result<Page<InventoryItem>, DbError> {
        let filter = PetFilter {
            status,
            category_id: None,
        };
        // The batch read of their stock is the page's last round trip.
        let round_trips = PAGE_ROUND_TRIPS - 1;
        let page = self
            .query_page_within(filter.query(IDS), limit, after, round_trips)
            .await?;
        let ids = page
            .items
            .iter()
            .map(item_id)
            .collect::<Result<Vec<_>, _>>()?;
        let keys = ids.iter().map(|id| pets::key(Id::clamped(*id))).collect();
        let mut rows: HashMap<u64, StockRow> = HashMap::with_capacity(ids.len());
        for item in self
            .batch_get("list inventory", keys, Some(STOCK_FIELDS))
            .await?
        {
            let row: StockRow = from_item(item)?;
            rows.insert(row.id.get(), row);
        }
        // In the index's order. A pet deleted since, or whose status moved
        // out of the filter since (the index lags the table by a moment), has
        // left this list: it is skipped, and the cursor still goes on from
        // the page's last id.
        let items = ids
            .iter()
            .filter_map(|id| rows.remove(id))
            .filter(|row| status.is_none_or(|wanted| row.status == wanted))
            .map(inventory_item)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page {
            items,
            next_after: page.next_after,
        })
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
            let decision = rules::set_stock(pet.state(), quantity);
            let write =
                Write::new().checked(PetCheck::AsRead, self.stock_write(pet_id, &decision)?);
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
