//! Write sharding: the lists every record of a kind is in ("all pets", "open
//! orders", ...) spread their index entries over several partitions, so no
//! partition key takes a growing share of the writes.
//!
//! A record's shard is a fixed hash of its id ([`shard_of`]), so it never
//! changes while the shard count stays; the shard is the last part of the
//! index partition key (`PET#3`, `ORDER#COMPLETE#false#17`). A page of a
//! sharded list queries every shard of it at once for `limit + 1` entries
//! after the cursor's id, and again, in bounded rounds, those that may still
//! add to the page (see [`query`](super::query)); [`merge`] then takes the
//! matches every shard has been examined up to (the [`frontier`]) in id
//! order. The first `limit` of them are exactly the list's next `limit`, and
//! the cursor is the last id returned, or the frontier when a page's rounds
//! ran out first: one id from which every shard resumes with nothing skipped
//! and nothing repeated.
//!
//! A shard count may be raised at any time: reads cover every shard below the
//! count, and every entry written under a smaller count is in one of them.
//! Lowering one is done in two deploys: writers take the new count at once,
//! while readers go on querying every shard below the old one (the
//! *draining* count, [`Shards::draining`]) until `petstore-admin data
//! reshard` has moved every entry under the new count; then the draining
//! count goes. A shard's key is the same under any count (`ORDER#2` is
//! shard 2 of 4 and of 32), so reading `0..max(count, draining)` covers
//! both.

use super::page::Page;
use super::{DbError, Item};
use aws_sdk_dynamodb::types::AttributeValue;

/// The kind of record whose shard count spreads a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Pet,
    Order,
    Category,
    /// A webhook endpoint's deliveries (base-table partitions
    /// `WEBHOOK#<id>#<shard>`): the count an endpoint is registered with,
    /// kept on it for its life (`deliveryShards`), so never drained.
    Delivery,
}

/// How many shards each kind's lists have.
///
/// The defaults are those of template.yaml's default `OrderRate`, 1,000
/// orders a second (docs/partitions.md, "One capacity knob"): an order
/// writes its lists' shards about twice (placed, then completed or
/// cancelled), so 4 order shards take 2,000 such writes a second at 500
/// each, half DynamoDB's 1,000 per partition, room for an uneven spread.
/// A pet's stock is on its stock item, in no list (`pets::stock`), so an
/// order rewrites its pet's list entries only when the pet's status moves:
/// 1 pet shard at any rate. Every page reads every shard (each query at
/// least half a read unit, and the CPU of a call), which is why none is
/// larger than the rate needs. Categories are created by hand: 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shards {
    pub pets: u16,
    pub orders: u16,
    pub categories: u16,
    /// The pet shard count entries may still be under while a lowered
    /// `pets` is resharded (`PET_LIST_SHARDS_DRAINING`); 0: none.
    pub pets_draining: u16,
    /// The same for orders (`ORDER_LIST_SHARDS_DRAINING`); 0: none.
    pub orders_draining: u16,
    /// The delivery partitions a new webhook endpoint gets
    /// (`WEBHOOK_DELIVERY_SHARDS`): a delivery is 2 writes on its
    /// partition (made, attempted), and a staff endpoint takes every event,
    /// about 3.3 an order, so 16 keep each near 410 writes a second at
    /// 1,000 orders a second.
    pub deliveries: u16,
}

/// The most shards a list may have: a page queries every one of them.
pub const MAX_SHARDS: u16 = 256;

impl Default for Shards {
    fn default() -> Shards {
        Shards {
            pets: 1,
            orders: 4,
            categories: 1,
            pets_draining: 0,
            orders_draining: 0,
            deliveries: 16,
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
            Kind::Delivery => self.deliveries,
        };
        count.clamp(1, MAX_SHARDS)
    }

    /// The count below which `kind`'s entries may still be found: the
    /// count, or the draining one while a lowered count is resharded.
    pub fn draining(&self, kind: Kind) -> u16 {
        let draining = match kind {
            Kind::Pet => self.pets_draining,
            Kind::Order => self.orders_draining,
            Kind::Category | Kind::Delivery => 0,
        };
        self.count(kind).max(draining.min(MAX_SHARDS))
    }

