//! The item changes of migration 0001's backfills (`petstore-admin data
//! migrate`, docs/upgrade.md), one item at a time, each its own conditional
//! transaction, safe beside the service's writes and against a second run.
//!
//! - `holds`: an open order placed before holds were counted gets its
//!   `lapsesAt` and its place on its owner's hold count, together, on the
//!   condition that it is still open and uncounted. A cancel or completion
//!   decided from the order without `lapsesAt` rests on it being still
//!   uncounted ([`Guard::HoldCounted`], `rules::open_order`), so exactly
//!   one of the two moves the count.
//! - `name-claims`: a stored category name whose claim was made before names
//!   were compared under NFKC ([`Name::legacy_folded`]) gets its current
//!   claim ([`Name::folded`]) and loses the old one, while the category
//!   still has that name.
//! - `stock-items`: a pet whose item holds its stock (written by release
//!   1.0.0, or under layout 1) gets its stock item and the pet item loses
//!   its stock, together, on the condition that the pet is as read (see
//!   `pets::stock`). Every stock write reads which item holds the stock and
//!   rests on it still holding it, so none lands on the item it left.

use super::categories::{self, name_key, name_pk, NAME_SK};
use super::expr::Expr;
use super::orders::{self, StoredOrder};
use super::pets::stock;
use super::write::{Check, OnFailure, Step, Write};
use super::{n, s, Changes, DbError, Item};
use crate::records::{Id, Name};
use crate::rules::{holds, Guard};
use chrono::{DateTime, SecondsFormat, Utc};

/// What one backfilled item came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Backfilled {
    /// Changed by this call.
    Done,
    /// Nothing to do: done before, or not an item this backfill changes.
    Skipped,
    /// Cannot be done without a person: a category whose current claim is
    /// another category's (two names one under NFKC, both stored before).
    Conflict,
}

/// The only condition a backfill's write has: the item is as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AsRead {
    Item,
}

impl Check for AsRead {
    fn on_failure(self) -> OnFailure {
        OnFailure::ReadAgain
    }
}

impl Changes {
    /// Counts order `id`'s hold if it is open, owned and uncounted: its
    /// `lapsesAt` a hold from `now` (or from its `shipDate` when later;
    /// never in the past, so no old order lapses at the next sweep without
    /// notice) and its owner's count up by one, in one transaction. An order
    /// without an owner is left as the service leaves it (never counted).
    pub async fn backfill_hold(&self, id: Id, now: DateTime<Utc>) -> Result<Backfilled, DbError> {
        self.run("backfill hold", move || async move {
            let Some(stored) = self.stored_order(id).await? else {
                return Ok(Step::Answer(Backfilled::Skipped));
            };
            let StoredOrder {
                order,
                owner_id,
                lapsing,
            } = &stored;
            let Some(owner) = owner_id.filter(|_| !order.complete && order.lapses_at.is_none())
            else {
                return Ok(Step::Answer(Backfilled::Skipped));
            };
            if *lapsing {
                return Ok(Step::Answer(Backfilled::Skipped));
            }
            let lapses_at = holds::lapses_at(now, order.ship_date, self.hold);
            let guards = [
                Guard::OrderIncomplete,
                Guard::NotLapsing,
                Guard::HoldCounted.negated(),
                Guard::OwnedBy(owner),
            ];
            let at = lapses_at.to_rfc3339_opts(SecondsFormat::Millis, true);
            let update = Expr::new()
                .exists()
                .when_all(&guards)
                .set("lapsesAt", s(at))
                .update(self.table(), orders::key(id))?;
            let write = Write::new()
                .checked(AsRead::Item, update)
                .unchecked(self.hold_change(owner, 1, None)?);
            Ok(Step::Write(write, Backfilled::Done))
        })
        .await
    }

    /// Gives category `id`'s name its current claim if it has only its old
    /// one: puts the claim under [`Name::folded`] (absent, or this
    /// category's) and deletes the one under [`Name::legacy_folded`] (this
    /// category's), while the category has that name. A current claim held
    /// by another category is a [`Backfilled::Conflict`], left for a person.
    pub async fn backfill_name_claim(&self, id: Id) -> Result<Backfilled, DbError> {
        self.run("backfill name claim", move || async move {
            let Some(stored) = self.get_category(id).await? else {
                return Ok(Step::Answer(Backfilled::Skipped));
            };
            let name: &Name = &stored.category.name;
            let (folded, legacy) = (name.folded(), name.legacy_folded());
            let claimant = |item: Option<Item>| {
                item.and_then(|i| i.get("categoryId").and_then(|v| v.as_n().ok()).cloned())
            };
            let current = claimant(self.get_item(name_pk(&folded), NAME_SK).await?);
            let old = claimant(self.get_item(name_pk(&legacy), NAME_SK).await?);
            let mine = id.get().to_string();
            if folded == legacy || old.as_deref() != Some(mine.as_str()) {
                return Ok(Step::Answer(Backfilled::Skipped));
            }
            if current.as_deref().is_some_and(|holder| holder != mine) {
                return Ok(Step::Answer(Backfilled::Conflict));
            }
            let mut claim = name_key(&folded);
            claim.insert("categoryId".into(), n(id));
            let write = Write::new()
                .checked(
                    AsRead::Item,
                    Expr::new()
                        .exists()
                        .when(&Guard::NameIs(name.clone()))
                        .check(self.table(), categories::key(id))?,
                )
                .checked(
                    AsRead::Item,
                    Expr::new()
                        .absent_or_claimed_by(id)
                        .put(self.table(), claim)?,
                )
                .checked(
                    AsRead::Item,
                    Expr::new()
                        .when(&Guard::CategoryIs(id))
                        .delete(self.table(), name_key(&legacy))?,
                );
            Ok(Step::Write(write, Backfilled::Done))
        })
        .await
    }
}

impl Changes {
    /// Moves pet `id`'s stock to its stock item if its pet item still holds
    /// it ([`stock::moved_to_stock_item`]).
    pub async fn backfill_stock_item(&self, id: Id) -> Result<Backfilled, DbError> {
        self.run("backfill stock item", move || async move {
            let Some(pet) = self.get_pet(id).await? else {
                return Ok(Step::Answer(Backfilled::Skipped));
            };
            if pet.stock_item {
                return Ok(Step::Answer(Backfilled::Skipped));
            }
            let moved = stock::moved_to_stock_item(&pet, self.table())?;
            Ok(Step::Write(
                Write::new().checked_each(AsRead::Item, moved),
                Backfilled::Done,
            ))
        })
        .await
    }
}
