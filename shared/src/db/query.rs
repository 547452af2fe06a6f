//! Paged queries on the GSIs, one partition or merged shards, each page in a
//! bounded number of round trips, and the opaque cursor that continues them.

use super::page::Page;
use super::shards::{first_round_entries, item_id, merge, next_round, Kind, PartitionRead};
use super::{classify, n, s, shape, Db, DbError, Item};
use aws_sdk_dynamodb::types::AttributeValue;
use serde::de::DeserializeOwned;
use std::collections::HashMap;

/// Where the next page starts: the id of the last record returned, tagged with
/// the list it belongs to so a cursor from one list is refused by another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    list: &'static str,
    after: u64,
}

impl Cursor {
    pub fn new(list: &'static str, after: u64) -> Cursor {
        Cursor { list, after }
    }

    /// The form sent to clients: the list's initial and the id in 16 hex
    /// digits. Opaque by contract (clients must not build one); plain enough
    /// that `openapi.yaml` can give its exact pattern, so every cursor the
    /// document calls valid is one the service accepts.
    pub fn encode(&self) -> String {
        format!("{}{:016x}", self.tag(), self.after)
    }

    /// Reads a cursor sent back for `list`; `None` if this list did not issue it.
    pub fn decode(raw: &str, list: &'static str) -> Option<Cursor> {
        let cursor = Cursor { list, after: 0 };
        let digits = raw.strip_prefix(cursor.tag())?;
        if digits.len() != 16
            || !digits
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return None;
        }
        let after = u64::from_str_radix(digits, 16).ok()?;
        Some(Cursor { list, after })
    }

    fn tag(&self) -> char {
        self.list.chars().next().unwrap_or('x')
    }

    pub fn after(&self) -> u64 {
        self.after
    }
}

/// A projection expression and the names its placeholders stand for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Projection {
    pub expression: String,
    pub names: Vec<(String, String)>,
}

impl Projection {
    /// The attributes record type `T` is stored as ([`shape::fields`]), each
    /// through a placeholder (as in `expr.rs`, so a reserved word such as
    /// `name` or `status` needs no special care): a list reads exactly what
    /// its record holds.
    pub(crate) fn of<T: DeserializeOwned>() -> Projection {
        Projection::of_attributes(shape::fields::<T>())
    }

    pub(crate) fn of_attributes(attributes: &[&str]) -> Projection {
        let names: Vec<(String, String)> = attributes
            .iter()
            .map(|attribute| (format!("#{attribute}"), attribute.to_string()))
            .collect();
        let expression = names
            .iter()
            .map(|(placeholder, _)| placeholder.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        Projection { expression, names }
    }

    /// The attributes it reads.
    #[cfg(test)]
    pub(crate) fn attributes(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|(_, name)| name.as_str())
    }
}

/// A filter expression and the names and values its placeholders stand for.
#[derive(Debug, Default)]
pub(crate) struct Filter<'a> {
    pub expression: &'a str,
    pub names: HashMap<String, String>,
    pub values: HashMap<String, AttributeValue>,
}

/// A query on one GSI list, in id order: one partition, or every shard of a
/// sharded one (see [`shards`](super::shards)).
pub(crate) struct IndexQuery<'a> {
    /// The list's index, by its list's name (`GSI1`..`GSI5`): the table's
    /// layout names the index it is stored in ([`super::layout`]).
    pub index: &'static str,
    /// The list's partition key; a sharded list's partitions add `#<shard>`.
    pub partition: String,
    /// The kind whose shard count spreads the list; `None`: one partition.
    pub sharded: Option<Kind>,
    /// Newest (highest id) first.
    pub descending: bool,
    /// An extra filter, for the second of two list filters.
    pub filter: Option<Filter<'a>>,
    /// The attributes to read: just what the response needs, since parsing
    /// each attribute of each item is most of a list's CPU time.
    pub projection: &'static Projection,
}

/// The most round trips to DynamoDB one page of a list makes, however
/// sparse its filters match (documented in `openapi.yaml` and docs/api.md, "Paging").
/// A round sends one query to each partition of the list that may still add
/// to the page, concurrently, each for a page's worth of entries (`limit +
/// 1`); so a page evaluates at most `PAGE_ROUND_TRIPS × (limit + 1)` entries
/// per partition, and a page whose rounds run out ends early, with a cursor.
pub const PAGE_ROUND_TRIPS: usize = 10;

/// One query's answer from one partition: the entries that matched, and the
/// id of the last entry examined when it stopped before the partition's end.
struct Answer {
    items: Vec<Item>,
    examined_to: Option<u64>,
}

impl Db {
    /// Reads up to `limit` items after `after` in at most
    /// [`PAGE_ROUND_TRIPS`] round trips, and where the next page starts.
    pub(crate) async fn query_page(
        &self,
        query: IndexQuery<'_>,
        limit: usize,
        after: Option<u64>,
    ) -> Result<Page<Item>, DbError> {
        self.query_page_within(query, limit, after, PAGE_ROUND_TRIPS)
            .await
    }

