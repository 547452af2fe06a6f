//! Delivery items: one per (endpoint, event), made by the first receipt of
//! a fan-out's message (or by a ping), attempted by the delivery handler,
//! listed newest first.
//!
//! | PK | SK | attributes |
//! |---|---|---|
//! | `WEBHOOK#<webhookId>#<shard>` | `DELIVERY#<eventId>` | `webhookId`, `eventId`, `type`, `body`, `state`, `attempts`, `attemptCount`, `scheduleStep`, `nextAttemptAt`, `createdAt`, `expiresAt`, `claims` (attempts claimed before they are sent: `s<step>` a scheduled one, `m<message>` one by hand), `scheduleClaim` (the name of the schedule's) |
//!
//! Deliveries are in no index. Every change of an indexed item rewrites its
//! index entry, and a delivery changes at every attempt: listed on an index
//! it would cost 4 writes at its first attempt (made and attempted, each on
//! the table and the index) where 2 are the record itself. So the list is
//! the base table's own order: an `eventId` begins with the event's time
//! (11 hex digits of Unix milliseconds, `events::event_id` and the ping's),
//! so a partition's sort keys run oldest to newest and a query read
//! backwards is newest first; and the key is the event's, so the
//! conditional put makes one delivery per event however often it is
//! fanned out.
//!
//! An endpoint's deliveries spread over `deliveryShards` partitions (the
//! count it was registered with, [`Kind::Delivery`]), the event's shard a
//! fixed hash of its id ([`shard_of_event`]): one partition takes about
//! 1,000 writes a second, 500 deliveries, and a staff endpoint takes every
//! event. A page of the list merges them as the sharded index lists do
//! ([`crate::db::shards::merge`]).

use super::records::WebhookDelivery;
use crate::db::shards::{
    first_round_entries, merge, next_round, shard_of, PartitionRead, Position,
};
use crate::db::{classify, s, Db, DbError, Item, Page};
use crate::records::Id;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};
pub use create::{create, Created, DeliveryCheck, NewDelivery, Start};
use shown::shown;
pub use shown::{IN_PROGRESS, KEPT_ATTEMPTS};
use std::collections::HashMap;

/// The sort keys' common start: a delivery partition holds nothing else.
const SORT_PREFIX: &str = "DELIVERY#";

/// Where an endpoint's delivery of `event_id` is: its shard among the
/// endpoint's `shards`, a fixed hash of the id (FNV-1a, then
/// [`shard_of`]'s mix). Part of the stored layout: changing it loses every
/// delivery's key.
pub fn shard_of_event(event_id: &str, shards: u16) -> u16 {
    let hash = event_id
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
    shard_of(hash, shards)
}

/// An endpoint's `deliveryShards` when the item has none: one partition.
pub fn one_shard() -> u16 {
    1
}

/// The partition key of shard `shard` of an endpoint's deliveries.
pub fn partition(webhook_id: u64, shard: u16) -> String {
    format!("WEBHOOK#{webhook_id}#{shard}")
}

/// The delivery item's key: `shard` as [`shard_of_event`] gives it.
pub fn key(webhook_id: u64, shard: u16, event_id: &str) -> Item {
    key_in(&partition(webhook_id, shard), event_id)
}

/// The key of the delivery of `event_id` in delivery partition `partition`.
pub fn key_in(partition: &str, event_id: &str) -> Item {
    HashMap::from([
        ("PK".to_string(), s(partition)),
        ("SK".to_string(), s(sort_key(event_id))),
    ])
}

/// The sort key of the delivery of `event_id`.
pub fn sort_key(event_id: &str) -> String {
    format!("{SORT_PREFIX}{event_id}")
}

/// An event id that starts with its time, as every `eventId` does: 11
/// lower-case hex digits of `at`'s Unix milliseconds, then `-` and `rest`.
/// Fixed width, so ids sort as their times do (until the year 2527).
pub fn timed_event_id(at: DateTime<Utc>, rest: &str) -> String {
    let millis = u64::try_from(at.timestamp_millis()).unwrap_or(0);
    format!("{millis:011x}-{rest}")
}

/// A delivery's place in its endpoint's list: its sort key, the newest
/// (the greatest) first. A page's cursor names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ListPosition(String);

