//! Refused and abusive callers cost nothing (contract section 4): the
//! DynamoDB calls of a refused caller and of a flood of made-up keys, counted
//! by the proxy between the service and DynamoDB Local; headers built only
//! from validated input; (`shedding`) the cheapest refusals first;
//! (`round_trips`) the count beside the first read, never before a write;
//! (`path_parameters`) a path parameter no record can have, refused unread;
//! and (`processes`) the multi-instance guarantees with several service
//! processes on one DynamoDB Local.

mod path_parameters;
mod processes;
mod round_trips;
mod shedding;

use crate::helpers::TestApp;
use crate::idempotency::proxy::{Call, FaultMix, FaultProxy};
use crate::ratelimit::pinned;
use futures::future::join_all;
use petstore::ratelimit::keys::ApiKeyHash;
use petstore::ratelimit::{Plan, KEY_CACHE_LIMIT};
use std::net::{IpAddr, Ipv4Addr};

/// A key of the issued form (`psk_` and 43 base64url characters), random.
fn random_key() -> String {
    let (high, low) = (rand::random::<u128>(), rand::random::<u64>() >> 20);
    format!("psk_{high:032x}{low:011x}")
}

/// `app`, its DynamoDB calls going through a counting proxy.
async fn counted(app: &TestApp) -> (TestApp, FaultProxy) {
    let proxy = FaultProxy::start(&app.endpoint, FaultMix::NONE, 1).await;
    let through = app.instance_reaching(&proxy.endpoint).await;
    (through, proxy)
}

/// The calls `proxy` received after the first `since`.
fn calls_since(proxy: &FaultProxy, since: usize) -> Vec<Call> {
    proxy.calls().into_iter().skip(since).collect()
}

/// Whether `call` is the limiter's own bookkeeping: the counter table, or
/// the look-up of a key item.
fn is_bookkeeping(app: &TestApp, call: &Call) -> bool {
    call.reaches(&app.rate_limit_table_name)
        || (call.operation == "GetItem" && call.body.contains("APIKEY#"))
}

/// 100 ids, the most one `GET /pets?ids=` names.
fn hundred_ids() -> String {
    let ids: Vec<String> = (1..=100).map(|n| (1_000_000 + n).to_string()).collect();
    format!("/pets?ids={}", ids.join(","))
}

#[tokio::test]
async fn a_new_instance_counts_a_key_counted_this_minute_in_one_update() {
    // Given a key another instance counted this minute
    let (app, _clock) = pinned(|_| None).await;
    let key = app
        .with_new_key(Plan::Enterprise, Some((1_000, 10_000)))
        .await;
    key.get("/pets").await.assert_status(200);

    // When a new instance (a cold start under load) serves its first request
    let (fresh, proxy) = counted(&app).await;
    let key = fresh.with_key(key.api_key.clone().unwrap_or_default());
    key.get("/pets").await.assert_status(200);

    // Then it counted it with one update: its first try assumed the minute
    // already counted, as it was (a fresh address's first try would not)
    let updates: Vec<Call> = proxy
        .calls()
        .into_iter()
        .filter(|c| c.operation == "UpdateItem" && c.reaches(&app.rate_limit_table_name))
        .collect();
    assert_eq!(updates.len(), 1, "{updates:?}");
}

