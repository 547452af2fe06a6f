//! Order items, and the transactions that move stock with them.
//!
//! Placing, completing and cancelling an order each write the order and its
//! pet in one transaction: the order on the condition that it is as read, the
//! pet on the guards of its stock decision (see [`crate::rules`]).
//!
//! An order belongs to the key identity that placed it (`ownerId`, never in
//! the API's record). Every read checks the caller's [`OrderScope`], and every
//! write on an order carries it as a condition too, so another customer's
//! order is as missing as a deleted one, in DynamoDB and not only in the read
//! before the write. A customer's list is a query on its own partition of
//! GSI4, never a filter over everyone's orders.

use super::expr::Expr;
use super::pets::StoredPet;
use super::query::{Filter, IndexQuery, Projection};
use super::shards::Kind;
use super::write::{Check, OnFailure, Step, Write};
use super::{from_item, n, new_id, s, to_item, Changes, Db, DbError, Item, Page};
use crate::records::{Id, NewOrder, Order, OrderPatch, OrderScope};
use crate::rules::{self, holds, Guard, OrderDecision, RuleViolation};
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::LazyLock;

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

/// What an order list reads: the Order record's attributes.
static ORDER_FIELDS: LazyLock<Projection> = LazyLock::new(Projection::of::<Order>);

/// Which orders a list asks for.
#[derive(Debug, Clone, Copy, Default)]
pub struct OrderFilter {
    pub pet_id: Option<Id>,
    pub complete: Option<bool>,
}

impl OrderFilter {
    /// The GSI query for this filter within `scope`: a customer's orders are
    /// its own partition of GSI4, filtered there; staff lists run on the
    /// partition of the first filter, with the other as a filter expression.
    ///
    /// Every order's lists and the open ones are sharded. A customer's are
    /// spread by customer already, and a pet's orders stay one partition:
    /// each of them also writes the pet's own item, twice the units, so the
    /// item reaches DynamoDB's limit first (see `README.md`, "Flash sale").
    pub(crate) fn query(&self, scope: OrderScope) -> IndexQuery<'static> {
        let (index, partition, sharded, filter) = match (scope, self.pet_id, self.complete) {
            (OrderScope::OwnedBy(owner), pet, complete) => {
                ("GSI4", owner_partition(owner), None, filter(pet, complete))
            }
            (OrderScope::All, Some(pet), complete) => {
                ("GSI3", pet_partition(pet), None, filter(None, complete))
            }
            (OrderScope::All, None, Some(complete)) => {
                ("GSI2", completion_list(complete), Some(Kind::Order), None)
            }
            (OrderScope::All, None, None) => ("GSI1", ALL.to_string(), Some(Kind::Order), None),
        };
        IndexQuery {
            index,
            partition,
            sharded,
            descending: true,
            filter,
            projection: &ORDER_FIELDS,
        }
    }
}

/// A filter expression on an order query's pet and completion, if any.
fn filter(pet: Option<Id>, complete: Option<bool>) -> Option<Filter<'static>> {
    let expression = match (pet, complete) {
        (Some(_), Some(_)) => "petId = :pet AND complete = :complete",
        (Some(_), None) => "petId = :pet",
        (None, Some(_)) => "complete = :complete",
        (None, None) => return None,
    };
    let mut values = HashMap::new();
    if let Some(pet) = pet {
        values.insert(":pet".to_string(), n(pet));
    }
    if let Some(complete) = complete {
        values.insert(":complete".to_string(), AttributeValue::Bool(complete));
    }
    Some(Filter {
        expression,
        names: HashMap::new(),
        values,
    })
}

/// The conditions of an order's writes. Each failure decides again from a
/// fresh read, which finds what changed: the pet's stock state, or the order
/// completed, gone, or not the caller's (answered as missing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderCheck {
    /// A new order's id is not taken (ids are random in their low bits).
    IdFree,
    /// The order is still as the decision read it, and within the caller's scope.
    OrderAsRead,
    /// The order's pet is still as the decision read it.
    PetAsRead,
    /// The placing key holds fewer incomplete orders than this cap.
    HoldsBelow(u32),
}

impl Check for OrderCheck {
    fn on_failure(self) -> OnFailure {
        match self {
            // Definite: at that instant the key held its cap.
            OrderCheck::HoldsBelow(cap) => {
                OnFailure::Fail(DbError::from(RuleViolation::TooManyOpenOrders { cap }))
            }
            _ => OnFailure::ReadAgain,
        }
    }
}

