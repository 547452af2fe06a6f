//! A [`Tap`] on the counting proxy that sees what DynamoDB bills: every
//! write with each item it wrote as it was before and after (read from
//! DynamoDB around the write, so index writes follow from the projections),
//! and every read with the read units DynamoDB's rules give it, from the
//! items it read (read again, whole, straight from DynamoDB, when taken:
//! a projection or a filter does not lower what a read consumes, and the
//! request being counted never waits for those reads). [`crate::capacity`]
//! turns both into units. Used by the bench's call counts (`calls.rs`) and
//! the partition model (`lab/partitions`).
//!
//! The images are exact as long as no two writes to one item overlap: the
//! counts send one request at a time, and the partition model's workers
//! each write their own items.

use crate::capacity::{item_size, read_units, Image, ItemChange, Layout};
use crate::client::Error;
use crate::dynamo::DynamoDb;
use crate::proxy::Tap;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// One write call on one table (a transaction over two tables is two).
#[derive(Debug, Clone)]
pub struct WriteCall {
    pub table: String,
    /// A `TransactWriteItems`, whose table writes cost twice the units.
    pub transactional: bool,
    /// Whether DynamoDB accepted it (a refused one wrote nothing).
    pub succeeded: bool,
    pub items: Vec<ItemChange>,
}

/// One read call on one table, as sent, with its units by the rules.
#[derive(Debug, Clone)]
pub struct ReadCall {
    pub table: String,
    /// `Query`, `GetItem` or `BatchGetItem`.
    pub operation: String,
    pub request: Value,
    pub units: f64,
}

/// Everything captured since the last take.
#[derive(Debug, Default)]
pub struct Captured {
    pub writes: Vec<WriteCall>,
    pub reads: Vec<ReadCall>,
}

/// What the calls left until the next take: the reads' units are found then.
#[derive(Default)]
struct Seen {
    writes: Vec<WriteCall>,
    reads: Vec<(String, Value)>,
}

const READS: &[&str] = &["GetItem", "BatchGetItem", "Query", "Scan"];

/// A write about to be sent: which items it touches, by table.
pub struct PendingWrite {
    transactional: bool,
    keys: BTreeMap<String, Vec<Value>>,
    before: BTreeMap<String, Vec<Option<Image>>>,
}

/// The capture of the calls on the tables it knows, shared by the proxy's
/// connections.
pub struct Capture {
    tables: BTreeMap<String, Layout>,
    upstream: tokio::sync::Mutex<DynamoDb>,
    seen: std::sync::Mutex<Seen>,
}

impl Capture {
    /// Captures the calls on `tables` (name and layout); reads the items
    /// from `upstream` (DynamoDB itself, not the proxy).
    pub fn new(tables: Vec<(String, Layout)>, upstream: SocketAddr) -> Capture {
        Capture {
            tables: tables.into_iter().collect(),
            upstream: tokio::sync::Mutex::new(DynamoDb::new(upstream)),
            seen: Default::default(),
        }
    }

    /// `tables` as DynamoDB at `upstream` describes them.
    pub async fn of_tables(tables: &[&str], upstream: SocketAddr) -> Result<Capture, Error> {
        let mut dynamodb = DynamoDb::new(upstream);
        let mut layouts = Vec::new();
        for table in tables {
            layouts.push((
                table.to_string(),
                Layout::describe(&mut dynamodb, table).await?,
            ));
        }
        Ok(Capture::new(layouts, upstream))
    }

    pub fn layout(&self, table: &str) -> Option<&Layout> {
        self.tables.get(table)
    }

