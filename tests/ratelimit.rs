//! API keys and rate limits (contract section 4) against DynamoDB Local.
//!
//! Every test that depends on which minute it is pins the limiter's clock
//! (`ManualClock`), so no test can straddle a minute boundary and flake.

mod bans;
mod one_write;
mod short_lived;
mod update;

use crate::helpers::{TestApp, TestResponse};
use aws_sdk_dynamodb::types::AttributeValue;
use bans::{provoke, BAN_CONFIG};
use petstore::ratelimit::keys::{ApiKeyHash, IssuedKey, RotateError};
use petstore::ratelimit::{ManualClock, Plan, Verdict};
use petstore::records::{Caller, Id, Role};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

/// 2030-01-01T12:00:30Z: 30 s into a minute, 12 h into a day.
pub(crate) const NOW: i64 = 1_893_499_230;
const MINUTE_END: i64 = NOW + 30;
const DAY_END: i64 = 1_893_542_400;

/// A store whose limiter's clock stands at [`NOW`] until moved.
pub(crate) async fn pinned(
    overrides: impl Fn(&str) -> Option<String>,
) -> (TestApp, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(NOW));
    let app = TestApp::spawn_with_clock(overrides, clock.clone()).await;
    (app, clock)
}

pub(crate) fn config(
    pairs: &'static [(&'static str, &'static str)],
) -> impl Fn(&str) -> Option<String> {
    move |name| {
        pairs
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.to_string())
    }
}

/// Panics unless the response carries these rate-limit numbers.
#[track_caller]
fn assert_limit_headers(response: &TestResponse, limit: u64, remaining: u64, reset: i64) {
    let number = |name: &str| {
        response
            .header(name)
            .unwrap_or_else(|| panic!("{name} is missing; status {}", response.status))
            .to_string()
    };
    assert_eq!(number("x-ratelimit-limit"), limit.to_string());
    assert_eq!(number("x-ratelimit-remaining"), remaining.to_string());
    assert_eq!(number("x-ratelimit-reset"), reset.to_string());
    let window = if reset == DAY_END { "day" } else { "minute" };
    assert_eq!(
        number("ratelimit"),
        format!("\"{window}\";r={remaining};t={}", reset - NOW)
    );
}

#[tokio::test]
async fn exactly_the_limit_is_admitted_under_concurrency_across_instances() {
    // Given a fresh key allowing 10 requests a minute, served by two instances
    let (app, _clock) = pinned(config(&[("BAN_THRESHOLD", "1000")])).await;
    let app = app.with_new_key(Plan::Enterprise, Some((10, 1_000))).await;
    let other = app.another_instance().await;

    // When 40 requests arrive at once, alternating between the instances
    let requests = (0..40).map(|i| {
        let instance = if i % 2 == 0 {
            app.clone()
        } else {
            other.clone()
        };
        tokio::spawn(async move { instance.get("/categories").await })
    });
    let responses: Vec<TestResponse> = futures::future::join_all(requests)
        .await
        .into_iter()
        .map(|joined| joined.expect("request task"))
        .collect();

    // Then exactly 10 succeed and the other 30 are refused
    let ok = responses.iter().filter(|r| r.status == 200).count();
    let limited: Vec<&TestResponse> = responses.iter().filter(|r| r.status == 429).collect();
    assert_eq!(ok, 10);
    assert_eq!(limited.len(), 30);
    for response in limited {
        response.assert_error(429, "RATE_LIMITED");
        assert_eq!(response.header("retry-after"), Some("30"));
        assert_limit_headers(response, 10, 0, MINUTE_END);
    }
}

#[tokio::test]
async fn responses_of_every_kind_carry_the_headers() {
    let (app, _clock) = pinned(|_| None).await;
    let pro = app.with_new_key(Plan::Pro, None).await;

    // 200: the minute window has fewer remaining than the day
    let response = pro.get("/categories").await;
    response.assert_status(200);
    assert_limit_headers(&response, 300, 299, MINUTE_END);
    assert_eq!(
        response.header("ratelimit-policy"),
        Some("\"minute\";q=300;w=60, \"day\";q=10000;w=86400")
    );

    // 404, counted too
    let response = pro.get("/categories/4242").await;
    response.assert_error(404, "NOT_FOUND");
    assert_limit_headers(&response, 300, 298, MINUTE_END);

    // 401: counted per source IP on the free plan
    let response = app.without_key().get("/categories").await;
    response.assert_error(401, "UNAUTHORIZED");
    assert_limit_headers(&response, 60, 59, MINUTE_END);
    assert_eq!(
        response.header("ratelimit-policy"),
        Some("\"minute\";q=60;w=60, \"day\";q=1000;w=86400")
    );

    // 429 when a minute allows 2
    let tight = app.with_new_key(Plan::Enterprise, Some((2, 100))).await;
    tight.get("/categories").await.assert_status(200);
    tight.get("/categories").await.assert_status(200);
    let response = tight.get("/categories").await;
    response.assert_error(429, "RATE_LIMITED");
    assert_eq!(response.header("retry-after"), Some("30"));
    assert_limit_headers(&response, 2, 0, MINUTE_END);

    // The day is shown when it has fewer remaining
    let daily = app.with_new_key(Plan::Enterprise, Some((100, 3))).await;
    let response = daily.get("/categories").await;
    assert_limit_headers(&response, 3, 2, DAY_END);
}

