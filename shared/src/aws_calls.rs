//! A record of every AWS call the service makes, for `make iam-check`: which
//! function made it (through which route), the operation, and what it names
//! (tables, indexes, streams, buses, the items' partition keys). The check
//! (`tools/gates/src/gates/iam_check.py`) evaluates each call against the IAM policies the
//! deployed functions get, since DynamoDB Local ignores IAM.
//!
//! Off unless [`RECORD_TO`] names a directory when the process starts: then
//! every client built by [`crate::App::from_env`], [`crate::local_client`]
//! and the events function carries [`interceptor`], which appends one JSON
//! line per distinct call to `<dir>/<pid>.jsonl`. Off, nothing is installed
//! and [`within`] awaits its future as it is: Lambda pays nothing.
//!
//! Who made a call is a task-local [`Caller`], set around what a function
//! runs: [`crate::http::route::resolve`] around each request (the route, so
//! the check can tell which function serves it in AWS, although the tests
//! serve both functions' routes from one router), [`crate::warm_up`] around
//! the wrapper's own calls, the events function around its work. Calls made
//! under no caller are the tests' and the tools' own (creating tables,
//! issuing keys, looking at the store): recorded without a caller, and left
//! out of the check. The SDK runs interceptors inside the future that sends
//! the call, so the caller is the task's; a call sent from a task of its own
//! (`tokio::spawn`) would lose it, and the service spawns none.
//!
//! Table and bus names are recorded with the configuration variable that
//! named them ([`name_resources`]), so the check finds each one's logical
//! resource in `template.yaml` (`TABLE_NAME: !Ref DataTable`) rather than
//! guessing from the names the tests make up.

mod request_json;

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents, SharedInterceptor};
use futures::future::Either;
use request_json::{partition_key, query_partition, str_of};
use serde::Serialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use tokio::task::futures::TaskLocalFuture;

/// The variable that turns recording on: the directory the calls go to.
pub const RECORD_TO: &str = "PETSTORE_AWS_CALLS";

/// Who made a call, as the check needs it to find the function's policy.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Caller {
    /// A request through the wrapper: `method` and its route template (the
    /// path itself when the contract lists no route for it), which the check
    /// routes as API Gateway does.
    Request { method: String, route: String },
    /// The wrapper's own work outside any request (the warm-up): every
    /// function built on [`crate::http::service`] makes these calls.
    Wrapper,
    /// A function's work that is not a request: `events`, or the local
    /// stream follower standing in for its event source mapping.
    Function { name: &'static str },
}

tokio::task_local! {
    static CALLER: Caller;
    /// The stream a `GetRecords` call reads (its shard iterator names it
    /// only opaquely).
    static STREAM: String;
}

/// The recorder, when [`RECORD_TO`] is set.
fn recorder() -> Option<&'static Recorder> {
    static RECORDER: OnceLock<Option<Recorder>> = OnceLock::new();
    RECORDER
        .get_or_init(|| {
            let dir = std::env::var_os(RECORD_TO).filter(|d| !d.is_empty())?;
            Some(Recorder {
                path: PathBuf::from(dir).join(format!("{}.jsonl", std::process::id())),
                seen: Mutex::new(HashSet::new()),
                names: Mutex::new(HashMap::new()),
            })
        })
        .as_ref()
}

/// Whether this process records its AWS calls.
pub fn enabled() -> bool {
    recorder().is_some()
}

/// The recording interceptor, for any SDK client's config, when recording.
pub fn interceptor() -> Option<SharedInterceptor> {
    recorder().map(|_| SharedInterceptor::new(RecordCalls))
}

/// `work`, run as `caller`'s; `None` (what callers pass when not
/// [`enabled`], to build no caller) leaves it as it is.
pub fn within<F: Future>(caller: Option<Caller>, work: F) -> Either<TaskLocalFuture<Caller, F>, F> {
    match caller {
        Some(caller) => Either::Left(CALLER.scope(caller, work)),
        None => Either::Right(work),
    }
}