impl ListPosition {
    /// The position of the delivery of `event_id`.
    pub fn of_event(event_id: &str) -> ListPosition {
        ListPosition(sort_key(event_id))
    }

    /// The event id it names.
    pub fn event_id(&self) -> &str {
        self.0.strip_prefix(SORT_PREFIX).unwrap_or(&self.0)
    }

    /// The cursor sent to clients: `d` and the event id's bytes in hex
    /// (printable ASCII, as every event id is). Opaque by contract; exact
    /// enough that `openapi.yaml` gives its pattern, and every cursor of
    /// that pattern is a position the list can start after.
    pub fn cursor(&self) -> String {
        let hex: String = self
            .event_id()
            .bytes()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        format!("d{hex}")
    }

    /// Reads a cursor of [`ListPosition::cursor`]'s form (openapi.yaml's
    /// pattern `^d([2-7][0-9a-f]){1,128}$`); `None` for any other.
    pub fn from_cursor(raw: &str) -> Option<ListPosition> {
        let hex = raw.strip_prefix('d')?.as_bytes();
        if hex.is_empty() || hex.len() % 2 != 0 || hex.len() > 2 * MAX_EVENT_ID {
            return None;
        }
        let digit = |d: u8| match d {
            b'0'..=b'9' => Some(d - b'0'),
            b'a'..=b'f' => Some(d - b'a' + 10),
            _ => None,
        };
        let bytes = hex
            .chunks(2)
            .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
            .collect::<Option<Vec<u8>>>()?;
        // Printable ASCII (and DEL), as the pattern's first digits 2 to 7 say.
        if !bytes.iter().all(|b| (0x20..=0x7f).contains(b)) {
            return None;
        }
        String::from_utf8(bytes).ok().map(|id| Self::of_event(&id))
    }
}

/// The longest event id a cursor or a path may carry (a stream record's
/// id, about 60 characters, is well within it).
pub const MAX_EVENT_ID: usize = 128;

/// Whether `raw` has the form of an event id (openapi.yaml's `EventId`
/// pattern `^[0-9a-f]{11}-[0-9A-Za-z._:-]{1,116}$`): its time, 11 hex
/// digits of Unix milliseconds ([`timed_event_id`]), `-`, then the stream
/// record's id and the event's index in it, or a ping's name. Anything else
/// names no delivery, so it is answered without a read (section 2): a
/// sort key over DynamoDB's 1,024 bytes would fail the read itself.
pub fn is_event_id(raw: &str) -> bool {
    let Some((time, rest)) = raw.split_once('-') else {
        return false;
    };
    let rest_ok = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-');
    raw.len() <= MAX_EVENT_ID
        && time.len() == 11
        && time.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && !rest.is_empty()
        && rest.bytes().all(rest_ok)
}

impl Position for ListPosition {
    fn of(item: &Item) -> Result<ListPosition, DbError> {
        match item.get("SK") {
            Some(AttributeValue::S(sort)) => Ok(ListPosition(sort.clone())),
            _ => Err(DbError::internal("a delivery item without its sort key")),
        }
    }
}

/// A delivery of endpoint `webhook_id` (its `deliveryShards` `shards`),
/// read consistently.
pub async fn get(
    client: &Client,
    table: &str,
    webhook_id: u64,
    shards: u16,
    event_id: &str,
) -> Result<Option<WebhookDelivery>, DbError> {
    let partition = partition(webhook_id, shard_of_event(event_id, shards));
    let db = Db::new(client.clone(), table);
    let got = db.get_item(partition, &sort_key(event_id)).await?;
    got.map(shown).transpose()
}

/// The most delivery partitions a page queries at once, one round trip:
/// an endpoint of a stack built for 10,000 orders a second has 128, and as
/// many queries at once would open as many connections (TLS handshakes, in
/// a 128 MB function's slice of a CPU) and overran DynamoDB Local's accept
/// queue in the partition model. 16 is the default OrderRate's whole
/// count; above it a page's first round takes a round trip per 16
/// partitions (8 at 128, the `Capacity` mapping's most).
pub const PARTITIONS_AT_ONCE: usize = 16;

