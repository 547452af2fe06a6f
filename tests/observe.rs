//! The service's own observability (issue #13), end to end: a real request
//! through a function's real service writes one CloudWatch Embedded Metric
//! Format line and one JSON log line (in the format Lambda gets), and every
//! line it logs carries its request id and X-Ray trace id.
//!
//! Both outputs are captured in-process: metrics through the app's
//! [`Emitter`], logs through the Lambda subscriber (`telemetry::json`) given a
//! buffer instead of stdout, for this test's future only.

use crate::helpers::TestApp;
use axum::body::Body;
use axum::extract::ConnectInfo;
use http::Request;
use petstore::metrics::Emitter;
use petstore::ratelimit::{ManualClock, Plan};
use serde_json::{json, Value};
use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use tower::ServiceExt;
use tracing::instrument::WithSubscriber;
use tracing::subscriber::NoSubscriber;
use tracing::Dispatch;

const TRACE_HEADER: &str =
    "Root=1-67a0c0de-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1";
const TRACE_ID: &str = "1-67a0c0de-0123456789abcdef01234567";

/// Lines written to a shared buffer.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Lines {
    fn push(&self, bytes: &[u8]) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(bytes);
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }

    /// Every line, parsed; panics on one that is not JSON.
    fn json(&self) -> Vec<Value> {
        self.text()
            .lines()
            .map(|line| {
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
            })
            .collect()
    }

    /// Takes the lines written so far.
    fn take(&self) -> Vec<Value> {
        let lines = self.json();
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
        lines
    }
}