/// `work`, whose `GetRecords` calls read `stream` (when recording).
pub fn reading_stream<F: Future>(stream: &str, work: F) -> Either<TaskLocalFuture<String, F>, F> {
    match enabled() {
        true => Either::Left(STREAM.scope(stream.to_string(), work)),
        false => Either::Right(work),
    }
}

/// Says which configuration variable named each resource (`TABLE_NAME`,
/// `t-1f…`), so calls naming it are recorded with the variable.
pub fn name_resources(named: &[(&str, &str)]) {
    if let Some(recorder) = recorder() {
        let mut names = recorder.names.lock().unwrap_or_else(|e| e.into_inner());
        for (variable, name) in named {
            names.insert(name.to_string(), variable.to_string());
        }
    }
}

struct Recorder {
    path: PathBuf,
    /// Lines already written: a call made many times is recorded once.
    seen: Mutex<HashSet<String>>,
    /// Resource name → the configuration variable that named it.
    names: Mutex<HashMap<String, String>>,
}

/// One recorded call.
#[derive(Serialize)]
struct Call<'a> {
    caller: Option<Caller>,
    /// The IAM service prefix's API: `dynamodb`, `dynamodbstreams`, `events`, `sqs`.
    service: &'a str,
    operation: &'a str,
    targets: Vec<Target>,
}

/// One thing a call acts on; a transaction or batch has one per item (or
/// table), since IAM authorizes each.
#[derive(Serialize, Default)]
struct Target {
    /// The item's action inside a transaction or batch (`Put`, `Update`,
    /// `Delete`, `ConditionCheck`, `Get`, `PutRequest`, `DeleteRequest`).
    #[serde(skip_serializing_if = "Option::is_none")]
    part: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    table: Option<Named>,
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<Named>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bus: Option<Named>,
    /// A queue, by the `QueueUrl` the request names.
    #[serde(skip_serializing_if = "Option::is_none")]
    queue: Option<Named>,
    /// The partition key values (`dynamodb:LeadingKeys`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    leading_keys: Vec<String>,
}

/// A resource's name and the configuration variable that named it, if any.
#[derive(Serialize)]
struct Named {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    variable: Option<String>,
}

#[derive(Debug)]
struct RecordCalls;

impl Intercept for RecordCalls {
    fn name(&self) -> &'static str {
        "RecordCalls"
    }

    // After serialization: once per call (before the retry loop), with the
    // body as it is sent.
    fn read_after_serialization(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        if let Some(recorder) = recorder() {
            let request = context.request();
            let target = request.headers().get("x-amz-target").unwrap_or_default();
            let body = request
                .body()
                .bytes()
                .and_then(|b| serde_json::from_slice(b).ok())
                .unwrap_or(Value::Null);
            recorder.record(target, &body);
        }
        Ok(())
    }
}

/// The IAM service prefix and the operation a request's `X-Amz-Target`
/// names (`DynamoDB_20120810.GetItem`: `dynamodb`, `GetItem`).
fn service_and_operation(amz_target: &str) -> (&str, &str) {
    let (prefix, operation) = amz_target.split_once('.').unwrap_or(("", amz_target));
    let service = match prefix {
        p if p.starts_with("DynamoDBStreams") => "dynamodbstreams",
        p if p.starts_with("DynamoDB") => "dynamodb",
        "AWSEvents" => "events",
        "AmazonSQS" => "sqs",
        other => other,
    };
    (service, operation)
}

