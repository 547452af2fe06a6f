//! A Lambda function's once-per-process work, done during init, which runs
//! at full CPU, rather than in the first invocation, which runs on the memory
//! size's share of one CPU (128/1769 of a vCPU at 128 MB, so every
//! millisecond of CPU there is 14 of waiting).
//!
//! The first request of a process otherwise pays, inside the throttled
//! invocation: the TLS connection its calls go over, the first use of each
//! DynamoDB operation it makes (the operation's serializer and deserializer,
//! its runtime plugins, signing, each page of that code faulted in), and the
//! first run of our own code (event parsing, routing, every layer, the
//! handler, serde, the log line's formatting). So init does it, and makes no
//! round trip the first request does not need:
//!
//! - [`start`], called as soon as the DynamoDB client exists (before
//!   telemetry, the metrics emitter and the router are built), spawns two
//!   `GetItem`s of the warm-up key, which no record has, at once, and lets
//!   them begin: the two connections the first request's calls go over (the
//!   key's look-up, then its count beside the handler's read, which need
//!   one each) are made while the rest of init runs, not in the throttled
//!   invocation. They are init's only calls to DynamoDB; the floor makes one.
//! - [`WarmUp::finish`] meanwhile runs the rest [dry](crate::sdk::dry_run):
//!   its calls are answered in the process, so each costs CPU at full speed and no round
//!   trip. An `UpdateItem` on the rate-limit table (the count's operation);
//!   and one read through the function's whole service (`serve_once`): its
//!   most frequent list, from an API Gateway event as Lambda hands it over
//!   to the response as `lambda_http` takes it back. It is marked
//!   [`WarmUpRequest`]: the rate-limit layer counts it against no one, and
//!   it has a log line (`warm-up request`) but no metrics line, and leaves
//!   the `ColdStarts` metric to the process's first real request.
//!
//! Run for real, that read would also open a connection for each shard its
//! list queries at once beyond the first (the pool lends an idle one only):
//! a handshake each in init that a first request reading one record, or
//! none (a refusal), never uses. A list as the first request opens them
//! itself (measured in docs/performance.md). A call the first request makes
//! that the warm-up does not (`BatchGetItem`) is first used by that
//! request. Nothing is written; a failure, a warm-up request not answered
//! 200, or no answer in [`WARM_UP_LIMIT`] is logged as a warning and init
//! goes on: the first request would meet the same failure and answer it
//! properly.

use crate::records::{Caller, Id, Role, MAX_ID};
use crate::App;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use http::StatusCode;
use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

/// The key of every warm-up call: no record of ours has it.
pub const WARM_UP_KEY: &str = "WARMUP";

/// Lambda's init phase has 10 s in all; a DynamoDB that does not answer in
/// this long is left to the first request.
pub const WARM_UP_LIMIT: Duration = Duration::from_secs(2);

/// Warms up a function whose service is `service` (built on `app`), its
/// warm-up request being `GET path_and_query`: [`start`], then
/// [`WarmUp::finish`].
pub async fn warm_up(app: &App, service: &axum::Router, path_and_query: &str) -> WarmedUp {
    start(app).await.finish(service, path_and_query).await
}

/// A warm-up under way: the first connection being opened.
pub struct WarmUp {
    client: Client,
    counters: String,
    first: tokio::task::JoinHandle<Result<(), Failure>>,
}

/// What a warm-up did, for its callers' tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarmedUp {
    /// Whether its real calls reached DynamoDB: the connections the first
    /// request will use are open.
    pub connected: bool,
    /// The warm-up request's status, if it was answered in time.
    pub request: Option<StatusCode>,
}

/// Starts the warm-up of `app`'s function: spawns the calls that open the
/// connections the first request will use and lets them begin (its address
/// resolved on a thread of its own), so that it is made while init builds
/// the rest. Call it as soon as `app` exists.
pub async fn start(app: &App) -> WarmUp {
    let client = app.db.client().clone();
    let table = app.db.table();
    // At once, so the pool opens a connection for each.
    let (one, other) = (
        get_item(client.clone(), table.to_string()),
        get_item(client.clone(), table.to_string()),
    );
    let first = async move {
        let (one, other) = tokio::join!(one, other);
        one.and(other)
    };
    let first = tokio::spawn(as_the_wrapper_s(first));
    // One thread: the spawned call begins only when this task yields.
    tokio::task::yield_now().await;
    WarmUp {
        client,
        counters: app.config.rate_limit_table_name.clone(),
        first,
    }
}

/// `calls`, recorded as the wrapper's, which every function serving
/// requests runs.
fn as_the_wrapper_s<F: Future>(calls: F) -> impl Future<Output = F::Output> {
    let wrapper = crate::aws_calls::enabled().then_some(crate::aws_calls::Caller::Wrapper);
    crate::aws_calls::within(wrapper, calls)
}

