//! DynamoDB single-table access: items, keys and expressions, nothing else.
//!
//! One table, keys `PK` and `SK`, and five overloaded GSIs sorted by the
//! record's numeric `id`: four for the lists, so every list but the
//! inventory is in id order and a cursor is the last id returned; and the
//! inventory index, one entry per pet. Nothing on a request path scans the
//! table.
//!
//! | record | PK | SK | GSI1PK | GSI2PK | GSI3PK | GSI4PK | GSI5PK |
//! |---|---|---|---|---|---|---|---|
//! | pet | `PET#<id>` | `PET` | `PET#<s>` | `PET#STATUS#<status>#<s>` | `PET#CATEGORY#<categoryId>` | | |
//! | pet's stock (`stock`, `openOrders`, a copy of `status`) | `PET#<id>` | `STOCK` | | | | | `PET#<id>` |
//! | category | `CATEGORY#<id>` | `CATEGORY` | `CATEGORY#<s>` | | | | |
//! | category name claim | `CATEGORYNAME#<lowercased name>` | `CATEGORYNAME` | | | | | |
//! | order (+ `ownerId`) | `ORDER#<id>` | `ORDER` | `ORDER#<s>` | `ORDER#COMPLETE#<bool>#<s>` | `ORDER#PET#<petId>` | `ORDER#OWNER#<keyId>` | |
//! | API key | `APIKEY#<sha256 hex of the key>` | `APIKEY` | `APIKEY` | | | | |
//! | idempotency record | `IDEMPOTENCY#<keyId>#<sha256 hex of the key>` | `IDEMPOTENCY` | | | | | |
//!
//! `<s>` is a shard: a fixed hash of the id modulo the kind's shard count, so
//! the lists every order lands in are spread over several partitions and a
//! page merges them ([`shards`]). A second list filter is a filter expression
//! on the first one's query; the inventory lists scan the inventory index
//! (GSI5), a status being a filter there ([`inventory`]).
//!
//! Why the layout is this way:
//! - `stock`, `openOrders` and a copy of `status` live on the pet's stock
//!   item ([`pets::stock`]): every stock rule is a condition on one item, and
//!   an order writes no list entry of its pet's (the list indexes carry whole
//!   items, [`tables::INDEXES`]) unless the pet's status moves, when the pet
//!   item is written in the same transaction. So the pet lists need no
//!   shards for the orders' sake, and a pets page is one query. A pet written
//!   by release 1.0.0 holds its stock on its pet item (and its inventory
//!   entry) until migration 0001 moves it. A category keeps `petCount`, so
//!   "in use" is a condition, not a query.
//! - DynamoDB gives a partition key at most 1,000 write units a second, so no
//!   key takes a growing share of the writes: the all-orders lists are
//!   sharded, a customer's orders are its own partition, and one pet selling
//!   fast meets its own item's limit first (then 503 with `Retry-After`).
//!
//! Every change goes one way (`Changes::run` in `write.rs`): read, decide with
//! [`crate::rules`], and write one conditional item or one transaction whose
//! conditions are the decision's guards (turned into expressions in
//! `expr.rs`), each named by a [`Check`] that says what its failure means.
//! A change sent with an `Idempotency-Key` adds its record to that write
//! ([`idempotency`]).
//!
//! A call here may wait before it is sent, in the client under this layer:
//! while the rate-limit layer counts a request beside its handler, every
//! call the handler makes through a [`Db`] goes through that request's
//! gate ([`crate::sdk::gate`], a task-local around the handler's future):
//! only its first read goes out before the count admits the request, and a
//! refused request's handler is dropped with its calls unsent. Nothing here
//! sees the gate; a change's write is never sent before its request is
//! admitted.

mod batch;
pub mod categories;
mod error;
pub(crate) mod expr;
pub mod holds;
pub mod idempotency;
mod ids;
pub mod indexes;
pub mod inventory;
mod item;
pub mod layout;
pub mod migration;
pub mod orders;
mod page;
pub mod pets;
mod precondition;
pub mod query;
mod reshard;
mod shape;
pub mod shards;
pub mod stored;
pub mod tables;
pub(crate) mod write;

use crate::records::IfMatch;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use idempotency::Recording;
use std::ops::Deref;
use std::sync::Arc;

pub use error::{cause_chain, classify, BoxError, DbError, DbFailure};
pub use ids::new_id;
pub use item::Item;
pub use layout::Layout;
pub use page::Page;
pub use query::Cursor;
pub use shape::fields as record_fields;
pub use shards::Shards;
pub use write::{Check, Decided, OnFailure, Write, Written};
pub(crate) use write::{Pause, Retry};

pub(crate) use item::{from_item, n, s, to_item, to_value};

/// The data table.
#[derive(Clone, Debug)]
pub struct Db {
    client: Client,
    table: String,
    shards: Shards,
    /// How long an incomplete order holds its units (see [`holds`]).
    hold: chrono::Duration,
    /// The table's stored layout: the indexes its lists read ([`layout`]).
    layout: Layout,
}

impl Db {
    /// The table `table`, its lists sharded as [`Shards::default`].
    pub fn new(client: Client, table: impl Into<String>) -> Db {
        Db {
            client,
            table: table.into(),
            shards: Shards::default(),
            hold: chrono::Duration::days(i64::from(crate::rules::holds::DEFAULT_HOLD_DAYS)),
            layout: Layout::default(),
        }
    }

    /// This table, read as stored in `layout` (see [`layout`]).
    pub fn with_layout(self, layout: Layout) -> Db {
        Db { layout, ..self }
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Sets how long an incomplete order holds its units before it lapses.
    pub fn with_hold(self, hold: chrono::Duration) -> Db {
        Db { hold, ..self }
    }

    /// This table with its lists sharded as `shards` (see [`shards`]).
    pub fn with_shards(self, shards: Shards) -> Db {
        Db { shards, ..self }
    }

    /// How its lists are sharded, and a new webhook endpoint's deliveries.
    pub fn shards(&self) -> Shards {
        self.shards
    }

    /// The handle one request's change goes through, writing `recording`
    /// with it (one change per request, so one record).
    pub fn recording(&self, recording: Arc<Recording>) -> Changes {
        Changes {
            db: self.clone(),
            recording: Some(recording),
            precondition: None,
        }
    }

    /// A handle for changes that record nothing: requests without an
    /// `Idempotency-Key`, tools and tests.
    pub fn unrecorded(&self) -> Changes {
        Changes {
            db: self.clone(),
            recording: None,
            precondition: None,
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// Reads one item with a consistent read, since every decision is made from it.
    pub(crate) async fn get_item(&self, pk: String, sk: &str) -> Result<Option<Item>, DbError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("PK", AttributeValue::S(pk))
            .key("SK", AttributeValue::S(sk.to_string()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| classify(&self.table, e))?;
        Ok(out.item)
    }
}

/// The data table as a change uses it. Every changing method is on this type,
/// not on [`Db`], so a handler cannot make a change through the app's handle
/// and skip its request's idempotency record: it takes its `Changes` from the
/// request (`http::idempotency`), or says [`Db::unrecorded`].
#[derive(Clone, Debug)]
pub struct Changes {
    db: Db,
    /// Written with the change ([`Changes::run`]); see [`idempotency`].
    recording: Option<Arc<Recording>>,
    /// The request's `If-Match`, held in the change's own condition
    /// ([`precondition`]).
    precondition: Option<IfMatch>,
}

/// A change reads as any request does.
impl Deref for Changes {
    type Target = Db;
    fn deref(&self) -> &Db {
        &self.db
    }
}
