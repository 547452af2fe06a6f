//! Pet items, which also hold the pet's inventory entry (`stock`, `openOrders`).

use super::query::{IndexQuery, Projection};
use super::{
    backoff, classify, from_item, n, new_id, s, to_item, too_contended, Db, DbError, Item, Page,
    TransactOutcome, MAX_ATTEMPTS,
};
use crate::records::{Id, NewPet, Pet, PetStatus};
use crate::rules::{self, RuleViolation, StockState};
use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, KeysAndAttributes, Put, TransactWriteItem, Update,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A pet as stored: the record plus its stock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredPet {
    #[serde(flatten)]
    pub pet: Pet,
    pub stock: u32,
    pub open_orders: u32,
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

/// The item written for a pet: the record plus its keys.
#[derive(Serialize)]
struct PetItem<'a> {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: &'static str,
    #[serde(rename = "GSI1PK")]
    gsi1: &'static str,
    #[serde(rename = "GSI2PK")]
    gsi2: String,
    #[serde(rename = "GSI3PK")]
    gsi3: String,
    #[serde(flatten)]
    pet: &'a StoredPet,
}

pub(crate) const SK: &str = "PET";

/// The attributes of a Pet record.
const PET_FIELDS: Projection = Projection {
    expression: "id, #name, categoryId, #status",
    names: &[("#name", "name"), ("#status", "status")],
};

pub(crate) fn pk(id: Id) -> String {
    format!("PET#{id}")
}

pub(crate) fn key(id: Id) -> HashMap<String, AttributeValue> {
    HashMap::from([("PK".to_string(), s(pk(id))), ("SK".to_string(), s(SK))])
}

pub(crate) fn status_partition(status: PetStatus) -> String {
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
    pub(crate) fn query<'a>(&self, projection: Projection) -> IndexQuery<'a> {
        let (index, partition, filter) = match (self.category_id, self.status) {
            (Some(category), status) => (
                "GSI3",
                category_partition(category),
                status.map(|status| {
                    (
                        "#status = :status",
                        HashMap::from([("#status".to_string(), "status".to_string())]),
                        HashMap::from([(":status".to_string(), s(status.as_str()))]),
                    )
                }),
            ),
            (None, Some(status)) => ("GSI2", status_partition(status), None),
            (None, None) => ("GSI1", "PET".to_string(), None),
        };
        IndexQuery {
            index,
            partition,
            descending: false,
            filter,
            projection,
        }
    }
}

pub(crate) fn pet_from(item: Item) -> Result<StoredPet, DbError> {
    from_item(item)
}

