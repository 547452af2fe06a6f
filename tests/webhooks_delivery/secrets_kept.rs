//! Secrets stay with their owner (section 9, "Secrets"): after a whole
//! webhook flow (registered with an `Idempotency-Key` and replayed, its
//! secret rotated with the old one retired at once, pinged and delivered
//! signed), no secret's bytes are in the table's stream records, in any of
//! its items (idempotency records included) or in the data export; and
//! after another (with bad input, a failed attempt, a retry and an attempt
//! ending in an error), none in any line the process logged at the most
//! verbose level, nor in its metrics lines.

use super::receivers::{rust_receiver, Answer};
use super::*;
use crate::idempotency::send_keyed;
use crate::webhooks::{resolving, set_attributes, RECEIVER};
use base64::Engine;
use http::Method;
use petstore::metrics::Emitter;
use petstore_admin::copy::export;
use petstore_admin::scan::ScanOptions;
use tracing_subscriber::Layer;

#[tokio::test]
async fn no_secret_is_in_the_stream_the_items_or_the_export_after_a_whole_flow() {
    let staff = TestApp::spawn().await;
    let customer = staff.as_customer().await;
    resolving(&customer);
    let (id, first, second) = registered_replayed_and_rotated(&customer).await;

    // The receiver knows both: only the new one signs, the old retired at once.
    let mut receiver = rust_receiver(&[&first, &second], vec![Answer::Status(200)]).await;
    let url = AttributeValue::S(receiver.url.clone());
    let pk = format!("WEBHOOK#{id}");
    set_attributes(&customer, pk, "ENDPOINT".into(), &[("url", url)]).await;
    let ping = customer
        .post(&format!("/webhooks/{id}/ping"), json!({}))
        .await;
    ping.assert_status(202);
    let deliverer = deliverer(&staff, LOCAL, system_resolver());
    for message in customer.hooks.queue.take() {
        deliverer.deliver(&message, 1).await.expect("delivered");
    }
    assert_eq!(receiver.next().await.verified, [false, true]);

    let needles = needles(&[&first, &second]);
    let items = table_bytes(&staff).await;
    let stream = stream_bytes(&staff).await;
    let mut exported = Vec::new();
    let db = &staff.app.db;
    export(
        db.client(),
        db.table(),
        ScanOptions::default(),
        &mut exported,
    )
    .await
    .expect("exported");
    // What is searched holds what the flow wrote, so a search that finds
    // nothing has looked in the right place.
    assert!(contains(&items, b"IDEMPOTENCY#") && contains(&items, b"whsealed_v1."));
    assert!(contains(&stream, format!("WEBHOOK#{id}").as_bytes()));
    assert!(contains(&stream, b"whsealed_v1."));
    for (place, haystack) in [
        ("items", &items),
        ("stream", &stream),
        ("export", &exported),
    ] {
        for needle in &needles {
            assert!(
                !contains(haystack, needle),
                "a secret's bytes in the {place}"
            );
        }
    }
}

/// Registers an endpoint with an `Idempotency-Key`, replays it (no secret
/// again), and rotates its secret retiring the old one at once; answers the
/// endpoint's id and its two secrets.
async fn registered_replayed_and_rotated(customer: &TestApp) -> (u64, String, String) {
    let body = json!({"url": RECEIVER, "description": "kept"});
    let created = send_keyed(customer, Method::POST, "/webhooks", Some(&body), "hook-1").await;
    created.assert_status(201);
    let id = created.json()["id"].as_u64().expect("an id");
    let first = created.json()["secret"]
        .as_str()
        .expect("a secret")
        .to_string();
    let replayed = send_keyed(customer, Method::POST, "/webhooks", Some(&body), "hook-1").await;
    replayed.assert_status(201);
    assert_eq!(replayed.header("idempotent-replayed"), Some("true"));
    assert_eq!(replayed.json()["id"], id);
    assert!(
        replayed.json().get("secret").is_none(),
        "the replay has no secret"
    );
    let at_once = json!({"expireOldAfterSeconds": 0});
    let path = format!("/webhooks/{id}/secret");
    let rotated = send_keyed(customer, Method::POST, &path, Some(&at_once), "rotate-1").await;
    rotated.assert_status(200);
    let second = rotated.json()["secret"]
        .as_str()
        .expect("a secret")
        .to_string();
    (id, first, second)
}

