//! Holds (see [`crate::rules::holds`]): each key identity's count of the
//! incomplete orders it holds, and the sweep that lapses the due ones.
//!
//! | PK | SK | attributes |
//! |---|---|---|
//! | `HOLDS#<keyId>` | `HOLDS` | `openOrders` (number) |
//!
//! The counter is in no index and on a partition of its own key: placing,
//! completing, cancelling or lapsing an order moves it in the order's own
//! transaction, so a customer's cap is a condition there, exact under any
//! number of instances. An internal item: it announces nothing.
//!
//! The sweep finds due holds without reading the rest: ids grow with time, so
//! every order placed more than a hold ago is at the start of the open-orders
//! list (GSI2 `ORDER#COMPLETE#false#<s>`), and each shard is queried up to
//! the last id of that instant. When nothing is due that is one empty query a
//! shard. Each order found is read and lapsed on its own conditions.

use super::expr::Expr;
use super::ids::last_id_at;
use super::orders::{completion_list, owner_partition, OrderCheck};
use super::query::Projection;
use super::shards::Kind;
use super::write::Step;
use super::{classify, n, s, Changes, Db, DbError, Item};
use crate::records::{Id, OwnerScope};
use crate::rules::holds::{self, Lapse};
use crate::rules::Guard;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::LazyLock;

const SK: &str = "HOLDS";
const COUNT: &str = "openOrders";

fn key(owner: Id) -> Item {
    HashMap::from([
        ("PK".to_string(), s(format!("HOLDS#{owner}"))),
        ("SK".to_string(), s(SK)),
    ])
}

/// What one sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// Open orders placed more than a hold ago (each read once).
    pub examined: usize,
    /// Orders this sweep lapsed.
    pub lapsed: usize,
}

impl Db {
    /// The write that moves `owner`'s hold count by `delta`, on `guard`.
    pub(crate) fn hold_change(
        &self,
        owner: Id,
        delta: i64,
        guard: Option<&Guard>,
    ) -> Result<TransactWriteItem, DbError> {
        Expr::new()
            .when_all(guard)
            .add(COUNT, delta)
            .update(self.table(), key(owner))
    }

    /// The condition on `owner`'s count for a new hold under `cap`: on a
    /// table of layout 1 the room left by its uncounted open orders too
    /// ([`holds::cap_guard`]).
    pub(crate) async fn cap_guard(&self, owner: Id, cap: u32) -> Result<Guard, DbError> {
        let uncounted = match self.layout().has_uncounted_holds() {
            true => self.uncounted_holds(owner).await?,
            false => 0,
        };
        Ok(holds::cap_guard(cap, uncounted)?)
    }

    /// How many of `owner`'s open orders hold without being counted (placed
    /// before holds were, not yet backfilled): its incomplete orders from
    /// its list (GSI4, which projects `complete` in every layout), then
    /// those orders themselves, strongly consistent, for their `lapsesAt`,
    /// which layout 1's index lacks. Layout 1 only: a query and a batch read
    /// more per capped order while migration 0001 is under way.
    async fn uncounted_holds(&self, owner: Id) -> Result<u32, DbError> {
        let mut keys = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .client()
                .query()
                .table_name(self.table())
                .index_name(self.layout().index_of("GSI4"))
                .key_condition_expression("GSI4PK = :p")
                .filter_expression("#complete = :open")
                .expression_attribute_names("#complete", "complete")
                .expression_attribute_values(":p", s(owner_partition(owner)))
                .expression_attribute_values(":open", AttributeValue::Bool(false))
                .projection_expression("PK, SK")
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| classify(self.table(), e))?;
            keys.extend(out.items().iter().filter_map(table_key));
            start = out.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        if keys.is_empty() {
            return Ok(0);
        }
        let orders = self
            .batch_get_consistent("count uncounted holds", keys, Some(&HOLD_FIELDS))
            .await?;
        let open = AttributeValue::Bool(false);
        let uncounted = orders
            .iter()
            .filter(|order| order.get("complete") == Some(&open) && !order.contains_key("lapsesAt"))
            .count();
        Ok(u32::try_from(uncounted).unwrap_or(u32::MAX))
    }

    /// How many holds `owner` has now (a consistent read; for tests and the
    /// admin tool, never on a request's path).
    pub async fn open_holds(&self, owner: Id) -> Result<i64, DbError> {
        let item = self.get_item(format!("HOLDS#{owner}"), SK).await?;
        Ok(item
            .and_then(|item| item.get(COUNT).cloned())
            .and_then(|count| count.as_n().ok().and_then(|n| n.parse().ok()))
            .unwrap_or(0))
    }

    /// The ids of open orders placed at or before `placed_by`, oldest first,
    /// from every shard of the open-orders list.
    async fn open_orders_placed_by(&self, placed_by: DateTime<Utc>) -> Result<Vec<Id>, DbError> {
        let last = last_id_at(placed_by);
        let mut ids = Vec::new();
        // Highest shard first: while a lowered count is resharded, entries
        // move only downwards (from a draining shard to one below the
        // count), so each is read before it leaves or after it arrives.
        for partition in self
            .shards
            .keys(Kind::Order, &completion_list(false))
            .into_iter()
            .rev()
        {
            let mut start = None;
            loop {
                let out = self
                    .client()
                    .query()
                    .table_name(self.table())
                    .index_name(self.layout().index_of("GSI2"))
                    .key_condition_expression("GSI2PK = :p AND id <= :last")
                    .expression_attribute_values(":p", s(&partition))
                    .expression_attribute_values(":last", n(last))
                    .projection_expression("id")
                    .set_exclusive_start_key(start)
                    .send()
                    .await
                    .map_err(|e| classify(self.table(), e))?;
                for item in out.items() {
                    if let Some(id) = item.get("id").and_then(id_of) {
                        ids.push(id);
                    }
                }
                start = out.last_evaluated_key;
                if start.is_none() {
                    break;
                }
            }
        }
        Ok(ids)
    }
}

