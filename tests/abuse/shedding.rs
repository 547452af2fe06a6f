//! The cheapest refusals first (contract section 4): a string that cannot
//! be a key is 401 without a look-up; a source refused or banned on this
//! process gets no key look-up (only keys it already knows valid are
//! served, any other is refused as its source, 429 `SOURCE_REFUSED`);
//! sources are IPv4 addresses or IPv6 /64s. DynamoDB calls counted
//! by the proxy between the service and DynamoDB Local.

use super::{calls_since, counted, random_key};
use crate::helpers::TestApp;
use crate::ratelimit::{config, pinned};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A ban after 3 refusals (reported every 5, or sooner when a ban may be due).
const BANNING: &[(&str, &str)] = &[
    ("BAN_THRESHOLD", "3"),
    ("BAN_BASE_SECONDS", "120"),
    ("BAN_MAX_SECONDS", "300"),
    ("REFUSAL_FLUSH_EVERY", "5"),
];

/// Where the abuse comes from.
const ABUSER: IpAddr = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 66));

/// How many random keys the banned source sends: 1,000, or
/// `PETSTORE_SHEDDING_REQUESTS` (the measurement in docs/security.md used 10,000).
fn probe_size() -> usize {
    std::env::var("PETSTORE_SHEDDING_REQUESTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000)
}

/// Spends the free minute of `source` (keyless requests, 401) and then
/// calls on until it is banned.
async fn ban(source: &TestApp) {
    let source = source.without_key();
    for _ in 0..60 {
        source.get("/categories").await.assert_status(401);
    }
    for _ in 0..10 {
        let response = source.get("/categories").await;
        if response.json()["code"] == "API_KEY_BANNED" {
            return;
        }
        response.assert_error(429, "RATE_LIMITED");
    }
    panic!("the source was not banned");
}

#[tokio::test]
async fn a_banned_source_sending_random_keys_makes_no_dynamodb_call() {
    // Given a source banned on this process for requests without a valid key
    let (app, _clock) = pinned(config(BANNING)).await;
    let (through, proxy) = counted(&app).await;
    let source = through.with_source_ip(ABUSER);
    ban(&source).await;

    // When it sends random keys of the issued form
    let before = proxy.calls().len();
    let requests = probe_size();
    for _ in 0..requests {
        let response = source.with_key(random_key()).get("/categories").await;
        response.assert_error(429, "SOURCE_REFUSED");
        assert_eq!(response.header("retry-after"), Some("120"));
    }

    // Then not one reached DynamoDB: no look-up, no count
    let calls = calls_since(&proxy, before);
    println!(
        "{requests} random keys from a banned source: {} DynamoDB calls",
        calls.len()
    );
    assert!(
        calls.is_empty(),
        "{} calls: {:?}",
        calls.len(),
        calls.first()
    );
}

#[tokio::test]
async fn a_refused_source_gets_no_look_up_but_its_known_keys_are_served() {
    // Given a valid key this process knows, and another it has never seen,
    // both sent from behind an address that is over its minute's limit
    let (app, _clock) = pinned(config(&[("BAN_THRESHOLD", "1000")])).await;
    let (through, proxy) = counted(&app).await;
    let known = through.as_customer().await.with_source_ip(ABUSER);
    known.get("/categories").await.assert_status(200);
    let unseen = app.as_customer().await.api_key.unwrap_or_default();
    for _ in 0..60 {
        known.without_key().get("/categories").await;
    }
    known
        .without_key()
        .get("/categories")
        .await
        .assert_error(429, "RATE_LIMITED");

    // When random keys, the unseen valid key and the known one arrive from it
    let before = proxy.calls().len();
    for _ in 0..20 {
        let response = known.with_key(random_key()).get("/categories").await;
        response.assert_error(429, "SOURCE_REFUSED");
        assert!(response.header("retry-after").is_some());
    }
    let response = known.with_key(unseen).get("/categories").await;
    response.assert_error(429, "SOURCE_REFUSED");

    // Then none was looked up: only refusals were reported
    let calls = calls_since(&proxy, before);
    let lookups: Vec<_> = calls.iter().filter(|c| c.operation == "GetItem").collect();
    assert!(lookups.is_empty(), "{lookups:?}");
    assert!(calls.len() <= 21 / 5, "{} calls", calls.len());

    // And the key this process knows valid is served as usual
    known.get("/categories").await.assert_status(200);
}

#[tokio::test]
async fn a_valid_key_new_to_the_instance_is_told_its_address_is_refused_not_the_key() {
    // Given a source banned on this process for requests without a valid
    // key, and a valid key this process has never seen
    let (app, _clock) = pinned(config(BANNING)).await;
    let source = app.with_source_ip(ABUSER);
    ban(&source).await;
    let unseen = app.as_customer().await.api_key.unwrap_or_default();

    // When the key is sent from the banned address
    let response = source.with_key(unseen.clone()).get("/categories").await;

    // Then the refusal is the address's, with its own code, saying when it ends
    response.assert_error(429, "SOURCE_REFUSED");
    let body = response.json();
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("requests from this address are refused")
            && message.contains("ends in 120 seconds")
            && !message.contains("key is banned"),
        "{message}"
    );
    // And the usual headers: when to retry, and the source's exhausted budget
    assert_eq!(response.header("retry-after"), Some("120"));
    assert_eq!(response.header("x-ratelimit-remaining"), Some("0"));
    for header in [
        "x-ratelimit-limit",
        "x-ratelimit-reset",
        "ratelimit",
        "ratelimit-policy",
    ] {
        assert!(response.header(header).is_some(), "{header} missing");
    }
    // And the key itself is not banned: from another address it is served
    let elsewhere = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 9));
    app.with_source_ip(elsewhere)
        .with_key(unseen)
        .get("/categories")
        .await
        .assert_status(200);
}