#[tokio::test]
async fn a_tie_between_the_windows_shows_the_day() {
    let (app, _clock) = pinned(|_| None).await;
    let even = app.with_new_key(Plan::Enterprise, Some((5, 5))).await;
    let response = even.get("/categories").await;
    assert_limit_headers(&response, 5, 4, DAY_END);
}

#[tokio::test]
async fn refused_requests_do_not_count_and_the_day_runs_out_at_midnight() {
    // Given a key allowing 2 a minute and 3 a day
    let (app, clock) = pinned(|_| None).await;
    let app = app.with_new_key(Plan::Enterprise, Some((2, 3))).await;
    app.get("/categories").await.assert_status(200);
    app.get("/categories").await.assert_status(200);
    // The minute is spent: refused, and not counted against the day
    app.get("/categories")
        .await
        .assert_error(429, "RATE_LIMITED");

    // When a new minute starts, one more fits the day
    clock.advance(60);
    let response = app.get("/categories").await;
    response.assert_status(200);
    let reset = response.header("x-ratelimit-reset").map(str::to_string);
    assert_eq!(reset, Some(DAY_END.to_string()));
    assert_eq!(response.header("x-ratelimit-remaining"), Some("0"));

    // Then the day is spent: Retry-After runs to midnight UTC
    let response = app.get("/categories").await;
    response.assert_error(429, "RATE_LIMITED");
    let now = NOW + 60;
    assert_eq!(
        response.header("retry-after"),
        Some((DAY_END - now).to_string().as_str())
    );

    // And a new day starts afresh
    clock.set(DAY_END);
    app.get("/categories").await.assert_status(200);
}

#[tokio::test]
async fn a_missing_unknown_or_revoked_key_is_unauthorized() {
    let app = TestApp::spawn_with(config(&[("KEY_CACHE_SECONDS", "0")])).await;

    let response = app.without_key().get("/pets").await;
    response.assert_error(401, "UNAUTHORIZED");
    assert!(response.header("x-ratelimit-limit").is_some());

    let response = app.with_key("psk_not-a-key").get("/pets").await;
    response.assert_error(401, "UNAUTHORIZED");
    assert_eq!(response.header("x-ratelimit-limit"), Some("60"));

    // A key works until it is revoked
    let key = app.create_key(Plan::Free, None).await;
    let holder = app.with_key(key.key.clone());
    holder.get("/pets").await.assert_status(200);
    let revoked = app.app.limiter.keys().revoke(key.record.id).await.unwrap();
    assert!(revoked.is_some_and(|r| r.revoked));
    let response = holder.get("/pets").await;
    response.assert_error(401, "UNAUTHORIZED");

    // Writes are turned away (401) before they happen
    let response = app
        .without_key()
        .post("/categories", serde_json::json!({ "name": "Cats" }))
        .await;
    response.assert_error(401, "UNAUTHORIZED");
    let listed = app.get("/categories").await.json();
    assert_eq!(listed.as_array().map(Vec::len), Some(0));
}

#[tokio::test]
async fn the_openapi_document_needs_no_key_but_is_metered() {
    let (app, _clock) = pinned(|_| None).await;

    // Without a key: served, counted per source IP
    let anonymous = app.without_key();
    let response = anonymous.get("/openapi.json").await;
    response.assert_status(200);
    assert!(response.json()["openapi"].is_string());
    assert_limit_headers(&response, 60, 59, MINUTE_END);
    let response = anonymous.get("/openapi.json").await;
    assert_limit_headers(&response, 60, 58, MINUTE_END);

    // Another address has its own count
    let elsewhere = anonymous.with_source_ip(IpAddr::V4(Ipv4Addr::new(198, 51, 100, 7)));
    let response = elsewhere.get("/openapi.json").await;
    assert_limit_headers(&response, 60, 59, MINUTE_END);

    // With a valid key: counted against the key
    let pro = app.with_new_key(Plan::Pro, None).await;
    let response = pro.get("/openapi.json").await;
    response.assert_status(200);
    assert_limit_headers(&response, 300, 299, MINUTE_END);

    // An unknown key is no worse than none
    let response = app.with_key("psk_unknown").get("/openapi.json").await;
    response.assert_status(200);
    assert_limit_headers(&response, 60, 57, MINUTE_END);
}

