//! A counting proxy between the service and DynamoDB Local.
//!
//! It forwards every request and response byte for byte (the SDK checks the
//! response's CRC32), and counts the calls by operation and table. It never
//! asks DynamoDB Local for `ConsumedCapacity`: DynamoDB Local's accounting
//! is not DynamoDB's (it counts a transactional write, index copies
//! included, twice), so the units come from the items themselves.
//!
//! A [`Capture`](crate::capture::Capture) attached as its [`Tap`] sees every
//! call before and after it is forwarded, and so what it wrote and read.

use crate::client::Error;
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
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
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// Time DynamoDB Local took to answer, as the proxy saw it.
    pub upstream_ms: f64,
    /// Time the tap took around the calls (its reads of the items), which
    /// the service waited for and Lambda would not bill.
    pub tap_ms: f64,
}

impl OpTally {
    pub fn add(&mut self, more: &OpTally) {
        self.calls += more.calls;
        self.request_bytes += more.request_bytes;
        self.response_bytes += more.response_bytes;
        self.upstream_ms += more.upstream_ms;
        self.tap_ms += more.tap_ms;
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
/// (with the request as sent), `after` with the answer.
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

/// Which calls are forwarded but neither counted nor tapped (by their
/// `X-Amz-Target` operation and request).
pub type Uncounted = fn(&str, &Value) -> bool;

/// Whether a call is the webhooks function's, not the request's: the
/// local service fans out every event in process (in AWS the webhooks
/// function does, priced per event by the webhooks step), so a previous
/// request's event can be fanned out while the next is counted. Every
/// webhooks item is keyed `WEBHOOK…`, which no other item is.
pub fn is_webhooks_call(_operation: &str, request: &Value) -> bool {
    request.to_string().contains("\"WEBHOOK")
}

pub struct Proxy<T: Tap = NoTap> {
    pub addr: SocketAddr,
    tally: Arc<Mutex<Tally>>,
    tap: Attached<T>,
    uncounted: Arc<Mutex<Option<Uncounted>>>,
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
            uncounted: Arc::default(),
        };
        let watched = Watched {
            tally: proxy.tally.clone(),
            tap: proxy.tap.clone(),
            uncounted: proxy.uncounted.clone(),
        };
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let watched = watched.clone();
                tokio::spawn(async move {
                    let _ = serve_connection(stream, upstream, watched).await;
                });
            }
        });
        Ok(proxy)
    }

    /// From now on, the calls `uncounted` names are forwarded alone.
    pub fn leave_uncounted(&self, uncounted: Uncounted) {
        *self.uncounted.lock().expect("uncounted lock") = Some(uncounted);
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

/// What a connection's calls are counted into and watched by.
struct Watched<T> {
    tally: Arc<Mutex<Tally>>,
    tap: Attached<T>,
    uncounted: Arc<Mutex<Option<Uncounted>>>,
}

impl<T> Clone for Watched<T> {
    fn clone(&self) -> Self {
        Watched {
            tally: self.tally.clone(),
            tap: self.tap.clone(),
            uncounted: self.uncounted.clone(),
        }
    }
}

async fn serve_connection<T: Tap>(
    stream: TcpStream,
    upstream: SocketAddr,
    watched: Watched<T>,
) -> Result<(), Error> {
    let Watched {
        tally,
        tap,
        uncounted,
    } = watched;
    stream.set_nodelay(true)?;
    let sender = Arc::new(tokio::sync::Mutex::new(connect(upstream).await?));
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let sender = sender.clone();
        let tally = tally.clone();
        let tap = tap.lock().expect("tap lock").clone();
        let uncounted = *uncounted.lock().expect("uncounted lock");
        async move {
            let upstream = (upstream, &*sender);
            let forwarded = forward(req, upstream, (&tally, uncounted), tap.as_deref()).await;
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

/// A connection of its own to `upstream`.
async fn connect(upstream: SocketAddr) -> Result<SendRequest<Full<Bytes>>, Error> {
    let up = TcpStream::connect(upstream).await?;
    up.set_nodelay(true)?;
    let (sender, conn) =
        hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(up)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// `request` on the connection's upstream connection; on a new one if
/// DynamoDB Local closed that one while it was idle (the request not sent),
/// so that the client is not answered 502 on a connection it holds open.
async fn send_upstream(
    (upstream, sender): (SocketAddr, &tokio::sync::Mutex<SendRequest<Full<Bytes>>>),
    request: Request<Full<Bytes>>,
) -> Result<Response<Incoming>, Error> {
    let mut sender = sender.lock().await;
    let unsent = match sender.ready().await {
        Ok(()) => match sender.try_send_request(request).await {
            Ok(response) => return Ok(response),
            Err(mut failed) => match failed.take_message() {
                Some(unsent) => unsent,
                None => return Err(failed.into_error().into()),
            },
        },
        Err(_) => request,
    };
    *sender = connect(upstream).await?;
    sender.ready().await?;
    Ok(sender.send_request(unsent).await?)
}

async fn forward<T: Tap>(
    req: Request<Incoming>,
    upstream: (SocketAddr, &tokio::sync::Mutex<SendRequest<Full<Bytes>>>),
    (tally, uncounted): (&Mutex<Tally>, Option<Uncounted>),
    tap: Option<&T>,
) -> Result<Response<Full<Bytes>>, Error> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await?.to_bytes();
    let operation = parts
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .map(|t| t.rsplit('.').next().unwrap_or(t).to_string())
        .unwrap_or_else(|| "unknown".to_string());
    let request = serde_json::from_slice::<Value>(&body).ok();
    let left_alone = match (uncounted, &request) {
        (Some(uncounted), Some(request)) => uncounted(&operation, request),
        _ => false,
    };
    let tap = tap.filter(|_| !left_alone);
    let tables = request
        .as_ref()
        .and_then(|request| request.as_object().map(table_names))
        .unwrap_or_default();
    let tap_started = std::time::Instant::now();
    let tapped = match (tap, request) {
        (Some(tap), Some(request)) => Some((tap, tap.before(&operation, &request).await?, request)),
        _ => None,
    };
    let mut tap_ms = tap_started.elapsed().as_secs_f64() * 1e3;
    let kind = operation.clone();
    // Calls are told apart by table too, so the rate limiter's calls show up
    // separately from the data table's.
    let operation = if tables.is_empty() {
        operation
    } else {
        format!("{operation} {tables}")
    };
    let request_bytes = body.len() as u64;
    let started = std::time::Instant::now();
    let request = Request::from_parts(parts, Full::new(body));
    let response = send_upstream(upstream, request).await?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await?.to_bytes();
    let upstream_ms = started.elapsed().as_secs_f64() * 1e3;
    if let Some((tap, pending, request)) = tapped {
        let tap_started = std::time::Instant::now();
        let answer = serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null);
        let succeeded = parts.status.is_success();
        tap.after(&kind, request, pending, &answer, succeeded)
            .await?;
        tap_ms += tap_started.elapsed().as_secs_f64() * 1e3;
    }
    if left_alone {
        return Ok(Response::from_parts(parts, Full::new(body)));
    }
    let mut tally = tally.lock().expect("tally lock");
    let entry = tally.entry(operation).or_default();
    entry.calls += 1;
    entry.request_bytes += request_bytes;
    entry.response_bytes += body.len() as u64;
    entry.upstream_ms += upstream_ms;
    entry.tap_ms += tap_ms;
    Ok(Response::from_parts(parts, Full::new(body)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_webhooks_fan_out_s_calls_are_told_from_a_request_s() {
        let subscribers = json!({
            "TableName": "petstore", "IndexName": "GSI1",
            "KeyConditionExpression": "GSI1PK = :pk",
            "ExpressionAttributeValues": {":pk": {"S": "WEBHOOKOWNER#7"}},
        });
        assert!(is_webhooks_call("Query", &subscribers));
        let pet =
            json!({"TableName": "petstore", "Key": {"PK": {"S": "PET#1"}, "SK": {"S": "PET"}}});
        assert!(!is_webhooks_call("GetItem", &pet));
    }
}