/// A page of an endpoint's deliveries (its `deliveryShards` `shards`),
/// newest first, after `after`, in a stated amount of work (section 2: at
/// most 10 round trips): each partition queried once backwards from the
/// cursor for its share of the page (`shards` queries, 16 at a time), then,
/// on the few pages that leaves unsettled, one more round trip of at most
/// [`PARTITIONS_AT_ONCE`] queries of `limit + 1` entries, the least advanced
/// partitions first ([`next_round`] names those that may still add): at
/// most `shards + 16` queries in `ceil(shards / 16) + 1` round trips,
/// merged by sort key. A page so bounded may hold fewer than `limit`, even
/// none, with a `next` link: the cursor is where every partition has been
/// examined to ([`merge`]), so the links still see each delivery once.
/// (Unbounded, the rounds asked every partition that might add: at 128
/// partitions up to 1,280 queries a page.)
pub async fn list_page(
    db: &Db,
    webhook_id: Id,
    shards: u16,
    limit: usize,
    after: Option<ListPosition>,
) -> Result<Page<WebhookDelivery, ListPosition>, DbError> {
    let partitions: Vec<String> = (0..shards.max(1))
        .map(|shard| partition(webhook_id.get(), shard))
        .collect();
    let mut reads: Vec<PartitionRead<ListPosition>> = partitions
        .iter()
        .map(|_| PartitionRead::default())
        .collect();
    // Every partition once: no page knows its newest deliveries with less.
    let every: Vec<usize> = (0..partitions.len()).collect();
    let first = first_round_entries(limit, partitions.len());
    query_partitions(db, &partitions, &mut reads, &every, first, &after).await?;
    let mut wanted = next_round(&reads, limit, true);
    if !wanted.is_empty() {
        // The frontier is the least advanced partitions' (descending: the
        // greatest examined position): they keep the page from settling.
        wanted.sort_by(|a, b| reads[*b].examined_to().cmp(&reads[*a].examined_to()));
        wanted.truncate(PARTITIONS_AT_ONCE);
        query_partitions(db, &partitions, &mut reads, &wanted, limit + 1, &after).await?;
    }
    merge(reads, limit, true).try_map(shown)
}

/// Queries `wanted` of `partitions` for `entries` each from where each
/// stopped (or the cursor), [`PARTITIONS_AT_ONCE`] at a time, each group
/// answered whole before the next is sent: one round trip a group.
async fn query_partitions(
    db: &Db,
    partitions: &[String],
    reads: &mut [PartitionRead<ListPosition>],
    wanted: &[usize],
    entries: usize,
    after: &Option<ListPosition>,
) -> Result<(), DbError> {
    for group in wanted.chunks(PARTITIONS_AT_ONCE) {
        let queries = group.iter().map(|&i| {
            let from = reads[i].resume_after(after.clone());
            query_shard(db, &partitions[i], entries, from)
        });
        let answers = futures::future::try_join_all(queries).await?;
        for (&i, (items, examined_to)) in group.iter().zip(answers) {
            reads[i].add(items, examined_to)?;
        }
    }
    Ok(())
}

/// One query of one delivery partition, newest first: up to `entries`
/// deliveries older than `after`, and the position it stopped at when it
/// stopped before the partition's end.
async fn query_shard(
    db: &Db,
    partition: &str,
    entries: usize,
    after: Option<ListPosition>,
) -> Result<(Vec<Item>, Option<ListPosition>), DbError> {
    let (condition, bound) = match after {
        Some(after) => ("PK = :pk AND SK < :sk", after.0),
        None => ("PK = :pk AND begins_with(SK, :sk)", SORT_PREFIX.to_string()),
    };
    let out = db
        .client()
        .query()
        .table_name(db.table())
        .key_condition_expression(condition)
        .expression_attribute_values(":pk", s(partition))
        .expression_attribute_values(":sk", s(bound))
        .scan_index_forward(false)
        .limit(i32::try_from(entries).unwrap_or(i32::MAX))
        .send()
        .await
        .map_err(|e| classify(db.table(), e))?;
    let examined_to = out
        .last_evaluated_key
        .map(|key| ListPosition::of(&key))
        .transpose()?;
    Ok((out.items.unwrap_or_default(), examined_to))
}

mod create;
mod shown;
#[cfg(test)]
mod tests;