impl Db {
    fn pet_put(&self, pet: &StoredPet) -> Result<TransactWriteItem, DbError> {
        let item = to_item(&PetItem {
            pk: pk(pet.pet.id),
            sk: SK,
            gsi1: "PET",
            gsi2: status_partition(pet.pet.status),
            gsi3: category_partition(pet.pet.category_id),
            pet,
        })?;
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(PK)")
            .build()
            .map_err(DbError::internal)?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    /// Creates a pet and its inventory entry, counting it in its category.
    pub async fn create_pet(&self, new: NewPet, now: DateTime<Utc>) -> Result<Pet, DbError> {
        for attempt in 0..MAX_ATTEMPTS {
            let pet = StoredPet {
                pet: Pet {
                    id: new_id(now),
                    name: new.name.clone(),
                    category_id: new.category_id,
                    status: new.status,
                },
                stock: rules::initial_stock(new.status),
                open_orders: 0,
            };
            let items = vec![
                self.pet_put(&pet)?,
                self.category_count(new.category_id, 1, true)?,
            ];
            match self.transact(items).await? {
                TransactOutcome::Done => return Ok(pet.pet),
                TransactOutcome::ConditionFailed(1) => {
                    return Err(DbError::unknown_reference("categoryId", new.category_id))
                }
                // An id collision or a conflict: draw a new id and go again.
                TransactOutcome::ConditionFailed(_) | TransactOutcome::Conflict => {
                    backoff(attempt).await
                }
            }
        }
        Err(too_contended("create pet"))
    }

    /// Reads a pet and its stock.
    pub async fn get_pet(&self, id: Id) -> Result<Option<StoredPet>, DbError> {
        self.get_item(pk(id), SK).await?.map(pet_from).transpose()
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
        let mut found: HashMap<Id, Pet> = HashMap::with_capacity(unique.len());
        for chunk in unique.chunks(100) {
            let keys = chunk.iter().map(|id| key(*id)).collect::<Vec<_>>();
            let mut pending = Some(
                KeysAndAttributes::builder()
                    .set_keys(Some(keys))
                    .build()
                    .map_err(DbError::internal)?,
            );
            let mut attempt = 0;
            while let Some(request) = pending.take() {
                let out = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, request)
                    .send()
                    .await
                    .map_err(classify)?;
                for item in out
                    .responses
                    .and_then(|mut r| r.remove(&self.table))
                    .unwrap_or_default()
                {
                    let pet = pet_from(item)?.pet;
                    found.insert(pet.id, pet);
                }
                pending = out
                    .unprocessed_keys
                    .and_then(|mut u| u.remove(&self.table))
                    .filter(|k| !k.keys().is_empty());
                if pending.is_some() {
                    attempt += 1;
                    if attempt >= MAX_ATTEMPTS {
                        return Err(too_contended("batch get pets"));
                    }
                    backoff(attempt).await;
                }
            }
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
        self.query_page(filter.query(PET_FIELDS), limit, after)
            .await?
            .try_map(from_item)
    }

    /// Replaces a pet's fields with what `change` makes of the current pet.
    ///
    /// The status move is checked against the current status, and the write is
    /// conditioned on the status and category it was checked against.
    pub async fn update_pet(
        &self,
        id: Id,
        change: impl Fn(&Pet) -> NewPet,
    ) -> Result<Pet, DbError> {
        for attempt in 0..MAX_ATTEMPTS {
            let current = self.existing_pet(id).await?;
            let target = change(&current.pet);
            rules::check_transition(current.pet.status, target.status)?;
            let updated = Pet {
                id,
                name: target.name.clone(),
                category_id: target.category_id,
                status: target.status,
            };
            if updated == current.pet {
                return Ok(updated);
            }
            let update = Update::builder()
                .table_name(&self.table)
                .set_key(Some(key(id)))
                .update_expression("SET #name = :name, categoryId = :category, #status = :status, GSI2PK = :gsi2, GSI3PK = :gsi3")
                .condition_expression("attribute_exists(PK) AND #status = :old_status AND categoryId = :old_category")
                .expression_attribute_names("#name", "name")
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":name", s(target.name.as_str()))
                .expression_attribute_values(":category", n(target.category_id))
                .expression_attribute_values(":status", s(target.status.as_str()))
                .expression_attribute_values(":gsi2", s(status_partition(target.status)))
                .expression_attribute_values(":gsi3", s(category_partition(target.category_id)))
                .expression_attribute_values(":old_status", s(current.pet.status.as_str()))
                .expression_attribute_values(":old_category", n(current.pet.category_id))
                .build()
                .map_err(DbError::internal)?;
            let mut items = vec![TransactWriteItem::builder().update(update).build()];
            if target.category_id != current.pet.category_id {
                items.push(self.category_count(target.category_id, 1, true)?);
                items.push(self.category_count(current.pet.category_id, -1, false)?);
            }
            match self.transact(items).await? {
                TransactOutcome::Done => return Ok(updated),
                TransactOutcome::ConditionFailed(1) => {
                    return Err(DbError::unknown_reference("categoryId", target.category_id))
                }
                TransactOutcome::ConditionFailed(_) | TransactOutcome::Conflict => {
                    backoff(attempt).await
                }
            }
        }
        Err(too_contended("update pet"))
    }

    /// Deletes a pet with no incomplete orders, and its inventory entry.
    pub async fn delete_pet(&self, id: Id) -> Result<(), DbError> {
        for attempt in 0..MAX_ATTEMPTS {
            let current = self.existing_pet(id).await?;
            if current.open_orders > 0 {
                return Err(RuleViolation::PetHasOpenOrders.into());
            }
            let delete = Delete::builder()
                .table_name(&self.table)
                .set_key(Some(key(id)))
                .condition_expression(
                    "attribute_exists(PK) AND openOrders = :zero AND categoryId = :category",
                )
                .expression_attribute_values(":zero", n(0))
                .expression_attribute_values(":category", n(current.pet.category_id))
                .build()
                .map_err(DbError::internal)?;
            let items = vec![
                TransactWriteItem::builder().delete(delete).build(),
                self.category_count(current.pet.category_id, -1, false)?,
            ];
            match self.transact(items).await? {
                TransactOutcome::Done => return Ok(()),
                TransactOutcome::ConditionFailed(_) | TransactOutcome::Conflict => {
                    backoff(attempt).await
                }
            }
        }
        Err(too_contended("delete pet"))
    }
}
