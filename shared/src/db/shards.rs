//! Write sharding: the lists every record of a kind is in ("all pets", "open
//! orders", ...) spread their index entries over several partitions, so no
//! partition key takes a growing share of the writes.
//!
//! A record's shard is a fixed hash of its id ([`shard_of`]), so it never
//! changes while the shard count stays; the shard is the last part of the
//! index partition key (`PET#3`, `ORDER#COMPLETE#false#17`). A page of a
//! sharded list queries every shard of it at once for `limit + 1` items after
//! the cursor's id and merges them by id ([`merge`]): the first `limit` of
//! the merge are exactly the list's next `limit` (no shard can hold more of
//! them than it returned), and the cursor stays the last id returned.
//!
//! A shard count may be raised at any time: reads cover every shard below the
//! count, and every entry written under a smaller count is in one of them.
//! Lowering one hides the entries of the shards dropped until they are
//! rewritten; it needs a backfill.

use super::{DbError, Item, Page};
use aws_sdk_dynamodb::types::AttributeValue;

/// The kind of record whose shard count spreads a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Pet,
    Order,
    Category,
}

/// How many shards each kind's lists have.
///
/// The defaults are sized for 10,000 orders a second (see `README.md`,
/// "Partitions"): an order writes its lists' shards twice (placed, then
/// completed or cancelled), so 32 shards take 20,000 such writes a second at
/// 625 each, under DynamoDB's 1,000 per partition with room for an uneven
/// spread. Pets are written on catalogue changes and status moves, never on
/// an order (stock is in no index), so 4 shards suffice and a pet list page
/// costs 4 queries. Categories are created by hand: 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shards {
    pub pets: u16,
    pub orders: u16,
    pub categories: u16,
}

/// The most shards a list may have: a page queries every one of them.
pub const MAX_SHARDS: u16 = 256;

impl Default for Shards {
    fn default() -> Shards {
        Shards {
            pets: 4,
            orders: 32,
            categories: 1,
        }
    }
}

impl Shards {
    /// The shard count of `kind`'s lists, at least 1.
    pub fn count(&self, kind: Kind) -> u16 {
        let count = match kind {
            Kind::Pet => self.pets,
            Kind::Order => self.orders,
            Kind::Category => self.categories,
        };
        count.clamp(1, MAX_SHARDS)
    }

    /// The partition key of record `id` in a list of `kind` whose key is `list`.
    pub(crate) fn key(&self, kind: Kind, list: &str, id: u64) -> String {
        format!("{list}#{}", shard_of(id, self.count(kind)))
    }

    /// Every partition key of a list of `kind` whose key is `list`.
    pub(crate) fn keys(&self, kind: Kind, list: &str) -> Vec<String> {
        (0..self.count(kind))
            .map(|shard| format!("{list}#{shard}"))
            .collect()
    }
}

/// The shard of record `id` among `count`: splitmix64's finalizer, so any
/// count spreads evenly whatever the ids' pattern. Part of the stored layout:
/// changing it moves every record's shard.
pub fn shard_of(id: u64, count: u16) -> u16 {
    let mut x = id;
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    (x % u64::from(count.max(1))) as u16
}

/// The numeric `id` of an index item (every index sorts on it).
pub(crate) fn item_id(item: &Item) -> Result<u64, DbError> {
    match item.get("id") {
        Some(AttributeValue::N(id)) => id.parse().map_err(DbError::internal),
        _ => Err(DbError::internal("an index item without a numeric id")),
    }
}

