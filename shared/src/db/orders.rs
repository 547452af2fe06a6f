//! Order items, and the transactions that move stock with them.
//!
//! Placing, completing and cancelling an order each write the order and its
//! pet in one transaction: the order on the condition that it is as read, the
//! pet on the guards of its stock decision (see [`crate::rules`]).
//!
//! An order belongs to the key identity that placed it (`ownerId`, never in
//! the API's record). Every read checks the caller's [`OwnerScope`], and every
//! write on an order carries it as a condition too, so another customer's
//! order is as missing as a deleted one, in DynamoDB and not only in the read
//! before the write. A customer's list is a query on its own partition of
//! GSI4, never a filter over everyone's orders.

mod changes;
mod list;

use super::{from_item, s, Db, DbError, Item};
use crate::records::{Id, Order, OwnerScope};
use crate::rules;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

pub use changes::OrderCheck;
pub use list::OrderFilter;

pub(crate) const SK: &str = "ORDER";

fn pk(id: Id) -> String {
    format!("ORDER#{id}")
}

pub(crate) fn key(id: Id) -> Item {
    HashMap::from([("PK".to_string(), s(pk(id))), ("SK".to_string(), s(SK))])
}

/// GSI1's list of every order; sharded.
const ALL: &str = "ORDER";

/// GSI2's list of the orders complete or not; sharded.
pub(crate) fn completion_list(complete: bool) -> String {
    format!("ORDER#COMPLETE#{complete}")
}

fn pet_partition(pet: Id) -> String {
    format!("ORDER#PET#{pet}")
}

pub(crate) fn owner_partition(owner: Id) -> String {
    format!("ORDER#OWNER#{owner}")
}

#[derive(Serialize)]
struct OrderItem<'a> {
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
    #[serde(rename = "GSI4PK")]
    gsi4: String,
    #[serde(rename = "ownerId")]
    owner_id: Id,
    #[serde(flatten)]
    order: &'a Order,
}

/// An order as stored: the record and who placed it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredOrder {
    #[serde(flatten)]
    pub order: Order,
    /// Orders placed before owners were recorded have none: only staff see them.
    #[serde(default)]
    pub owner_id: Option<Id>,
    /// Its hold is being lapsed (see [`crate::rules::holds`]): it answers as
    /// gone, and only the lapse may end it.
    #[serde(default)]
    pub lapsing: bool,
}

impl Db {
    /// Reads an order within `scope`: another customer's order is `None`,
    /// exactly as a missing one.
    pub async fn get_order(&self, id: Id, scope: OwnerScope) -> Result<Option<Order>, DbError> {
        Ok(self.order_in(id, scope).await?.map(|stored| stored.order))
    }

    /// An order as stored, whoever placed it, a lapsing one included.
    pub async fn stored_order(&self, id: Id) -> Result<Option<StoredOrder>, DbError> {
        self.get_item(pk(id), SK).await?.map(from_item).transpose()
    }

    /// An order within `scope`; a lapsing order is as gone as a cancelled one.
    pub async fn order_in(
        &self,
        id: Id,
        scope: OwnerScope,
    ) -> Result<Option<StoredOrder>, DbError> {
        Ok(self
            .stored_order(id)
            .await?
            .filter(|stored| rules::in_scope(scope, stored.owner_id) && !stored.lapsing))
    }

    async fn existing_order(&self, id: Id, scope: OwnerScope) -> Result<StoredOrder, DbError> {
        self.order_in(id, scope)
            .await?
            .ok_or_else(|| DbError::not_found("order", id))
    }
}