impl Recorder {
    fn record(&self, amz_target: &str, body: &Value) {
        let (service, operation) = service_and_operation(amz_target);
        let call = Call {
            caller: CALLER.try_with(Caller::clone).ok(),
            service,
            operation,
            targets: self.targets(service, operation, body),
        };
        let Ok(line) = serde_json::to_string(&call) else {
            return;
        };
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if !seen.insert(line.clone()) {
            return;
        }
        // One write per line, appended: the test binary's threads and other
        // processes never interleave within one.
        let written = std::fs::create_dir_all(self.path.parent().unwrap_or(&self.path))
            .and_then(|_| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.path)
            })
            .and_then(|mut file| file.write_all(format!("{line}\n").as_bytes()));
        if let Err(error) = written {
            tracing::warn!("recording an AWS call to {}: {error}", self.path.display());
        }
    }

    fn named(&self, name: &str) -> Named {
        let names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        Named {
            name: name.to_string(),
            variable: names.get(name).cloned(),
        }
    }

    fn table(&self, name: Option<&str>) -> Option<Named> {
        name.map(|n| self.named(n))
    }

    fn targets(&self, service: &str, operation: &str, body: &Value) -> Vec<Target> {
        match (service, operation) {
            ("dynamodb", "TransactWriteItems" | "TransactGetItems") => {
                let items = body["TransactItems"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                items
                    .iter()
                    .filter_map(|wrapper| wrapper.as_object()?.iter().next())
                    .map(|(part, item)| {
                        self.item_target(Some(part), item["TableName"].as_str(), item)
                    })
                    .collect()
            }
            ("dynamodb", "BatchGetItem") => self.batch_get_targets(body),
            ("dynamodb", "BatchWriteItem") => self.batch_write_targets(body),
            ("dynamodb", "Query" | "Scan") => vec![Target {
                table: self.table(body["TableName"].as_str()),
                index: str_of(body, "IndexName"),
                leading_keys: query_partition(body).into_iter().collect(),
                ..Target::default()
            }],
            ("dynamodb", _) => vec![self.item_target(None, body["TableName"].as_str(), body)],
            ("dynamodbstreams", "ListStreams") => vec![Target {
                table: self.table(body["TableName"].as_str()),
                ..Target::default()
            }],
            ("dynamodbstreams", _) => {
                let stream =
                    str_of(body, "StreamArn").or_else(|| STREAM.try_with(String::clone).ok());
                vec![Target {
                    stream: stream.map(|arn| self.stream(arn)),
                    ..Target::default()
                }]
            }
            ("events", "PutEvents") => self.put_events_targets(body),
            ("sqs", _) => vec![Target {
                queue: str_of(body, "QueueUrl").map(|url| self.named(&url)),
                ..Target::default()
            }],
            _ => Vec::new(),
        }
    }

    /// One item of a request (`part`: its kind in a transaction or batch),
    /// whose `Key` or `Item` gives the leading key.
    fn item_target(&self, part: Option<&str>, table: Option<&str>, request: &Value) -> Target {
        let key = request.get("Key").or_else(|| request.get("Item"));
        Target {
            part: part.map(String::from),
            table: self.table(table),
            leading_keys: partition_key(key.unwrap_or(&Value::Null))
                .into_iter()
                .collect(),
            ..Target::default()
        }
    }

    fn batch_get_targets(&self, body: &Value) -> Vec<Target> {
        let tables = body["RequestItems"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        tables
            .iter()
            .map(|(table, request)| {
                let keys = request["Keys"].as_array().cloned().unwrap_or_default();
                Target {
                    table: self.table(Some(table)),
                    leading_keys: keys.iter().filter_map(partition_key).collect(),
                    ..Target::default()
                }
            })
            .collect()
    }

    fn batch_write_targets(&self, body: &Value) -> Vec<Target> {
        let tables = body["RequestItems"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let mut targets = Vec::new();
        for (table, writes) in &tables {
            for write in writes.as_array().cloned().unwrap_or_default() {
                if let Some((part, request)) = write.as_object().and_then(|w| w.iter().next()) {
                    targets.push(self.item_target(Some(part), Some(table), request));
                }
            }
        }
        targets
    }

    /// One target per bus the entries name (`default` when they name none).
    fn put_events_targets(&self, body: &Value) -> Vec<Target> {
        let entries = body["Entries"].as_array().cloned().unwrap_or_default();
        let buses: HashSet<String> = entries
            .iter()
            .map(|e| str_of(e, "EventBusName").unwrap_or_else(|| "default".into()))
            .collect();
        buses
            .into_iter()
            .map(|bus| Target {
                bus: Some(self.named(&bus)),
                ..Target::default()
            })
            .collect()
    }

    /// A stream's ARN, with the variable that named its table
    /// (`…:table/<name>/stream/<label>`).
    fn stream(&self, arn: String) -> Named {
        let table = arn
            .split("/stream/")
            .next()
            .and_then(|t| t.rsplit('/').next());
        let variable = table.and_then(|t| self.named(t).variable);
        Named {
            name: arn,
            variable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recorder() -> Recorder {
        Recorder {
            path: PathBuf::new(),
            seen: Mutex::default(),
            names: Mutex::new(HashMap::from([
                ("t-1".into(), "TABLE_NAME".into()),
                (QUEUE.into(), "WEBHOOK_QUEUE_URL".into()),
            ])),
        }
    }

    const QUEUE: &str = "https://sqs.us-east-1.amazonaws.com/123456789012/deliveries";

    fn targets(service: &str, operation: &str, body: Value) -> Value {
        serde_json::to_value(recorder().targets(service, operation, &body)).unwrap_or_default()
    }

    #[test]
    fn a_transaction_is_recorded_item_by_item_as_iam_authorizes_it() {
        let key = |pk: &str| json!({"PK": {"S": pk}, "SK": {"S": "X"}});
        let body = json!({"TransactItems": [
            {"Update": {"TableName": "t-1", "Key": key("PET#1")}},
            {"ConditionCheck": {"TableName": "t-1", "Key": key("CATEGORY#2")}},
            {"Put": {"TableName": "elsewhere", "Item": key("ORDER#3")}},
        ]});
        let table = json!({"name": "t-1", "variable": "TABLE_NAME"});
        assert_eq!(
            targets("dynamodb", "TransactWriteItems", body),
            json!([
                {"part": "Update", "table": table, "leading_keys": ["PET#1"]},
                {"part": "ConditionCheck", "table": table, "leading_keys": ["CATEGORY#2"]},
                {"part": "Put", "table": {"name": "elsewhere"}, "leading_keys": ["ORDER#3"]},
            ])
        );
    }

    #[test]
    fn a_query_names_its_index_and_the_partition_its_key_condition_sets() {
        let body = json!({
            "TableName": "t-1", "IndexName": "GSI2",
            "KeyConditionExpression": "#pk = :pk AND id > :after",
            "ExpressionAttributeNames": {"#pk": "GSI2PK"},
            "ExpressionAttributeValues": {":pk": {"S": "PET#STATUS#sold#3"}, ":after": {"N": "7"}},
        });
        assert_eq!(
            targets("dynamodb", "Query", body),
            json!([{
                "table": {"name": "t-1", "variable": "TABLE_NAME"},
                "index": "GSI2",
                "leading_keys": ["PET#STATUS#sold#3"],
            }])
        );
    }

    #[test]
    fn a_stream_is_recorded_with_the_variable_that_named_its_table() {
        let arn = "arn:aws:dynamodb:ddblocal:000000000000:table/t-1/stream/2026-01-01T00:00:00.000";
        assert_eq!(
            targets(
                "dynamodbstreams",
                "DescribeStream",
                json!({"StreamArn": arn})
            ),
            json!([{"stream": {"name": arn, "variable": "TABLE_NAME"}}])
        );
    }

    #[test]
    fn a_queue_call_is_recorded_as_sqs_with_the_variable_that_named_its_queue() {
        let (service, operation) = service_and_operation("AmazonSQS.SendMessageBatch");
        assert_eq!((service, operation), ("sqs", "SendMessageBatch"));
        assert_eq!(
            targets(
                service,
                operation,
                json!({"QueueUrl": QUEUE, "Entries": []})
            ),
            json!([{"queue": {"name": QUEUE, "variable": "WEBHOOK_QUEUE_URL"}}])
        );
    }
}
