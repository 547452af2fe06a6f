//! A page from one list of an existing GSI, highest `id` first.
//!
//! The GSIs sort on the numeric `id`. Layout 2's list indexes carry whole
//! items (`ALL`, docs/data.md), so a page of records is one query of the
//! index ([`items_page`]). Layout 1's (the last release's, served until its
//! migration switches the functions over) project only the pet store's
//! named attributes, none of a webhook's: there a page reads the base
//! table's keys from the index (`PK, SK, id`, [`keys_page`]), then the items
//! by key ([`crate::db::Db`]'s batch read), one call more.

use crate::db::query::{IndexQuery, Projection};
use crate::db::{classify, n, s, Db, DbError, Item, Page};
use aws_sdk_dynamodb::types::AttributeValue;
use std::borrow::Cow;

/// One list: its index, by its layout-independent name (`GSI1`..), and
/// the partition key value.
#[derive(Debug, Clone)]
pub(crate) struct KeyList {
    pub index: &'static str,
    pub partition: String,
}

impl KeyList {
    pub(crate) fn new(index: &'static str, partition: String) -> KeyList {
        KeyList { index, partition }
    }
}

/// Up to `limit` items of `list` below `after` (newest first), only their
/// `fields`, and the id the next page starts below when there are more: one
/// query when the list's index holds those fields, else [`keys_page`] and a
/// consistent batch read of the items (`operation` names it in the logs).
pub(crate) async fn items_page(
    db: &Db,
    list: &KeyList,
    fields: &'static Projection,
    limit: usize,
    after: Option<u64>,
    operation: &'static str,
) -> Result<Page<Item>, DbError> {
    if let Cow::Borrowed(_) = db.layout().readable(list.index, fields) {
        let query = IndexQuery {
            index: list.index,
            partition: list.partition.clone(),
            sharded: None,
            descending: true,
            filter: None,
            projection: fields,
        };
        return db.query_page(query, limit, after).await;
    }
    let page = keys_page(db, list, limit, after).await?;
    let items = db
        .batch_get_consistent(operation, page.items, Some(fields))
        .await?;
    Ok(Page {
        items,
        next_after: page.next_after,
    })
}

/// Up to `limit` keys (`PK`, `SK`) below `after`, newest first, and the id
/// the next page starts below when there are more.
pub(crate) async fn keys_page(
    db: &Db,
    list: &KeyList,
    limit: usize,
    after: Option<u64>,
) -> Result<Page<Item>, DbError> {
    let mut condition = "#pk = :pk".to_string();
    if after.is_some() {
        condition.push_str(" AND #id < :after");
    }
    let mut request = db
        .client()
        .query()
        .table_name(db.table())
        .index_name(db.layout().index_of(list.index))
        .key_condition_expression(condition)
        .expression_attribute_names("#pk", format!("{}PK", list.index))
        .expression_attribute_names("#id", "id")
        .expression_attribute_values(":pk", s(list.partition.as_str()))
        .projection_expression("PK, SK, #id")
        .scan_index_forward(false)
        .limit(i32::try_from(limit + 1).unwrap_or(i32::MAX));
    if let Some(after) = after {
        request = request.expression_attribute_values(":after", n(after));
    }
    let out = request.send().await.map_err(|e| classify(db.table(), e))?;
    let mut entries = out.items.unwrap_or_default();
    let more = entries.len() > limit;
    entries.truncate(limit);
    let next_after = if more {
        entries.last().map(entry_id).transpose()?
    } else {
        None
    };
    let keys = entries
        .into_iter()
        .map(|mut entry| {
            entry.remove("id");
            entry
        })
        .collect();
    Ok(Page {
        items: keys,
        next_after,
    })
}

fn entry_id(entry: &Item) -> Result<u64, DbError> {
    match entry.get("id") {
        Some(AttributeValue::N(id)) => id.parse().map_err(DbError::internal),
        _ => Err(DbError::internal("an index entry without its numeric id")),
    }
}
