//! Order items, and the transactions that move stock with them.
//!
//! Placing, completing and cancelling an order each write the order and its
//! pet in one transaction: the order on the condition that it is as read, the
//! pet on the guards of its stock plan (see [`crate::rules`]).

use super::expr::Expr;
use super::pets::StoredPet;
use super::query::{IndexQuery, Projection};
use super::write::{Check, OnFailure, Step, Write};
use super::{from_item, new_id, s, to_item, Db, DbError, Item, Page};
use crate::records::{Id, NewOrder, Order, OrderPatch};
use crate::rules::{self, OrderPlan};
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use std::collections::HashMap;

const SK: &str = "ORDER";

fn key(id: Id) -> Item {
    HashMap::from([
        ("PK".to_string(), s(format!("ORDER#{id}"))),
        ("SK".to_string(), s(SK)),
    ])
}

fn completion_partition(complete: bool) -> String {
    format!("ORDER#COMPLETE#{complete}")
}

fn pet_partition(pet: Id) -> String {
    format!("ORDER#PET#{pet}")
}

fn timestamp(t: DateTime<Utc>) -> AttributeValue {
    s(t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

#[derive(Serialize)]
struct OrderItem<'a> {
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
    order: &'a Order,
}

/// Which orders a list asks for.
#[derive(Debug, Clone, Copy, Default)]
pub struct OrderFilter {
    pub pet_id: Option<Id>,
    pub complete: Option<bool>,
}

/// The conditions of an order's writes. Each failure plans again from a
/// fresh read, which finds what changed: the pet's stock state, or the order
/// completed or gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderCheck {
    /// A new order's id is not taken (ids are random in their low bits).
    IdFree,
    /// The order is still as the plan read it.
    OrderAsPlanned,
    /// The order's pet is still as the plan read it.
    PetAsPlanned,
}

impl Check for OrderCheck {
    fn on_failure(self) -> OnFailure {
        OnFailure::Replan
    }
}

impl Db {
    /// Stores an order and takes its units from stock, in one transaction.
    pub async fn place_order(&self, new: NewOrder, now: DateTime<Utc>) -> Result<Order, DbError> {
        let new = &new;
        self.run("place order", move || async move {
            let pet: StoredPet = self
                .get_pet(new.pet_id)
                .await?
                .ok_or_else(|| DbError::unknown_reference("petId", new.pet_id))?;
            let plan = rules::place_order(pet.state(), new.quantity)?;
            let order = Order {
                id: new_id(now),
                pet_id: new.pet_id,
                quantity: new.quantity,
                ship_date: new.ship_date,
                complete: false,
            };
            let item = to_item(&OrderItem {
                pk: format!("ORDER#{}", order.id),
                sk: SK,
                gsi1: "ORDER",
                gsi2: completion_partition(false),
                gsi3: pet_partition(order.pet_id),
                order: &order,
            })?;
            let write = Write::new()
                .checked(
                    OrderCheck::IdFree,
                    Expr::new().absent().put(self.table(), item)?,
                )
                .checked(
                    OrderCheck::PetAsPlanned,
                    self.stock_write(new.pet_id, &plan)?,
                );
            Ok(Step::Write(write, order))
        })
        .await
    }

    pub async fn get_order(&self, id: Id) -> Result<Option<Order>, DbError> {
        self.get_item(format!("ORDER#{id}"), SK)
            .await?
            .map(from_item)
            .transpose()
    }

    async fn existing_order(&self, id: Id) -> Result<Order, DbError> {
        self.get_order(id)
            .await?
            .ok_or_else(|| DbError::not_found("order", id))
    }

    /// Lists orders, newest first.
    pub async fn list_orders(
        &self,
        filter: OrderFilter,
        limit: usize,
        after: Option<u64>,
    ) -> Result<Page<Order>, DbError> {
        let complete_filter = |complete: bool| {
            (
                "complete = :complete",
                HashMap::new(),
                HashMap::from([(":complete".to_string(), AttributeValue::Bool(complete))]),
            )
        };
        let (index, partition, filter) = match (filter.pet_id, filter.complete) {
            (Some(pet), complete) => ("GSI3", pet_partition(pet), complete.map(complete_filter)),
            (None, Some(complete)) => ("GSI2", completion_partition(complete), None),
            (None, None) => ("GSI1", "ORDER".to_string(), None),
        };
        let query = IndexQuery {
            index,
            partition,
            descending: true,
            filter,
            projection: Projection {
                expression: "id, petId, quantity, shipDate, complete",
                names: &[],
            },
        };
        self.query_page(query, limit, after)
            .await?
            .try_map(from_item)
    }

    /// Completes an order and/or sets its ship date (see [`rules::patch_order`]).
    /// Completing also moves the pet's stock state (see [`rules::complete_order`]).
    pub async fn update_order(
        &self,
        id: Id,
        patch: OrderPatch,
        now: DateTime<Utc>,
    ) -> Result<Order, DbError> {
        let patch = &patch;
        self.run("update order", move || async move {
            let order = self.existing_order(id).await?;
            let Some(plan) = rules::patch_order(&order, patch, now)? else {
                return Ok(Step::Answer(order));
            };
            let mut write =
                Write::new().checked(OrderCheck::OrderAsPlanned, self.order_update(&plan)?);
            if plan.completes() {
                let pet = self.existing_pet(order.pet_id).await?;
                let stock = rules::complete_order(pet.state());
                write = write.checked(
                    OrderCheck::PetAsPlanned,
                    self.stock_write(order.pet_id, &stock)?,
                );
            }
            Ok(Step::Write(write, plan.updated))
        })
        .await
    }

    /// The order's side of a patch: its new fields, resting on the plan's guard.
    fn order_update(&self, plan: &OrderPlan) -> Result<TransactWriteItem, DbError> {
        let order = &plan.updated;
        let mut expr = Expr::new().when(&plan.guard);
        if let Some(ship_date) = order.ship_date {
            expr = expr.set("shipDate", timestamp(ship_date));
        }
        if order.complete {
            expr = expr
                .set("complete", AttributeValue::Bool(true))
                .set("GSI2PK", s(completion_partition(true)));
        }
        expr.update(self.table(), key(order.id))
    }

    /// Cancels an incomplete order: deletes it and returns its units to stock.
    pub async fn cancel_order(&self, id: Id) -> Result<(), DbError> {
        self.run("cancel order", move || async move {
            let order = self.existing_order(id).await?;
            // Refused before the pet is read: a complete order costs one read.
            rules::open_order(&order)?;
            let pet = self.existing_pet(order.pet_id).await?;
            Ok(Step::Write(self.plan_cancel(&order, &pet)?, ()))
        })
        .await
    }

    /// The write that cancels `order`, planned from it and its `pet` as read.
    pub fn plan_cancel(
        &self,
        order: &Order,
        pet: &StoredPet,
    ) -> Result<Write<OrderCheck>, DbError> {
        let open = rules::open_order(order)?;
        let stock = rules::cancel_order(pet.state(), order.quantity);
        let delete = Expr::new()
            .when(&open)
            .delete(self.table(), key(order.id))?;
        Ok(Write::new()
            .checked(OrderCheck::OrderAsPlanned, delete)
            .checked(
                OrderCheck::PetAsPlanned,
                self.stock_write(order.pet_id, &stock)?,
            ))
    }
}