impl Changes {
    /// Stores an order of `owner`'s and takes its units from stock, in one
    /// transaction, which also counts the hold on `owner`'s counter, below
    /// `cap` when the caller has one (staff have none).
    pub async fn place_order(
        &self,
        new: NewOrder,
        owner: Id,
        cap: Option<u32>,
        now: DateTime<Utc>,
    ) -> Result<Order, DbError> {
        let new = &new;
        self.run("place order", move || async move {
            let pet: StoredPet = self
                .get_pet(new.pet_id)
                .await?
                .ok_or_else(|| DbError::unknown_reference("petId", new.pet_id))?;
            let decision = rules::place_order(pet.state(), new.quantity)?;
            let order = Order {
                id: new_id(now),
                pet_id: new.pet_id,
                quantity: new.quantity,
                ship_date: new.ship_date,
                complete: false,
                lapses_at: Some(holds::lapses_at(now, new.ship_date, self.hold)),
            };
            let item = to_item(&OrderItem {
                pk: pk(order.id),
                sk: SK,
                gsi1: self.shards.key(Kind::Order, ALL, order.id.get()),
                gsi2: self
                    .shards
                    .key(Kind::Order, &completion_list(false), order.id.get()),
                gsi3: pet_partition(order.pet_id),
                gsi4: owner_partition(owner),
                owner_id: owner,
                order: &order,
            })?;
            let write = Write::new()
                .checked(
                    OrderCheck::IdFree,
                    Expr::new().absent().put(self.table(), item)?,
                )
                .checked(
                    OrderCheck::PetAsRead,
                    self.stock_write(new.pet_id, &decision)?,
                );
            let guard = match cap {
                Some(cap) => Some(self.cap_guard(owner, cap).await?),
                None => None,
            };
            let count = self.hold_change(owner, 1, guard.as_ref())?;
            let write = match cap {
                Some(cap) => write.checked(OrderCheck::HoldsBelow(cap), count),
                None => write.unchecked(count),
            };
            Ok(Step::Write(write, order))
        })
        .await
    }
}

impl Db {
    /// Reads an order within `scope`: another customer's order is `None`,
    /// exactly as a missing one.
    pub async fn get_order(&self, id: Id, scope: OrderScope) -> Result<Option<Order>, DbError> {
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
        scope: OrderScope,
    ) -> Result<Option<StoredOrder>, DbError> {
        Ok(self
            .stored_order(id)
            .await?
            .filter(|stored| rules::in_scope(scope, stored.owner_id) && !stored.lapsing))
    }

    async fn existing_order(&self, id: Id, scope: OrderScope) -> Result<StoredOrder, DbError> {
        self.order_in(id, scope)
            .await?
            .ok_or_else(|| DbError::not_found("order", id))
    }

    /// Lists the orders within `scope`, newest first.
    pub async fn list_orders(
        &self,
        filter: OrderFilter,
        scope: OrderScope,
        limit: usize,
        after: Option<u64>,
    ) -> Result<Page<Order>, DbError> {
        self.query_page(filter.query(scope), limit, after)
            .await?
            .try_map(from_item)
    }
}

impl Changes {
    /// Completes an order and/or sets its ship date (see [`rules::patch_order`]).
    /// Completing also moves the pet's stock state (see [`rules::complete_order`]).
    pub async fn update_order(
        &self,
        id: Id,
        patch: OrderPatch,
        scope: OrderScope,
        now: DateTime<Utc>,
    ) -> Result<Order, DbError> {
        let patch = &patch;
        self.run("update order", move || async move {
            let stored = self.existing_order(id, scope).await?;
            let order = &stored.order;
            let Some(mut decision) = rules::patch_order(order, patch, now)? else {
                return Ok(Step::Answer(stored.order));
            };
            holds::after_patch(&mut decision.updated, self.hold);
            let mut write = Write::new().checked(
                OrderCheck::OrderAsRead,
                self.order_update(&decision, scope)?,
            );
            if decision.completes() {
                let pet = self.existing_pet(order.pet_id).await?;
                let stock = rules::complete_order(pet.state());
                write = write.checked(
                    OrderCheck::PetAsRead,
                    self.stock_write(order.pet_id, &stock)?,
                );
                if let Some(owner) = holds::counted(order, stored.owner_id) {
                    write = write.unchecked(self.hold_change(owner, -1, None)?);
                }
            }
            Ok(Step::Write(write, decision.updated))
        })
        .await
    }
}

