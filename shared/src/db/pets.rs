//! Pet items, and beside each its stock item ([`stock`]).

mod changes;
pub mod stock;

use super::expr::Expr;
use super::query::{Filter, IndexQuery, Projection};
use super::shards::{Kind, Shards};
use super::write::{Check, OnFailure, Step, Write};
use super::{classify, from_item, n, new_id, s, Changes, Db, DbError, Item, Layout, Page};
use crate::records::{Id, NewPet, Pet, PetStatus};
use crate::rules::{self, StockDecision, StockMove, StockState};
use aws_sdk_dynamodb::types::TransactWriteItem;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::LazyLock;
use stock::StoredPetItem;

/// A pet as stored: the record plus its stock.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredPet {
    pub pet: Pet,
    pub stock: u32,
    pub open_orders: u32,
    /// Whether its stock is on its stock item ([`stock`]), or still on the
    /// pet item (written before stock items, or under layout 1).
    pub stock_item: bool,
}

impl StoredPet {
    pub fn state(&self) -> StockState {
        StockState {
            status: self.pet.status,
            stock: self.stock,
            open_orders: self.open_orders,
        }
    }
}

/// The item written for a pet: the record plus its keys (and, for a pet
/// without a stock item, its stock and inventory entry).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PetItem<'a> {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: &'static str,
    #[serde(rename = "GSI1PK")]
    gsi1: String,
    #[serde(rename = "GSI2PK")]
    gsi2: String,
    #[serde(rename = "GSI3PK")]
    gsi3: String,
    /// The pet's entry in the inventory index, without a stock item.
    #[serde(rename = "GSI5PK", skip_serializing_if = "Option::is_none")]
    gsi5: Option<String>,
    #[serde(flatten)]
    pet: &'a Pet,
    #[serde(skip_serializing_if = "Option::is_none")]
    stock: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    open_orders: Option<u32>,
}

pub(crate) const SK: &str = "PET";

/// What a pet list reads: the Pet record's attributes.
pub(crate) static PET_FIELDS: LazyLock<Projection> = LazyLock::new(Projection::of::<Pet>);

pub(crate) fn pk(id: Id) -> String {
    format!("PET#{id}")
}

pub(crate) fn key(id: Id) -> Item {
    HashMap::from([("PK".to_string(), s(pk(id))), ("SK".to_string(), s(SK))])
}

/// The inventory index ([`INVENTORY_INDEX`]): one partition per pet, its key
/// the pet's own (`GSI5PK` = `PK`), so a stock change writes no partition
/// another pet's orders write. Read by scanning, a page in index order.
pub(crate) const INVENTORY_INDEX: &str = "GSI5";

/// Marks an inventory position whose entry a stock item holds: ids are
/// below 2^53, and the pet item of a pet without a stock item holds the
/// others (every position issued before stock items among them).
const STOCK_ITEM_ENTRY: u64 = 1 << 62;

/// The position of pet `id`'s inventory entry, held by the item whose sort
/// key is `sk`: what a cursor names, so a scan resumes after exactly the
/// item it stopped at (DynamoDB Local resumes a scan at a key no item has
/// somewhere else than after it).
pub(crate) fn inventory_position(id: u64, sk: &str) -> u64 {
    if sk == stock::STOCK_SK {
        id | STOCK_ITEM_ENTRY
    } else {
        id
    }
}

/// The key of the inventory entry at `position` ([`inventory_position`]) in
/// [`INVENTORY_INDEX`], where a scan resumes after it. From the raw id: a
/// cursor names an id that may be gone.
pub(crate) fn inventory_entry_key(position: u64) -> Item {
    let (id, sk) = if position & STOCK_ITEM_ENTRY != 0 {
        (position & !STOCK_ITEM_ENTRY, stock::STOCK_SK)
    } else {
        (position, SK)
    };
    let pk = s(format!("PET#{id}"));
    HashMap::from([
        ("GSI5PK".to_string(), pk.clone()),
        ("id".to_string(), n(id)),
        ("PK".to_string(), pk),
        ("SK".to_string(), s(sk)),
    ])
}