#[tokio::test]
async fn anonymous_callers_are_limited_per_address_on_the_free_plan() {
    let (app, _clock) = pinned(config(&[("BAN_THRESHOLD", "1000")])).await;
    let anonymous = app.without_key();
    for _ in 0..60 {
        anonymous.get("/openapi.json").await.assert_status(200);
    }
    let response = anonymous.get("/openapi.json").await;
    response.assert_error(429, "RATE_LIMITED");
    // Over the limit, a missing key is answered 429, not 401
    anonymous
        .get("/pets")
        .await
        .assert_error(429, "RATE_LIMITED");
}

/// Takes the counter table away, so any further call to it would fail (503).
async fn drop_counter_table(app: &TestApp) {
    app.app
        .db
        .client()
        .delete_table()
        .table_name(&app.rate_limit_table_name)
        .send()
        .await
        .expect("the counter table can be deleted");
}

#[tokio::test]
async fn a_failing_counter_table_refuses_with_503() {
    // Given the counter table is gone
    let (app, _clock) = pinned(|_| None).await;
    drop_counter_table(&app).await;

    // Then requests are refused, with Retry-After and the headers
    let response = app.get("/categories").await;
    response.assert_error(503, "SERVICE_UNAVAILABLE");
    assert!(response.header("retry-after").is_some());
    assert!(response.header("x-ratelimit-limit").is_some());
}

#[tokio::test]
async fn failing_open_serves_uncounted() {
    let (app, _clock) = pinned(config(&[("RATE_LIMIT_FAILURE_MODE", "open")])).await;
    drop_counter_table(&app).await;

    let response = app.get("/categories").await;
    response.assert_status(200);
    assert!(response.header("x-ratelimit-limit").is_some());
    // Keys are still checked
    app.without_key()
        .get("/categories")
        .await
        .assert_error(401, "UNAUTHORIZED");
}

#[tokio::test]
async fn a_process_that_knows_a_window_is_exhausted_answers_without_dynamodb() {
    // Given a key allowing 2 requests a minute, used up, and the refusal seen
    let (app, clock) = pinned(config(&[("BAN_THRESHOLD", "1000")])).await;
    let app = app.with_new_key(Plan::Enterprise, Some((2, 1_000))).await;
    app.get("/categories").await.assert_status(200);
    app.get("/categories").await.assert_status(200);
    app.get("/categories")
        .await
        .assert_error(429, "RATE_LIMITED");

    // When the counter table can no longer be reached
    drop_counter_table(&app).await;

    // Then this process still refuses from what it knows: 429, not 503
    for _ in 0..2 {
        let response = app.get("/categories").await;
        response.assert_error(429, "RATE_LIMITED");
        assert_eq!(response.header("retry-after"), Some("30"));
    }
    // ...until the window resets, when it must ask the table again
    clock.advance(30);
    app.get("/categories")
        .await
        .assert_error(503, "SERVICE_UNAVAILABLE");
}

#[tokio::test]
async fn a_warm_process_trusts_its_key_cache_for_half_its_time_then_reads_it_again() {
    // Given a key this process has looked up, with look-ups cached for 20 s
    let (app, clock) = pinned(config(&[("KEY_CACHE_SECONDS", "20")])).await;
    let key = app.create_key(Plan::Free, None).await;
    let holder = app.with_key(key.key.clone());
    holder.get("/categories").await.assert_status(200);

    // When the key is revoked
    let revoked = app.app.limiter.keys().revoke(key.record.id).await;
    assert!(revoked.is_ok_and(|r| r.is_some_and(|r| r.revoked)));

    // Then the cached look-up still admits it, with no second look-up...
    holder.get("/categories").await.assert_status(200);
    clock.advance(9);
    holder.get("/categories").await.assert_status(200);
    // ...and from half its time on, a request reads it again beside its
    // count (so a key in use never waits for a look-up), and the revocation
    // takes effect, well within the cache's bound
    clock.advance(1);
    holder
        .get("/categories")
        .await
        .assert_error(401, "UNAUTHORIZED");
}

/// The key id of the key `app` sends.
pub(super) fn key_id(app: &TestApp) -> Id {
    Id::new(app.key_id).expect("a key's id is an id")
}