/// Each secret as sent, its base64 part, its 32 raw bytes, and those
/// bytes and the secret's as a log line would print them (`{:?}`, hex).
fn needles(secrets: &[&str]) -> Vec<Vec<u8>> {
    let mut needles = Vec::new();
    for secret in secrets {
        let encoded = secret.strip_prefix("whsec_").expect("a whsec_ secret");
        let raw = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .expect("base64");
        let debug = format!("{raw:?}").into_bytes();
        let text_debug = format!("{:?}", secret.as_bytes()).into_bytes();
        let hex: String = raw.iter().map(|byte| format!("{byte:02x}")).collect();
        needles.extend([
            secret.as_bytes().to_vec(),
            encoded.as_bytes().to_vec(),
            raw,
            debug,
            text_debug,
            hex.into_bytes(),
        ]);
    }
    needles
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// Every string and binary of every item of the table, one after another.
async fn table_bytes(app: &TestApp) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut pages = app
        .app
        .db
        .client()
        .scan()
        .table_name(&app.app.config.table_name)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        for item in page.expect("a page").items() {
            item.values().for_each(|value| flatten(value, &mut bytes));
        }
    }
    bytes
}

fn flatten(value: &AttributeValue, out: &mut Vec<u8>) {
    match value {
        AttributeValue::S(text) | AttributeValue::N(text) => out.extend(text.as_bytes()),
        AttributeValue::B(blob) => out.extend(blob.as_ref()),
        AttributeValue::L(list) => list.iter().for_each(|v| flatten(v, out)),
        AttributeValue::M(map) => map.values().for_each(|v| flatten(v, out)),
        AttributeValue::Ss(texts) => texts.iter().for_each(|t| out.extend(t.as_bytes())),
        other => out.extend(format!("{other:?}").as_bytes()),
    }
    out.push(b'\n');
}

/// Every record of the table's stream, old and new images, as [`flatten`].
async fn stream_bytes(app: &TestApp) -> Vec<u8> {
    use aws_sdk_dynamodbstreams::types::{AttributeValue as Streamed, ShardIteratorType};
    fn streamed(value: &Streamed, out: &mut Vec<u8>) {
        match value {
            Streamed::S(text) | Streamed::N(text) => out.extend(text.as_bytes()),
            Streamed::B(blob) => out.extend(blob.as_ref()),
            Streamed::L(list) => list.iter().for_each(|v| streamed(v, out)),
            Streamed::M(map) => map.values().for_each(|v| streamed(v, out)),
            other => out.extend(format!("{other:?}").as_bytes()),
        }
        out.push(b'\n');
    }
    let table = app
        .app
        .db
        .client()
        .describe_table()
        .table_name(&app.app.config.table_name)
        .send()
        .await
        .expect("the table");
    let arn = table
        .table
        .and_then(|t| t.latest_stream_arn)
        .expect("a stream");
    let client = events::local::local_streams_client(&app.endpoint);
    let described = client.describe_stream().stream_arn(&arn).send().await;
    let shards = described
        .expect("the stream")
        .stream_description
        .map(|d| d.shards.unwrap_or_default())
        .unwrap_or_default();
    let mut bytes = Vec::new();
    for shard in shards {
        let iterator = client
            .get_shard_iterator()
            .stream_arn(&arn)
            .shard_id(shard.shard_id.unwrap_or_default())
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            .send()
            .await
            .expect("an iterator");
        let mut next = iterator.shard_iterator;
        while let Some(at) = next {
            let got = client.get_records().shard_iterator(at).send().await;
            let got = got.expect("records");
            if got.records().is_empty() {
                break;
            }
            for record in got.records() {
                let images = record
                    .dynamodb
                    .iter()
                    .flat_map(|r| [r.old_image.as_ref(), r.new_image.as_ref(), r.keys.as_ref()]);
                for image in images.flatten() {
                    image.values().for_each(|v| streamed(v, &mut bytes));
                }
            }
            next = got.next_shard_iterator;
        }
    }
    bytes
}

