//! Category items, their case-insensitive name guards, and their pet counts.

use super::query::{IndexQuery, Projection};
use super::{
    backoff, from_item, n, new_id, s, to_item, too_contended, Db, DbError, Page, TransactOutcome,
    MAX_ATTEMPTS,
};
use crate::records::{Category, Id, Name, NewCategory};
use crate::rules::RuleViolation;
use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, TransactWriteItem, Update};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

const SK: &str = "CATEGORY";
const NAME_SK: &str = "CATEGORYNAME";

pub(crate) fn key(id: Id) -> HashMap<String, AttributeValue> {
    HashMap::from([
        ("PK".to_string(), s(format!("CATEGORY#{id}"))),
        ("SK".to_string(), s(SK)),
    ])
}

/// The item that makes a name unique: creating it fails if the name is taken.
fn name_key(name: &Name) -> HashMap<String, AttributeValue> {
    HashMap::from([
        (
            "PK".to_string(),
            s(format!("CATEGORYNAME#{}", name.folded())),
        ),
        ("SK".to_string(), s(NAME_SK)),
    ])
}

/// A category as stored: the record plus how many pets are in it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredCategory {
    #[serde(flatten)]
    pub category: Category,
    #[serde(default)]
    pub pet_count: u64,
}

#[derive(Serialize)]
struct CategoryItem<'a> {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: &'static str,
    #[serde(rename = "GSI1PK")]
    gsi1: &'static str,
    #[serde(flatten)]
    category: &'a Category,
    #[serde(rename = "petCount")]
    pet_count: u64,
}

