//! What the partition model needs from the bench's counting proxy, as its [`Tap`]:
//! every write to the data table with each item it wrote as it was before
//! and after (read from DynamoDB around the write, so index writes can be
//! derived from the projections), and every read of the data table with its
//! request and the capacity it consumed.
//!
//! The images are exact as long as no two writes to one item overlap; the
//! replay ([`crate::replay`]) gives each worker its own pets and orders.

use crate::dynamo::DynamoDb;
use petstore_bench::client::Error;
use petstore_bench::proxy::Tap;
use serde_json::{json, Map, Value};
use std::net::SocketAddr;

/// An item in DynamoDB's JSON (`{"PK": {"S": "PET#1"}, ...}`).
pub type Image = Map<String, Value>;

/// One item of a write: absent before (created) or after (deleted).
#[derive(Debug, Clone, Default)]
pub struct ItemChange {
    pub before: Option<Image>,
    pub after: Option<Image>,
}

/// One write call on the data table.
#[derive(Debug, Clone)]
pub struct WriteCall {
    /// A `TransactWriteItems`, whose table writes cost twice the units.
    pub transactional: bool,
    /// Whether DynamoDB accepted it (a refused one wrote nothing).
    pub succeeded: bool,
    pub items: Vec<ItemChange>,
}

/// One read call on the data table, as sent and with what it consumed.
#[derive(Debug, Clone)]
pub struct ReadCall {
    /// `Query`, `GetItem` or `BatchGetItem`.
    pub operation: String,
    pub request: Value,
    /// The answer's `ConsumedCapacity`, if any.
    pub consumed: Value,
}

/// Everything captured since the last take.
#[derive(Debug, Default)]
pub struct Captured {
    pub writes: Vec<WriteCall>,
    pub reads: Vec<ReadCall>,
}

/// A write about to be sent: which items it touches.
pub struct PendingWrite {
    transactional: bool,
    keys: Vec<Value>,
    before: Vec<Option<Image>>,
}

/// The capture of one table's calls, shared by the proxy's connections.
pub struct Capture {
    table: String,
    /// The table's key attributes (hash, range).
    key_names: (String, String),
    upstream: tokio::sync::Mutex<DynamoDb>,
    captured: std::sync::Mutex<Captured>,
}

const READS: &[&str] = &["Query", "GetItem", "BatchGetItem"];

impl Capture {
    pub fn new(table: &str, key_names: (String, String), upstream: SocketAddr) -> Capture {
        Capture {
            table: table.to_string(),
            key_names,
            upstream: tokio::sync::Mutex::new(DynamoDb::new(upstream)),
            captured: Default::default(),
        }
    }

    /// What was captured since the last take.
    pub fn take(&self) -> Captured {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Captured> {
        self.captured.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn reads_table(&self, request: &Value) -> bool {
        request["TableName"] == self.table.as_str()
            || request["RequestItems"].get(&self.table).is_some()
    }

    /// The keys of the table's items a write call changes (none for a read,
    /// a condition check, or another table).
    fn written_keys(&self, operation: &str, request: &Value) -> Vec<Value> {
        let mine = |action: &Value| action["TableName"] == self.table.as_str();
        match operation {
            "PutItem" if mine(request) => vec![self.key_of(&request["Item"])],
            "UpdateItem" | "DeleteItem" if mine(request) => vec![request["Key"].clone()],
            "TransactWriteItems" => request["TransactItems"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(
                    |item| match (&item["Put"], &item["Update"], &item["Delete"]) {
                        (put, _, _) if mine(put) => Some(self.key_of(&put["Item"])),
                        (_, update, _) if mine(update) => Some(update["Key"].clone()),
                        (_, _, delete) if mine(delete) => Some(delete["Key"].clone()),
                        _ => None,
                    },
                )
                .collect(),
            "BatchWriteItem" => request["RequestItems"][&self.table]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|w| match (&w["PutRequest"], &w["DeleteRequest"]) {
                    (Value::Object(put), _) => Some(self.key_of(&put["Item"])),
                    (_, Value::Object(delete)) => Some(delete["Key"].clone()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    fn key_of(&self, item: &Value) -> Value {
        let (hash, range) = &self.key_names;
        json!({ hash.as_str(): item[hash], range.as_str(): item[range] })
    }

    /// The items at `keys`, read consistently, in the order of `keys`.
    async fn images(&self, keys: &[Value]) -> Result<Vec<Option<Image>>, Error> {
        let request = json!({
            "RequestItems": { &self.table: { "Keys": keys, "ConsistentRead": true } }
        });
        let answer = self
            .upstream
            .lock()
            .await
            .call("BatchGetItem", &request)
            .await?;
        let found = answer["Responses"][&self.table]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let (hash, range) = &self.key_names;
        Ok(keys
            .iter()
            .map(|key| {
                found
                    .iter()
                    .find(|item| item[hash] == key[hash] && item[range] == key[range])
                    .and_then(|item| item.as_object().cloned())
            })
            .collect())
    }
}

impl Tap for Capture {
    /// The call's items as they were, if it writes the table.
    type Pending = Option<PendingWrite>;

    /// Before a call: if it writes the table, its items as they are now.
    async fn before(&self, operation: &str, request: &Value) -> Result<Self::Pending, Error> {
        let keys = self.written_keys(operation, request);
        if keys.is_empty() {
            return Ok(None);
        }
        let before = self.images(&keys).await?;
        let transactional = operation == "TransactWriteItems";
        Ok(Some(PendingWrite {
            transactional,
            keys,
            before,
        }))
    }

    /// After a call: a write's items as they are now, or a read's request.
    async fn after(
        &self,
        operation: &str,
        request: Value,
        pending: Option<PendingWrite>,
        answer: &Value,
        succeeded: bool,
    ) -> Result<(), Error> {
        if let Some(pending) = pending {
            let after = self.images(&pending.keys).await?;
            let items = pending.before.into_iter().zip(after);
            let call = WriteCall {
                transactional: pending.transactional,
                succeeded,
                items: items
                    .map(|(before, after)| ItemChange { before, after })
                    .collect(),
            };
            self.lock().writes.push(call);
        } else if READS.contains(&operation) && self.reads_table(&request) {
            let consumed = answer
                .get("ConsumedCapacity")
                .cloned()
                .unwrap_or(Value::Null);
            let operation = operation.to_string();
            self.lock().reads.push(ReadCall {
                operation,
                request,
                consumed,
            });
        }
        Ok(())
    }
}
