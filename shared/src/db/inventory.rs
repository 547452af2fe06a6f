//! Inventory entries: the `stock` of each pet item, read and set.

use super::pets::{self, PetCheck, PetFilter};
use super::query::Projection;
use super::write::{Step, Write};
use super::{from_item, Db, DbError, Page};
use crate::records::{Id, InventoryItem, PetStatus, StockQuantity};
use crate::rules;

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
        self.query_page(filter.query(STOCK_FIELDS), limit, after)
            .await?
            .try_map(|item| inventory_item(from_item(item)?))
    }

    /// Sets a pet's stock, moving its status as the stock rules say, in one
    /// conditional write resting on what the plan was made from (see
    /// [`rules::set_stock`]).
    pub async fn set_stock(
        &self,
        pet_id: Id,
        quantity: StockQuantity,
    ) -> Result<InventoryItem, DbError> {
        self.run("set stock", move || async move {
            let pet = self.existing_pet(pet_id).await?;
            let plan = rules::set_stock(pet.state(), quantity);
            let write = Write::new().checked(PetCheck::AsPlanned, self.stock_write(pet_id, &plan)?);
            let item = InventoryItem {
                pet_id,
                quantity,
                status: plan.next.status,
            };
            Ok(Step::Write(write, item))
        })
        .await
    }
}
