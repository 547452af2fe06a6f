//! An order's writes: placing, completing and cancelling, each with its
//! pet's stock (and its owner's hold count) in one transaction.

use super::{
    completion_list, key, owner_partition, pet_partition, pk, OrderItem, StoredOrder, ALL, SK,
};
use crate::db::expr::Expr;
use crate::db::pets::StoredPet;
use crate::db::shards::Kind;
use crate::db::write::{Check, OnFailure, Step, Write};
use crate::db::{new_id, s, to_item, Changes, Db, DbError};
use crate::records::{Id, NewOrder, Order, OrderPatch, OwnerScope};
use crate::rules::{self, holds, Guard, OrderDecision, RuleViolation};
use aws_sdk_dynamodb::types::TransactWriteItem;
use chrono::{DateTime, Utc};

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
            let lapses_at = holds::lapses_at(now, new.ship_date, self.hold);
            let order = new.clone().into_order(new_id(now), lapses_at);
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
                .checked_each(OrderCheck::PetAsRead, self.stock_write(&pet, &decision)?);
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

impl Changes {
    /// Completes an order and/or sets its ship date (see [`rules::patch_order`]).
    /// Completing also moves the pet's stock state (see [`rules::complete_order`]).
    pub async fn update_order(
        &self,
        id: Id,
        patch: OrderPatch,
        scope: OwnerScope,
        now: DateTime<Utc>,
    ) -> Result<Order, DbError> {
        let patch = &patch;
        self.run("update order", move || async move {
            let stored = self.existing_order(id, scope).await?;
            self.check_precondition("order", id, &stored.order)?;
            let order = &stored.order;
            let Some(mut decision) = rules::patch_order(order, patch, now)? else {
                return Ok(Step::Answer(stored.order));
            };
            holds::after_patch(&mut decision.updated, self.hold);
            let mut write = Write::new().checked(
                OrderCheck::OrderAsRead,
                self.order_update(self.as_read(Expr::new(), order)?, &decision, scope)?,
            );
            if decision.completes() {
                let pet = self.existing_pet(order.pet_id).await?;
                let stock = rules::complete_order(pet.state());
                write = write.checked_each(OrderCheck::PetAsRead, self.stock_write(&pet, &stock)?);
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
        expr: Expr,
        decision: &OrderDecision,
        scope: OwnerScope,
    ) -> Result<TransactWriteItem, DbError> {
        let order = &decision.updated;
        let mut expr = expr
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
    pub async fn cancel_order(&self, id: Id, scope: OwnerScope) -> Result<(), DbError> {
        self.run("cancel order", move || async move {
            let order = self.existing_order(id, scope).await?;
            self.check_precondition("order", id, &order.order)?;
            // Refused before the pet is read: a complete order costs one read.
            let open = rules::open_order(&order.order)?;
            let pet = self.existing_pet(order.order.pet_id).await?;
            let held = self.as_read(Expr::new(), &order.order)?;
            Ok(Step::Write(
                self.ending_write_on(held, &order, &pet, &[open], scope)?,
                (),
            ))
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
        scope: OwnerScope,
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
        scope: OwnerScope,
    ) -> Result<Write<OrderCheck>, DbError> {
        self.ending_write_on(Expr::new(), stored, pet, guards, scope)
    }

    /// As [`Db::ending_write`], the order's delete starting from `expr` (the
    /// record as read, under `If-Match`).
    fn ending_write_on(
        &self,
        expr: Expr,
        stored: &StoredOrder,
        pet: &StoredPet,
        guards: &[Guard],
        scope: OwnerScope,
    ) -> Result<Write<OrderCheck>, DbError> {
        let order = &stored.order;
        let stock = rules::cancel_order(pet.state(), order.quantity);
        let delete = expr
            .when_all(guards)
            .when_all(&rules::scope_guard(scope))
            .delete(self.table(), key(order.id))?;
        let mut write = Write::new()
            .checked(OrderCheck::OrderAsRead, delete)
            .checked_each(OrderCheck::PetAsRead, self.stock_write(pet, &stock)?);
        if let Some(owner) = holds::counted(order, stored.owner_id) {
            write = write.unchecked(self.hold_change(owner, -1, None)?);
        }
        Ok(write)
    }
}
