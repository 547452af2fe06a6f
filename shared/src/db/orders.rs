//! Order items, and the transactions that move stock with them.
//!
//! Placing, completing and cancelling an order each write the order and its
//! pet in one transaction. The pet update is conditioned on exactly what its
//! plan depended on (see [`crate::rules`]), written so that concurrent orders
//! of a well-stocked pet do not invalidate each other: a plan that leaves stock
//! above zero only needs `stock > :quantity`, and just the order that takes
//! the last units pins `stock = :quantity` to make the pet pending.

use super::pets::{self, status_partition, StoredPet};
use super::query::{IndexQuery, Projection};
use super::{
    backoff, from_item, n, new_id, s, to_item, too_contended, Db, DbError, Page, TransactOutcome,
    MAX_ATTEMPTS,
};
use crate::records::{Id, NewOrder, Order, OrderPatch};
use crate::rules::{self, RuleViolation};
use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, TransactWriteItem, Update};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use std::collections::HashMap;

const SK: &str = "ORDER";

fn key(id: Id) -> HashMap<String, AttributeValue> {
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

/// The pet side of an order transaction: an update and its condition.
struct PetChange {
    set: Vec<&'static str>,
    condition: Vec<&'static str>,
    values: HashMap<String, AttributeValue>,
}

impl PetChange {
    fn new() -> PetChange {
        PetChange {
            set: Vec::new(),
            condition: vec!["attribute_exists(PK)"],
            values: HashMap::new(),
        }
    }

    fn value(mut self, name: &str, value: AttributeValue) -> PetChange {
        self.values.insert(name.to_string(), value);
        self
    }

    fn set(mut self, clause: &'static str) -> PetChange {
        self.set.push(clause);
        self
    }

    fn when(mut self, clause: &'static str) -> PetChange {
        self.condition.push(clause);
        self
    }

    /// Moves the pet to `status`, keeping its status index in step.
    fn status(self, status: crate::records::PetStatus) -> PetChange {
        self.set("#status = :new_status")
            .set("GSI2PK = :new_gsi2")
            .value(":new_status", s(status.as_str()))
            .value(":new_gsi2", s(status_partition(status)))
    }

    fn build(self, store: &Db, pet: Id) -> Result<TransactWriteItem, DbError> {
        let update_expression = format!("SET {}", self.set.join(", "));
        let condition_expression = self.condition.join(" AND ");
        // DynamoDB refuses a name placeholder that no expression uses.
        let names_status =
            update_expression.contains("#status") || condition_expression.contains("#status");
        let update = Update::builder()
            .table_name(store.table())
            .set_key(Some(pets::key(pet)))
            .update_expression(update_expression)
            .condition_expression(condition_expression)
            .set_expression_attribute_names(
                names_status
                    .then(|| HashMap::from([("#status".to_string(), "status".to_string())])),
            )
            .set_expression_attribute_values(Some(self.values))
            .build()
            .map_err(DbError::internal)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }
}

impl Db {
    /// Stores an order and takes its units from stock, in one transaction.
    pub async fn place_order(&self, new: NewOrder, now: DateTime<Utc>) -> Result<Order, DbError> {
        let quantity = new.quantity.get();
        for attempt in 0..MAX_ATTEMPTS {
            let pet: StoredPet = self
                .get_pet(new.pet_id)
                .await?
                .ok_or_else(|| DbError::unknown_reference("petId", new.pet_id))?;
            let planned = rules::place_order(pet.state(), quantity)?;
            let order = Order {
                id: new_id(now),
                pet_id: new.pet_id,
                quantity: new.quantity,
                ship_date: new.ship_date,
                complete: false,
            };
            let put = Put::builder()
                .table_name(self.table())
                .set_item(Some(to_item(&OrderItem {
                    pk: format!("ORDER#{}", order.id),
                    sk: SK,
                    gsi1: "ORDER",
                    gsi2: completion_partition(false),
                    gsi3: pet_partition(order.pet_id),
                    order: &order,
                })?))
                .condition_expression("attribute_not_exists(PK)")
                .build()
                .map_err(DbError::internal)?;
            let change = PetChange::new()
                .set("openOrders = openOrders + :one")
                .value(":one", n(1))
                .value(":quantity", n(quantity))
                .value(":available", s("available"))
                .when("#status = :available");
            let change = if planned.stock == 0 {
                change
                    .set("stock = :zero")
                    .value(":zero", n(0))
                    .when("stock = :quantity")
                    .status(planned.status)
            } else {
                change
                    .set("stock = stock - :quantity")
                    .when("stock > :quantity")
            };
            let items = vec![
                TransactWriteItem::builder().put(put).build(),
                change.build(self, new.pet_id)?,
            ];
            match self.transact(items).await? {
                TransactOutcome::Done => return Ok(order),
                // The pet changed since it was read (or the id collided): plan again.
                TransactOutcome::ConditionFailed(_) => {}
                TransactOutcome::Conflict => backoff(attempt).await,
            }
        }
        Err(too_contended("place order"))
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

    /// Completes an order and/or sets its ship date.
    ///
    /// Completing sets `shipDate` to now when it has none, and sells the pet
    /// when this was its last open order and no stock is left.
    pub async fn update_order(
        &self,
        id: Id,
        patch: OrderPatch,
        now: DateTime<Utc>,
    ) -> Result<Order, DbError> {
        for attempt in 0..MAX_ATTEMPTS {
            let order = self.existing_order(id).await?;
            if order.complete {
                if patch.complete.is_none() && patch.ship_date.is_none() {
                    return Ok(order);
                }
                return Err(RuleViolation::OrderComplete.into());
            }
            let completing = patch.complete == Some(true);
            let ship_date = patch.ship_date.or(order.ship_date);
            let ship_date = if completing {
                Some(ship_date.unwrap_or(now))
            } else {
                ship_date
            };
            let updated = Order {
                complete: completing,
                ship_date,
                ..order.clone()
            };
            if updated == order {
                return Ok(order);
            }
            let mut update = Update::builder()
                .table_name(self.table())
                .set_key(Some(key(id)))
                .condition_expression("complete = :false")
                .expression_attribute_values(":false", AttributeValue::Bool(false));
            let mut set = Vec::new();
            if let Some(ship_date) = ship_date {
                set.push("shipDate = :ship_date");
                update = update.expression_attribute_values(":ship_date", timestamp(ship_date));
            }
            if completing {
                set.push("complete = :true");
                set.push("GSI2PK = :gsi2");
                update = update
                    .expression_attribute_values(":true", AttributeValue::Bool(true))
                    .expression_attribute_values(":gsi2", s(completion_partition(true)));
            }
            let update = update
                .update_expression(format!("SET {}", set.join(", ")))
                .build()
                .map_err(DbError::internal)?;
            let mut items = vec![TransactWriteItem::builder().update(update).build()];
            if completing {
                let pet = self.existing_pet(order.pet_id).await?;
                let planned = rules::complete_order(pet.state());
                let change = PetChange::new()
                    .set("openOrders = openOrders - :one")
                    .value(":one", n(1))
                    .value(":zero", n(0));
                // The pet is sold exactly when, at write time, no stock is left
                // and this is its only open order; each branch pins that fact.
                let change = if planned.status != pet.pet.status {
                    change
                        .when("stock = :zero AND openOrders = :one")
                        .status(planned.status)
                } else {
                    change.when("NOT (stock = :zero AND openOrders = :one)")
                };
                items.push(change.build(self, order.pet_id)?);
            }
            match self.transact(items).await? {
                TransactOutcome::Done => return Ok(updated),
                TransactOutcome::ConditionFailed(_) => {}
                TransactOutcome::Conflict => backoff(attempt).await,
            }
        }
        Err(too_contended("update order"))
    }

    /// Cancels an incomplete order: deletes it and returns its units to stock.
    pub async fn cancel_order(&self, id: Id) -> Result<(), DbError> {
        for attempt in 0..MAX_ATTEMPTS {
            let order = self.existing_order(id).await?;
            if order.complete {
                return Err(RuleViolation::OrderComplete.into());
            }
            let quantity = order.quantity.get();
            let pet = self.existing_pet(order.pet_id).await?;
            let planned = rules::cancel_order(pet.state(), quantity);
            let delete = Delete::builder()
                .table_name(self.table())
                .set_key(Some(key(id)))
                .condition_expression("complete = :false")
                .expression_attribute_values(":false", AttributeValue::Bool(false))
                .build()
                .map_err(DbError::internal)?;
            let change = PetChange::new()
                .set("stock = stock + :quantity")
                .set("openOrders = openOrders - :one")
                .value(":quantity", n(quantity))
                .value(":one", n(1))
                .value(":pending", s("pending"));
            let change = if planned.status != pet.pet.status {
                change.when("#status = :pending").status(planned.status)
            } else {
                change.when("#status <> :pending")
            };
            let items = vec![
                TransactWriteItem::builder().delete(delete).build(),
                change.build(self, order.pet_id)?,
            ];
            match self.transact(items).await? {
                TransactOutcome::Done => return Ok(()),
                TransactOutcome::ConditionFailed(_) => {}
                TransactOutcome::Conflict => backoff(attempt).await,
            }
        }
        Err(too_contended("cancel order"))
    }
}