/// GSI1's list of every pet; sharded.
const ALL: &str = "PET";

/// GSI2's list of the pets with `status`; sharded.
fn status_list(status: PetStatus) -> String {
    format!("PET#STATUS#{status}")
}

fn category_partition(category: Id) -> String {
    format!("PET#CATEGORY#{category}")
}

/// Which pets a list asks for.
#[derive(Debug, Clone, Copy, Default)]
pub struct PetFilter {
    pub status: Option<PetStatus>,
    pub category_id: Option<Id>,
}

impl PetFilter {
    /// The GSI query for this filter, reading the attributes in `projection`.
    ///
    /// Pets by category stay one partition each: no order writes there
    /// (stock is in no index), and a page of them costs one query.
    pub(crate) fn query<'a>(&self, projection: &'static Projection) -> IndexQuery<'a> {
        let (index, partition, sharded, filter) = match (self.category_id, self.status) {
            (Some(category), status) => (
                "GSI3",
                category_partition(category),
                None,
                status.map(|status| Filter {
                    expression: "#status = :status",
                    names: HashMap::from([("#status".to_string(), "status".to_string())]),
                    values: HashMap::from([(":status".to_string(), s(status.as_str()))]),
                }),
            ),
            (None, Some(status)) => ("GSI2", status_list(status), Some(Kind::Pet), None),
            (None, None) => ("GSI1", ALL.to_string(), Some(Kind::Pet), None),
        };
        IndexQuery {
            index,
            partition,
            sharded,
            descending: false,
            filter,
            projection,
        }
    }
}

/// Moves pet `id` to `status`, keeping its status index in step.
fn with_status(expr: Expr, shards: &Shards, id: Id, status: PetStatus) -> Expr {
    expr.set("status", s(status.as_str()))
        .set("GSI2PK", s(status_list_key(shards, id, status)))
}

/// Pet `id`'s partition of GSI2's list of the pets with `status`.
fn status_list_key(shards: &Shards, id: Id, status: PetStatus) -> String {
    shards.key(Kind::Pet, &status_list(status), id.get())
}

/// The conditions of a pet's writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PetCheck {
    /// A new pet's id is not taken (ids are random in their low bits).
    IdFree,
    /// The pet is still as the decision read it.
    AsRead,
    /// The pet's category exists.
    CategoryExists(Id),
}

impl Check for PetCheck {
    fn on_failure(self) -> OnFailure {
        match self {
            PetCheck::IdFree | PetCheck::AsRead => OnFailure::ReadAgain,
            PetCheck::CategoryExists(id) => {
                OnFailure::Fail(DbError::unknown_reference("categoryId", id))
            }
        }
    }
}

impl Db {
    /// A new pet's items: with a stock item, unless the table is read as
    /// layout 1, which release 1.0.0 (whose pets hold their stock) may still
    /// serve beside this one.
    fn pet_put(&self, pet: &StoredPet) -> Result<Vec<TransactWriteItem>, DbError> {
        let id = pet.pet.id.get();
        let own_stock = !pet.stock_item;
        let item = PetItem {
            pk: pk(pet.pet.id),
            sk: SK,
            gsi1: self.shards.key(Kind::Pet, ALL, id),
            gsi2: self.shards.key(Kind::Pet, &status_list(pet.pet.status), id),
            gsi3: category_partition(pet.pet.category_id),
            gsi5: own_stock.then(|| pk(pet.pet.id)),
            pet: &pet.pet,
            stock: own_stock.then_some(pet.stock),
            open_orders: own_stock.then_some(pet.open_orders),
        };
        stock::created_items(item, pet, &self.table)
    }