    /// The partition key of record `id` in a list of `kind` whose key is `list`.
    pub(crate) fn key(&self, kind: Kind, list: &str, id: u64) -> String {
        format!("{list}#{}", shard_of(id, self.count(kind)))
    }

    /// Every partition key of a list of `kind` whose key is `list` that may
    /// hold entries: every shard below the count or the draining count.
    pub(crate) fn keys(&self, kind: Kind, list: &str) -> Vec<String> {
        (0..self.draining(kind))
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

/// How many entries a page's first query of each of `shards` partitions
/// asks for, for a page of `limit` from a list without a filter expression.
///
/// `limit + 1` from each would read `shards` times the page, and every
/// read unit of it is paid: 4 shards of 21 orders are 4 read units where
/// the page needs 1. A page is settled once the matches known up to the
/// [`frontier`] exceed `limit`, which takes `(limit + 1) / shards` from each
/// shard when the newest entries spread evenly; the spread of `limit + 1`
/// entries over the shards is binomial, so about `sqrt(limit + 1)` more
/// cover all but a few pages in a thousand (for 20 over 4 shards, 12 each:
/// a second round on 0.4% of pages, by simulation). A page left short is
/// not wrong, only dearer: the next round asks each shard that may still
/// add for a page's worth, as before.
pub fn first_round_entries(limit: usize, shards: usize) -> usize {
    let page = limit + 1;
    if shards <= 1 {
        return page;
    }
    let spread = (page as f64).sqrt().ceil() as usize;
    (page.div_ceil(shards) + spread + 1).min(page)
}

/// The numeric `id` of an index item (every index sorts on it).
pub(crate) fn item_id(item: &Item) -> Result<u64, DbError> {
    match item.get("id") {
        Some(AttributeValue::N(id)) => id.parse().map_err(DbError::internal),
        _ => Err(DbError::internal("an index item without a numeric id")),
    }
}

/// Where an item sits in the list a page merges: what the list sorts on
/// and a cursor names. The index lists sort on the numeric `id`; an
/// endpoint's deliveries, on the base table, on their sort key.
pub(crate) trait Position: Ord + Clone {
    fn of(item: &Item) -> Result<Self, DbError>;
}

impl Position for u64 {
    fn of(item: &Item) -> Result<u64, DbError> {
        item_id(item)
    }
}

/// What the queries of one page found in one partition so far: its matches
/// in the list's order, and how far they have looked.
#[derive(Debug)]
pub(crate) struct PartitionRead<K = u64> {
    /// The matches found, in the list's order, each with its position.
    matches: Vec<(K, Item)>,
    /// The position of the last entry examined (DynamoDB's
    /// `LastEvaluatedKey`), once a query stopped before the partition's end.
    examined_to: Option<K>,
    /// Whether the queries reached the partition's end.
    done: bool,
}

impl<K> Default for PartitionRead<K> {
    fn default() -> Self {
        PartitionRead {
            matches: Vec::new(),
            examined_to: None,
            done: false,
        }
    }
}

impl<K: Position> PartitionRead<K> {
    /// Where this partition's next query starts: after the last entry
    /// examined, or after the page's cursor before any query.
    pub(crate) fn resume_after(&self, cursor: Option<K>) -> Option<K> {
        self.examined_to.clone().or(cursor)
    }

    /// The position of the last entry examined, while the partition is not
    /// at its end: the least advanced partitions are the page's frontier.
    pub(crate) fn examined_to(&self) -> Option<&K> {
        self.examined_to.as_ref().filter(|_| !self.done)
    }

    /// Whether another query of this partition could still add to the page:
    /// it has not reached its end, and holds no more than a page's worth
    /// (a page takes at most `limit` from any one partition).
    pub(crate) fn needs_more(&self, limit: usize) -> bool {
        !self.done && self.matches.len() <= limit
    }

    /// Adds one query's answer: the `items` that matched, and the position
    /// of the last entry it examined if it stopped before the partition's end.
    pub(crate) fn add(&mut self, items: Vec<Item>, examined_to: Option<K>) -> Result<(), DbError> {
        for item in items {
            self.matches.push((K::of(&item)?, item));
        }
        match examined_to {
            Some(position) => self.examined_to = Some(position),
            None => self.done = true,
        }
        Ok(())
    }
}

/// How far every partition has been examined: the least advanced examined
/// position of those not at their end; `None` once all are at their end.
/// Every match up to it, in the list's order, is known. Read only after each
/// partition had its first query (each needs one: [`PartitionRead::needs_more`]).
fn frontier<K: Position>(partitions: &[PartitionRead<K>], descending: bool) -> Option<K> {
    let open = partitions
        .iter()
        .filter(|p| !p.done)
        .filter_map(|p| p.examined_to.clone());
    if descending {
        open.max()
    } else {
        open.min()
    }
}

/// The matches known so far, in the list's order: those up to the
/// [`frontier`], the only ones no partition can still add to.
fn known<K: Position, T>(
    matches: impl Iterator<Item = (K, T)>,
    frontier: Option<&K>,
    descending: bool,
) -> Vec<(K, T)> {
    let reached = |position: &K| match frontier {
        None => true,
        Some(f) if descending => position >= f,
        Some(f) => position <= f,
    };
    let mut items: Vec<(K, T)> = matches.filter(|(position, _)| reached(position)).collect();
    items.sort_by(|(a, _), (b, _)| a.cmp(b));
    if descending {
        items.reverse();
    }
    // An entry moving between shards (a reshard's) shows twice for a
    // moment: once is enough.
    items.dedup_by(|(a, _), (b, _)| a == b);
    items
}

/// The partitions the next round trip queries: none once the reads so far
/// settle the page (every partition at its end, or more than `limit`
/// matches known: one more proves a next page); else those that may still
/// add to it.
pub(crate) fn next_round<K: Position>(
    partitions: &[PartitionRead<K>],
    limit: usize,
    descending: bool,
) -> Vec<usize> {
    let frontier = frontier(partitions, descending);
    let matches = partitions
        .iter()
        .flat_map(|p| p.matches.iter().map(|(position, _)| (position.clone(), ())));
    if known(matches, frontier.as_ref(), descending).len() > limit {
        return Vec::new();
    }
    (0..partitions.len())
        .filter(|i| partitions[*i].needs_more(limit))
        .collect()
}

/// The page the partitions' reads make, settled or not (a page whose round
/// trips ran out): the first `limit` known matches, and where the next page
/// starts. That is the last match returned when more are known; else the
/// [`frontier`], up to which every partition has been examined, so the next
/// page resumes each partition with nothing skipped and nothing returned
/// twice; none once every partition is at its end.
pub(crate) fn merge<K: Position>(
    partitions: Vec<PartitionRead<K>>,
    limit: usize,
    descending: bool,
) -> Page<Item, K> {
    let frontier = frontier(&partitions, descending);
    let matches = partitions.into_iter().flat_map(|p| p.matches);
    let mut items = known(matches, frontier.as_ref(), descending);
    let next_after = match items.len() > limit {
        true => items
            .get(limit.saturating_sub(1))
            .map(|(position, _)| position.clone()),
        false => frontier,
    };
    items.truncate(limit);
    Page {
        items: items.into_iter().map(|(_, item)| item).collect(),
        next_after,
    }
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

    /// What DynamoDB answers a query of `shard` (its ids, each with whether
    /// the filter keeps it) for `entries` entries after `after`: the kept
    /// ones, and the last id examined when `entries` were examined.
    fn answer(
        shard: &[(u64, bool)],
        entries: usize,
        after: Option<u64>,
        desc: bool,
    ) -> (Vec<Item>, Option<u64>) {
        let mut ids: Vec<(u64, bool)> = shard
            .iter()
            .copied()
            .filter(|(id, _)| after.is_none_or(|a| if desc { *id < a } else { *id > a }))
            .collect();
        ids.sort_unstable();
        if desc {
            ids.reverse();
        }
        ids.truncate(entries);
        let examined_to = (ids.len() == entries)
            .then(|| ids.last().map(|(id, _)| *id))
            .flatten();
        let kept = ids
            .iter()
            .filter(|(_, keep)| *keep)
            .map(|(id, _)| item(*id))
            .collect();
        (kept, examined_to)
    }

    /// One page as `Db::query_page_within` reads it, from shards in memory:
    /// the page and the queries it sent.
    fn page(
        shards: &[Vec<(u64, bool)>],
        limit: usize,
        after: Option<u64>,
        rounds: usize,
        desc: bool,
    ) -> Result<(Page<Item>, usize), DbError> {
        let mut reads: Vec<PartitionRead<u64>> =
            shards.iter().map(|_| PartitionRead::default()).collect();
        let mut queries = 0;
        for round in 0..rounds {
            let wanted = next_round(&reads, limit, desc);
            if wanted.is_empty() {
                break;
            }
            let entries = match round {
                0 => first_round_entries(limit, shards.len()),
                _ => limit + 1,
            };
            for i in wanted {
                let (items, examined_to) =
                    answer(&shards[i], entries, reads[i].resume_after(after), desc);
                reads[i].add(items, examined_to)?;
                queries += 1;
            }
        }
        Ok((merge(reads, limit, desc), queries))
    }

    #[test]
    fn paging_merged_shards_sees_every_match_once_in_order_in_bounded_pages() -> Result<(), DbError>
    {
        // Shard counts, limits, orders, round trips, and how often the
        // filter keeps an entry (1 in `every`): dense, sparse, none.
        let cases = [
            (1, 3, false, 10, 1),
            (4, 3, false, 10, 1),
            (7, 2, true, 10, 1),
            (32, 5, true, 10, 1),
            (1, 1, false, 10, 97),
            (1, 2, true, 3, 13),
            (4, 3, false, 2, 11),
            (7, 1, true, 1, 5),
            (32, 5, false, 10, 29),
            (3, 4, false, 10, 0),
        ];
        for (count, limit, desc, rounds, every) in cases {
            let mut shards = vec![Vec::new(); count];
            let all: Vec<u64> = (1..=400u64).map(|i| i * 7919 % 100_003).collect();
            for id in &all {
                let keep = every != 0 && id % every == 0;
                shards[usize::from(shard_of(*id, count as u16))].push((*id, keep));
            }
            let mut seen = Vec::new();
            let mut after = None;
            let mut pages = 0;
            loop {
                let (page, queries) = page(&shards, limit, after, rounds, desc)?;
                assert!(page.items.len() <= limit);
                assert!(queries <= rounds * count, "{queries} queries");
                seen.extend(ids(&page));
                pages += 1;
                assert!(pages <= all.len() + 1, "paging must end");
                match page.next_after {
                    Some(next) => {
                        assert!(
                            after.is_none_or(|a| if desc { next < a } else { next > a }),
                            "a cursor moves on"
                        );
                        after = Some(next);
                    }
                    None => break,
                }
            }
            let mut expected: Vec<u64> = all
                .iter()
                .copied()
                .filter(|id| every != 0 && id % every == 0)
                .collect();
            expected.sort_unstable();
            if desc {
                expected.reverse();
            }
            assert_eq!(
                seen, expected,
                "{count} shards, limit {limit}, 1 in {every}"
            );
        }
        Ok(())
    }

    #[test]
    fn a_page_that_ends_the_list_has_no_cursor() -> Result<(), DbError> {
        let dense = |ids: &[u64]| ids.iter().map(|id| (*id, true)).collect::<Vec<_>>();
        let (page_one, _) = page(&[dense(&[1, 3]), dense(&[2])], 3, None, 10, false)?;
        assert_eq!((ids(&page_one), page_one.next_after), (vec![1, 2, 3], None));
        let (page_two, _) = page(&[dense(&[1, 3]), dense(&[2, 4])], 3, None, 10, false)?;
        assert_eq!(
            (ids(&page_two), page_two.next_after),
            (vec![1, 2, 3], Some(3))
        );
        let (empty, _) = page(&[vec![], vec![]], 3, None, 10, true)?;
        assert_eq!((ids(&empty), empty.next_after), (vec![], None));
        Ok(())
    }

    #[test]
    fn a_page_whose_round_trips_run_out_resumes_where_every_shard_stopped() -> Result<(), DbError> {
        // One match at the end of one shard; the other shard has none.
        let sparse: Vec<(u64, bool)> = (1..=40).map(|id| (id * 2, id == 40)).collect();
        let none: Vec<(u64, bool)> = (1..=40).map(|id| (id * 2 + 1, false)).collect();
        let (first, queries) = page(&[sparse.clone(), none.clone()], 1, None, 3, false)?;
        // 3 rounds of a page's worth (2 entries) in each shard: the first
        // shard stopped at 12 (2, 4, ... 12), the other at 13; every entry
        // up to 12 is examined, and the next page resumes both after it
        // (and stops at 23, the second shard now the least advanced).
        assert_eq!(
            (ids(&first), first.next_after, queries),
            (vec![], Some(12), 6)
        );
        let (second, _) = page(
            &[sparse.clone(), none.clone()],
            1,
            first.next_after,
            3,
            false,
        )?;
        assert_eq!((ids(&second), second.next_after), (vec![], Some(23)));
        let (last, _) = page(&[sparse, none], 1, Some(72), 3, false)?;
        assert_eq!((ids(&last), last.next_after), (vec![80], None));
        Ok(())
    }

    #[test]
    fn a_first_round_reads_a_share_of_the_page_and_settles_nearly_every_page() -> Result<(), DbError>
    {
        assert_eq!(first_round_entries(20, 1), 21);
        assert_eq!(first_round_entries(20, 4), 12);
        assert_eq!(first_round_entries(1, 32), 2);
        // 20 newest of 400 orders over 4 shards, 200 stores: a second
        // round is rare (about 0.4%), and every page is the newest 20.
        let mut second_rounds = 0;
        for store in 0..200u64 {
            let mut shards = vec![Vec::new(); 4];
            for i in 1..=400u64 {
                let id = (store << 32) + i * 4099;
                shards[usize::from(shard_of(id, 4))].push((id, true));
            }
            let (page, queries) = page(&shards, 20, None, 10, true)?;
            let mut newest: Vec<u64> = shards.iter().flatten().map(|(id, _)| *id).collect();
            newest.sort_unstable_by(|a, b| b.cmp(a));
            newest.truncate(20);
            assert_eq!(ids(&page), newest);
            second_rounds += usize::from(queries > 4);
        }
        assert!(
            second_rounds <= 6,
            "{second_rounds} pages of 200 took a second round"
        );
        Ok(())
    }

    #[test]
    fn a_lowered_count_reads_every_shard_below_the_draining_one() {
        let shards = Shards {
            orders: 4,
            orders_draining: 32,
            ..Shards::default()
        };
        assert_eq!(shards.draining(Kind::Order), 32);
        assert_eq!(shards.keys(Kind::Order, "ORDER").len(), 32);
        // Written under the new count, read among the old range's keys.
        assert!(shards
            .keys(Kind::Order, "ORDER")
            .contains(&shards.key(Kind::Order, "ORDER", 42)));
        let settled = Shards {
            orders_draining: 2,
            ..shards
        };
        assert_eq!(settled.keys(Kind::Order, "ORDER").len(), 4);
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
        assert_eq!(shards.keys(Kind::Pet, "PET"), vec!["PET#0"]);
        assert!(shards
            .keys(Kind::Order, "ORDER")
            .contains(&shards.key(Kind::Order, "ORDER", 42)));
    }
}
