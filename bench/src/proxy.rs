//! A counting proxy between the service and DynamoDB Local.
//!
//! It forwards every request unchanged but for one field: it asks DynamoDB
//! Local for `ReturnConsumedCapacity: INDEXES`, which the service never asks
//! for, so each call reports the capacity units it consumed on the table and on
//! each index. The response goes back byte for byte (the SDK checks its CRC32);
//! the extra `ConsumedCapacity` field is one the SDK already knows. DynamoDB
//! Local does not verify request signatures, so changing the body is harmless.
//!
//! A [`Tap`] attached to it sees every call before and after it is
//! forwarded: the partition model (`tools/partitions`) captures the data
//! table's writes and reads that way.

use crate::client::Error;
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};

/// What one kind of call (an `X-Amz-Target` operation) added up to.
#[derive(Debug, Clone, Default)]
pub struct OpTally {
    pub calls: u64,
    /// Capacity units DynamoDB Local reported, table and indexes together.
    pub capacity_units: f64,
    /// The part of `capacity_units` spent on global secondary indexes.
    pub index_units: f64,
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// Time DynamoDB Local took to answer, as the proxy saw it.
    pub upstream_ms: f64,
}

impl OpTally {
    pub fn add(&mut self, more: &OpTally) {
        self.calls += more.calls;
        self.capacity_units += more.capacity_units;
        self.index_units += more.index_units;
        self.request_bytes += more.request_bytes;
        self.response_bytes += more.response_bytes;
        self.upstream_ms += more.upstream_ms;
    }
}

/// Calls by operation name and table, e.g. `GetItem petstore`.
pub type Tally = BTreeMap<String, OpTally>;

/// Adds `more`'s calls to `into`'s.
pub fn merge(into: &mut Tally, more: Tally) {
    for (call, tally) in more {
        into.entry(call).or_default().add(&tally);
    }
}

/// What watches the calls through a [`Proxy`]: `before` each is forwarded
/// (with the request as sent, capacity asked for), `after` with the answer.
pub trait Tap: Send + Sync + 'static {
    /// What `before` hands on to `after`.
    type Pending: Send;
    fn before(
        &self,
        operation: &str,
        request: &Value,
    ) -> impl Future<Output = Result<Self::Pending, Error>> + Send;
    fn after(
        &self,
        operation: &str,
        request: Value,
        pending: Self::Pending,
        answer: &Value,
        succeeded: bool,
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

/// The counting proxy's own: nothing watches.
pub enum NoTap {}

impl Tap for NoTap {
    type Pending = ();
    async fn before(&self, _: &str, _: &Value) -> Result<(), Error> {
        Ok(())
    }
    async fn after(&self, _: &str, _: Value, _: (), _: &Value, _: bool) -> Result<(), Error> {
        Ok(())
    }
}

/// Where the connections find the tap, once one is attached.
type Attached<T> = Arc<Mutex<Option<Arc<T>>>>;

pub struct Proxy<T: Tap = NoTap> {
    pub addr: SocketAddr,
    tally: Arc<Mutex<Tally>>,
    tap: Attached<T>,
}

impl<T: Tap> Proxy<T> {
    /// Listens on a free port and forwards to `upstream`, ready for a tap to
    /// be attached (the counting proxy is a `Proxy<NoTap>`, the default).
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Proxy<T>> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let proxy = Proxy {
            addr: listener.local_addr()?,
            tally: Arc::default(),
            tap: Arc::default(),
        };
        let (tally, tap) = (proxy.tally.clone(), proxy.tap.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (tally, tap) = (tally.clone(), tap.clone());
                tokio::spawn(async move {
                    let _ = serve_connection(stream, upstream, tally, tap).await;
                });
            }
        });
        Ok(proxy)
    }

    /// From now on, every call also goes through `tap`.
    pub fn attach(&self, tap: Arc<T>) {
        *self.tap.lock().expect("tap lock") = Some(tap);
    }

    /// The calls counted since the last take.
    pub fn take(&self) -> Tally {
        std::mem::take(&mut *self.tally.lock().expect("tally lock"))
    }
}

async fn serve_connection<T: Tap>(
    stream: TcpStream,
    upstream: SocketAddr,
    tally: Arc<Mutex<Tally>>,
    tap: Attached<T>,
) -> Result<(), Error> {
    stream.set_nodelay(true)?;
    let up = TcpStream::connect(upstream).await?;
    up.set_nodelay(true)?;
    let (sender, conn) =
        hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(up)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let sender = Arc::new(tokio::sync::Mutex::new(sender));
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let sender = sender.clone();
        let tally = tally.clone();
        let tap = tap.lock().expect("tap lock").clone();
        async move {
            let forwarded = forward(req, &sender, &tally, tap.as_deref()).await;
            Ok::<_, std::convert::Infallible>(match forwarded {
                Ok(response) => response,
                Err(e) => {
                    let mut response = Response::new(Full::new(Bytes::from(e.to_string())));
                    *response.status_mut() = http::StatusCode::BAD_GATEWAY;
                    response
                }
            })
        }
    });
    hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await?;
    Ok(())
}

