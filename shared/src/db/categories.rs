//! Category items, their name claims (unique under NFKC and case folding), and their pet counts.

use super::expr::Expr;
use super::query::{IndexQuery, Projection};
use super::shards::Kind;
use super::write::{Check, OnFailure, Step, Write};
use super::{from_item, n, new_id, s, to_item, Changes, Db, DbError, Item, Page};
use crate::records::{Category, Id, Name, NewCategory};
use crate::rules::{self, Guard, RuleViolation};
use aws_sdk_dynamodb::types::TransactWriteItem;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::LazyLock;

pub(crate) const SK: &str = "CATEGORY";
/// GSI1's list of every category; sharded.
const ALL: &str = "CATEGORY";
pub(crate) const NAME_SK: &str = "CATEGORYNAME";

fn pk(id: Id) -> String {
    format!("CATEGORY#{id}")
}

pub(crate) fn key(id: Id) -> Item {
    HashMap::from([("PK".to_string(), s(pk(id))), ("SK".to_string(), s(SK))])
}

/// The item that makes a name unique: creating it fails if the name is taken.
/// `folded` is [`Name::folded`] (or, for a claim made before names were
/// compared under NFKC, [`Name::legacy_folded`]).
pub(crate) fn name_key(folded: &str) -> Item {
    HashMap::from([
        ("PK".to_string(), s(name_pk(folded))),
        ("SK".to_string(), s(NAME_SK)),
    ])
}

/// The partition key of the claim of `folded`.
pub(crate) fn name_pk(folded: &str) -> String {
    format!("CATEGORYNAME#{folded}")
}

/// What a category list reads: the Category record's attributes.
static CATEGORY_FIELDS: LazyLock<Projection> = LazyLock::new(Projection::of::<Category>);

/// The list of every category: GSI1, sharded.
pub(crate) fn list_query() -> IndexQuery<'static> {
    IndexQuery {
        index: "GSI1",
        partition: ALL.into(),
        sharded: Some(Kind::Category),
        descending: false,
        filter: None,
        projection: &CATEGORY_FIELDS,
    }
}

/// Where `name`'s claim may be: under its folded form and, for a name stored
/// before the NFKC comparison whose lower case differs from that, under the
/// lower case. Freeing a name deletes both, so no stale claim is left.
fn claim_keys(name: &Name) -> Vec<String> {
    let (folded, legacy) = (name.folded(), name.legacy_folded());
    if folded == legacy {
        vec![folded]
    } else {
        vec![folded, legacy]
    }
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
    gsi1: String,
    #[serde(flatten)]
    category: &'a Category,
    #[serde(rename = "petCount")]
    pet_count: u64,
}

/// The conditions of a category's writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CategoryCheck {
    /// A new category's id is not taken (ids are random in their low bits).
    IdFree,
    /// The category is still as the decision read it.
    AsRead,
    /// No other category has the name, under NFKC and case folding: its
    /// name claim is free.
    NameFree,
}

impl Check for CategoryCheck {
    fn on_failure(self) -> OnFailure {
        match self {
            CategoryCheck::IdFree | CategoryCheck::AsRead => OnFailure::ReadAgain,
            CategoryCheck::NameFree => OnFailure::Fail(RuleViolation::CategoryExists.into()),
        }
    }
}

impl Db {
    /// A transaction step that counts a pet into `category`, on the
    /// condition that the category exists (so it is also that check).
    pub(crate) fn pet_joins(&self, category: Id) -> Result<TransactWriteItem, DbError> {
        Expr::new()
            .add("petCount", 1)
            .exists()
            .update(&self.table, key(category))
    }

    /// A transaction step that counts a pet out of `category`.
    pub(crate) fn pet_leaves(&self, category: Id) -> Result<TransactWriteItem, DbError> {
        Expr::new()
            .add("petCount", -1)
            .update(&self.table, key(category))
    }