/// The caller the limiter admits with `key`, or `None` for an anonymous one.
async fn caller_of(app: &TestApp, key: Option<&str>) -> Option<Caller> {
    match app.app.limiter.admit(key, None).await.verdict {
        Verdict::Admitted { caller } => caller,
        refused => panic!("expected an admission, got {refused:?}"),
    }
}

#[tokio::test]
async fn a_rotated_key_keeps_its_count_and_its_old_secret_ends_with_the_cache() {
    // Given a key allowing 10 a minute, used 3 times, with look-ups cached for 20 s
    let (app, clock) = pinned(config(&[("KEY_CACHE_SECONDS", "20")])).await;
    let old = app.with_new_key(Plan::Enterprise, Some((10, 1_000))).await;
    for remaining in [9, 8, 7] {
        assert_limit_headers(&old.get("/categories").await, 10, remaining, MINUTE_END);
    }

    // When it is rotated
    let keys = app.app.limiter.keys();
    let issued = keys.rotate(key_id(&old), chrono::Utc::now()).await.unwrap();
    assert_eq!(issued.record.id, key_id(&old));
    assert_eq!(issued.record.limits().per_minute, 10);
    assert!(issued.record.rotated_at.is_some());
    let new = old.with_key(issued.key.clone());

    // Then the new secret works and the count goes on where it was
    let response = new.get("/categories").await;
    response.assert_status(200);
    assert_limit_headers(&response, 10, 6, MINUTE_END);
    // A process that never saw the old secret refuses it at once
    let cold = old.another_instance().await;
    cold.get("/categories")
        .await
        .assert_error(401, "UNAUTHORIZED");
    // This one, which cached it, still accepts it, counted as the same key...
    assert_limit_headers(&old.get("/categories").await, 10, 5, MINUTE_END);
    // ...until the cache entry expires
    clock.advance(20);
    old.get("/categories")
        .await
        .assert_error(401, "UNAUTHORIZED");
    let response = new.get("/categories").await;
    response.assert_status(200);
    assert_eq!(response.header("x-ratelimit-remaining"), Some("4"));
}

#[tokio::test]
async fn a_rotated_key_keeps_its_ban() {
    // Given a key banned for calling on after its limit
    let (app, _clock) = pinned(config(BAN_CONFIG)).await;
    let app = app.with_new_key(Plan::Enterprise, Some((1, 1_000))).await;
    provoke(&app, 3).await;
    app.get("/categories")
        .await
        .assert_error(429, "API_KEY_BANNED");

    // When it is rotated
    let keys = app.app.limiter.keys();
    let issued = keys.rotate(key_id(&app), chrono::Utc::now()).await.unwrap();

    // Then the new secret is banned too, on an instance that knew nothing of it
    let fresh = app.another_instance().await.with_key(issued.key);
    let response = fresh.get("/categories").await;
    response.assert_error(429, "API_KEY_BANNED");
    assert_eq!(response.header("retry-after"), Some("120"));
    // And unbanning the key id lifts it for the new secret
    assert!(fresh.app.limiter.unban(key_id(&app)).await.unwrap());
    fresh
        .get("/categories")
        .await
        .assert_error(429, "RATE_LIMITED");
}