/// What decides whether an order's hold is counted.
static HOLD_FIELDS: LazyLock<Projection> =
    LazyLock::new(|| Projection::of_attributes(&["complete", "lapsesAt"]));

/// An item's table key (`PK`, `SK`), as an index query returns it.
fn table_key(item: &Item) -> Option<Item> {
    let key = ["PK", "SK"].map(|name| {
        item.get(name)
            .map(|value| (name.to_string(), value.clone()))
    });
    key.into_iter().collect()
}

fn id_of(value: &AttributeValue) -> Option<Id> {
    value
        .as_n()
        .ok()
        .and_then(|n| n.parse::<u64>().ok())
        .and_then(Id::new)
}

impl Changes {
    /// Lapses every hold due at `now` (see the module's note).
    pub async fn sweep_holds(&self, now: DateTime<Utc>) -> Result<Swept, DbError> {
        let candidates = self.open_orders_placed_by(now - self.hold).await?;
        let mut swept = Swept {
            examined: candidates.len(),
            lapsed: 0,
        };
        for id in candidates {
            if self.lapse_order(id, now).await? {
                swept.lapsed += 1;
            }
        }
        Ok(swept)
    }

    /// Lapses order `id` if its hold is due at `now`: marks it, then cancels
    /// it as a cancellation would. `true` when this call ended the hold.
    pub async fn lapse_order(&self, id: Id, now: DateTime<Utc>) -> Result<bool, DbError> {
        let marked = self
            .run("mark lapse", move || async move {
                let Some(stored) = self.stored_order(id).await? else {
                    return Ok(Step::Answer(false));
                };
                match holds::lapse(&stored.order, stored.lapsing, now) {
                    Lapse::Keep => Ok(Step::Answer(false)),
                    Lapse::Cancel => Ok(Step::Answer(true)),
                    Lapse::Mark(guard) => {
                        let mark = Expr::new()
                            .when(&guard)
                            .set("lapsing", AttributeValue::Bool(true))
                            .update(self.table(), super::orders::key(id))?;
                        let write = super::Write::new().checked(OrderCheck::OrderAsRead, mark);
                        Ok(Step::Write(write, true))
                    }
                }
            })
            .await?;
        if !marked {
            return Ok(false);
        }
        self.run("lapse order", move || async move {
            // Gone: the lapse this mark began was finished by another sweep.
            let Some(stored) = self.stored_order(id).await? else {
                return Ok(Step::Answer(false));
            };
            if !stored.lapsing {
                return Ok(Step::Answer(false));
            }
            let pet = self.existing_pet(stored.order.pet_id).await?;
            let guards = [Guard::Lapsing, Guard::OrderIncomplete];
            let write = self.ending_write(&stored, &pet, &guards, OwnerScope::All)?;
            Ok(Step::Write(write, true))
        })
        .await
    }
}