/// Every line a process writes: the logs (at `TRACE`, every target, the
/// SDK's spans with their fields) and the metrics lines, in one buffer.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl Captured {
    fn push(&self, bytes: &[u8]) {
        let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        lines.extend_from_slice(bytes);
    }

    fn bytes(&self) -> Vec<u8> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.push(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The most the stack can be asked to log: every target at `TRACE` (more
/// than `RUST_LOG=trace` or Lambda's `DEBUG` turn on), as JSON with each
/// event's fields and every span around it with its fields.
fn everything(into: &Captured) -> tracing::Dispatch {
    use tracing_subscriber::layer::SubscriberExt;
    let into = into.clone();
    let lines = tracing_subscriber::fmt::layer()
        .json()
        .with_current_span(true)
        .with_span_list(true)
        .with_writer(move || into.clone())
        .with_filter(tracing_subscriber::filter::LevelFilter::TRACE);
    tracing::Dispatch::new(tracing_subscriber::registry().with(lines))
}

/// A caller of `service` with `key`, as API Gateway reaches the function.
struct Caller<'a> {
    service: &'a axum::Router,
    key: &'a str,
}

impl Caller<'_> {
    async fn send(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        self.send_keyed(method, path, body, None).await
    }

    async fn send_keyed(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        idempotency_key: Option<&str>,
    ) -> (u16, Value) {
        use http_body_util::BodyExt;
        use tower::ServiceExt;
        let mut request = http::Request::builder()
            .method(method)
            .uri(path)
            .header("x-api-key", self.key)
            .header("content-type", "application/json");
        if let Some(key) = idempotency_key {
            request = request.header("idempotency-key", key);
        }
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut request = request
            .body(axum::body::Body::from(body))
            .expect("a request");
        let from = std::net::SocketAddr::from(([203, 0, 113, 7], 40_000));
        request
            .extensions_mut()
            .insert(axum::extract::ConnectInfo(from));
        let response = self.service.clone().oneshot(request).await;
        let response = response.unwrap_or_else(|never| match never {});
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.expect("a body");
        let json = serde_json::from_slice(&bytes.to_bytes()).unwrap_or(Value::Null);
        (status, json)
    }
}