#[tokio::test]
async fn a_role_round_trips_through_create_list_find_rotate_and_admission() {
    let app = TestApp::spawn().await;
    let keys = app.app.limiter.keys();

    // Given a staff key and a customer's key (the default)
    let staff = app.create_key_as(Plan::Pro, None, Role::Staff).await;
    let customer = app.create_key(Plan::Free, None).await;
    assert_eq!(staff.record.role, Role::Staff);
    assert_eq!(customer.record.role, Role::Customer);

    // Then listing and finding show the role
    let listed = keys.list().await.unwrap();
    let role_of = |id: Id| listed.iter().find(|r| r.id == id).map(|r| r.role);
    assert_eq!(role_of(staff.record.id), Some(Role::Staff));
    assert_eq!(role_of(customer.record.id), Some(Role::Customer));
    let found = keys.find(&ApiKeyHash::of(&staff.key)).await.unwrap();
    assert_eq!(found, Some(staff.record.clone()));

    // And the admission names the caller: the key id and its role
    let caller = caller_of(&app, Some(&staff.key)).await;
    assert_eq!(caller, Some(staff.record.caller()));
    assert_eq!(caller.map(|c| c.role), Some(Role::Staff));
    let caller = caller_of(&app, Some(&customer.key)).await;
    assert_eq!(caller.map(|c| c.role), Some(Role::Customer));
    assert_eq!(caller_of(&app, None).await, None);
    assert_eq!(caller_of(&app, Some("psk_unknown")).await, None);

    // And a rotated key is the same caller with the same role
    let rotated = keys
        .rotate(staff.record.id, chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(rotated.record.role, Role::Staff);
    let caller = caller_of(&app, Some(&rotated.key)).await;
    assert_eq!(caller, Some(staff.record.caller()));
}

#[tokio::test]
async fn a_key_stored_before_roles_is_a_customers() {
    // Given a key item as the service stored them before roles
    let app = TestApp::spawn().await;
    let secret = "psk_from-before-roles-0000000000000000000000000";
    let item = [
        (
            "PK",
            AttributeValue::S(format!("APIKEY#{}", ApiKeyHash::of(secret).as_str())),
        ),
        ("SK", AttributeValue::S("APIKEY".into())),
        ("GSI1PK", AttributeValue::S("APIKEY".into())),
        ("id", AttributeValue::N("4242".into())),
        ("plan", AttributeValue::S("pro".into())),
        ("name", AttributeValue::S("old".into())),
        (
            "createdAt",
            AttributeValue::S("2025-01-01T00:00:00Z".into()),
        ),
        ("revoked", AttributeValue::Bool(false)),
    ];
    let mut put = app
        .app
        .db
        .client()
        .put_item()
        .table_name(&app.app.config.table_name);
    for (name, value) in item {
        put = put.item(name, value);
    }
    put.send().await.expect("the old item is stored");

    // Then it is a customer's, wherever it is read, and it still works
    let old_key = Id::new(4242).expect("an id");
    let caller = caller_of(&app, Some(secret)).await;
    assert_eq!(
        caller.map(|c| (c.key_id, c.role)),
        Some((old_key, Role::Customer))
    );
    let listed = app.app.limiter.keys().list().await.unwrap();
    let record = listed.iter().find(|r| r.id == old_key).expect("listed");
    assert_eq!((record.role, record.plan), (Role::Customer, Plan::Pro));
    let response = app.with_key(secret).get("/categories").await;
    response.assert_status(200);
    assert_eq!(response.header("x-ratelimit-limit"), Some("300"));
}

#[tokio::test]
async fn concurrent_rotations_of_one_key_leave_exactly_one_live_secret() {
    // Given a key, and no key cache, so every request asks the table
    let app = TestApp::spawn_with(config(&[("KEY_CACHE_SECONDS", "0")])).await;
    let original = app.create_key(Plan::Free, None).await;
    let id = original.record.id;

    // When it is rotated 6 times at once
    let rotations = (0..6).map(|_| {
        let keys = app.app.limiter.keys().clone();
        tokio::spawn(async move { keys.rotate(id, chrono::Utc::now()).await })
    });
    let results: Vec<Result<IssuedKey, RotateError>> = futures::future::join_all(rotations)
        .await
        .into_iter()
        .map(|joined| joined.expect("rotation task"))
        .collect();

    // Then each rotation either gave a secret or said it lost the race
    let mut secrets = vec![original.key];
    for result in results {
        match result {
            Ok(issued) => secrets.push(issued.key),
            Err(error) => assert!(matches!(error, RotateError::Raced(_)), "{error}"),
        }
    }
    assert!(secrets.len() > 1, "at least one rotation succeeds");
    // And the key has one item, and exactly one secret that works
    let listed = app.app.limiter.keys().list().await.unwrap();
    assert_eq!(listed.iter().filter(|r| r.id == id).count(), 1);
    let mut live = 0;
    for secret in &secrets {
        if app.with_key(secret.clone()).get("/categories").await.status == 200 {
            live += 1;
        }
    }
    assert_eq!(live, 1, "of {} secrets issued", secrets.len());
}

#[tokio::test]
async fn only_a_live_key_is_rotated() {
    let app = TestApp::spawn().await;
    let keys = app.app.limiter.keys();
    let missing = Id::new(4242).expect("an id");
    let result = keys.rotate(missing, chrono::Utc::now()).await;
    assert!(matches!(result, Err(RotateError::NotFound(id)) if id == missing));

    // A revoked key stays revoked: rotating it would bring it back
    let key = app.create_key(Plan::Free, None).await;
    keys.revoke(key.record.id).await.unwrap();
    let result = keys.rotate(key.record.id, chrono::Utc::now()).await;
    assert!(matches!(result, Err(RotateError::Revoked(_))));
    app.with_key(key.key)
        .get("/categories")
        .await
        .assert_error(401, "UNAUTHORIZED");
}
