//! What DynamoDB bills a call, by its published rules, computed from the
//! items written and read (as [`crate::capture`] saw them) and from the
//! table's keys and index projections as `DescribeTable` gives them: so the
//! figures follow whatever layout the build under test created, and never
//! rest on DynamoDB Local's `ConsumedCapacity` (which counts each
//! transactional write, index copies included, twice).
//!
//! The rules, and where AWS states them:
//! - item size: each attribute's name (UTF-8 bytes) plus its value; a string
//!   its UTF-8 bytes, a number about one byte per two significant digits plus
//!   one, a boolean or null one byte, a list or map 3 bytes plus its elements
//!   and one byte each (Developer Guide, "Item sizes and formats",
//!   docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html);
//! - writes: one unit per KB of the larger of the item before and after,
//!   at least one; a conditional write whose condition fails still consumes
//!   the units of the item as it is (one if there is none) and writes no
//!   index (Developer Guide, "DynamoDB read and write operations",
//!   docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html);
//! - transactions: two units per KB, each item written twice, once to
//!   prepare and once to commit; a cancelled transaction has done the
//!   prepare, so we count one unit per KB of each item as it was (Developer
//!   Guide, "Amazon DynamoDB Transactions: How it works", "Capacity management
//!   for transactions", docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html);
//! - indexes: a table write writes an index only where the item's entry is
//!   created or deleted, where the index key changes (a delete and a put), or
//!   where a projected attribute changes (a put); each at one unit per KB of
//!   the entry (the table's and index's keys, the projected attributes, and
//!   100 bytes), never doubled by a transaction (Developer Guide, "Provisioned
//!   throughput considerations for Global Secondary Indexes",
//!   docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations);
//! - reads: `GetItem` one unit per 4 KB of the whole item (not of what a
//!   projection returns), half that eventually consistent, the same for an
//!   item that is not there; `BatchGetItem` each item rounded on its own;
//!   `Query` the sizes of the items it evaluated (before any filter) summed,
//!   then rounded up to 4 KB, at least one such step (read-write-operations.html).

use crate::client::Error;
use crate::dynamo::DynamoDb;
use serde_json::{json, Map, Value};

/// An item in DynamoDB's JSON (`{"PK": {"S": "PET#1"}, ...}`).
pub type Image = Map<String, Value>;

/// One item of a write: absent before (created) or after (deleted).
#[derive(Debug, Clone, Default)]
pub struct ItemChange {
    pub before: Option<Image>,
    pub after: Option<Image>,
}

/// What an index copies of an item besides the keys.
#[derive(Debug, Clone, PartialEq)]
pub enum Projected {
    All,
    KeysOnly,
    Include(Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Index {
    pub name: String,
    pub hash: String,
    pub range: Option<String>,
    pub projected: Projected,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub hash: String,
    /// `None` for a table keyed by its hash alone (the counter table).
    pub range: Option<String>,
    pub indexes: Vec<Index>,
}

/// One write landing on one partition: the table's (`scope` "table") or an
/// index's, and its write units.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionWrite {
    pub scope: String,
    pub partition: String,
    pub units: f64,
}

fn key_schema(schema: &Value) -> (Option<String>, Option<String>) {
    let of = |kind: &str| {
        schema
            .as_array()
            .into_iter()
            .flatten()
            .find(|k| k["KeyType"] == kind)
            .and_then(|k| k["AttributeName"].as_str())
            .map(str::to_string)
    };
    (of("HASH"), of("RANGE"))
}

impl Layout {
    /// The layout of `table` as DynamoDB describes it.
    pub async fn describe(dynamodb: &mut DynamoDb, table: &str) -> Result<Layout, Error> {
        let answer = dynamodb
            .call("DescribeTable", &json!({ "TableName": table }))
            .await?;
        Layout::from_description(&answer["Table"])
    }

    /// The same, asked again every 100 ms for up to 30 s while `table` is
    /// not there yet (a service that makes its tables after it listens).
    pub async fn describe_once_made(
        dynamodb: std::net::SocketAddr,
        table: &str,
    ) -> Result<Layout, Error> {
        let mut dynamodb = DynamoDb::new(dynamodb);
        let mut layout = Layout::describe(&mut dynamodb, table).await;
        for _ in 0..300 {
            if layout.is_ok() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            layout = Layout::describe(&mut dynamodb, table).await;
        }
        layout
    }

