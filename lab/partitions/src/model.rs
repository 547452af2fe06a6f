//! The partition-load model: every write and read the replayed mix made on
//! the data table, attributed to the partition key it landed on (index
//! writes derived from the projections, see [`petstore_bench::capacity`]), and the order
//! rate at which the busiest partition of the table or of each index would
//! reach DynamoDB's per-partition limits: 1,000 write units and 3,000 read
//! units a second.
//!
//! The loads scale with the order rate as the mix does: a partition that
//! took `w` write units over a replay of `n` orders takes `w / n` per order,
//! so it reaches its limit at `1000 n / w` orders a second.

use crate::records::{HotPartition, MixRun, PartitionModel, PatternLoad, ScopeLoad, WebhookLoad};
use petstore_bench::capacity::{key_value, Layout};
use petstore_bench::capture::{Captured, ReadCall};
use serde_json::Value;
use std::collections::BTreeMap;

/// DynamoDB's most write units a second on one partition.
pub const WRITE_LIMIT: f64 = 1000.0;
/// DynamoDB's most read units a second on one partition.
pub const READ_LIMIT: f64 = 3000.0;

/// Units by scope (`table` or an index) and partition key.
type Units = BTreeMap<String, BTreeMap<String, f64>>;

/// What the replay put on each partition.
#[derive(Debug, Default)]
pub struct Load {
    pub writes: Units,
    pub reads: Units,
}

fn add(units: &mut Units, scope: &str, partition: String, amount: f64) {
    let scope = units.entry(scope.to_string()).or_default();
    *scope.entry(partition).or_insert(0.0) += amount;
}

impl Load {
    /// Attributes every captured call's units to its partitions.
    pub fn of(layout: &Layout, captured: &Captured) -> Load {
        let mut load = Load::default();
        // Refused writes too: they consume units on the item's partition.
        for call in &captured.writes {
            for change in &call.items {
                for write in layout.writes(change, call.transactional, call.succeeded) {
                    add(&mut load.writes, &write.scope, write.partition, write.units);
                }
            }
        }
        for call in &captured.reads {
            for (scope, partition, units) in read_partitions(layout, call) {
                add(&mut load.reads, &scope, partition, units);
            }
        }
        load
    }
}

/// Whether a partition key is the webhooks': every webhooks item is keyed
/// `WEBHOOK…` (an endpoint and what it holds: its deliveries, its slots;
/// the key's count `WEBHOOKOWNER#<id>`), and so is every index entry of one
/// (the deliveries' entries, the lists the fan-out reads: `WEBHOOKSTAFF`,
/// `WEBHOOKOWNER#<id>`), and no other item is (the bench's proxy tells the
/// webhooks' calls apart the same way). Whatever keys the code writes under
/// that prefix are the webhooks', so a new layout is attributed as it is.
pub fn is_webhooks_partition(partition: &str) -> bool {
    partition.starts_with("WEBHOOK")
}

/// `units` split in two: the store's partitions, and the webhooks'.
fn split_units(units: Units) -> (Units, Units) {
    let (mut store, mut webhooks) = (Units::new(), Units::new());
    for (scope, partitions) in units {
        let (theirs, ours): (BTreeMap<_, _>, BTreeMap<_, _>) = partitions
            .into_iter()
            .partition(|(partition, _)| is_webhooks_partition(partition));
        if !ours.is_empty() {
            store.insert(scope.clone(), ours);
        }
        if !theirs.is_empty() {
            webhooks.insert(scope, theirs);
        }
    }
    (store, webhooks)
}

impl Load {
    /// The load split in two: on the store's partitions, and on the
    /// webhooks' ([`is_webhooks_partition`]).
    pub fn split(self) -> (Load, Load) {
        let (store_writes, webhook_writes) = split_units(self.writes);
        let (store_reads, webhook_reads) = split_units(self.reads);
        let store = Load {
            writes: store_writes,
            reads: store_reads,
        };
        let webhooks = Load {
            writes: webhook_writes,
            reads: webhook_reads,
        };
        (store, webhooks)
    }
}

