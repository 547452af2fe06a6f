//! Paged queries on the GSIs, one partition or merged shards, and the opaque
//! cursor that continues them.

use super::shards::{merge, Kind};
use super::{classify, n, s, Db, DbError, Item};
use aws_sdk_dynamodb::types::AttributeValue;
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

/// One page of a list.
#[derive(Debug, Clone)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// The id to continue after, when more records exist.
    pub next_after: Option<u64>,
}

impl<T> Page<T> {
    pub fn try_map<U, E>(self, f: impl FnMut(T) -> Result<U, E>) -> Result<Page<U>, E> {
        Ok(Page {
            items: self.items.into_iter().map(f).collect::<Result<_, _>>()?,
            next_after: self.next_after,
        })
    }
}

/// A projection expression and the names its placeholders stand for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Projection {
    pub expression: &'static str,
    pub names: &'static [(&'static str, &'static str)],
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
    pub projection: Projection,
}

impl Db {
    /// Reads up to `limit` items after `after`, and whether more exist.
    ///
    /// A sharded list queries each shard at once for `limit + 1` items and
    /// merges them by id: N shards cost N queries a page, concurrently.
    pub(crate) async fn query_page(
        &self,
        query: IndexQuery<'_>,
        limit: usize,
        after: Option<u64>,
    ) -> Result<Page<Item>, DbError> {
        let partitions = match query.sharded {
            Some(kind) => self.shards.keys(kind, &query.partition),
            None => vec![query.partition.clone()],
        };
        let query = &query;
        let reads = partitions
            .iter()
            .map(|partition| self.query_partition(query, partition, limit + 1, after));
        let found = futures::future::try_join_all(reads).await?;
        merge(found, limit, query.descending)
    }

    /// Reads up to `wanted` items of one partition after `after`, in order.
    ///
    /// A filter expression applies after DynamoDB's own limit, so a filtered
    /// query may need several round trips; it stops as soon as it holds
    /// `wanted` items (one more than a page, which proves a next page exists).
    async fn query_partition(
        &self,
        query: &IndexQuery<'_>,
        partition: &str,
        wanted: usize,
        after: Option<u64>,
    ) -> Result<Vec<Item>, DbError> {
        let pk_attr = format!("{}PK", query.index);
        let mut key_condition = "#pk = :pk".to_string();
        if after.is_some() {
            key_condition.push_str(if query.descending {
                " AND id < :after"
            } else {
                " AND id > :after"
            });
        }
        let mut items: Vec<Item> = Vec::with_capacity(wanted);
        let mut start: Option<HashMap<String, AttributeValue>> = None;
        loop {
            let mut request = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(query.index)
                .key_condition_expression(&key_condition)
                .expression_attribute_names("#pk", &pk_attr)
                .expression_attribute_values(":pk", s(partition))
                .scan_index_forward(!query.descending)
                .limit((wanted - items.len()) as i32)
                .set_exclusive_start_key(start.take());
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
            request = request.projection_expression(query.projection.expression);
            for (placeholder, name) in query.projection.names {
                request = request.expression_attribute_names(*placeholder, *name);
            }
            let out = request.send().await.map_err(classify)?;
            items.extend(out.items.unwrap_or_default());
            match out.last_evaluated_key {
                Some(key) if items.len() < wanted => start = Some(key),
                _ => break,
            }
        }
        Ok(items)
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