#[tokio::test]
async fn a_string_that_cannot_be_a_key_is_refused_without_a_look_up() {
    // Given strings that are not `psk_` and 43 base64url characters
    let (app, _clock) = pinned(|_| None).await;
    let (through, proxy) = counted(&app).await;
    let issued = through.as_customer().await.api_key.unwrap_or_default();
    let not_keys = [
        format!("{issued}x"),
        issued[..issued.len() - 1].to_string(),
        issued.replacen("psk_", "psx_", 1),
        format!("{}+", &issued[..issued.len() - 1]),
        "psk_".to_string(),
        "Bearer abc".to_string(),
    ];

    // When each is sent as a key
    let before = proxy.calls().len();
    let source = through.with_source_ip(ABUSER);
    for (sent, not_a_key) in not_keys.iter().enumerate() {
        let response = source.with_key(not_a_key.clone()).get("/categories").await;

        // Then it is 401, counted against its source
        response.assert_error(401, "UNAUTHORIZED");
        let remaining = (59 - sent).to_string();
        assert_eq!(response.header("x-ratelimit-limit"), Some("60"));
        assert_eq!(
            response.header("x-ratelimit-remaining"),
            Some(remaining.as_str())
        );
    }

    // And none was looked up: the counter table alone was reached
    let calls = calls_since(&proxy, before);
    let others: Vec<_> = calls
        .iter()
        .filter(|c| !c.reaches(&app.rate_limit_table_name))
        .collect();
    assert!(others.is_empty(), "{others:?}");
}

#[tokio::test]
async fn an_ipv6_source_is_counted_per_64() {
    // Given two addresses of one /64, and one of the next /64
    let (app, _clock) = pinned(|_| None).await;
    let ip = |last: u16, subnet: u16| {
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 7, subnet, 0xa, 0xb, 0xc, last))
    };
    let keyless = app.without_key();

    // When each sends a request without a key
    let first = keyless.with_source_ip(ip(1, 0)).get("/categories").await;
    let same_64 = keyless.with_source_ip(ip(2, 0)).get("/categories").await;
    let next_64 = keyless.with_source_ip(ip(1, 1)).get("/categories").await;

    // Then the /64 shares one budget, and the next /64 has its own
    assert_eq!(first.header("x-ratelimit-remaining"), Some("59"));
    assert_eq!(same_64.header("x-ratelimit-remaining"), Some("58"));
    assert_eq!(next_64.header("x-ratelimit-remaining"), Some("59"));
}
