//! `data export` and `data import`: a stage's catalogue and orders, copied
//! into another stage's table as JSON lines (DynamoDB's own export format,
//! a line `{"Item": {...}}` per item).
//!
//! What is copied is the data the service serves: pets (with their stock and
//! open-order counts, on their stock items or, for pets written before stock
//! items, on their pet items: each copied as it is), categories, their name claims, and orders. What is a
//! stage's own is not ([`copied`]): API keys (a production key must never
//! open a development stage), idempotency records (answers to another
//! stage's callers, expiring within a day), webhooks (endpoints belong to
//! keys, and hold signing secrets), and the rate-limit table (its counters
//! and bans are another table, never read). An import writes each
//! item under the target's shard counts (an index key's shard is recomputed:
//! stages may shard their lists differently), only into a table holding
//! none of the copied kinds, each put conditional on its key being free.

use crate::check::item::{text, Kind};
use crate::dynamo_json::{item_from_json, item_to_json};
use crate::scan::{scan_pages, BoxError, ScanOptions};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use futures::stream::{self, StreamExt, TryStreamExt};
use petstore::db::shards::{shard_of, Kind as Listed, Shards};
use petstore::db::{DbFailure, Item};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::{BufRead, Write};

/// Whether items of `kind` are copied from one stage to another.
///
/// No webhook item is. An endpoint belongs to the API key that registered
/// it, and keys are never copied: in the target it would be owned by no
/// key, counted against no cap, and would call a production receiver with
/// the target's events. Its signing secrets must never leave their stage:
/// whoever reads the copy could sign as the service. Its owner's count stays
/// with the endpoints it counts. Deliveries and slots are the stage's own
/// work (what its queue attempted, its leases in flight), and name
/// endpoints the target does not have.
pub fn copied(kind: Kind) -> bool {
    match kind {
        // A pet's stock item goes with its pet item.
        Kind::Pet | Kind::Stock | Kind::Order | Kind::Category | Kind::NameClaim => true,
        // A key's hold count goes with the orders it counts.
        Kind::Holds => true,
        // A backfill's progress is its own table's (the other runs its own,
        // which finds nothing left to do).
        Kind::ApiKey | Kind::Idempotency | Kind::Migration | Kind::Unknown => false,
        Kind::WebhookEndpoint
        | Kind::WebhookCount
        | Kind::WebhookDelivery
        | Kind::DeliverySlot
        | Kind::WebhookSubscriptions => false,
    }
}

/// How many items a copy wrote, and how many of each kind it left out.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Copied {
    pub items: u64,
    /// By the kind's SK, up to its first `#` (`DELIVERY`, not one line per
    /// event: `DELIVERY#<eventId>`).
    pub left_out: BTreeMap<String, u64>,
}

impl Copied {
    fn leave_out(&mut self, item: &Item) {
        let sk = text(item, "SK").unwrap_or("?");
        let kind = sk.split('#').next().unwrap_or(sk).to_string();
        *self.left_out.entry(kind).or_default() += 1;
    }

    pub fn summary(&self) -> serde_json::Value {
        json!({ "items": self.items, "leftOut": self.left_out })
    }
}

fn kind_of(item: &Item) -> Kind {
    Kind::of_sk(text(item, "SK").unwrap_or_default())
}

/// Writes every copied item of `table` to `out`, a JSON line each.
pub async fn export(
    client: &Client,
    table: &str,
    scan: ScanOptions,
    out: &mut impl Write,
) -> Result<Copied, BoxError> {
    let mut copy = Copied::default();
    let mut pages = scan_pages(client, table, scan);
    while let Some(page) = pages.recv().await {
        for item in page? {
            if !copied(kind_of(&item)) {
                copy.leave_out(&item);
                continue;
            }
            writeln!(out, "{}", json!({ "Item": item_to_json(&item)? }))?;
            copy.items += 1;
        }
    }
    out.flush()?;
    Ok(copy)
}

/// Puts into `table` every copied item of the JSON lines `lines`, its list
/// keys sharded as `shards` say, `parallel` puts at a time. Refuses a table
/// that holds a pet, order, category or name claim already: merging two
/// stages' data could break name uniqueness and the counts.
pub async fn import(
    client: &Client,
    table: &str,
    shards: Shards,
    lines: impl BufRead,
    parallel: usize,
) -> Result<Copied, BoxError> {
    if let Some(pk) = a_copied_item(client, table).await? {
        return Err(
            format!("{table} holds data already ({pk}): import into an empty table").into(),
        );
    }
    let mut copy = Copied::default();
    let mut items = Vec::new();
    for (number, line) in lines.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| format!("line {}: {e}", number + 1))?;
        let item =
            item_from_json(&parsed["Item"]).map_err(|e| format!("line {}: {e}", number + 1))?;
        match copied(kind_of(&item)) {
            true => items.push(resharded(item, shards)),
            false => copy.leave_out(&item),
        }
    }
    copy.items = items.len() as u64;
    stream::iter(items.into_iter().map(|item| put_new(client, table, item)))
        .buffer_unordered(parallel.max(1))
        .try_for_each(|()| async { Ok(()) })
        .await?;
    Ok(copy)
}

/// The first item of a copied kind in `table`, if any.
async fn a_copied_item(client: &Client, table: &str) -> Result<Option<String>, BoxError> {
    let mut start = None;
    loop {
        let out = client
            .scan()
            .table_name(table)
            .projection_expression("PK, SK")
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| DbFailure::of(table, &e).to_string())?;
        for item in out.items.unwrap_or_default() {
            if copied(kind_of(&item)) {
                return Ok(text(&item, "PK").map(str::to_string));
            }
        }
        start = out.last_evaluated_key;
        if start.is_none() {
            return Ok(None);
        }
    }
}

/// Puts `item` on the condition that its key is free.
async fn put_new(client: &Client, table: &str, item: Item) -> Result<(), BoxError> {
    let pk = text(&item, "PK").unwrap_or_default().to_string();
    client
        .put_item()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression("attribute_not_exists(PK)")
        .send()
        .await
        .map_err(|e| format!("{pk}: {}", DbFailure::of(table, &e)))?;
    Ok(())
}

/// `item` with its sharded list keys (GSI1PK, GSI2PK of pets, orders and
/// categories) under `shards`' counts: the list is the key before its last
/// `#`, the shard is recomputed from the id. Every other key is kept: a
/// stock item's (and an old pet item's) inventory entry, `GSI5PK = PK`, is
/// not sharded.
pub fn resharded(mut item: Item, shards: Shards) -> Item {
    let listed = match kind_of(&item) {
        Kind::Pet => Listed::Pet,
        Kind::Order => Listed::Order,
        Kind::Category => Listed::Category,
        _ => return item,
    };
    let Some(id) = crate::check::item::whole(&item, "id").non_negative() else {
        return item;
    };
    let shard = shard_of(id, shards.count(listed));
    for name in ["GSI1PK", "GSI2PK"] {
        let list = text(&item, name)
            .and_then(|key| key.rsplit_once('#'))
            .map(|(list, _)| list.to_string());
        if let Some(list) = list {
            item.insert(
                name.to_string(),
                AttributeValue::S(format!("{list}#{shard}")),
            );
        }
    }
    item
}