    /// As [`Db::query_page`], in at most `round_trips` (at least 1).
    ///
    /// A filter expression applies after DynamoDB's own `Limit`, so a
    /// filtered query may find few matches or none; the partitions short of
    /// a page are asked again, from where each stopped, until the page is
    /// settled or the round trips are spent. Then the page holds what is
    /// known so far and its cursor says how far that is (see
    /// [`merge`](super::shards::merge)).
    pub(crate) async fn query_page_within(
        &self,
        query: IndexQuery<'_>,
        limit: usize,
        after: Option<u64>,
        round_trips: usize,
    ) -> Result<Page<Item>, DbError> {
        let partitions = match query.sharded {
            Some(kind) => self.shards.keys(kind, &query.partition),
            None => vec![query.partition.clone()],
        };
        // While a lowered count is resharded, entries move from the shards
        // at or above the count (`shard_of(id, 32) = r` goes to `r % 4`)
        // into those below it, each in one write. A page that reads the
        // shards they leave before those they reach, each for a whole
        // page's worth in one round, finds every entry once: in its old
        // shard if read before it moved, else in its new one.
        let draining_from = query
            .sharded
            .map(|kind| usize::from(self.shards.count(kind)))
            .filter(|count| *count < partitions.len());
        let query = &query;
        let mut reads: Vec<PartitionRead> = partitions.iter().map(|_| Default::default()).collect();
        for round in 0..round_trips.max(1) {
            let wanted = next_round(&reads, limit, query.descending);
            if wanted.is_empty() {
                break;
            }
            // A sharded list's first round asks each shard for its share of
            // the page (`first_round_entries`); a filtered, later or
            // draining query for a page's worth.
            let entries = match (round, &query.filter, draining_from) {
                (0, None, None) => first_round_entries(limit, partitions.len()),
                _ => limit + 1,
            };
            let (leaving, staying): (Vec<usize>, Vec<usize>) = wanted
                .into_iter()
                .partition(|i| draining_from.is_some_and(|count| *i >= count));
            for wave in [leaving, staying] {
                let answers = wave.iter().map(|i| {
                    let from = reads[*i].resume_after(after);
                    self.query_once(query, &partitions[*i], entries, from)
                });
                let answers = futures::future::try_join_all(answers).await?;
                for (i, answer) in wave.into_iter().zip(answers) {
                    reads[i].add(answer.items, answer.examined_to)?;
                }
            }
        }
        Ok(merge(reads, limit, query.descending))
    }

    /// Every item of the table that `filter` keeps (`values` its
    /// placeholders' strings), read with a strongly consistent scan of
    /// `projection`, handed to `each` a page at a time: the table's upkeep
    /// (backfills, the reshard), never a request.
    pub(crate) async fn scan_each(
        &self,
        filter: &str,
        values: &[(&str, &str)],
        projection: &str,
        mut each: impl AsyncFnMut(Item) -> Result<(), DbError>,
    ) -> Result<(), DbError> {
        let mut start = None;
        loop {
            let mut scan = self
                .client
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .filter_expression(filter)
                .projection_expression(projection)
                .set_exclusive_start_key(start);
            for (placeholder, value) in values {
                scan = scan.expression_attribute_values(*placeholder, s(*value));
            }
            let out = scan.send().await.map_err(|e| classify(&self.table, e))?;
            for item in out.items.unwrap_or_default() {
                each(item).await?;
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                return Ok(());
            }
        }
    }

    /// One query of one partition: up to `entries` index entries after
    /// `after` examined, in order, and those of them the filter keeps.
    async fn query_once(
        &self,
        query: &IndexQuery<'_>,
        partition: &str,
        entries: usize,
        after: Option<u64>,
    ) -> Result<Answer, DbError> {
        let pk_attr = format!("{}PK", query.index);
        let mut key_condition = "#pk = :pk".to_string();
        if after.is_some() {
            key_condition.push_str(if query.descending {
                " AND id < :after"
            } else {
                " AND id > :after"
            });
        }
        let mut request = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(self.layout.index_of(query.index))
            .key_condition_expression(&key_condition)
            .expression_attribute_names("#pk", &pk_attr)
            .expression_attribute_values(":pk", s(partition))
            .scan_index_forward(!query.descending)
            .limit(i32::try_from(entries).unwrap_or(i32::MAX));
        if let Some(after) = after {
            request = request.expression_attribute_values(":after", n(after));
        }
        if let Some(filter) = &query.filter {
            request = request.filter_expression(filter.expression);
            for (k, v) in &filter.names {
                request = request.expression_attribute_names(k, v);
            }
            for (k, v) in &filter.values {
                request = request.expression_attribute_values(k, v.clone());
            }
        }
        let projection = self.layout.readable(query.index, query.projection);
        request = request.projection_expression(&projection.expression);
        for (placeholder, name) in &projection.names {
            request = request.expression_attribute_names(placeholder, name);
        }
        let out = request.send().await.map_err(|e| classify(&self.table, e))?;
        // The key DynamoDB stopped at holds the index's sort key, the id.
        let examined_to = out
            .last_evaluated_key
            .map(|key| item_id(&key))
            .transpose()?;
        Ok(Answer {
            items: out.items.unwrap_or_default(),
            examined_to,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_only_for_its_own_list() {
        let cursor = Cursor::new("pets", 12345);
        let raw = cursor.encode();
        assert_eq!(Cursor::decode(&raw, "pets"), Some(cursor));
        assert_eq!(Cursor::decode(&raw, "orders"), None);
        assert_eq!(Cursor::decode("not a cursor", "pets"), None);
        assert_eq!(Cursor::decode("", "pets"), None);
        assert_eq!(raw, "p0000000000003039");
        assert_eq!(Cursor::decode("P0000000000003039", "pets"), None);
        assert_eq!(Cursor::decode("p000000000003039", "pets"), None);
    }
}