    /// The writes of a stock decision about `pet` as read: its stock item's
    /// change (or its pet item's, for a pet without one), on the condition
    /// that every guard of the decision still holds, and, when the decision
    /// moves the status, the pet item's status and status list too.
    pub(crate) fn stock_write(
        &self,
        pet: &StoredPet,
        decision: &StockDecision,
    ) -> Result<Vec<TransactWriteItem>, DbError> {
        let change = decision.change;
        let id = pet.pet.id;
        let (expr, holder) = pet.stock_holder();
        let mut expr = expr.when_all(&decision.guards);
        expr = match change.stock {
            StockMove::Keep => expr,
            StockMove::Set(units) => expr.set("stock", n(units)),
            StockMove::Add(units) => expr.adjust("stock", i64::from(units)),
            StockMove::Take(units) => expr.adjust("stock", -i64::from(units)),
        };
        if change.open_orders != 0 {
            expr = expr.adjust("openOrders", i64::from(change.open_orders));
        }
        let Some(status) = change.status else {
            return Ok(vec![expr.update(&self.table, holder)?]);
        };
        if !pet.stock_item {
            let expr = with_status(expr, &self.shards, id, status);
            return Ok(vec![expr.update(&self.table, holder)?]);
        }
        let stock = expr.set("status", s(status.as_str()));
        let pet_item = with_status(Expr::new().exists(), &self.shards, id, status);
        // The pet item first: its stream record (`PetUpdated`) then comes
        // before the stock item's (`StockChanged`), as when one item held both.
        Ok(vec![
            pet_item.update(&self.table, key(id))?,
            stock.update(&self.table, holder)?,
        ])
    }
}

impl Changes {
    /// Creates a pet and its inventory entry, counting it in its category.
    pub async fn create_pet(&self, new: NewPet, now: DateTime<Utc>) -> Result<Pet, DbError> {
        let new = &new;
        self.run("create pet", move || async move {
            let pet = StoredPet {
                pet: new.clone().into_pet(new_id(now)),
                stock: rules::initial_stock(new.status),
                open_orders: 0,
                stock_item: self.layout != Layout::V1,
            };
            let category = new.category_id;
            let write = Write::new()
                .checked_each(PetCheck::IdFree, self.pet_put(&pet)?)
                .checked(
                    PetCheck::CategoryExists(category),
                    self.pet_joins(category)?,
                );
            Ok(Step::Write(write, pet.pet))
        })
        .await
    }
}

impl Db {
    /// Reads a pet and its stock: its partition (the pet item and its stock
    /// item), strongly consistent, in one query.
    pub async fn get_pet(&self, id: Id) -> Result<Option<StoredPet>, DbError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("PK = :pk")
            .expression_attribute_values(":pk", s(pk(id)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| classify(&self.table, e))?;
        StoredPet::of_partition(out.items.unwrap_or_default())
    }

    /// Reads a pet's record alone (its pet item), strongly consistent.
    pub async fn get_pet_record(&self, id: Id) -> Result<Option<Pet>, DbError> {
        self.get_item(pk(id), SK)
            .await?
            .map(|item| from_item::<StoredPetItem>(item).map(|stored| stored.pet))
            .transpose()
    }

    /// Reads a pet that must exist.
    pub(crate) async fn existing_pet(&self, id: Id) -> Result<StoredPet, DbError> {
        self.get_pet(id)
            .await?
            .ok_or_else(|| DbError::not_found("pet", id))
    }

    /// Reads many pets at once, in the order asked, leaving out missing ones.
    pub async fn batch_get_pets(&self, ids: &[Id]) -> Result<Vec<Pet>, DbError> {
        let mut unique: Vec<Id> = ids.to_vec();
        unique.sort_unstable();
        unique.dedup();
        let keys = unique.iter().map(|id| key(*id)).collect();
        let mut found: HashMap<Id, Pet> = HashMap::with_capacity(unique.len());
        for item in self.batch_get("batch get pets", keys, None).await? {
            let pet = from_item::<StoredPetItem>(item)?.pet;
            found.insert(pet.id, pet);
        }
        Ok(ids.iter().filter_map(|id| found.get(id).cloned()).collect())
    }

    /// Lists pets in id order.
    pub async fn list_pets(
        &self,
        filter: PetFilter,
        limit: usize,
        after: Option<u64>,
    ) -> Result<Page<Pet>, DbError> {
        self.query_page(filter.query(&PET_FIELDS), limit, after)
            .await?
            .try_map(from_item)
    }
}