    pub fn from_description(table: &Value) -> Result<Layout, Error> {
        let (hash, range) = key_schema(&table["KeySchema"]);
        let indexes = table["GlobalSecondaryIndexes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|index| {
                let (hash, range) = key_schema(&index["KeySchema"]);
                let projection = &index["Projection"];
                let projected = match projection["ProjectionType"].as_str() {
                    Some("ALL") => Projected::All,
                    Some("KEYS_ONLY") => Projected::KeysOnly,
                    _ => Projected::Include(
                        projection["NonKeyAttributes"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|a| a.as_str().map(str::to_string))
                            .collect(),
                    ),
                };
                Ok(Index {
                    name: index["IndexName"]
                        .as_str()
                        .ok_or("index without name")?
                        .to_string(),
                    hash: hash.ok_or("index without hash key")?,
                    range,
                    projected,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(Layout {
            hash: hash.ok_or("table without hash key")?,
            range,
            indexes,
        })
    }

    /// The hash key attribute of `scope` (`table` or an index's name).
    pub fn hash_of(&self, scope: &str) -> Option<&str> {
        if scope == "table" {
            return Some(&self.hash);
        }
        let index = self.indexes.iter().find(|i| i.name == scope)?;
        Some(&index.hash)
    }

    /// Every partition write one item's change makes: the table's (a
    /// transaction's costs twice the units), and each index's. A write
    /// refused (its condition failed, or its transaction was cancelled)
    /// writes no index and consumes the item's units as it stood (a
    /// cancelled transaction its prepare phase: once, not twice).
    pub fn writes(
        &self,
        change: &ItemChange,
        transactional: bool,
        succeeded: bool,
    ) -> Vec<PartitionWrite> {
        let image = change.after.as_ref().or(change.before.as_ref());
        let Some(partition) = image.and_then(|i| key_value(i, &self.hash)) else {
            return Vec::new();
        };
        let size = [&change.before, &change.after]
            .iter()
            .filter_map(|i| i.as_ref().map(item_size))
            .max()
            .unwrap_or(0);
        let factor = if transactional && succeeded { 2.0 } else { 1.0 };
        let mut writes = vec![PartitionWrite {
            scope: "table".into(),
            partition,
            units: factor * write_units(size),
        }];
        if succeeded {
            for index in &self.indexes {
                writes.extend(self.index_writes(index, change));
            }
        }
        writes
    }

    /// What `change` writes on `index`: nothing, a put, a delete, both (the
    /// entry moved), or a rewrite when a projected attribute changed.
    fn index_writes(&self, index: &Index, change: &ItemChange) -> Vec<PartitionWrite> {
        let entry = |image: &Option<Image>| {
            let image = image.as_ref()?;
            index
                .range
                .as_ref()
                .map_or(Some(()), |r| image.get(r).map(|_| ()))?;
            Some((
                key_value(image, &index.hash)?,
                self.entry_size(index, image),
            ))
        };
        let write = |(partition, size): (String, usize)| PartitionWrite {
            scope: index.name.clone(),
            partition,
            units: write_units(size),
        };
        match (entry(&change.before), entry(&change.after)) {
            (None, None) => Vec::new(),
            (None, Some(new)) => vec![write(new)],
            (Some(old), None) => vec![write(old)],
            (Some(old), Some(new)) if old.0 != new.0 || self.moved(index, change) => {
                vec![write(old), write(new)]
            }
            (Some(_), Some(new)) if self.rewritten(index, change) => vec![write(new)],
            _ => Vec::new(),
        }
    }

    fn moved(&self, index: &Index, change: &ItemChange) -> bool {
        let range = |image: &Option<Image>| {
            let range = index.range.as_ref()?;
            image.as_ref()?.get(range).cloned()
        };
        range(&change.before) != range(&change.after)
    }

    fn rewritten(&self, index: &Index, change: &ItemChange) -> bool {
        let (Some(before), Some(after)) = (&change.before, &change.after) else {
            return false;
        };
        let differs = |name: &String| before.get(name) != after.get(name);
        match &index.projected {
            Projected::All => before != after,
            Projected::KeysOnly => false,
            Projected::Include(names) => names.iter().any(differs),
        }
    }

    /// An index entry's size: the table's and the index's keys, the
    /// projected attributes, and DynamoDB's 100 bytes of overhead.
    fn entry_size(&self, index: &Index, image: &Image) -> usize {
        let mut names = vec![&self.hash, &index.hash];
        names.extend(self.range.as_ref());
        names.extend(index.range.as_ref());
        let projected: Vec<&String> = match &index.projected {
            Projected::All => image.keys().collect(),
            Projected::KeysOnly => Vec::new(),
            Projected::Include(include) => include.iter().collect(),
        };
        names.extend(projected);
        names.sort();
        names.dedup();
        let sized = names
            .iter()
            .filter_map(|n| Some(attribute_size(n, image.get(*n)?)));
        100 + sized.sum::<usize>()
    }
}

/// A key attribute's value as text (`S` or `N`).
pub fn key_value(image: &Image, name: &str) -> Option<String> {
    let value = image.get(name)?;
    value["S"]
        .as_str()
        .or(value["N"].as_str())
        .map(str::to_string)
}

/// Write units of an item of `size` bytes: one per KB, at least one.
pub fn write_units(size: usize) -> f64 {
    size.div_ceil(1024).max(1) as f64
}

/// Read units of `size` bytes read at once (an item, or a query's items
/// summed): one per 4 KB, at least one; half that eventually consistent.
pub fn read_units(size: usize, consistent: bool) -> f64 {
    let units = size.div_ceil(4096).max(1) as f64;
    if consistent {
        units
    } else {
        units / 2.0
    }
}

/// An item's size by DynamoDB's rules: each attribute's name and value.
pub fn item_size(image: &Image) -> usize {
    image
        .iter()
        .map(|(name, value)| attribute_size(name, value))
        .sum()
}

fn attribute_size(name: &str, value: &Value) -> usize {
    name.len() + value_size(value)
}

fn value_size(value: &Value) -> usize {
    let Some((kind, v)) = value.as_object().and_then(|v| v.iter().next()) else {
        return 0;
    };
    let number = |n: &str| {
        // Leading and trailing zeros are not stored.
        let digits = n.trim_start_matches('-').replace('.', "");
        let significant = digits.trim_start_matches('0').trim_end_matches('0').len();
        significant.div_ceil(2) + 1
    };
    let strings = || v.as_array().into_iter().flatten().filter_map(Value::as_str);
    match kind.as_str() {
        "S" => v.as_str().map_or(0, str::len),
        "N" => v.as_str().map_or(1, number),
        // Base64 in JSON; the raw bytes are what count.
        "B" => v.as_str().map_or(0, |b| b.len() / 4 * 3),
        "BOOL" | "NULL" => 1,
        "SS" => strings().map(str::len).sum(),
        "NS" => strings().map(number).sum(),
        "L" => {
            3 + v
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| 1 + value_size(e))
                .sum::<usize>()
        }
        "M" => {
            let entries = v.as_object().into_iter().flatten();
            3 + entries
                .map(|(k, e)| 1 + attribute_size(k, e))
                .sum::<usize>()
        }
        _ => v.to_string().len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Layout 2's indexes (`shared/src/db/indexes.rs`): the lists carry the
    /// whole item, the inventory index a pet's `stock` and `status`.
    fn layout() -> Layout {
        let list = |name: &str| {
            json!({"IndexName": format!("{name}v2"),
                   "KeySchema": [{"AttributeName": format!("{name}PK"), "KeyType": "HASH"},
                                 {"AttributeName": "id", "KeyType": "RANGE"}],
                   "Projection": {"ProjectionType": "ALL"}})
        };
        let description = json!({
            "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
            "GlobalSecondaryIndexes": [
                list("GSI1"), list("GSI2"), list("GSI3"),
                {"IndexName": "GSI5", "KeySchema": [{"AttributeName": "GSI5PK", "KeyType": "HASH"}, {"AttributeName": "id", "KeyType": "RANGE"}],
                 "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["stock", "status"]}}
            ]
        });
        Layout::from_description(&description).expect("a layout")
    }

    fn image(value: Value) -> Option<Image> {
        value.as_object().cloned()
    }

    /// Pet 1's pet item as written with a stock item: its record and its
    /// lists' keys (all pets, by status: shard 0; its category).
    fn pet(status: &str) -> Option<Image> {
        image(json!({
            "PK": {"S": "PET#1"}, "SK": {"S": "PET"}, "id": {"N": "1"},
            "GSI1PK": {"S": "PET#0"}, "GSI2PK": {"S": format!("PET#STATUS#{status}#0")},
            "GSI3PK": {"S": "PET#CATEGORY#7"},
            "name": {"S": "Rex"}, "categoryId": {"N": "7"}, "status": {"S": status}
        }))
    }

    /// Pet 1's stock item (`shared/src/db/pets/stock.rs`): its stock, open
    /// orders, a copy of its status, and its inventory entry's key.
    fn stock(status: &str, stock: u32, open_orders: u32) -> Option<Image> {
        image(json!({
            "PK": {"S": "PET#1"}, "SK": {"S": "STOCK"}, "id": {"N": "1"},
            "GSI5PK": {"S": "PET#1"}, "status": {"S": status},
            "stock": {"N": stock.to_string()}, "openOrders": {"N": open_orders.to_string()}
        }))
    }

    /// Pet 1 as release 1.0.0 wrote it (and layout 1 still does): one item
    /// holding its record, its stock and its inventory entry.
    fn pet_holding_its_stock(status: &str, stock: u32, open_orders: u32) -> Option<Image> {
        let mut item = pet(status)?;
        item.insert("GSI5PK".into(), json!({"S": "PET#1"}));
        item.insert("stock".into(), json!({"N": stock.to_string()}));
        item.insert("openOrders".into(), json!({"N": open_orders.to_string()}));
        Some(item)
    }

    fn change(before: Option<Image>, after: Option<Image>) -> ItemChange {
        ItemChange { before, after }
    }

    fn scopes(writes: &[PartitionWrite]) -> Vec<(&str, &str)> {
        writes
            .iter()
            .map(|w| (w.scope.as_str(), w.partition.as_str()))
            .collect()
    }

    fn units(writes: &[PartitionWrite]) -> Vec<f64> {
        writes.iter().map(|w| w.units).collect()
    }

    /// An item of `bytes` bytes by the rules: one string attribute `d`.
    fn item_of(bytes: usize) -> Option<Image> {
        let value = "x".repeat(bytes - 1);
        json!({"d": {"S": value}}).as_object().cloned()
    }

    #[test]
    fn an_order_writes_its_pets_stock_item_and_inventory_entry_and_no_list() {
        let layout = layout();
        // Placed: a unit taken, an order open; the pet item is not written.
        let placed = change(stock("available", 5, 0), stock("available", 4, 1));
        let writes = layout.writes(&placed, true, true);
        assert_eq!(scopes(&writes), vec![("table", "PET#1"), ("GSI5", "PET#1")]);
        // The table write doubled by the transaction, the index's not.
        assert_eq!(units(&writes), vec![2.0, 1.0]);
        // Completed: only the open orders move, which GSI5 does not hold.
        let completed = change(stock("available", 4, 1), stock("available", 4, 0));
        assert_eq!(
            scopes(&layout.writes(&completed, true, true)),
            vec![("table", "PET#1")]
        );
    }

    #[test]
    fn a_pet_holding_its_stock_rewrites_every_list_entry_on_every_order() {
        // Why the stock has an item of its own: the lists carry the whole
        // item, so on the pet item an order's stock change rewrote the
        // pet's entry in each of them, on shared partitions.
        let placed = change(
            pet_holding_its_stock("available", 5, 0),
            pet_holding_its_stock("available", 4, 1),
        );
        assert_eq!(
            scopes(&layout().writes(&placed, true, true)),
            vec![
                ("table", "PET#1"),
                ("GSI1v2", "PET#0"),
                ("GSI2v2", "PET#STATUS#available#0"),
                ("GSI3v2", "PET#CATEGORY#7"),
                ("GSI5", "PET#1")
            ]
        );
    }

    #[test]
    fn a_status_move_writes_the_pet_item_and_its_lists_too() {
        let layout = layout();
        // The last unit ordered: the pet moves to pending, on both items in
        // one transaction; its status list entry moves (a delete and a put).
        let pet_item = change(pet("available"), pet("pending"));
        let stock_item = change(stock("available", 1, 0), stock("pending", 0, 1));
        assert_eq!(
            scopes(&layout.writes(&pet_item, true, true)),
            vec![
                ("table", "PET#1"),
                ("GSI1v2", "PET#0"),
                ("GSI2v2", "PET#STATUS#available#0"),
                ("GSI2v2", "PET#STATUS#pending#0"),
                ("GSI3v2", "PET#CATEGORY#7")
            ]
        );
        assert_eq!(
            scopes(&layout.writes(&stock_item, true, true)),
            vec![("table", "PET#1"), ("GSI5", "PET#1")]
        );
    }

    #[test]
    fn a_pet_is_created_and_deleted_with_its_stock_item() {
        let layout = layout();
        let (pet_item, stock_item) = (pet("available"), stock("available", 1, 0));
        // The pet item: the table and its three lists; the stock item: the
        // table and the inventory index.
        let created = [
            change(None, pet_item.clone()),
            change(None, stock_item.clone()),
        ];
        let deleted = [change(pet_item, None), change(stock_item, None)];
        for changes in [created, deleted] {
            let counts: Vec<usize> = changes
                .iter()
                .map(|c| layout.writes(c, true, true).len())
                .collect();
            assert_eq!(counts, vec![4, 2]);
        }
    }

    #[test]
    fn a_refused_write_consumes_the_item_as_it_stood_and_writes_no_index() {
        let layout = layout();
        let refused = change(stock("available", 5, 0), stock("available", 5, 0));
        let writes = layout.writes(&refused, false, false);
        assert_eq!(scopes(&writes), vec![("table", "PET#1")]);
        assert_eq!(writes[0].units, 1.0);
        // A cancelled transaction: its prepare phase, once.
        assert_eq!(layout.writes(&refused, true, false)[0].units, 1.0);
    }

    /// AWS's own worked examples (read-write-operations.html,
    /// transaction-apis.html).
    #[test]
    fn units_follow_aws_worked_examples() {
        // "A 3,500-byte item consumes the same throughput as a 4 KB one":
        // 1 unit strongly consistent, 0.5 eventually.
        assert_eq!(read_units(3500, true), 1.0);
        assert_eq!(read_units(3500, false), 0.5);
        // An 8 KB item: 2 units strongly, 1 eventually.
        assert_eq!(read_units(8 * 1024, true), 2.0);
        assert_eq!(read_units(8 * 1024, false), 1.0);
        // A 10 KB item is read as 12 KB.
        assert_eq!(read_units(10 * 1024, true), 3.0);
        // BatchGetItem of 1.5 KB and 6.5 KB: each rounded, 4 + 8 = 12 KB.
        let batch = read_units(1536, true) + read_units(6656, true);
        assert_eq!(batch, 3.0);
        // A Query sums first: 1.5 KB + 6.5 KB = 8 KB, 2 units.
        assert_eq!(read_units(1536 + 6656, true), 2.0);
        // Writes: 500 bytes, 1 unit; 3.5 KB, 4 units.
        assert_eq!(write_units(500), 1.0);
        assert_eq!(write_units(3584), 4.0);
        // A 1.5 KB item in a transaction: 2 KB, twice: 4 units.
        let change = ItemChange {
            before: None,
            after: item_of(1536),
        };
        let plain = Layout {
            hash: "d".into(),
            range: None,
            indexes: Vec::new(),
        };
        assert_eq!(plain.writes(&change, true, true)[0].units, 4.0);
        assert_eq!(plain.writes(&change, false, true)[0].units, 2.0);
    }

    #[test]
    fn sizes_follow_dynamodbs_rules() {
        let image = json!({"name": {"S": "Rex"}, "n": {"N": "12345"}, "b": {"BOOL": true},
                           "z": {"N": "1000"}});
        let image = image.as_object().cloned().unwrap_or_default();
        // "1000" has one significant digit: 1 byte + 1.
        assert_eq!(item_size(&image), (4 + 3) + (1 + 4) + (1 + 1) + (1 + 2));
        let nested = json!({"m": {"M": {"a": {"S": "xy"}}}, "l": {"L": [{"N": "7"}]}});
        let nested = nested.as_object().cloned().unwrap_or_default();
        assert_eq!(item_size(&nested), (1 + 3 + 1 + 1 + 2) + (1 + 3 + 1 + 2));
        assert_eq!(write_units(0), 1.0);
        assert_eq!(write_units(1025), 2.0);
    }
}