/// A partition key with its ids and shard numbers named, as the docs name
/// keys: `WEBHOOK#375933275725741#3` is `WEBHOOK#<id>#<n>`. A number of six
/// digits or more is an id (the allocator's are fifteen or more), a shorter
/// one a shard's number.
pub fn pattern(partition: &str) -> String {
    partition
        .split('#')
        .map(|part| {
            let digits = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
            match (digits, part.len()) {
                (true, 6..) => "<id>",
                (true, _) => "<n>",
                (false, _) => part,
            }
        })
        .collect::<Vec<_>>()
        .join("#")
}

/// The partitions one read call read, and the units each took: a query's
/// one partition, an item's, or a batch's items sharing its units.
fn read_partitions(layout: &Layout, call: &ReadCall) -> Vec<(String, String, f64)> {
    let request = &call.request;
    match call.operation.as_str() {
        "Query" => {
            let scope = request["IndexName"].as_str().unwrap_or("table");
            let partition = layout
                .hash_of(scope)
                .and_then(|hash| query_partition(request, hash));
            let units = call.units;
            partition.map_or_else(Vec::new, |p| vec![(scope.to_string(), p, units)])
        }
        // A scan reads consecutive entries of one physical partition, not
        // the partitions of the keys it returns: its units go to where it
        // started, so every first page of a scanned list lands on one place,
        // as in DynamoDB.
        "Scan" => {
            let scope = request["IndexName"].as_str().unwrap_or("table");
            let start = layout
                .hash_of(scope)
                .and_then(|hash| key_of(&request["ExclusiveStartKey"], hash))
                .unwrap_or_else(|| "its start".to_string());
            vec![(scope.to_string(), format!("scan from {start}"), call.units)]
        }
        "GetItem" => key_of(&request["Key"], &layout.hash)
            .map(|p| vec![("table".to_string(), p, call.units)])
            .unwrap_or_default(),
        "BatchGetItem" => {
            let keys: Vec<String> = request["RequestItems"]
                .as_object()
                .into_iter()
                .flat_map(|tables| tables.values())
                .flat_map(|table| table["Keys"].as_array().cloned().unwrap_or_default())
                .filter_map(|key| key_of(&key, &layout.hash))
                .collect();
            let units = call.units / keys.len().max(1) as f64;
            keys.into_iter()
                .map(|p| ("table".to_string(), p, units))
                .collect()
        }
        _ => Vec::new(),
    }
}

fn key_of(key: &Value, hash: &str) -> Option<String> {
    key_value(key.as_object()?, hash)
}

/// The value a query's key condition gives the hash key `hash`.
fn query_partition(request: &Value, hash: &str) -> Option<String> {
    let condition = request["KeyConditionExpression"].as_str()?;
    let names = &request["ExpressionAttributeNames"];
    condition
        .split(" AND ")
        .filter_map(|clause| clause.split_once('='))
        .map(|(name, value)| (name.trim(), value.trim()))
        .find(|(name, _)| names[*name].as_str().unwrap_or(name) == hash)
        .and_then(|(_, placeholder)| {
            let value = &request["ExpressionAttributeValues"][placeholder];
            value["S"]
                .as_str()
                .or(value["N"].as_str())
                .map(str::to_string)
        })
}

/// The busiest partition of `units`, and its share of their sum.
fn hottest(units: Option<&BTreeMap<String, f64>>) -> Option<HotPartition> {
    let units = units?;
    let total: f64 = units.values().sum();
    let (partition, most) = units
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1).then_with(|| b.0.cmp(a.0)))?;
    Some(HotPartition {
        partition: partition.clone(),
        units: *most,
        share: if total > 0.0 { most / total } else { 0.0 },
    })
}

/// The table, then each index by name.
fn scope_names(layout: &Layout) -> Vec<String> {
    let mut indexes: Vec<String> = layout.indexes.iter().map(|i| i.name.clone()).collect();
    indexes.sort();
    std::iter::once("table".to_string())
        .chain(indexes)
        .collect()
}

