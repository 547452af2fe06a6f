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

use crate::records::{HotPartition, MixRun, PartitionModel, ScopeLoad};
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

/// Each scope's load and the order rate its busiest partition allows;
/// `orders` is how many orders the replay placed.
pub fn scopes(layout: &Layout, load: &Load, orders: usize) -> Vec<ScopeLoad> {
    let orders = orders.max(1) as f64;
    let mut indexes: Vec<String> = layout.indexes.iter().map(|i| i.name.clone()).collect();
    indexes.sort();
    let names = std::iter::once("table".to_string()).chain(indexes);
    names
        .map(|scope| {
            let (writes, reads) = (load.writes.get(&scope), load.reads.get(&scope));
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
                scope,
            }
        })
        .collect()
}

/// The model of a replay: each scope's load, and where the first limit is.
pub fn model(layout: &Layout, captured: &Captured, mix: MixRun) -> PartitionModel {
    let load = Load::of(layout, captured);
    let scopes = scopes(layout, &load, mix.orders);
    let mut first: Option<(f64, String)> = None;
    for scope in &scopes {
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
            if first.as_ref().is_none_or(|(lowest, _)| ceiling < *lowest) {
                let which = format!("{kind} on {} {}", scope.scope, hot.partition);
                first = Some((ceiling, which));
            }
        }
    }
    let reads_per_order = mix.reads as f64 / mix.orders.max(1) as f64;
    PartitionModel {
        ceiling_orders_per_second: first.as_ref().map(|(ceiling, _)| *ceiling),
        ceiling_reads_per_second: first.as_ref().map(|(ceiling, _)| ceiling * reads_per_order),
        first_limit: first.map(|(_, which)| which),
        scopes,
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
