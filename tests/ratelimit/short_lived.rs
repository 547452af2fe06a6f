//! Short-lived keys (the pre-traffic check's, issue 38): a key serves until
//! its `expiresAt` and is unknown (401) from then on, whether or not TTL has
//! deleted its item yet (TTL takes up to about 48 hours) and whether or not a
//! warm process holds its look-up in the key cache.

use super::{config, pinned, NOW};
use crate::helpers::TestApp;
use chrono::{DateTime, Utc};
use petstore::ratelimit::keys::{ApiKeyHash, IssuedKey, NewApiKey};

/// The Unix second `at`, as the key store takes a time.
fn time(at: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(at, 0).expect("a time in range")
}

/// A short-lived key made at [`NOW`] that expires at `expires_at`, stored as
/// the pre-traffic hook stores its own.
async fn short_lived(app: &TestApp, expires_at: i64) -> IssuedKey {
    let new = NewApiKey::short_lived("short-lived test key", time(expires_at));
    app.app
        .limiter
        .keys()
        .create(new, time(NOW))
        .await
        .expect("the key is stored in DynamoDB Local")
}

#[tokio::test]
async fn a_key_past_its_expiry_is_unauthorized_and_one_before_it_serves() {
    let (app, _clock) = pinned(config(&[("KEY_CACHE_SECONDS", "0")])).await;

    // Its item is still in the table (TTL has not deleted it), but its time is up.
    let expired = short_lived(&app, NOW - 1).await;
    let found = app
        .app
        .limiter
        .keys()
        .find(&ApiKeyHash::of(&expired.key))
        .await;
    assert!(found.is_ok_and(|record| record.is_some()));
    app.with_key(expired.key.clone())
        .get("/store/orders?limit=1")
        .await
        .assert_error(401, "UNAUTHORIZED");
    // Expiring exactly now is expired too.
    let ending = short_lived(&app, NOW).await;
    app.with_key(ending.key)
        .get("/pets")
        .await
        .assert_error(401, "UNAUTHORIZED");

    // A key whose expiresAt is ahead serves as any free customer key: the
    // pre-traffic check's own request answers 200 with the key's (empty) list.
    let live = short_lived(&app, NOW + 3_600).await;
    let answer = app.with_key(live.key).get("/store/orders?limit=1").await;
    answer.assert_status(200);
    assert_eq!(answer.json(), serde_json::json!([]));
    assert_eq!(answer.header("x-ratelimit-limit"), Some("60"));
}

#[tokio::test]
async fn a_cached_key_is_unauthorized_from_its_expiry_on() {
    // Given a warm process that trusts its look-ups for 5 minutes, and a key
    // that expires 60 s from now, looked up (and so cached as valid) once
    let (app, clock) = pinned(config(&[("KEY_CACHE_SECONDS", "300")])).await;
    let key = short_lived(&app, NOW + 60).await;
    let holder = app.with_key(key.key.clone());
    holder.get("/pets").await.assert_status(200);

    // When the cache's entry is 59 s old, it still admits the key...
    clock.advance(59);
    holder.get("/pets").await.assert_status(200);

    // ...and from the key's expiry on it is unknown, though the entry has
    // 4 minutes to live
    clock.advance(1);
    holder.get("/pets").await.assert_error(401, "UNAUTHORIZED");
}