/// The load of `writes` and `reads` (units by partition), and the order
/// rate its busiest partition allows over `orders` orders.
fn scope_load(
    scope: &str,
    writes: Option<&BTreeMap<String, f64>>,
    reads: Option<&BTreeMap<String, f64>>,
    orders: f64,
) -> ScopeLoad {
    let (hottest_write, hottest_read) = (hottest(writes), hottest(reads));
    let ceiling = |hot: &Option<HotPartition>, limit: f64| {
        let hot = hot.as_ref().filter(|h| h.units > 0.0)?;
        Some(limit * orders / hot.units)
    };
    ScopeLoad {
        partitions_written: writes.map_or(0, BTreeMap::len),
        write_units: writes.map_or(0.0, |w| w.values().sum()),
        partitions_read: reads.map_or(0, BTreeMap::len),
        read_units: reads.map_or(0.0, |r| r.values().sum()),
        write_ceiling_orders_per_second: ceiling(&hottest_write, WRITE_LIMIT),
        read_ceiling_orders_per_second: ceiling(&hottest_read, READ_LIMIT),
        hottest_write,
        hottest_read,
        scope: scope.to_string(),
    }
}

/// Each scope's load and the order rate its busiest partition allows;
/// `orders` is how many orders the replay placed.
pub fn scopes(layout: &Layout, load: &Load, orders: usize) -> Vec<ScopeLoad> {
    let orders = orders.max(1) as f64;
    scope_names(layout)
        .iter()
        .map(|scope| scope_load(scope, load.writes.get(scope), load.reads.get(scope), orders))
        .collect()
}

/// Each scope's load by pattern of partition key ([`pattern`]): the
/// partitions of one kind (every endpoint's `WEBHOOK#<id>`, say) together,
/// the busiest of them, and the order rate it allows. Only the scopes and
/// patterns that took load.
pub fn patterns(layout: &Layout, load: &Load, orders: usize) -> Vec<PatternLoad> {
    let orders = orders.max(1) as f64;
    let of = |units: Option<&BTreeMap<String, f64>>, wanted: &str| {
        let units = units.into_iter().flatten();
        let kept = units.filter(|(partition, _)| pattern(partition) == wanted);
        kept.map(|(partition, units)| (partition.clone(), *units))
            .collect::<BTreeMap<_, _>>()
    };
    let mut rows = Vec::new();
    for scope in scope_names(layout) {
        let (writes, reads) = (load.writes.get(&scope), load.reads.get(&scope));
        let keys = writes.into_iter().chain(reads).flat_map(BTreeMap::keys);
        let found: std::collections::BTreeSet<String> = keys.map(|p| pattern(p)).collect();
        for wanted in found {
            let some = |units: BTreeMap<String, f64>| (!units.is_empty()).then_some(units);
            let (writes, reads) = (some(of(writes, &wanted)), some(of(reads, &wanted)));
            let load = scope_load(&scope, writes.as_ref(), reads.as_ref(), orders);
            rows.push(PatternLoad {
                pattern: wanted,
                load,
            });
        }
    }
    rows
}

/// The lowest order rate among `loads`' busiest partitions, with which
/// limit it is (`writes` or `reads`), on which scope and partition.
fn first_limit<'a>(
    loads: impl Iterator<Item = &'a ScopeLoad>,
) -> Option<(f64, &'static str, &'a ScopeLoad, &'a HotPartition)> {
    let mut first: Option<(f64, &str, &ScopeLoad, &HotPartition)> = None;
    for scope in loads {
        let limits = [
            (
                scope.write_ceiling_orders_per_second,
                "writes",
                &scope.hottest_write,
            ),
            (
                scope.read_ceiling_orders_per_second,
                "reads",
                &scope.hottest_read,
            ),
        ];
        for (ceiling, kind, hot) in limits {
            let (Some(ceiling), Some(hot)) = (ceiling, hot) else {
                continue;
            };
            if first.as_ref().is_none_or(|(lowest, ..)| ceiling < *lowest) {
                first = Some((ceiling, kind, scope, hot));
            }
        }
    }
    first
}

/// What the replay did with webhooks, beside the captured calls.
#[derive(Debug, Default)]
pub struct WebhookRun {
    pub staff_endpoints: usize,
    pub customer_endpoints: usize,
    /// What the receiver was sent while the mix ran: deliveries (distinct
    /// endpoint and event) and requests (every attempt).
    pub deliveries: usize,
    pub attempts: usize,
    /// Deliveries the endpoints' lists showed at the end, and how many of
    /// them were not `delivered`.
    pub listed: usize,
    pub undelivered: usize,
    /// Ids the partition keys may carry, and whose they are (`the staff
    /// endpoint`, `a customer key`): the endpoints' and their keys'.
    pub names: Vec<(u64, String)>,
}