impl Db {
    /// A transaction step that moves a category's pet count by `delta`;
    /// `must_exist` makes it the check that a pet's category exists.
    pub(crate) fn category_count(
        &self,
        category: Id,
        delta: i64,
        must_exist: bool,
    ) -> Result<TransactWriteItem, DbError> {
        let mut update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key(category)))
            .update_expression("ADD petCount :delta")
            .expression_attribute_values(":delta", n(delta));
        if must_exist {
            update = update.condition_expression("attribute_exists(PK)");
        }
        Ok(TransactWriteItem::builder()
            .update(update.build().map_err(DbError::internal)?)
            .build())
    }

    fn name_guard_put(&self, name: &Name, id: Id) -> Result<TransactWriteItem, DbError> {
        let mut item = name_key(name);
        item.insert("categoryId".into(), n(id));
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(PK)")
            .build()
            .map_err(DbError::internal)?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    fn name_guard_delete(&self, name: &Name) -> Result<TransactWriteItem, DbError> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(name_key(name)))
            .build()
            .map_err(DbError::internal)?;
        Ok(TransactWriteItem::builder().delete(delete).build())
    }

    /// Creates a category whose name no other category has, in any case.
    pub async fn create_category(
        &self,
        new: NewCategory,
        now: DateTime<Utc>,
    ) -> Result<Category, DbError> {
        for attempt in 0..MAX_ATTEMPTS {
            let category = Category {
                id: new_id(now),
                name: new.name.clone(),
                description: new.description.clone(),
            };
            let item = to_item(&CategoryItem {
                pk: format!("CATEGORY#{}", category.id),
                sk: SK,
                gsi1: "CATEGORY",
                category: &category,
                pet_count: 0,
            })?;
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(item))
                .condition_expression("attribute_not_exists(PK)")
                .build()
                .map_err(DbError::internal)?;
            let items = vec![
                TransactWriteItem::builder().put(put).build(),
                self.name_guard_put(&category.name, category.id)?,
            ];
            match self.transact(items).await? {
                TransactOutcome::Done => return Ok(category),
                TransactOutcome::ConditionFailed(1) => {
                    return Err(RuleViolation::CategoryExists.into())
                }
                TransactOutcome::ConditionFailed(_) | TransactOutcome::Conflict => {
                    backoff(attempt).await
                }
            }
        }
        Err(too_contended("create category"))
    }

    pub async fn get_category(&self, id: Id) -> Result<Option<StoredCategory>, DbError> {
        self.get_item(format!("CATEGORY#{id}"), SK)
            .await?
            .map(from_item)
            .transpose()
    }

    async fn existing_category(&self, id: Id) -> Result<StoredCategory, DbError> {
        self.get_category(id)
            .await?
            .ok_or_else(|| DbError::not_found("category", id))
    }

    pub async fn list_categories(
        &self,
        limit: usize,
        after: Option<u64>,
    ) -> Result<Page<Category>, DbError> {
        let query = IndexQuery {
            index: "GSI1",
            partition: "CATEGORY".into(),
            descending: false,
            filter: None,
            projection: Projection {
                expression: "id, #name, description",
                names: &[("#name", "name")],
            },
        };
        self.query_page(query, limit, after)
            .await?
            .try_map(from_item)
    }

    /// Replaces a category's name and description. A new name moves the name
    /// guard in the same transaction, so two renames can never take one name.
    pub async fn replace_category(&self, id: Id, new: NewCategory) -> Result<Category, DbError> {
        for attempt in 0..MAX_ATTEMPTS {
            let current = self.existing_category(id).await?.category;
            let updated = Category {
                id,
                name: new.name.clone(),
                description: new.description.clone(),
            };
            let mut update = Update::builder()
                .table_name(&self.table)
                .set_key(Some(key(id)))
                .condition_expression("attribute_exists(PK) AND #name = :old_name")
                .expression_attribute_names("#name", "name")
                .expression_attribute_values(":name", s(new.name.as_str()))
                .expression_attribute_values(":old_name", s(current.name.as_str()));
            update = match &new.description {
                Some(description) => update
                    .update_expression("SET #name = :name, description = :description")
                    .expression_attribute_values(":description", to_item_value(description)?),
                None => update.update_expression("SET #name = :name REMOVE description"),
            };
            let mut items = vec![TransactWriteItem::builder()
                .update(update.build().map_err(DbError::internal)?)
                .build()];
            if new.name.folded() != current.name.folded() {
                items.push(self.name_guard_delete(&current.name)?);
                items.push(self.name_guard_put(&new.name, id)?);
            }
            match self.transact(items).await? {
                TransactOutcome::Done => return Ok(updated),
                TransactOutcome::ConditionFailed(2) => {
                    return Err(RuleViolation::CategoryExists.into())
                }
                TransactOutcome::ConditionFailed(_) | TransactOutcome::Conflict => {
                    backoff(attempt).await
                }
            }
        }
        Err(too_contended("replace category"))
    }

    /// Deletes a category that no pet is in, and frees its name.
    pub async fn delete_category(&self, id: Id) -> Result<(), DbError> {
        for attempt in 0..MAX_ATTEMPTS {
            let current = self.existing_category(id).await?;
            if current.pet_count > 0 {
                return Err(RuleViolation::CategoryInUse.into());
            }
            let delete = Delete::builder()
                .table_name(&self.table)
                .set_key(Some(key(id)))
                .condition_expression("attribute_exists(PK) AND (attribute_not_exists(petCount) OR petCount = :zero) AND #name = :name")
                .expression_attribute_names("#name", "name")
                .expression_attribute_values(":zero", n(0))
                .expression_attribute_values(":name", s(current.category.name.as_str()))
                .build()
                .map_err(DbError::internal)?;
            let items = vec![
                TransactWriteItem::builder().delete(delete).build(),
                self.name_guard_delete(&current.category.name)?,
            ];
            match self.transact(items).await? {
                TransactOutcome::Done => return Ok(()),
                TransactOutcome::ConditionFailed(_) | TransactOutcome::Conflict => {
                    backoff(attempt).await
                }
            }
        }
        Err(too_contended("delete category"))
    }
}

fn to_item_value<T: Serialize>(value: &T) -> Result<AttributeValue, DbError> {
    serde_dynamo::to_attribute_value(value).map_err(DbError::internal)
}