/// One page from the items each partition returned after the cursor, each
/// partition's in id order and at most `limit + 1` of them: the first
/// `limit` by id (highest first when `descending`), and the last one's id
/// when more exist.
pub(crate) fn merge(
    partitions: Vec<Vec<Item>>,
    limit: usize,
    descending: bool,
) -> Result<Page<Item>, DbError> {
    let mut items = partitions
        .into_iter()
        .flatten()
        .map(|item| Ok((item_id(&item)?, item)))
        .collect::<Result<Vec<_>, DbError>>()?;
    items.sort_by_key(|(id, _)| *id);
    if descending {
        items.reverse();
    }
    // An entry moving between shards (never within one list today) would
    // show twice for a moment: once is enough.
    items.dedup_by_key(|(id, _)| *id);
    let next_after = (items.len() > limit)
        .then(|| items.get(limit.saturating_sub(1)).map(|(id, _)| *id))
        .flatten();
    items.truncate(limit);
    Ok(Page {
        items: items.into_iter().map(|(_, item)| item).collect(),
        next_after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn item(id: u64) -> Item {
        HashMap::from([("id".to_string(), AttributeValue::N(id.to_string()))])
    }

    fn ids(page: &Page<Item>) -> Vec<u64> {
        page.items.iter().map(|i| item_id(i).unwrap_or(0)).collect()
    }

    /// Every shard's items after `after`, at most `limit + 1`, as DynamoDB
    /// would answer each shard's query.
    fn shard_answers(shards: &[Vec<u64>], after: u64, limit: usize, desc: bool) -> Vec<Vec<Item>> {
        shards
            .iter()
            .map(|ids| {
                let mut ids: Vec<u64> = ids
                    .iter()
                    .copied()
                    .filter(|id| if desc { *id < after } else { *id > after })
                    .collect();
                ids.sort_unstable();
                if desc {
                    ids.reverse();
                }
                ids.into_iter().take(limit + 1).map(item).collect()
            })
            .collect()
    }

    #[test]
    fn paging_merged_shards_sees_every_id_once_in_order() -> Result<(), DbError> {
        for (count, limit, desc) in [(1, 3, false), (4, 3, false), (7, 2, true), (32, 5, true)] {
            let mut shards = vec![Vec::new(); count];
            let all: Vec<u64> = (1..=200u64).map(|i| i * 7919 % 100_003).collect();
            for id in &all {
                shards[usize::from(shard_of(*id, count as u16))].push(*id);
            }
            let mut seen = Vec::new();
            let mut after = if desc { u64::MAX } else { 0 };
            loop {
                let page = merge(shard_answers(&shards, after, limit, desc), limit, desc)?;
                assert!(page.items.len() <= limit);
                seen.extend(ids(&page));
                match page.next_after {
                    Some(next) => after = next,
                    None => break,
                }
            }
            let mut expected = all.clone();
            expected.sort_unstable();
            if desc {
                expected.reverse();
            }
            assert_eq!(seen, expected, "{count} shards, limit {limit}");
        }
        Ok(())
    }

    #[test]
    fn a_page_that_ends_the_list_has_no_cursor() -> Result<(), DbError> {
        let page = merge(vec![vec![item(1), item(3)], vec![item(2)]], 3, false)?;
        assert_eq!((ids(&page), page.next_after), (vec![1, 2, 3], None));
        let page = merge(
            vec![vec![item(1), item(3)], vec![item(2), item(4)]],
            3,
            false,
        )?;
        assert_eq!((ids(&page), page.next_after), (vec![1, 2, 3], Some(3)));
        let page = merge(vec![vec![], vec![]], 3, true)?;
        assert_eq!((ids(&page), page.next_after), (vec![], None));
        Ok(())
    }

    #[test]
    fn shards_are_stable_and_spread() {
        assert_eq!(
            shard_of(375_071_234_567_890, 32),
            shard_of(375_071_234_567_890, 32)
        );
        let mut counts = [0u32; 8];
        for id in 0..8000u64 {
            counts[usize::from(shard_of(id << 12, 8))] += 1;
        }
        assert!(
            counts.iter().all(|c| (900..=1100).contains(c)),
            "{counts:?}"
        );
        let shards = Shards::default();
        assert_eq!(shards.keys(Kind::Category, "CATEGORY"), vec!["CATEGORY#0"]);
        assert_eq!(shards.keys(Kind::Pet, "PET").len(), 4);
        assert!(shards
            .keys(Kind::Order, "ORDER")
            .contains(&shards.key(Kind::Order, "ORDER", 42)));
    }
}