/// Whose partition `partition` is, by the first id in it that `names` knows.
fn whose<'a>(partition: &str, names: &'a [(u64, String)]) -> Option<&'a str> {
    partition.split('#').find_map(|part| {
        let id: u64 = part.parse().ok()?;
        let (_, name) = names.iter().find(|(known, _)| *known == id)?;
        Some(name.as_str())
    })
}

/// The webhooks' partitions by pattern, and the first limit among them.
fn webhook_load(layout: &Layout, load: &Load, orders: usize, run: WebhookRun) -> WebhookLoad {
    let partitions = patterns(layout, load, orders);
    let first =
        first_limit(partitions.iter().map(|p| &p.load)).map(|(ceiling, kind, scope, hot)| {
            let whose =
                whose(&hot.partition, &run.names).map_or_else(String::new, |w| format!(", {w}'s"));
            let which = format!(
                "{kind} on {} {} (`{}`{whose})",
                scope.scope,
                hot.partition,
                pattern(&hot.partition)
            );
            (ceiling, which)
        });
    WebhookLoad {
        staff_endpoints: run.staff_endpoints,
        customer_endpoints: run.customer_endpoints,
        deliveries: run.deliveries,
        attempts: run.attempts,
        deliveries_per_order: run.deliveries as f64 / orders.max(1) as f64,
        listed: run.listed,
        undelivered: run.undelivered,
        ceiling_orders_per_second: first.as_ref().map(|(ceiling, _)| *ceiling),
        first_limit: first.map(|(_, which)| which),
        partitions,
    }
}

