//! DynamoDB single-table access: items, keys and expressions, nothing else.
//!
//! # Layout
//!
//! One table, keys `PK` and `SK` (strings), four overloaded GSIs whose sort
//! key is the record's numeric `id`, so every list is in id order and a
//! cursor is just the last id returned:
//!
//! | record | PK | SK | GSI1PK | GSI2PK | GSI3PK | GSI4PK |
//! |---|---|---|---|---|---|---|
//! | pet (+ its stock) | `PET#<id>` | `PET` | `PET#<s>` | `PET#STATUS#<status>#<s>` | `PET#CATEGORY#<categoryId>` | |
//! | category | `CATEGORY#<id>` | `CATEGORY` | `CATEGORY#<s>` | | | |
//! | category name guard | `CATEGORYNAME#<lowercased name>` | `CATEGORYNAME` | | | | |
//! | order (+ `ownerId`) | `ORDER#<id>` | `ORDER` | `ORDER#<s>` | `ORDER#COMPLETE#<bool>#<s>` | `ORDER#PET#<petId>` | `ORDER#OWNER#<keyId>` |
//! | API key | `APIKEY#<sha256 hex of the key>` | `APIKEY` | `APIKEY` | | | |
//! | idempotency record | `IDEMPOTENCY#<keyId>#<sha256 hex of the Idempotency-Key>` | `IDEMPOTENCY` | | | | |
//!
//! `<s>` is the record's shard: a fixed hash of its id modulo its kind's shard
//! count (configuration; pets 4, orders 32, categories 1 by default), so
//! the lists of all of a kind, and by status, are spread over that many
//! partitions and a page merges them ([`shards`]). API keys stay one
//! partition: only the admin tool writes them.
//!
//! Access patterns: get/put/delete by id on the table; list all of a kind on
//! GSI1; pets by status and orders by completion on GSI2; pets by category and
//! orders by pet on GSI3 (with the other filter, when both are given, as a
//! filter expression on that query); a customer's own orders on GSI4 (its
//! `petId`/`complete` filters as a filter expression on its own partition); an
//! API key by the hash of the key sent (see [`crate::ratelimit::keys`]); the
//! inventory list as a page of pet ids from GSI1 or GSI2, then one batch read
//! of their stock from the table ([`inventory`]); an idempotency record by its
//! key identity and key (see [`idempotency`]).
//! Nothing on a request path scans. Rate-limit counters live in a table of
//! their own ([`crate::ratelimit::counter`]).
//!
//! A pet's inventory entry is not a separate item: `stock` and `openOrders`
//! live on the pet item, so every stock rule is a condition on one item, and
//! deleting the pet removes its inventory entry. A category keeps `petCount`,
//! so "in use" is a condition, not a query.
//!
//! # Partitions
//!
//! DynamoDB gives one partition key at most 1,000 write and 3,000 read units
//! a second, and an index partition that falls behind throttles the table's
//! writes. So no partition key takes a growing share of the writes: what
//! changes on every order (`stock`, `openOrders`) is in no index
//! ([`tables::INDEXES`]), so an order writes its pet's item and its own
//! item and index entries only; the lists every order is in are sharded; a
//! customer's orders are that customer's partition; and a pet's own item
//! takes twice the units of its orders' GSI3 partition, so it is the first
//! to reach a limit when one pet sells fast (a flash sale: about 500 orders a
//! second, past which the answer is 503 with `Retry-After`). An index keyed
//! by category takes a write only when a pet is created, changed or moves
//! status. A page of a sharded list costs one query per shard.

//! # Concurrency
//!
//! Every change goes one way (`write.rs`): read, plan with [`crate::rules`],
//! and write one conditional item or one transaction whose conditions are the
//! plan's guards, each named ([`PetCheck`](pets::PetCheck),
//! [`CategoryCheck`](categories::CategoryCheck),
//! [`OrderCheck`](orders::OrderCheck)) with what its failure means: plan again
//! from a fresh read, or a particular error. Guards become expressions in one
//! place (`expr.rs`). One retry policy serves every operation, batch reads
//! included: a failed condition plans again at once, a conflict (or work
//! DynamoDB left undone) after a jittered, growing pause, and after eight
//! attempts the answer is [`DbError::Contended`]. A change sent with an
//! `Idempotency-Key` adds its record to that same write ([`idempotency`]).

mod batch;
pub mod categories;
mod error;
mod expr;
pub mod idempotency;
mod ids;
pub mod inventory;
mod item;
pub mod orders;
pub mod pets;
pub mod query;
pub mod shards;
pub mod stored;
pub mod tables;
mod write;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use idempotency::Recording;
use std::sync::Arc;

pub use error::{BoxError, DbError};
pub use ids::new_id;
pub use item::Item;
pub use query::{Cursor, Page};
pub use shards::Shards;
pub use write::{Check, OnFailure, Write, Written};
pub(crate) use write::{Pause, Retry};

pub(crate) use error::classify;
pub(crate) use item::{from_item, n, s, to_item};

/// The data table.
#[derive(Clone, Debug)]
pub struct Db {
    client: Client,
    table: String,
    shards: Shards,
    /// The idempotency record of the request this handle serves, written with
    /// its change (see [`idempotency`]); `None` on the app's own handle.
    recording: Option<Arc<Recording>>,
}

impl Db {
    /// The table `table`, its lists sharded as [`Shards::default`].
    pub fn new(client: Client, table: impl Into<String>) -> Db {
        Db {
            client,
            table: table.into(),
            shards: Shards::default(),
            recording: None,
        }
    }

    /// This table with its lists sharded as `shards` (see [`shards`]).
    pub fn with_shards(self, shards: Shards) -> Db {
        Db { shards, ..self }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// Reads one item with a consistent read, since every plan is made from it.
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
            .map_err(classify)?;
        Ok(out.item)
    }
}