#[tokio::test]
async fn no_secret_is_in_any_log_or_metrics_line_of_a_whole_flow_at_the_most_verbose_level() {
    let staff = TestApp::spawn().await;
    let customer = staff.as_customer().await;
    resolving(&customer);
    let captured = Captured::default();
    // tracing caches per callsite whether it is wanted; with an idle
    // dispatcher alive beside this thread's it asks each (tests/observe.rs).
    static IDLE: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
    IDLE.get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
    // The test's runtime has one thread: every task of the flow (the
    // router's, the SDK's connections, the local queue's attempts) is
    // polled on it, under this default.
    let _logging = tracing::dispatcher::set_default(&everything(&captured));
    let sink = captured.clone();
    let metered = customer
        .app
        .clone()
        .with_metrics(Emitter::to("webhooks", move |line| {
            sink.push(line.as_bytes())
        }));
    let service = customer.hooks.service(&metered);
    let owner = Caller {
        service: &service,
        key: customer.api_key.as_deref().expect("the customer's key"),
    };
    let staff_caller = Caller {
        service: &service,
        key: staff.api_key.as_deref().expect("staff's key"),
    };

    // Registered with an Idempotency-Key and replayed; rotated, the old
    // secret retired at once.
    let body = json!({"url": RECEIVER, "description": "logged"});
    let (status, created) = owner
        .send_keyed(Method::POST, "/webhooks", Some(body.clone()), Some("log-1"))
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_u64().expect("an id");
    let first = created["secret"].as_str().expect("a secret").to_string();
    let (status, _) = owner
        .send_keyed(Method::POST, "/webhooks", Some(body), Some("log-1"))
        .await;
    assert_eq!(status, 201);
    let rotate = format!("/webhooks/{id}/secret");
    let at_once = json!({"expireOldAfterSeconds": 0});
    let (status, rotated) = owner.send(Method::POST, &rotate, Some(at_once)).await;
    assert_eq!(status, 200, "{rotated}");
    let second = rotated["secret"].as_str().expect("a secret").to_string();

    // Bad input, and staff asking for what is not theirs.
    let bad: [(Method, String, Value, u16); 5] = [
        (
            Method::POST,
            "/webhooks".into(),
            json!({"url": "ftp://x"}),
            400,
        ),
        (
            Method::PATCH,
            format!("/webhooks/{id}"),
            json!({"events": ["nope"]}),
            400,
        ),
        (
            Method::POST,
            rotate.clone(),
            json!({"expireOldAfterSeconds": -1}),
            400,
        ),
        (Method::POST, rotate.clone(), json!({}), 403),
        (
            Method::PATCH,
            format!("/webhooks/{id}"),
            json!({"url": RECEIVER}),
            403,
        ),
    ];
    for (n, (method, path, body, expected)) in bad.into_iter().enumerate() {
        let caller = if expected == 403 {
            &staff_caller
        } else {
            &owner
        };
        let (status, answer) = caller.send(method, &path, Some(body)).await;
        assert_eq!(status, expected, "bad request {n}: {answer}");
    }

    // A ping: the receiver fails the first attempt (500), the schedule's
    // next attempt succeeds; then a retry by hand, delivered again. Each
    // message goes to the local queue, which attempts and defers as the
    // deliveries queue's mapping does.
    let answers = vec![Answer::Status(500), Answer::Status(200)];
    let mut receiver = rust_receiver(&[&first, &second], answers).await;
    let pk = format!("WEBHOOK#{id}");
    let url = AttributeValue::S(receiver.url.clone());
    set_attributes(&customer, pk.clone(), "ENDPOINT".into(), &[("url", url)]).await;
    let ping = format!("/webhooks/{id}/ping");
    let (status, pinged) = owner.send(Method::POST, &ping, Some(json!({}))).await;
    assert_eq!(status, 202, "{pinged}");
    let event_id = pinged["eventId"].as_str().expect("an event id").to_string();
    let deliverer = deliverer(&staff, LOCAL, system_resolver());
    let sent = customer.hooks.queue.take();
    deliverer.queue.send(sent).await.expect("queued");
    assert_eq!(receiver.next().await.verified, [false, true]);
    assert_eq!(receiver.next().await.verified, [false, true]);
    let retry = format!("/webhooks/{id}/deliveries/{event_id}/retry");
    let (status, retried) = owner.send(Method::POST, &retry, Some(json!({}))).await;
    assert!(status < 300, "{status} {retried}");
    let sent = customer.hooks.queue.take();
    deliverer.queue.send(sent).await.expect("queued");
    receiver.next().await;

    // An attempt that fails with an error of its own: nobody listens.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = closed.local_addr().expect("its address").port();
    drop(closed);
    let url = AttributeValue::S(format!("http://127.0.0.1:{port}/hooks"));
    set_attributes(&customer, pk, "ENDPOINT".into(), &[("url", url)]).await;
    let (status, pinged) = owner.send(Method::POST, &ping, Some(json!({}))).await;
    assert_eq!(status, 202);
    let sent = customer.hooks.queue.take();
    deliverer.queue.send(sent).await.expect("queued");
    let refused = pinged["eventId"].clone();
    let deliveries = format!("/webhooks/{id}/deliveries");
    let mut error = None;
    for _ in 0..100 {
        let (status, listed) = owner.send(Method::GET, &deliveries, None).await;
        assert_eq!(status, 200, "{listed}");
        let attempts = listed.as_array().into_iter().flatten();
        let attempts = attempts.filter(|delivery| delivery["eventId"] == refused);
        let attempts = attempts.flat_map(|delivery| delivery["attempts"].as_array().cloned());
        // Recorded, not the claim listed while the attempt is made.
        let in_progress = Some(petstore::webhooks::deliveries::IN_PROGRESS);
        error = attempts
            .flatten()
            .filter(|a| a["error"].as_str() != in_progress)
            .find_map(|a| a["error"].as_str().map(str::to_string));
        if error.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let error = error.expect("the attempt to a closed port is recorded with its error");
    let (status, listed) = owner.send(Method::GET, "/webhooks", None).await;
    assert_eq!(status, 200, "{listed}");

    let logged = captured.bytes();
    // What is searched holds what the flow logged, so a search that finds
    // nothing has looked in the right place: the attempts' lines (one with
    // its error), the SDK's own spans, and the requests' metrics lines.
    let text = String::from_utf8_lossy(&logged);
    assert!(text.contains("webhook attempt"), "no attempt logged");
    assert!(text.contains("\"status\":500"), "the failed attempt");
    assert!(text.contains(&error), "the attempt's error: {error}");
    assert!(text.contains("try_attempt"), "the SDK's spans");
    assert!(text.contains("\"_aws\""), "the metrics lines");
    for needle in needles(&[&first, &second]) {
        assert!(
            !contains(&logged, &needle),
            "a secret's bytes are logged: {}",
            String::from_utf8_lossy(&needle)
        );
    }
}