    /// Claims `name` for category `id`: fails if another category holds it.
    /// (`id`'s own claim may be there: a name stored before NFKC whose claim
    /// keys cannot tell where it is.)
    fn name_claim_put(&self, name: &Name, id: Id) -> Result<TransactWriteItem, DbError> {
        let mut item = name_key(&name.folded());
        item.insert("categoryId".into(), n(id));
        Expr::new().absent_or_claimed_by(id).put(&self.table, item)
    }

    /// Frees `name` onto `write`: deletes its claim wherever it may be, but
    /// under `kept` (a key the same transaction claims again).
    fn name_claim_delete(
        &self,
        write: Write<CategoryCheck>,
        name: &Name,
        kept: Option<&str>,
    ) -> Result<Write<CategoryCheck>, DbError> {
        claim_keys(name)
            .iter()
            .filter(|key| Some(key.as_str()) != kept)
            .try_fold(write, |write, key| {
                Ok(write.unchecked(Expr::new().delete(&self.table, name_key(key))?))
            })
    }
}

impl Changes {
    /// Creates a category whose name no other category has, in any case.
    pub async fn create_category(
        &self,
        new: NewCategory,
        now: DateTime<Utc>,
    ) -> Result<Category, DbError> {
        let new = &new;
        self.run("create category", move || async move {
            let category = new.clone().into_category(new_id(now));
            let item = to_item(&CategoryItem {
                pk: pk(category.id),
                sk: SK,
                gsi1: self.shards.key(Kind::Category, ALL, category.id.get()),
                category: &category,
                pet_count: 0,
            })?;
            let write = Write::new()
                .checked(
                    CategoryCheck::IdFree,
                    Expr::new().absent().put(&self.table, item)?,
                )
                .checked(
                    CategoryCheck::NameFree,
                    self.name_claim_put(&category.name, category.id)?,
                );
            Ok(Step::Write(write, category))
        })
        .await
    }
}

impl Db {
    pub async fn get_category(&self, id: Id) -> Result<Option<StoredCategory>, DbError> {
        self.get_item(pk(id), SK).await?.map(from_item).transpose()
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
        self.query_page(list_query(), limit, after)
            .await?
            .try_map(from_item)
    }
}

impl Changes {
    /// Replaces a category's name and description. A new name moves the name
    /// claim in the same transaction, so two renames can never take one name.
    pub async fn replace_category(&self, id: Id, new: NewCategory) -> Result<Category, DbError> {
        let new = &new;
        self.run("replace category", move || async move {
            let current = self.existing_category(id).await?.category;
            self.check_precondition("category", id, &current)?;
            let updated = new.clone().into_category(id);
            let expr = self
                .as_read(Expr::new().exists(), &current)?
                .when(&Guard::NameIs(current.name.clone()))
                .replace(&updated)?;
            let mut write =
                Write::new().checked(CategoryCheck::AsRead, expr.update(&self.table, key(id))?);
            let new_key = new.name.folded();
            if claim_keys(&current.name) != [new_key.as_str()] {
                write = self
                    .name_claim_delete(write, &current.name, Some(&new_key))?
                    .checked(CategoryCheck::NameFree, self.name_claim_put(&new.name, id)?);
            }
            Ok(Step::Write(write, updated))
        })
        .await
    }

    /// Deletes a category that no pet is in, and frees its name.
    pub async fn delete_category(&self, id: Id) -> Result<(), DbError> {
        self.run("delete category", move || async move {
            let current = self.existing_category(id).await?;
            self.check_precondition("category", id, &current.category)?;
            let unused = rules::delete_category(current.pet_count)?;
            let name = &current.category.name;
            let delete = self
                .as_read(Expr::new().exists(), &current.category)?
                .when(&unused)
                .when(&Guard::NameIs(name.clone()))
                .delete(&self.table, key(id))?;
            let write = Write::new().checked(CategoryCheck::AsRead, delete);
            let write = self.name_claim_delete(write, name, None)?;
            Ok(Step::Write(write, ()))
        })
        .await
    }
}