impl Write for Lines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.push(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A function's service as its `main` builds it, with metrics and logs captured.
struct Observed {
    app: petstore::App,
    service: axum::Router,
    metrics: Lines,
    logs: Lines,
}

impl Observed {
    fn new(test: &TestApp, function: &'static str) -> Observed {
        let metrics = Lines::default();
        let sink = metrics.clone();
        let app = test
            .app
            .clone()
            .with_metrics(Emitter::to(function, move |line| {
                sink.push(line.as_bytes())
            }));
        let routes = match function {
            "pets" => pets::routes(),
            _ => store::routes(),
        };
        Observed {
            service: petstore::http::service(routes, app.clone()),
            app,
            metrics,
            logs: Lines::default(),
        }
    }

    /// Runs `future` with the Lambda log format written to `self.logs`.
    async fn logged<F: Future>(&self, future: F) -> F::Output {
        // tracing caches whether each callsite (say, the SDK's UpdateItem
        // span) is wanted. While a single dispatcher is registered it asks
        // only the current thread's, so a callsite another test first hits
        // outside any capture would stay off for this one. With an idle
        // dispatcher kept alive, it asks every live one (as in Lambda, where
        // the one global subscriber answers for every thread).
        static IDLE: OnceLock<Dispatch> = OnceLock::new();
        IDLE.get_or_init(|| Dispatch::new(NoSubscriber::default()));
        let logs = self.logs.clone();
        future
            .with_subscriber(petstore::telemetry::json(move || logs.clone()))
            .await
    }

    async fn send(&self, request: Request<Body>) -> u16 {
        let response = self
            .logged(self.service.clone().oneshot(request))
            .await
            .unwrap_or_else(|never| match never {});
        response.status().as_u16()
    }
}

fn request(method: &str, path: &str, key: &str, body: Option<Value>) -> Request<Body> {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("x-api-key", key)
        .header("content-type", "application/json")
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .expect("request is valid");
    request
        .extensions_mut()
        .insert(ConnectInfo(SocketAddr::from(([192, 0, 2, 1], 40_000))));
    request
}

/// Panics unless `line` is an EMF document in namespace PetStore whose every
/// dimension and metric has its value at the top level; returns its metric
/// names with their units.
#[track_caller]
fn assert_emf(line: &Value) -> Vec<(String, String)> {
    let aws = &line["_aws"];
    let timestamp = aws["Timestamp"].as_u64().expect("_aws.Timestamp in ms");
    let now = chrono::Utc::now().timestamp_millis() as u64;
    assert!(
        now.abs_diff(timestamp) < 60_000,
        "Timestamp {timestamp} is not now"
    );
    let directives = aws["CloudWatchMetrics"]
        .as_array()
        .expect("CloudWatchMetrics");
    assert!(!directives.is_empty());
    assert_eq!(directives[0]["Namespace"], "PetStore");
    let mut metrics = Vec::new();
    for directive in directives {
        assert_eq!(directive["Namespace"], "PetStore", "{line}");
        for set in directive["Dimensions"].as_array().expect("Dimensions") {
            let set = set.as_array().expect("a dimension set");
            assert_eq!(set[0], "Function", "every set starts with Function: {line}");
            for name in set {
                let name = name.as_str().expect("a dimension name");
                assert!(
                    line[name].is_string(),
                    "dimension {name} has no value: {line}"
                );
            }
        }
        for metric in directive["Metrics"].as_array().expect("Metrics") {
            let name = metric["Name"].as_str().expect("Name").to_string();
            let unit = metric["Unit"].as_str().expect("Unit").to_string();
            assert!(
                line[&name].is_number(),
                "metric {name} has no value: {line}"
            );
            metrics.push((name, unit));
        }
    }
    metrics
}

fn has(metrics: &[(String, String)], name: &str, unit: &str) -> bool {
    metrics.iter().any(|(n, u)| n == name && u == unit)
}

#[tokio::test]
async fn a_lambda_request_writes_one_emf_line_and_one_log_line() {
    let test = TestApp::spawn().await;
    let key = test.api_key.clone().expect("spawn issues a key");
    let observed = Observed::new(&test, "pets");

    // The sample event, as lambda_http::run turns it into a request, with the
    // invocation's context (and its X-Ray trace header) as lambda_runtime adds it.
    let events = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../events");
    let event = std::fs::read_to_string(events.join("pets-list.json")).expect("the event");
    let mut request = lambda_http::request::from_str(&event.replace("psk_events_demo_key", &key))
        .expect("an API Gateway event");
    let mut context = lambda_http::Context::default();
    context.xray_trace_id = Some(TRACE_HEADER.to_string());
    request.extensions_mut().insert(context);

    let response = observed
        .logged(observed.service.clone().oneshot(request))
        .await
        .unwrap_or_else(|never| match never {});
    assert_eq!(response.status(), 200);
    let request_id = "evt-pets-list";
    assert_eq!(response.headers()["x-request-id"], request_id);

    // Metrics: one EMF line.
    let lines = observed.metrics.json();
    assert_eq!(lines.len(), 1, "one metrics line per request: {lines:?}");
    let line = &lines[0];
    let metrics = assert_emf(line);
    let dimensions = &line["_aws"]["CloudWatchMetrics"][0]["Dimensions"];
    assert_eq!(
        dimensions,
        &json!([
            ["Function"],
            ["Function", "Route"],
            ["Function", "StatusClass"]
        ])
    );
    assert!(has(&metrics, "Requests", "Count"), "{line}");
    assert!(has(&metrics, "Latency", "Milliseconds"), "{line}");
    assert_eq!(line["Function"], "pets");
    assert_eq!(line["Route"], "GET /pets");
    assert_eq!(line["StatusClass"], "2xx");
    assert_eq!(line["Requests"], 1);
    assert!(
        line["Latency"].as_f64().is_some_and(|ms| ms > 0.0),
        "{line}"
    );
    assert_eq!(line["requestId"], request_id);
    assert_eq!(line["traceId"], TRACE_ID);
    // The first request of this process may be its cold start; nothing else
    // here counts anything.
    for (name, _) in &metrics {
        assert!(
            ["Requests", "Latency", "ColdStarts"].contains(&name.as_str()),
            "{name} counted by a plain read: {line}"
        );
    }

    // Logs: JSON lines, every one in the request's span.
    let logs = observed.logs.json();
    assert!(
        !observed.logs.text().contains(&key),
        "the API key is logged"
    );
    for log in &logs {
        assert_eq!(log["span"]["request_id"], request_id, "{log}");
        assert_eq!(log["span"]["xray_trace_id"], TRACE_ID, "{log}");
    }
    let requests: Vec<&Value> = logs.iter().filter(|l| l["message"] == "request").collect();
    assert_eq!(requests.len(), 1, "one log line per request: {logs:?}");
    let log = requests[0];
    assert_eq!(log["level"], "INFO");
    assert_eq!(log["route"], "GET /pets");
    assert_eq!(log["status"], 200);
    assert!(log["latency_ms"].is_number(), "{log}");
    assert_eq!(log["key_id"], test.key_id);
    assert_eq!(log["role"], "staff");
    assert_eq!(log["plan"], "enterprise");

    // Traces: a line per DynamoDB call (the key's GetItem, the counter's
    // UpdateItem, the list's Query), from the SDK's own spans.
    let calls: Vec<&str> = logs
        .iter()
        .filter(|l| l["message"] == "dynamodb call")
        .map(|l| {
            assert!(l["duration_ms"].is_number(), "{l}");
            assert_eq!(l["level"], "INFO");
            l["operation"].as_str().unwrap_or_default()
        })
        .collect();
    for operation in ["GetItem", "UpdateItem", "Query"] {
        assert!(calls.contains(&operation), "no {operation} line: {logs:?}");
    }
}

#[tokio::test]
async fn init_s_warm_up_request_has_a_log_line_of_its_own_and_no_metrics_line() {
    // Given each function's service as its main builds it
    let test = TestApp::spawn().await;
    for (function, read, route) in [
        ("pets", "/pets?limit=20", "GET /pets"),
        ("store", "/store/inventory?limit=20", "GET /store/inventory"),
    ] {
        let observed = Observed::new(&test, function);

        // When its init warms it up
        let warm_up = petstore::warm_up::warm_up(&observed.app, &observed.service, read);
        let status = observed.logged(warm_up).await;

        // Then the warm-up request was served, logged as what it is, and
        // counted in no metric (Requests, Latency, ColdStarts alike)
        assert_eq!(status, Some(http::StatusCode::OK), "{function}");
        assert_eq!(observed.metrics.text(), "", "{function}: a metrics line");
        let logs = observed.logs.json();
        let lines: Vec<&Value> = logs
            .iter()
            .filter(|l| {
                ["request", "warm-up request"].contains(&l["message"].as_str().unwrap_or(""))
            })
            .collect();
        assert_eq!(lines.len(), 1, "{function}: {logs:?}");
        assert_eq!(lines[0]["message"], "warm-up request");
        assert_eq!(lines[0]["route"], route);
        assert_eq!(lines[0]["status"], 200);
    }
}

#[tokio::test]
async fn orders_refusals_and_bans_are_counted_for_the_request_that_made_them() {
    // The limiter's clock stands still, so the two requests share a minute.
    let clock = Arc::new(ManualClock::new(1_893_499_230));
    let test = TestApp::spawn_with_clock(
        |name| (name == "BAN_THRESHOLD").then(|| "1".to_string()),
        clock,
    )
    .await;
    let category = test.create_category("Dogs").await;
    let pet = test.create_pet("Rex", category, "available").await;
    test.put(&format!("/store/inventory/{pet}"), json!({ "quantity": 5 }))
        .await
        .assert_status(200);
    let key = test.api_key.clone().expect("spawn issues a key");
    let observed = Observed::new(&test, "store");
    let order = json!({ "petId": pet, "quantity": 2 });

    let status = observed
        .send(request("POST", "/store/orders", &key, Some(order)))
        .await;
    assert_eq!(status, 201);
    let lines = observed.metrics.take();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    let metrics = assert_emf(line);
    assert!(has(&metrics, "OrdersPlaced", "Count") && has(&metrics, "UnitsSold", "Count"));
    assert_eq!(line["Function"], "store");
    assert_eq!(line["Route"], "POST /store/orders");
    assert_eq!(line["OrdersPlaced"], 1);
    assert_eq!(line["UnitsSold"], 2);

    // A key allowed one request a minute, and banned at the first refusal.
    let limited = test.create_key(Plan::Enterprise, Some((1, 100))).await.key;
    let status = observed
        .send(request("GET", "/store/inventory", &limited, None))
        .await;
    assert_eq!(status, 200);
    let status = observed
        .send(request("GET", "/store/inventory", &limited, None))
        .await;
    assert_eq!(status, 429);
    let lines = observed.metrics.take();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let refused = &lines[1];
    let metrics = assert_emf(refused);
    assert!(has(&metrics, "RateLimited", "Count") && has(&metrics, "Bans", "Count"));
    assert_eq!(refused["Route"], "GET /store/inventory");
    assert_eq!(refused["StatusClass"], "4xx");
    assert_eq!(refused["RateLimited"], 1);
    assert_eq!(refused["Bans"], 1);
    assert!(lines[0].get("RateLimited").is_none(), "{}", lines[0]);

    // The log line never has the key, known or not.
    let logs = observed.logs.text();
    assert!(!logs.contains(&key) && !logs.contains(&limited));

    // Unknown paths share one route, whatever their path.
    let status = observed
        .send(request("GET", "/store/../../etc/passwd", &key, None))
        .await;
    assert_eq!(status, 404);
    let lines = observed.metrics.take();
    assert_eq!(lines[0]["Route"], "unmatched");
}

#[tokio::test]
async fn a_replay_is_counted_as_one_and_places_no_order() {
    let test = TestApp::spawn().await;
    let category = test.create_category("Dogs").await;
    let pet = test.create_pet("Rex", category, "available").await;
    let key = test.api_key.clone().expect("spawn issues a key");
    let observed = Observed::new(&test, "store");
    let keyed = || {
        let order = json!({ "petId": pet });
        let mut request = request("POST", "/store/orders", &key, Some(order));
        let idempotency_key = http::HeaderValue::from_static("order-1");
        request
            .headers_mut()
            .insert("idempotency-key", idempotency_key);
        request
    };

    assert_eq!(observed.send(keyed()).await, 201);
    assert_eq!(observed.send(keyed()).await, 201);

    let lines = observed.metrics.take();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["OrdersPlaced"], 1);
    assert!(lines[0].get("IdempotentReplays").is_none(), "{}", lines[0]);
    assert!(has(&assert_emf(&lines[1]), "IdempotentReplays", "Count"));
    assert_eq!(lines[1]["IdempotentReplays"], 1);
    assert!(lines[1].get("OrdersPlaced").is_none(), "{}", lines[1]);
}
