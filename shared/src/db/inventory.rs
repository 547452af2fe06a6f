//! Inventory entries: the `stock` of each pet item, read and set.

use super::pets::{self, status_partition, PetFilter};
use super::query::Projection;
use super::{classify, from_item, n, s, Db, DbError, Page, MAX_ATTEMPTS};
use crate::records::{Id, InventoryItem, PetStatus, StockQuantity};
use crate::rules;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::ReturnValue;

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
    /// conditional write pinned to the status (and, when the stock goes to
    /// zero, the open-order count) the plan was made from.
    pub async fn set_stock(
        &self,
        pet_id: Id,
        quantity: StockQuantity,
    ) -> Result<InventoryItem, DbError> {
        for _ in 0..MAX_ATTEMPTS {
            let pet = self.existing_pet(pet_id).await?;
            let planned = rules::set_stock(pet.state(), quantity);
            let mut condition = vec!["attribute_exists(PK)", "#status = :old_status"];
            let mut request = self
                .client
                .update_item()
                .table_name(self.table())
                .set_key(Some(pets::key(pet_id)))
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":stock", n(quantity.get()))
                .expression_attribute_values(":old_status", s(pet.pet.status.as_str()))
                .return_values(ReturnValue::AllNew);
            if quantity.get() == 0 && pet.pet.status == PetStatus::Available {
                condition.push(if pet.open_orders > 0 {
                    "openOrders > :zero"
                } else {
                    "openOrders = :zero"
                });
                request = request.expression_attribute_values(":zero", n(0));
            }
            request = if planned.status != pet.pet.status {
                request
                    .update_expression("SET stock = :stock, #status = :status, GSI2PK = :gsi2")
                    .expression_attribute_values(":status", s(planned.status.as_str()))
                    .expression_attribute_values(":gsi2", s(status_partition(planned.status)))
            } else {
                request.update_expression("SET stock = :stock")
            };
            match request
                .condition_expression(condition.join(" AND "))
                .send()
                .await
            {
                Ok(_) => {
                    return Ok(InventoryItem {
                        pet_id,
                        quantity,
                        status: planned.status,
                    })
                }
                Err(SdkError::ServiceError(e))
                    if e.err().is_conditional_check_failed_exception() =>
                {
                    continue
                }
                Err(other) => return Err(classify(other)),
            }
        }
        Err(super::too_contended("set stock"))
    }
}