impl Db {
    /// The order's side of a patch: its new fields, resting on the decision's
    /// guard and on the caller's scope.
    fn order_update(
        &self,
        decision: &OrderDecision,
        scope: OrderScope,
    ) -> Result<TransactWriteItem, DbError> {
        let order = &decision.updated;
        let mut expr = Expr::new()
            .when(&decision.guard)
            .when_all(&rules::scope_guard(scope))
            .replace(order)?;
        if order.complete {
            let list = self
                .shards
                .key(Kind::Order, &completion_list(true), order.id.get());
            expr = expr.set("GSI2PK", s(list));
        }
        expr.update(self.table(), key(order.id))
    }
}

impl Changes {
    /// Cancels an incomplete order: deletes it and returns its units to stock.
    pub async fn cancel_order(&self, id: Id, scope: OrderScope) -> Result<(), DbError> {
        self.run("cancel order", move || async move {
            let order = self.existing_order(id, scope).await?;
            // Refused before the pet is read: a complete order costs one read.
            rules::open_order(&order.order)?;
            let pet = self.existing_pet(order.order.pet_id).await?;
            Ok(Step::Write(self.cancel_write(&order, &pet, scope)?, ()))
        })
        .await
    }
}

impl Db {
    /// The write that cancels `order` for a caller of `scope`, decided from
    /// the order and its `pet` as read. Its condition holds the scope, so even
    /// a decision whose read check was wrong cannot cancel another's order.
    pub fn cancel_write(
        &self,
        order: &StoredOrder,
        pet: &StoredPet,
        scope: OrderScope,
    ) -> Result<Write<OrderCheck>, DbError> {
        let open = rules::open_order(&order.order)?;
        self.ending_write(order, pet, &[open], scope)
    }

    /// The write that ends an incomplete order's hold without completing it
    /// (a cancellation or a lapse): deletes it on `guards` and `scope`,
    /// returns its units to stock, and frees its place on its owner's count.
    pub(crate) fn ending_write(
        &self,
        stored: &StoredOrder,
        pet: &StoredPet,
        guards: &[Guard],
        scope: OrderScope,
    ) -> Result<Write<OrderCheck>, DbError> {
        let order = &stored.order;
        let stock = rules::cancel_order(pet.state(), order.quantity);
        let delete = Expr::new()
            .when_all(guards)
            .when_all(&rules::scope_guard(scope))
            .delete(self.table(), key(order.id))?;
        let mut write = Write::new()
            .checked(OrderCheck::OrderAsRead, delete)
            .checked(
                OrderCheck::PetAsRead,
                self.stock_write(order.pet_id, &stock)?,
            );
        if let Some(owner) = holds::counted(order, stored.owner_id) {
            write = write.unchecked(self.hold_change(owner, -1, None)?);
        }
        Ok(write)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_customers_list_queries_its_own_partition_and_filters_only_there() {
        let (me, pet) = (Id::clamped(7), Id::clamped(9));
        let filter = OrderFilter {
            pet_id: Some(pet),
            complete: Some(false),
        };
        let mine = filter.query(OrderScope::OwnedBy(me));
        assert_eq!(
            (mine.index, mine.partition.as_str()),
            ("GSI4", "ORDER#OWNER#7")
        );
        let mine = mine.filter.unwrap_or_default();
        assert_eq!(mine.expression, "petId = :pet AND complete = :complete");
        assert_eq!(mine.values.get(":pet"), Some(&n(9)));
        let unfiltered = OrderFilter::default().query(OrderScope::OwnedBy(me));
        assert_eq!(unfiltered.index, "GSI4");
        assert!(unfiltered.filter.is_none());

        let staff = filter.query(OrderScope::All);
        assert_eq!(
            (staff.index, staff.partition.as_str()),
            ("GSI3", "ORDER#PET#9")
        );
        let staff = staff.filter.unwrap_or_default();
        assert_eq!(staff.expression, "complete = :complete");
        assert_eq!(OrderFilter::default().query(OrderScope::All).index, "GSI1");
    }
}
