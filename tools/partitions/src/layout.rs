//! The data table's keys and indexes, as DynamoDB describes them, and what a
//! change to one item writes on each: the table's partition, and every index
//! whose entry the change creates, moves, rewrites or deletes, derived from
//! the index's key and projection exactly as DynamoDB decides it.
//!
//! Read from `DescribeTable`, not from the service's source, so the model
//! measures whatever layout the binary under test created (`make bench` on
//! an older build gives the "before" figures).

use crate::capture::{Image, ItemChange};
use crate::dynamo::DynamoDb;
use petstore_bench::client::Error;
use serde_json::{json, Value};

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
    pub range: String,
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
            range: range.ok_or("table without range key")?,
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
    /// transaction's costs twice the units), and each index's.
    pub fn writes(&self, change: &ItemChange, transactional: bool) -> Vec<PartitionWrite> {
        let image = change.after.as_ref().or(change.before.as_ref());
        let Some(partition) = image.and_then(|i| key_value(i, &self.hash)) else {
            return Vec::new();
        };
        let size = [&change.before, &change.after]
            .iter()
            .filter_map(|i| i.as_ref().map(item_size))
            .max()
            .unwrap_or(0);
        let factor = if transactional { 2.0 } else { 1.0 };
        let mut writes = vec![PartitionWrite {
            scope: "table".into(),
            partition,
            units: factor * units_of(size),
        }];
        for index in &self.indexes {
            writes.extend(self.index_writes(index, change));
        }
        writes
    }

    /// What `change` writes on `index`: nothing, a put, a delete, both (the
    /// entry moved), or a rewrite when a key or projected attribute changed.
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
            units: units_of(size),
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
        let mut names = vec![&self.hash, &self.range, &index.hash];
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
fn units_of(size: usize) -> f64 {
    size.div_ceil(1024).max(1) as f64
}

/// An item's size by DynamoDB's rules: each attribute's name and value.
pub fn item_size(image: &Image) -> usize {
    image
        .iter()
        .map(|(name, value)| attribute_size(name, value))
        .sum()
}

fn attribute_size(name: &str, value: &Value) -> usize {
    let size = match value.as_object().and_then(|v| v.iter().next()) {
        Some((kind, v)) => match kind.as_str() {
            "S" => v.as_str().map_or(0, str::len),
            // About one byte per two digits, plus one.
            "N" => v.as_str().map_or(1, |n| n.len().div_ceil(2) + 1),
            "BOOL" | "NULL" => 1,
            _ => v.to_string().len(),
        },
        None => 0,
    };
    name.len() + size
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        let description = json!({
            "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
            "GlobalSecondaryIndexes": [
                {"IndexName": "GSI1", "KeySchema": [{"AttributeName": "GSI1PK", "KeyType": "HASH"}, {"AttributeName": "id", "KeyType": "RANGE"}],
                 "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["status"]}},
                {"IndexName": "GSI2", "KeySchema": [{"AttributeName": "GSI2PK", "KeyType": "HASH"}, {"AttributeName": "id", "KeyType": "RANGE"}],
                 "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["status", "stock"]}}
            ]
        });
        Layout::from_description(&description).expect("a layout")
    }

    fn pet(status: &str, stock: u32) -> Option<Image> {
        json!({
            "PK": {"S": "PET#1"}, "SK": {"S": "PET"}, "id": {"N": "1"},
            "GSI1PK": {"S": "PET#0"}, "GSI2PK": {"S": format!("PET#STATUS#{status}#0")},
            "status": {"S": status}, "stock": {"N": stock.to_string()}, "openOrders": {"N": "0"}
        })
        .as_object()
        .cloned()
    }

    fn scopes(writes: &[PartitionWrite]) -> Vec<(&str, &str)> {
        writes
            .iter()
            .map(|w| (w.scope.as_str(), w.partition.as_str()))
            .collect()
    }

    #[test]
    fn an_index_is_written_only_when_its_key_or_a_projected_attribute_changes() {
        let layout = layout();
        let stock = ItemChange {
            before: pet("available", 5),
            after: pet("available", 4),
        };
        assert_eq!(
            scopes(&layout.writes(&stock, true)),
            vec![("table", "PET#1"), ("GSI2", "PET#STATUS#available#0")]
        );
        assert_eq!(layout.writes(&stock, true)[0].units, 2.0);
        let mut quiet = stock.clone();
        quiet.after = pet("available", 5);
        if let Some(after) = quiet.after.as_mut() {
            after.insert("openOrders".into(), json!({"N": "1"}));
        }
        assert_eq!(
            scopes(&layout.writes(&quiet, false)),
            vec![("table", "PET#1")]
        );
        let moved = ItemChange {
            before: pet("available", 1),
            after: pet("pending", 0),
        };
        assert_eq!(
            scopes(&layout.writes(&moved, false)),
            vec![
                ("table", "PET#1"),
                ("GSI1", "PET#0"),
                ("GSI2", "PET#STATUS#available#0"),
                ("GSI2", "PET#STATUS#pending#0")
            ]
        );
        let created = ItemChange {
            before: None,
            after: pet("sold", 0),
        };
        assert_eq!(layout.writes(&created, true).len(), 3);
        let deleted = ItemChange {
            before: pet("sold", 0),
            after: None,
        };
        assert_eq!(layout.writes(&deleted, true).len(), 3);
    }

    #[test]
    fn sizes_follow_dynamodbs_rules() {
        let image = json!({"name": {"S": "Rex"}, "n": {"N": "12345"}, "b": {"BOOL": true}});
        let image = image.as_object().cloned().unwrap_or_default();
        assert_eq!(item_size(&image), (4 + 3) + (1 + 4) + (1 + 1));
        assert_eq!(units_of(0), 1.0);
        assert_eq!(units_of(1025), 2.0);
    }
}
