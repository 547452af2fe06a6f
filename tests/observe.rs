//! The service's own observability (issues #13 and #25), end to end: a real
//! request through a function's real service writes, at Lambda's default
//! level, one line: its CloudWatch Embedded Metric Format document, carrying
//! what an operator needs besides (request id, status, key id, DynamoDB calls
//! and the SDK's retries, the X-Ray trace id of a recorded request), small
//! enough not to cost more than the request. `DEBUG` adds a line per
//! DynamoDB call; warnings are logged at any level. Every line logged in a
//! request carries its request id (and its trace id, when X-Ray records it).
//!
//! Everything is captured in-process into one buffer, as Lambda's stdout:
//! metrics lines through the app's [`Emitter`], logs through the Lambda
//! subscriber (`telemetry::json_at`) given the buffer instead of stdout, for
//! this test's future only.

use crate::helpers::TestApp;
use crate::idempotency::proxy::{FaultMix, FaultProxy};
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

const SAMPLED: &str = "Root=1-67a0c0de-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1";
const NOT_SAMPLED: &str =
    "Root=1-67a0c0de-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=0";
const TRACE_ID: &str = "1-67a0c0de-0123456789abcdef01234567";

/// The most a request's line may take at the default level: CloudWatch Logs
/// bills every byte ingested, on every request (issue #25). 400 before the
/// function version became a dimension (issue 31: the releases' rollback
/// alarms select the new version's answers by it), which adds about 55 bytes.
const MAX_LINE_BYTES: usize = 450;

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

    /// Takes the lines written so far, as written.
    fn take_text(&self) -> Vec<String> {
        let text = self.text();
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
        text.lines().map(str::to_string).collect()
    }

    /// Takes the lines written so far, parsed; panics on one that is not JSON.
    fn take(&self) -> Vec<Value> {
        self.take_text()
            .iter()
            .map(|line| {
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
            })
            .collect()
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

/// A function's service as its `main` builds it, its stdout captured.
struct Observed {
    app: petstore::App,
    service: axum::Router,
    stdout: Lines,
    /// Lambda's application log level.
    level: &'static str,
}

impl Observed {
    /// `function`'s service on `test`'s app, at Lambda's default level, `INFO`.
    fn new(test: &TestApp, function: &'static str) -> Observed {
        let stdout = Lines::default();
        let sink = stdout.clone();
        let app = test.app.clone().with_metrics(
            Emitter::to(function, move |line| sink.push(line.as_bytes()))
                // As in Lambda, where the version is a dimension (a
                // long-lived function's number has a few digits).
                .with_version(Some("1234")),
        );
        let routes = match function {
            "pets" => pets::routes(),
            _ => store::routes(),
        };
        Observed {
            service: petstore::http::service(routes, app.clone()),
            app,
            stdout,
            level: "INFO",
        }
    }

    fn at_level(self, level: &'static str) -> Observed {
        Observed { level, ..self }
    }

    /// Runs `future` with the Lambda log format written to `self.stdout`.
    async fn logged<F: Future>(&self, future: F) -> F::Output {
        // tracing caches whether each callsite (say, the SDK's UpdateItem
        // span) is wanted. While a single dispatcher is registered it asks
        // only the current thread's, so a callsite another test first hits
        // outside any capture would stay off for this one. With an idle
        // dispatcher kept alive, it asks every live one (as in Lambda, where
        // the one global subscriber answers for every thread).
        static IDLE: OnceLock<Dispatch> = OnceLock::new();
        IDLE.get_or_init(|| Dispatch::new(NoSubscriber::default()));
        let stdout = self.stdout.clone();
        future
            .with_subscriber(petstore::telemetry::json_at(
                move || stdout.clone(),
                self.level,
            ))
            .await
    }

    async fn send<B>(&self, request: Request<B>) -> u16
    where
        B: axum::body::HttpBody<Data = bytes::Bytes> + Send + 'static,
        B::Error: Into<axum::BoxError>,
    {
        let response = self
            .logged(self.service.clone().oneshot(request))
            .await
            .unwrap_or_else(|never| match never {});
        response.status().as_u16()
    }

    /// Sends the sample `GET /pets?limit=20` event as `lambda_http::run`
    /// turns it into a request, with the invocation's context (and its X-Ray
    /// trace header) as `lambda_runtime` adds it.
    async fn send_event(&self, key: &str, trace_header: &str) -> u16 {
        let events = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../events");
        let event = std::fs::read_to_string(events.join("pets-list.json")).expect("the event");
        let mut request = lambda_http::request::from_str(
            &event.replace("psk_events-demo-key_published-not-a-secret-0000", key),
        )
        .expect("an API Gateway event");
        let mut context = lambda_http::Context::default();
        context.xray_trace_id = Some(trace_header.to_string());
        request.extensions_mut().insert(context);
        self.send(request).await
    }
}

/// The metrics lines among `lines`.
fn emf(lines: &[Value]) -> Vec<&Value> {
    lines.iter().filter(|l| l.get("_aws").is_some()).collect()
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

/// `POST /store/orders` of one `pet`, with `Idempotency-Key: order-1`.
fn keyed_order(key: &str, pet: u64) -> Request<Body> {
    let mut request = request("POST", "/store/orders", key, Some(json!({ "petId": pet })));
    let idempotency_key = http::HeaderValue::from_static("order-1");
    request
        .headers_mut()
        .insert("idempotency-key", idempotency_key);
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
async fn at_info_a_lambda_request_writes_one_small_line_with_what_an_operator_needs() {
    let test = TestApp::spawn().await;
    let key = test.api_key.clone().expect("spawn issues a key");
    let observed = Observed::new(&test, "pets");
    // The process's first request may be its cold start, which its line
    // says; the one measured here is a warm one.
    assert_eq!(observed.send_event(&key, NOT_SAMPLED).await, 200);
    observed.stdout.take();

    assert_eq!(observed.send_event(&key, NOT_SAMPLED).await, 200);

    // One line: the metrics line, which Lambda takes as INFO (no `level`)
    let text = observed.stdout.take_text();
    assert_eq!(text.len(), 1, "one line per request: {text:#?}");
    assert!(
        text[0].len() <= MAX_LINE_BYTES,
        "{} bytes: {}",
        text[0].len(),
        text[0]
    );
    assert!(!text[0].contains(&key), "the API key is logged");
    let line: Value = serde_json::from_str(&text[0]).expect("JSON");
    let metrics = assert_emf(&line);
    assert_eq!(
        metrics,
        [("Latency".to_string(), "Milliseconds".to_string())]
    );
    assert_eq!(
        line["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
        json!([
            ["Function"],
            ["Function", "Route"],
            ["Function", "StatusClass"],
            ["Function", "Version", "StatusClass"]
        ])
    );
    assert_eq!(line["Function"], "pets");
    assert_eq!(line["Route"], "GET /pets");
    assert_eq!(line["StatusClass"], "2xx");
    assert!(
        line["Latency"].as_f64().is_some_and(|ms| ms > 0.0),
        "{line}"
    );
    // What an operator needs besides: which request, its exact status, who
    // called (the key's id, never the key), what it cost in DynamoDB calls.
    assert_eq!(line["requestId"], "evt-pets-list");
    assert_eq!(line["status"], 200);
    assert_eq!(line["keyId"], test.key_id);
    assert!(
        line["dbCalls"].as_u64().is_some_and(|calls| calls >= 2),
        "the counter's UpdateItem and the list's Query at least: {line}"
    );
    // Nothing that leads nowhere: no trace id of a trace not recorded, no
    // retries that did not happen, no cold start that was not one.
    for absent in ["traceId", "sdkRetries", "ColdStarts", "level"] {
        assert!(line.get(absent).is_none(), "{absent}: {line}");
    }
}

#[tokio::test]
async fn at_debug_each_dynamodb_call_adds_a_line_in_the_request_s_span() {
    let test = TestApp::spawn().await;
    let key = test.api_key.clone().expect("spawn issues a key");
    let observed = Observed::new(&test, "pets").at_level("DEBUG");

    assert_eq!(observed.send_event(&key, SAMPLED).await, 200);

    let lines = observed.stdout.take();
    let metrics = emf(&lines);
    assert_eq!(metrics.len(), 1, "one metrics line: {lines:#?}");
    let line = metrics[0];
    assert_eq!(line["traceId"], TRACE_ID, "X-Ray recorded this one");
    let logs: Vec<&Value> = lines.iter().filter(|l| l.get("_aws").is_none()).collect();
    let mut operations = Vec::new();
    for log in &logs {
        assert_eq!(log["span"]["request_id"], "evt-pets-list", "{log}");
        assert_eq!(log["span"]["xray_trace_id"], TRACE_ID, "{log}");
        if log["message"] == "dynamodb call" {
            assert_eq!(log["level"], "DEBUG", "{log}");
            assert!(log["duration_ms"].is_number(), "{log}");
            assert_eq!(log["retries"], 0, "{log}");
            operations.push(log["operation"].as_str().unwrap_or_default());
        }
    }
    for operation in ["UpdateItem", "Query"] {
        assert!(operations.contains(&operation), "no {operation}: {logs:#?}");
    }
    assert_eq!(
        line["dbCalls"].as_u64(),
        Some(operations.len() as u64),
        "one line per call counted: {lines:#?}"
    );
}

#[tokio::test]
async fn the_sdk_s_retries_are_counted_and_a_failure_is_logged_at_info() {
    // Given the store's service reaching DynamoDB through a proxy that can
    // throttle the read of an idempotency record, and an order placed
    let test = TestApp::spawn().await;
    let category = test.create_category("Dogs").await;
    let pet = test.create_pet("Rex", category, "available").await;
    test.put(&format!("/store/inventory/{pet}"), json!({ "quantity": 5 }))
        .await
        .assert_status(200);
    let proxy = FaultProxy::start(&test.endpoint, FaultMix::NONE, 0).await;
    let through = test.instance_reaching(&proxy.endpoint).await;
    let observed = Observed::new(&through, "store");
    let key = test.api_key.clone().expect("spawn issues a key");
    let keyed = || keyed_order(&key, pet);
    assert_eq!(observed.send(keyed()).await, 201);
    observed.stdout.take();

    // When its retry's read of the record is throttled once
    proxy.throttle_record_reads(1);
    assert_eq!(observed.send(keyed()).await, 201);

    // Then the SDK's retry is on the request's one line
    let lines = observed.stdout.take();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0]["sdkRetries"], 1, "{}", lines[0]);
    assert_eq!(lines[0]["IdempotentReplays"], 1, "{}", lines[0]);

    // When it is throttled past the SDK's retries
    proxy.throttle_record_reads(10);
    assert_eq!(observed.send(keyed()).await, 503);
    proxy.throttle_record_reads(0);

    // Then, at INFO, the failure has its warning beside the request's line,
    // in the request's span
    let lines = observed.stdout.take();
    let metrics = emf(&lines);
    assert_eq!(metrics.len(), 1, "{lines:#?}");
    assert_eq!(metrics[0]["StatusClass"], "5xx");
    assert_eq!(
        metrics[0]["sdkRetries"], 2,
        "three attempts: {}",
        metrics[0]
    );
    let warnings: Vec<&Value> = lines.iter().filter(|l| l["level"] == "WARN").collect();
    assert!(!warnings.is_empty(), "{lines:#?}");
    for warning in warnings {
        assert_eq!(
            warning["span"]["request_id"], metrics[0]["requestId"],
            "{warning}"
        );
    }
    assert_eq!(
        lines.len(),
        1 + lines
            .iter()
            .filter(|l| l["level"] == "WARN" || l["level"] == "ERROR")
            .count(),
        "{lines:#?}"
    );
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
        let warmed = observed.logged(warm_up).await;

        // Then the warm-up request was served, logged as what it is, and
        // counted in no metric (Latency, ColdStarts alike): one line in all
        assert_eq!(warmed.request, Some(http::StatusCode::OK), "{function}");
        let lines = observed.stdout.take();
        assert_eq!(lines.len(), 1, "{function}: {lines:#?}");
        assert!(emf(&lines).is_empty(), "{function}: a metrics line");
        assert_eq!(lines[0]["message"], "warm-up request");
        assert_eq!(lines[0]["level"], "INFO");
        assert_eq!(lines[0]["route"], route);
        assert_eq!(lines[0]["status"], 200);
        assert!(
            lines[0]["db_calls"].as_u64().is_some_and(|n| n > 0),
            "{}",
            lines[0]
        );
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
    let lines = observed.stdout.take();
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
    // The ban is logged too, at INFO: one line when a key is banned.
    let all = observed.stdout.take();
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(all.iter().filter(|l| l["message"] == "banned").count(), 1);
    let lines = emf(&all);
    assert_eq!(lines.len(), 2, "{lines:?}");
    let refused = lines[1];
    let metrics = assert_emf(refused);
    assert!(has(&metrics, "RateLimited", "Count") && has(&metrics, "Bans", "Count"));
    assert_eq!(refused["Route"], "GET /store/inventory");
    assert_eq!(refused["StatusClass"], "4xx");
    assert_eq!(refused["RateLimited"], 1);
    assert_eq!(refused["Bans"], 1);
    assert!(lines[0].get("RateLimited").is_none(), "{}", lines[0]);

    // No line has the key, known or not.
    let logs = observed.stdout.text();
    assert!(!logs.contains(&key) && !logs.contains(&limited));

    // Unknown paths share one route, whatever their path.
    let status = observed
        .send(request("GET", "/store/../../etc/passwd", &key, None))
        .await;
    assert_eq!(status, 404);
    let lines = observed.stdout.take();
    assert_eq!(lines[0]["Route"], "unmatched");
}

#[tokio::test]
async fn a_replay_is_counted_as_one_and_places_no_order() {
    let test = TestApp::spawn().await;
    let category = test.create_category("Dogs").await;
    let pet = test.create_pet("Rex", category, "available").await;
    let key = test.api_key.clone().expect("spawn issues a key");
    let observed = Observed::new(&test, "store");
    let keyed = || keyed_order(&key, pet);

    assert_eq!(observed.send(keyed()).await, 201);
    assert_eq!(observed.send(keyed()).await, 201);

    let lines = observed.stdout.take();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["OrdersPlaced"], 1);
    assert!(lines[0].get("IdempotentReplays").is_none(), "{}", lines[0]);
    assert!(has(&assert_emf(&lines[1]), "IdempotentReplays", "Count"));
    assert_eq!(lines[1]["IdempotentReplays"], 1);
    assert!(lines[1].get("OrdersPlaced").is_none(), "{}", lines[1]);
}