/// The model of a replay: each scope's load on the store's partitions, and
/// where the first limit is; the webhooks' partitions apart, with theirs.
pub fn model(layout: &Layout, captured: &Captured, mix: MixRun, run: WebhookRun) -> PartitionModel {
    let (load, webhook) = Load::of(layout, captured).split();
    let scopes = scopes(layout, &load, mix.orders);
    let first = first_limit(scopes.iter()).map(|(ceiling, kind, scope, hot)| {
        (
            ceiling,
            format!("{kind} on {} {}", scope.scope, hot.partition),
        )
    });
    let webhooks = webhook_load(layout, &webhook, mix.orders, run);
    let reads_per_order = mix.reads as f64 / mix.orders.max(1) as f64;
    PartitionModel {
        ceiling_orders_per_second: first.as_ref().map(|(ceiling, _)| *ceiling),
        ceiling_reads_per_second: first.as_ref().map(|(ceiling, _)| ceiling * reads_per_order),
        first_limit: first.map(|(_, which)| which),
        scopes,
        webhooks,
        mix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_query_reads_the_partition_its_key_condition_names() {
        let request = json!({
            "IndexName": "GSI2",
            "KeyConditionExpression": "#pk = :pk AND id > :after",
            "ExpressionAttributeNames": {"#pk": "GSI2PK"},
            "ExpressionAttributeValues": {":pk": {"S": "PET#STATUS#available#3"}, ":after": {"N": "7"}}
        });
        let partition = query_partition(&request, "GSI2PK");
        assert_eq!(partition.as_deref(), Some("PET#STATUS#available#3"));
        let plain = json!({"KeyConditionExpression": "GSI1PK = :p AND id = :id",
                           "ExpressionAttributeValues": {":p": {"S": "APIKEY"}}});
        assert_eq!(query_partition(&plain, "GSI1PK").as_deref(), Some("APIKEY"));
    }

    #[test]
    fn a_partition_is_named_by_its_pattern() {
        assert_eq!(pattern("WEBHOOK#375933275725741#3"), "WEBHOOK#<id>#<n>");
        assert_eq!(
            pattern("WEBHOOKDELIVERY#375933275725741"),
            "WEBHOOKDELIVERY#<id>"
        );
        assert_eq!(pattern("WEBHOOKSTAFF"), "WEBHOOKSTAFF");
        assert_eq!(
            pattern("PET#STATUS#available#12"),
            "PET#STATUS#available#<n>"
        );
    }

    fn layout_with(index: &str) -> Layout {
        Layout {
            hash: "PK".into(),
            range: Some("SK".into()),
            indexes: vec![petstore_bench::capacity::Index {
                name: index.into(),
                hash: format!("{index}PK"),
                range: None,
                projected: petstore_bench::capacity::Projected::KeysOnly,
            }],
        }
    }

    #[test]
    fn the_webhooks_partitions_are_modelled_apart_with_their_first_limit() {
        let (staff, customer) = (375933275725741_u64, 375933275725999_u64);
        let mut load = Load::default();
        add(&mut load.writes, "table", "ORDER#7".into(), 100.0);
        add(
            &mut load.writes,
            "table",
            format!("WEBHOOK#{staff}#0"),
            300.0,
        );
        add(
            &mut load.writes,
            "table",
            format!("WEBHOOK#{staff}#1"),
            100.0,
        );
        add(
            &mut load.writes,
            "table",
            format!("WEBHOOK#{customer}#0"),
            20.0,
        );
        add(
            &mut load.writes,
            "GSI3",
            format!("WEBHOOKDELIVERY#{staff}"),
            50.0,
        );
        add(&mut load.reads, "GSI3", "WEBHOOKSTAFF".into(), 30.0);
        let layout = layout_with("GSI3");
        let (store, webhooks) = load.split();
        // The store's rows keep only the store's partitions.
        let scopes = scopes(&layout, &store, 100);
        let table = scopes[0]
            .hottest_write
            .as_ref()
            .map(|h| h.partition.as_str());
        assert_eq!(table, Some("ORDER#7"));
        assert_eq!(scopes[0].write_units, 100.0);
        let run = WebhookRun {
            names: vec![(staff, "the staff endpoint".into())],
            ..WebhookRun::default()
        };
        let modelled = webhook_load(&layout, &webhooks, 100, run);
        let rows: Vec<(&str, &str, usize)> = modelled
            .partitions
            .iter()
            .map(|p| {
                (
                    p.load.scope.as_str(),
                    p.pattern.as_str(),
                    p.load.partitions_written,
                )
            })
            .collect();
        let expected = [
            ("table", "WEBHOOK#<id>#<n>", 3),
            ("GSI3", "WEBHOOKDELIVERY#<id>", 1),
            ("GSI3", "WEBHOOKSTAFF", 0),
        ];
        assert_eq!(rows, expected);
        // 3 write units an order on the staff endpoint's first shard.
        let ceiling = modelled.ceiling_orders_per_second.unwrap_or_default();
        assert!((ceiling - 1000.0 / 3.0).abs() < 1e-9, "{ceiling}");
        let which =
            format!("writes on table WEBHOOK#{staff}#0 (`WEBHOOK#<id>#<n>`, the staff endpoint's)");
        assert_eq!(modelled.first_limit.as_deref(), Some(which.as_str()));
    }

    #[test]
    fn the_busiest_partition_sets_the_ceiling() {
        let mut load = Load::default();
        add(&mut load.writes, "GSI1", "ORDER#0".into(), 150.0);
        add(&mut load.writes, "GSI1", "ORDER#1".into(), 50.0);
        add(&mut load.reads, "GSI1", "ORDER#0".into(), 30.0);
        let layout = Layout {
            hash: "PK".into(),
            range: Some("SK".into()),
            indexes: Vec::new(),
        };
        let layout = Layout {
            indexes: vec![petstore_bench::capacity::Index {
                name: "GSI1".into(),
                hash: "GSI1PK".into(),
                range: None,
                projected: petstore_bench::capacity::Projected::KeysOnly,
            }],
            ..layout
        };
        let scopes = scopes(&layout, &load, 100);
        let gsi1 = &scopes[1];
        let hot = gsi1
            .hottest_write
            .as_ref()
            .map(|h| (h.partition.as_str(), h.share));
        assert_eq!(hot, Some(("ORDER#0", 0.75)));
        // 1.5 units per order on ORDER#0: 1,000 / 1.5 orders a second.
        let close = |x: Option<f64>, y: f64| x.is_some_and(|x| (x - y).abs() < 1e-9);
        assert!(close(gsi1.write_ceiling_orders_per_second, 1000.0 / 1.5));
        assert!(close(gsi1.read_ceiling_orders_per_second, 3000.0 / 0.3));
        assert_eq!(scopes[0].write_ceiling_orders_per_second, None);
    }
}