#[tokio::test]
async fn a_refused_caller_costs_only_the_limiters_bookkeeping() {
    // Given a key over its minute's limit (1), on a process that knows it
    let (app, _clock) = pinned(|_| None).await;
    let (through, proxy) = counted(&app).await;
    let key = through
        .with_new_key(Plan::Enterprise, Some((1, 1_000)))
        .await;
    let path = hundred_ids();
    key.get(&path).await.assert_status(200);

    // When it sends 60 reads of 100 ids each
    let before = proxy.calls().len();
    for _ in 0..60 {
        key.get(&path).await.assert_status(429);
    }

    // Then no record was read: only the counter table was reached
    let calls = calls_since(&proxy, before);
    let reads: Vec<&Call> = calls.iter().filter(|c| !is_bookkeeping(&app, c)).collect();
    assert!(reads.is_empty(), "a refused caller read: {reads:?}");
    println!(
        "60 refused reads of 100 ids, on a warm process: {} DynamoDB calls",
        calls.len()
    );
    assert!(calls.len() <= 60 / 5 + 3, "{} calls", calls.len());

    // And on a process that never saw the key: its look-up, the count, and
    // beside the first count one read whose answer is thrown away (section
    // 4: one record or page per instance and exhausted window), then none
    let (cold, cold_proxy) = counted(&app).await;
    let key = cold.with_key(key.api_key.clone().unwrap_or_default());
    for _ in 0..60 {
        key.get(&path).await.assert_status(429);
    }
    let calls = cold_proxy.calls();
    let reads: Vec<&Call> = calls.iter().filter(|c| !is_bookkeeping(&app, c)).collect();
    assert!(reads.len() <= 1, "more than one read: {reads:?}");
    println!(
        "60 refused reads of 100 ids, on a cold process: {} DynamoDB calls",
        calls.len()
    );
}

#[tokio::test]
async fn a_flood_of_made_up_keys_never_evicts_a_valid_one() {
    // Given a valid key this process has looked up
    let (app, _clock) = pinned(|_| None).await;
    let (through, proxy) = counted(&app).await;
    let honest = through.as_customer().await;
    let honest_hash = ApiKeyHash::of(honest.api_key.as_deref().unwrap_or_default());
    honest.get("/categories").await.assert_status(200);

    // When more made-up keys than the key cache holds arrive, 50 from each
    // address (each under its minute's limit: a refused source would get no
    // look-up at all), some twice
    let flood = KEY_CACHE_LIMIT + 100;
    let before = proxy.calls().len();
    let senders = (0..16u32).map(|sender| {
        let app = through.clone();
        tokio::spawn(async move {
            for n in (0..flood as u32).filter(|n| n % 16 == sender) {
                let [_, _, a, b] = (n / 50).to_be_bytes();
                let ip = IpAddr::V4(Ipv4Addr::new(198, 18, a, b));
                let made_up = app.with_key(random_key()).with_source_ip(ip);
                made_up.get("/categories").await.assert_status(401);
                if n % 100 == 0 {
                    made_up.get("/categories").await;
                }
            }
        })
    });
    for sender in join_all(senders).await {
        sender.expect("a flood sender");
    }
    honest.get("/categories").await.assert_status(200);

    // Then each made-up key was looked up once, and the valid key not again
    let calls = calls_since(&proxy, before);
    let lookups = calls
        .iter()
        .filter(|c| c.operation == "GetItem" && c.body.contains("APIKEY#"))
        .count();
    assert_eq!(lookups, flood, "one look-up per made-up key");
    let honest_again = calls
        .iter()
        .filter(|c| c.body.contains(honest_hash.as_str()))
        .count();
    assert_eq!(honest_again, 0, "the valid key was looked up again");
    println!(
        "{flood} made-up keys (+{} repeated): {} DynamoDB calls, {lookups} key look-ups",
        flood / 100 + 1,
        calls.len()
    );
}

#[tokio::test]
async fn headers_are_built_only_from_validated_input() {
    let app = TestApp::spawn().await;
    let forged = app.get("/pets/1%3E;%20rel=%22next%22").await;
    forged.assert_error(400, "VALIDATION_FAILED");
    let successor = "</pets>; rel=\"successor-version\"";
    assert_eq!(
        forged.header("link"),
        Some(successor),
        "a Link from a raw segment"
    );
    for (name, value) in &forged.headers {
        let value = value.to_str().unwrap_or_default();
        assert!(!value.contains("rel=\"next\""), "{name}: {value}");
    }
    // A valid id still names its successor
    let category = app.create_category("Dogs").await;
    let id = app.create_pet("Rex", category, "available").await;
    let response = app.get(&format!("/pets/%20{id}")).await;
    response.assert_status(200);
    let successor = format!("</pets?ids={id}>; rel=\"successor-version\"");
    assert_eq!(response.header("link"), Some(successor.as_str()));
}