impl WarmUp {
    /// Runs the rest of the warm-up dry while the first connection is made
    /// (see the module's documentation), and waits for both.
    pub async fn finish(self, service: &axum::Router, path_and_query: &str) -> WarmedUp {
        let WarmUp {
            client,
            counters,
            first,
        } = self;
        let connected = async { first.await.unwrap_or_else(|joined| Err(joined.into())) };
        let dry = crate::sdk::dry_run::dry(async {
            let update = as_the_wrapper_s(failed_update(client, counters)).await;
            (update, serve_once(service, path_and_query).await)
        });
        let warmed = async { tokio::join!(connected, dry) };
        let Ok((connected, (update, status))) = tokio::time::timeout(WARM_UP_LIMIT, warmed).await
        else {
            tracing::warn!("the warm-up took over {WARM_UP_LIMIT:?}");
            return WarmedUp {
                connected: false,
                request: None,
            };
        };
        if let Err(error) = connected.as_ref().and(update.as_ref()) {
            tracing::warn!(error = %error, "the warm-up failed");
        }
        if status != StatusCode::OK {
            tracing::warn!(
                status = status.as_u16(),
                "the warm-up request was not answered 200"
            );
        }
        WarmedUp {
            connected: connected.is_ok(),
            request: Some(status),
        }
    }
}

/// The mark of the one request `serve_once` sends through a function's
/// service during init. Only this module can make one (its field is private)
/// and a request's extensions never come from the wire, so no caller can send
/// a request so marked.
#[derive(Debug, Clone, Copy)]
pub struct WarmUpRequest(());

impl WarmUpRequest {
    /// Whether `req` is the warm-up's own request.
    pub fn marks<B>(req: &http::Request<B>) -> bool {
        req.extensions().get::<WarmUpRequest>().is_some()
    }
}

/// The warm-up request's caller: a customer whose key id no key has (ids,
/// time-ordered, reach [`MAX_ID`] in 2093: `db::ids`). It only ever reads.
fn warm_up_caller() -> Option<Caller> {
    Id::new(MAX_ID).map(|key_id| Caller {
        key_id,
        role: Role::Customer,
        open_orders_cap: Some(0),
        webhooks_cap: 1,
    })
}

/// Sends `GET path_and_query`, as API Gateway would hand it to Lambda,
/// through `service` once, marked [`WarmUpRequest`] and with
/// [`warm_up_caller`] as its caller, and reads its answer to the end as
/// `lambda_http` would. Only a read: it changes nothing.
async fn serve_once(service: &axum::Router, path_and_query: &str) -> StatusCode {
    use lambda_http::IntoResponse as _;
    use tower::ServiceExt as _;
    let (path, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query, ""));
    let event = serde_json::json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": { "accept": "application/json", "user-agent": "petstore-warm-up" },
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "warm-up",
            "domainName": "warm-up.invalid",
            "domainPrefix": "warm-up",
            "http": {
                "method": "GET",
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "192.0.2.1",
                "userAgent": "petstore-warm-up"
            },
            "requestId": "warm-up",
            "routeKey": "$default",
            "stage": "$default",
            "time": "01/Jan/2026:00:00:00 +0000",
            "timeEpoch": 0
        },
        "isBase64Encoded": false
    });
    let Ok(mut request) = lambda_http::request::from_str(&event.to_string()) else {
        // Not a path: a query string with a quote would still be JSON.
        return StatusCode::BAD_REQUEST;
    };
    request.extensions_mut().insert(WarmUpRequest(()));
    if let Some(caller) = warm_up_caller() {
        request.extensions_mut().insert(caller);
    }
    // A router never fails: its error type has no values.
    let Ok(response) = service.clone().oneshot(request).await;
    response.into_response().await.status()
}

/// One failed warm-up call, for the warning.
type Failure = Box<dyn std::error::Error + Send + Sync>;

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_string())
}

fn key() -> HashMap<String, AttributeValue> {
    HashMap::from([("PK".into(), s(WARM_UP_KEY)), ("SK".into(), s(WARM_UP_KEY))])
}

async fn get_item(client: Client, table: String) -> Result<(), Failure> {
    client
        .get_item()
        .table_name(table)
        .set_key(Some(key()))
        .consistent_read(true)
        .send()
        .await?;
    Ok(())
}

/// An update whose condition cannot hold: the item does not exist.
async fn failed_update(client: Client, counters: String) -> Result<(), Failure> {
    let update = client
        .update_item()
        .table_name(counters)
        .key("PK", s(WARM_UP_KEY))
        .update_expression("SET warm_up = :w")
        .condition_expression("attribute_exists(PK)")
        .expression_attribute_values(":w", s(WARM_UP_KEY))
        .send()
        .await;
    match update {
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
        {
            Ok(())
        }
        Err(e) => Err(e.into()),
        Ok(_) => Err("the warm-up update found an item it never writes".into()),
    }
}