async fn forward<T: Tap>(
    req: Request<Incoming>,
    sender: &tokio::sync::Mutex<hyper::client::conn::http1::SendRequest<Full<Bytes>>>,
    tally: &Mutex<Tally>,
    tap: Option<&T>,
) -> Result<Response<Full<Bytes>>, Error> {
    let (mut parts, body) = req.into_parts();
    let body = body.collect().await?.to_bytes();
    let operation = parts
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .map(|t| t.rsplit('.').next().unwrap_or(t).to_string())
        .unwrap_or_else(|| "unknown".to_string());
    let (body, tables) = ask_for_capacity(&operation, body);
    let tapped = match tap {
        Some(tap) => match serde_json::from_slice::<Value>(&body) {
            Ok(request) => Some((tap, tap.before(&operation, &request).await?, request)),
            Err(_) => None,
        },
        None => None,
    };
    let kind = operation.clone();
    // Calls are told apart by table too, so the rate limiter's calls show up
    // separately from the data table's.
    let operation = if tables.is_empty() {
        operation
    } else {
        format!("{operation} {tables}")
    };
    parts
        .headers
        .insert(http::header::CONTENT_LENGTH, body.len().into());
    let request_bytes = body.len() as u64;
    let started = std::time::Instant::now();
    let response = {
        let mut sender = sender.lock().await;
        sender.ready().await?;
        sender
            .send_request(Request::from_parts(parts, Full::new(body)))
            .await?
    };
    let (parts, body) = response.into_parts();
    let body = body.collect().await?.to_bytes();
    let upstream_ms = started.elapsed().as_secs_f64() * 1e3;
    if let Some((tap, pending, request)) = tapped {
        let answer = serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null);
        let succeeded = parts.status.is_success();
        tap.after(&kind, request, pending, &answer, succeeded)
            .await?;
    }
    let mut tally = tally.lock().expect("tally lock");
    let entry = tally.entry(operation).or_default();
    entry.calls += 1;
    entry.request_bytes += request_bytes;
    entry.response_bytes += body.len() as u64;
    entry.upstream_ms += upstream_ms;
    if let Ok(value) = serde_json::from_slice::<Value>(&body) {
        add_capacity(entry, value.get("ConsumedCapacity"));
    }
    Ok(Response::from_parts(parts, Full::new(body)))
}

/// Operations that accept `ReturnConsumedCapacity`.
const CAPACITY_OPERATIONS: &[&str] = &[
    "GetItem",
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "Query",
    "Scan",
    "BatchGetItem",
    "BatchWriteItem",
    "TransactGetItems",
    "TransactWriteItems",
];

/// Adds `ReturnConsumedCapacity` where the operation takes it, and names the
/// tables the call touches.
fn ask_for_capacity(operation: &str, body: Bytes) -> (Bytes, String) {
    let Ok(Value::Object(mut object)) = serde_json::from_slice::<Value>(&body) else {
        return (body, String::new());
    };
    let tables = table_names(&object);
    if !CAPACITY_OPERATIONS.contains(&operation) {
        return (body, tables);
    }
    object.insert("ReturnConsumedCapacity".into(), Value::from("INDEXES"));
    (
        Bytes::from(serde_json::to_vec(&object).expect("JSON serializes")),
        tables,
    )
}

/// `TableName`, the tables of a batch, or of each transaction item, joined by `+`.
fn table_names(request: &serde_json::Map<String, Value>) -> String {
    let mut tables: Vec<String> = Vec::new();
    if let Some(name) = request.get("TableName").and_then(Value::as_str) {
        tables.push(name.to_string());
    }
    if let Some(Value::Object(items)) = request.get("RequestItems") {
        tables.extend(items.keys().cloned());
    }
    if let Some(Value::Array(items)) = request.get("TransactItems") {
        for item in items.iter().filter_map(Value::as_object) {
            for action in item.values() {
                if let Some(name) = action.get("TableName").and_then(Value::as_str) {
                    tables.push(name.to_string());
                }
            }
        }
    }
    tables.sort();
    tables.dedup();
    tables.join("+")
}

fn add_capacity(entry: &mut OpTally, consumed: Option<&Value>) {
    let entries: Vec<&Value> = match consumed {
        Some(Value::Array(list)) => list.iter().collect(),
        Some(one @ Value::Object(_)) => vec![one],
        _ => return,
    };
    let number = |v: Option<&Value>, field: &str| {
        v.and_then(|v| v.get(field))
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    };
    for consumed in entries {
        entry.capacity_units += number(Some(consumed), "CapacityUnits");
        for field in ["GlobalSecondaryIndexes", "LocalSecondaryIndexes"] {
            if let Some(Value::Object(indexes)) = consumed.get(field) {
                entry.index_units += indexes
                    .values()
                    .map(|i| number(Some(i), "CapacityUnits"))
                    .sum::<f64>();
            }
        }
    }
}