    /// What was captured since the last take, the reads' units found now.
    pub async fn take(&self) -> Result<Captured, Error> {
        let seen = std::mem::take(&mut *self.lock());
        let mut reads = Vec::new();
        for (operation, request) in seen.reads {
            for (table, units) in self.read_units(&operation, &request).await? {
                let (operation, request) = (operation.clone(), request.clone());
                reads.push(ReadCall {
                    table,
                    operation,
                    request,
                    units,
                });
            }
        }
        Ok(Captured {
            writes: seen.writes,
            reads,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The keys of the items a write call changes, by table (none for a
    /// read, a condition check, or a table it does not know).
    fn written_keys(&self, operation: &str, request: &Value) -> BTreeMap<String, Vec<Value>> {
        let mut keys: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        let mut add = |table: &Value, key: Option<Value>| {
            let (Some(table), Some(key)) = (table.as_str(), key) else {
                return;
            };
            keys.entry(table.to_string()).or_default().push(key);
        };
        match operation {
            "PutItem" => add(
                &request["TableName"],
                self.key_of(&request["TableName"], &request["Item"]),
            ),
            "UpdateItem" | "DeleteItem" => add(&request["TableName"], Some(request["Key"].clone())),
            "TransactWriteItems" => {
                for item in request["TransactItems"].as_array().into_iter().flatten() {
                    let (put, update, delete) = (&item["Put"], &item["Update"], &item["Delete"]);
                    if put.is_object() {
                        add(
                            &put["TableName"],
                            self.key_of(&put["TableName"], &put["Item"]),
                        );
                    } else if update.is_object() {
                        add(&update["TableName"], Some(update["Key"].clone()));
                    } else if delete.is_object() {
                        add(&delete["TableName"], Some(delete["Key"].clone()));
                    }
                }
            }
            "BatchWriteItem" => {
                let tables = request["RequestItems"].as_object().into_iter().flatten();
                for (table, writes) in tables {
                    let table = Value::from(table.as_str());
                    for write in writes.as_array().into_iter().flatten() {
                        let (put, delete) = (&write["PutRequest"], &write["DeleteRequest"]);
                        if put.is_object() {
                            add(&table, self.key_of(&table, &put["Item"]));
                        } else if delete.is_object() {
                            add(&table, Some(delete["Key"].clone()));
                        }
                    }
                }
            }
            _ => {}
        }
        keys.retain(|table, _| self.tables.contains_key(table));
        keys
    }

    fn key_of(&self, table: &Value, item: &Value) -> Option<Value> {
        let layout = self.tables.get(table.as_str()?)?;
        let mut key = json!({ layout.hash.as_str(): item[&layout.hash] });
        if let Some(range) = &layout.range {
            key[range] = item[range].clone();
        }
        Some(key)
    }

    /// The items at `keys` of `table`, read consistently, in the order of `keys`.
    async fn images(&self, table: &str, keys: &[Value]) -> Result<Vec<Option<Image>>, Error> {
        let Some(layout) = self.tables.get(table) else {
            return Ok(vec![None; keys.len()]);
        };
        let mut found = Vec::new();
        for chunk in keys.chunks(100) {
            let request = json!({
                "RequestItems": { table: { "Keys": chunk, "ConsistentRead": true } }
            });
            let answer = self
                .upstream
                .lock()
                .await
                .call("BatchGetItem", &request)
                .await?;
            found.extend(
                answer["Responses"][table]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
            );
        }
        let same = |item: &Value, key: &Value| {
            item[&layout.hash] == key[&layout.hash]
                && layout.range.as_ref().is_none_or(|r| item[r] == key[r])
        };
        Ok(keys
            .iter()
            .map(|key| {
                found
                    .iter()
                    .find(|item| same(item, key))
                    .and_then(|item| item.as_object().cloned())
            })
            .collect())
    }

    /// The read units of a read call by the rules, by table: every item it
    /// read, whole, or (a query) every item it evaluated.
    async fn read_units(
        &self,
        operation: &str,
        request: &Value,
    ) -> Result<Vec<(String, f64)>, Error> {
        let consistent = |r: &Value| r["ConsistentRead"].as_bool().unwrap_or(false);
        let table = request["TableName"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        match operation {
            "GetItem" if self.tables.contains_key(&table) => {
                let image = self
                    .images(&table, std::slice::from_ref(&request["Key"]))
                    .await?;
                let size = image
                    .first()
                    .cloned()
                    .flatten()
                    .map_or(0, |i| item_size(&i));
                Ok(vec![(table, read_units(size, consistent(request)))])
            }
            "BatchGetItem" => {
                let mut units = Vec::new();
                let tables = request["RequestItems"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                for (table, read) in tables {
                    let keys = read["Keys"].as_array().cloned().unwrap_or_default();
                    let images = self.images(&table, &keys).await?;
                    let sizes = images.iter().map(|i| i.as_ref().map_or(0, item_size));
                    let sum = sizes.map(|size| read_units(size, consistent(&read))).sum();
                    units.push((table, sum));
                }
                Ok(units)
            }
            "Query" | "Scan" if self.tables.contains_key(&table) => {
                let whole = evaluated(request);
                let answer = self.upstream.lock().await.call(operation, &whole).await?;
                let items = answer["Items"].as_array().into_iter().flatten();
                let size = items.filter_map(Value::as_object).map(item_size).sum();
                Ok(vec![(table, read_units(size, consistent(request)))])
            }
            _ => Ok(Vec::new()),
        }
    }
}

/// A query (or scan) that returns every item the original evaluated, whole:
/// the same key condition, start and limit (which counts items before any
/// filter), with no filter and no projection.
fn evaluated(request: &Value) -> Value {
    let keep = [
        "TableName",
        "IndexName",
        "KeyConditionExpression",
        "ExclusiveStartKey",
        "Limit",
        "ScanIndexForward",
        "ConsistentRead",
    ];
    let mut whole = Map::new();
    for field in keep {
        if let Some(value) = request.get(field) {
            whole.insert(field.to_string(), value.clone());
        }
    }
    // Only the placeholders the key condition uses: DynamoDB refuses unused ones.
    let condition = request["KeyConditionExpression"]
        .as_str()
        .unwrap_or_default();
    let used: Vec<&str> = condition
        .split(|c: char| !(c.is_alphanumeric() || c == '#' || c == ':' || c == '_'))
        .collect();
    for field in ["ExpressionAttributeNames", "ExpressionAttributeValues"] {
        let placeholders = request[field].as_object().into_iter().flatten();
        let kept: Map<String, Value> = placeholders
            .filter(|(name, _)| used.contains(&name.as_str()))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        if !kept.is_empty() {
            whole.insert(field.to_string(), Value::Object(kept));
        }
    }
    Value::Object(whole)
}

impl Tap for Capture {
    /// The call's items as they were, if it writes a known table.
    type Pending = Option<PendingWrite>;

    /// Before a call: if it writes a known table, its items as they are now.
    async fn before(&self, operation: &str, request: &Value) -> Result<Self::Pending, Error> {
        let keys = self.written_keys(operation, request);
        if keys.is_empty() {
            return Ok(None);
        }
        let mut before = BTreeMap::new();
        for (table, keys) in &keys {
            before.insert(table.clone(), self.images(table, keys).await?);
        }
        let transactional = operation == "TransactWriteItems";
        Ok(Some(PendingWrite {
            transactional,
            keys,
            before,
        }))
    }

    /// After a call: a write's items as they are now, or a read to size at
    /// the next take.
    async fn after(
        &self,
        operation: &str,
        request: Value,
        pending: Option<PendingWrite>,
        _answer: &Value,
        succeeded: bool,
    ) -> Result<(), Error> {
        if let Some(mut pending) = pending {
            let mut calls = Vec::new();
            for (table, keys) in &pending.keys {
                let after = self.images(table, keys).await?;
                let before = pending.before.remove(table).unwrap_or_default();
                calls.push(WriteCall {
                    table: table.clone(),
                    transactional: pending.transactional,
                    succeeded,
                    items: before
                        .into_iter()
                        .zip(after)
                        .map(|(before, after)| ItemChange { before, after })
                        .collect(),
                });
            }
            self.lock().writes.extend(calls);
        } else if succeeded && READS.contains(&operation) {
            self.lock().reads.push((operation.to_string(), request));
        }
        Ok(())
    }
}
