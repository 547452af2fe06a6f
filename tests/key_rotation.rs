//! `keys rotate ID --keep-old-for DURATION` (contract 4d, 1.3.0): the old
//! secret works beside the new one until then, on every instance, as the
//! same key identity in its current state (a revocation or an update reaches
//! both secrets); `GET /me` with the old secret says when it stops. One
//! secret retires at a time.
//!
//! Each test pins the limiter's clock ([`pinned`]) and rotates at that
//! clock's time, so that "until its end" is the clock's to reach.

use crate::helpers::TestApp;
use crate::ratelimit::{config, pinned, NOW};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use petstore::ratelimit::keys::{ApiKeyHash, KeepOldFor, KeyChange, RotateError, Rotated};
use petstore::ratelimit::Plan;
use petstore::records::{Id, Role};
use serde_json::json;

/// The pinned clock's time, for the rotation.
fn pinned_now() -> DateTime<Utc> {
    DateTime::from_timestamp(NOW, 0).expect("NOW is in range")
}

fn keep(raw: &str) -> KeepOldFor {
    KeepOldFor::parse(raw).expect("a valid --keep-old-for")
}

fn id_of(app: &TestApp) -> Id {
    Id::new(app.key_id).expect("a key's id is an id")
}

/// `app`'s key rotated at the pinned time, its old secret kept for `raw`.
async fn rotate_keeping(app: &TestApp, raw: &str) -> Rotated {
    app.app
        .limiter
        .keys()
        .rotate_keeping_old(id_of(app), pinned_now(), keep(raw))
        .await
        .expect("the key is rotated")
}

/// The status `instance` answers `GET /categories` with, sending `secret`.
async fn status_with(instance: &TestApp, secret: &str) -> u16 {
    instance.with_key(secret).get("/categories").await.status
}

#[tokio::test]
async fn both_secrets_work_on_two_instances_during_the_overlap_and_the_old_one_stops_after_it() {
    // Given a key served by two instances, each of which has seen its secret
    let (app, clock) = pinned(config(&[("KEY_CACHE_SECONDS", "20")])).await;
    let one = app.with_new_key(Plan::Enterprise, Some((100, 1_000))).await;
    let two = one.another_instance().await;
    let old = one.api_key.clone().expect("a key");
    assert_eq!(status_with(&one, &old).await, 200);
    assert_eq!(status_with(&two, &old).await, 200);

    // When it is rotated, keeping the old secret for 2 hours
    let rotated = rotate_keeping(&one, "2h").await;
    let new = rotated.issued.key.clone();
    assert_eq!(rotated.old_key_expires_at, "2030-01-01T14:00:30Z");

    // Then each secret works on each instance, and on one that never saw
    // either, past the key cache's time too, all counted as the one key
    let fresh = one.another_instance().await;
    for instance in [&one, &two, &fresh] {
        for secret in [&old, &new] {
            assert_eq!(status_with(instance, secret).await, 200);
        }
    }
    clock.advance(25);
    for instance in [&one, &two, &fresh] {
        for secret in [&old, &new] {
            assert_eq!(status_with(instance, secret).await, 200);
        }
    }
    let response = two.with_key(&old).get("/categories").await;
    assert_eq!(response.header("x-ratelimit-remaining"), Some("85"));

    // And GET /me says when the old secret stops, and nothing for the new one
    let me = fresh.with_key(&old).get("/me").await;
    me.assert_status(200);
    let me = me.json();
    assert_eq!(me["expiresAt"], json!("2030-01-01T14:00:30Z"));
    assert_eq!(
        (me["id"].clone(), me["plan"].clone()),
        (json!(one.key_id), json!("enterprise"))
    );
    let me = fresh.with_key(&new).get("/me").await.json();
    assert!(me.get("expiresAt").is_none(), "{me}");
    assert_eq!(me["id"], json!(one.key_id));

    // And after its end the old secret is refused everywhere, even where a
    // look-up of it is still cached, while the new one goes on
    clock.set(NOW + 7_200 - 5);
    for instance in [&one, &two, &fresh] {
        assert_eq!(status_with(instance, &old).await, 200);
    }
    clock.set(NOW + 7_200);
    for instance in [&one, &two, &fresh, &one.another_instance().await] {
        let response = instance.with_key(&old).get("/categories").await;
        response.assert_error(401, "UNAUTHORIZED");
        assert_eq!(status_with(instance, &new).await, 200);
    }
}

#[tokio::test]
async fn a_revocation_refuses_the_retiring_secret_within_the_key_cache_bound() {
    // Given a key rotated keeping its old secret for a day, both in use on
    // a warm instance
    let (app, clock) = pinned(config(&[("KEY_CACHE_SECONDS", "20")])).await;
    let warm = app.with_new_key(Plan::Pro, None).await;
    let old = warm.api_key.clone().expect("a key");
    let new = rotate_keeping(&warm, "1d").await.issued.key;
    assert_eq!(status_with(&warm, &old).await, 200);
    assert_eq!(status_with(&warm, &new).await, 200);

    // When the key is revoked
    let revoked = app.app.limiter.keys().revoke(id_of(&warm)).await;
    assert!(revoked.expect("the store answers").is_some());

    // Then an instance that had not seen it refuses both secrets at once...
    let cold = warm.another_instance().await;
    for secret in [&old, &new] {
        let response = cold.with_key(secret).get("/categories").await;
        response.assert_error(401, "UNAUTHORIZED");
    }
    // ...and the warm one once its cache entries end, as for any revocation
    clock.advance(20);
    for secret in [&old, &new] {
        let response = warm.with_key(secret).get("/categories").await;
        response.assert_error(401, "UNAUTHORIZED");
    }
}

#[tokio::test]
async fn an_update_of_plan_role_and_limits_reaches_the_retiring_secret() {
    // Given an enterprise customer's key rotated keeping its old secret
    let (app, _clock) = pinned(|_| None).await;
    let key = app.with_new_key(Plan::Enterprise, Some((10, 1_000))).await;
    let old = key.api_key.clone().expect("a key");
    let new = rotate_keeping(&key, "30m").await.issued.key;

    // When it is made staff with other limits
    let change = KeyChange {
        role: Some(Role::Staff),
        limits: Some((50, 2_000)),
        ..KeyChange::default()
    };
    let keys = app.app.limiter.keys();
    keys.update(id_of(&key), &change)
        .await
        .expect("the key is updated");

    // Then each secret is the key as changed: its role, its limits
    let cold = key.another_instance().await;
    for secret in [&old, &new] {
        let me = cold.with_key(secret).get("/me").await;
        me.assert_status(200);
        assert_eq!(me.header("x-ratelimit-limit"), Some("50"));
        let me = me.json();
        assert_eq!(me["role"], json!("staff"));
        assert_eq!(me["limits"]["day"]["limit"], json!(2_000));
    }
    let created = cold
        .with_key(&old)
        .post("/categories", json!({"name": "Ferrets"}))
        .await;
    created.assert_status(201);
}

#[tokio::test]
async fn a_second_rotation_ends_the_older_retiring_secret_and_one_without_a_keep_ends_it_too() {
    // Given a key rotated keeping its first secret
    let (app, _clock) = pinned(|_| None).await;
    let key = app.with_new_key(Plan::Free, None).await;
    let first = key.api_key.clone().expect("a key");
    let second = rotate_keeping(&key, "7d").await.issued.key;

    // When it is rotated again, keeping the second
    let third = rotate_keeping(&key, "2h").await.issued.key;

    // Then the first is refused at once, on any instance; the second and
    // third work
    let cold = key.another_instance().await;
    assert_eq!(status_with(&cold, &first).await, 401);
    assert_eq!(status_with(&cold, &second).await, 200);
    assert_eq!(status_with(&cold, &third).await, 200);
    // and the first's item is gone, not left for TTL
    let pk = format!("APIKEY#{}", ApiKeyHash::of(&first).as_str());
    let item = app
        .app
        .db
        .client()
        .get_item()
        .table_name(&app.app.config.table_name)
        .key("PK", AttributeValue::S(pk))
        .key("SK", AttributeValue::S("APIKEY".into()))
        .consistent_read(true)
        .send()
        .await
        .expect("the table answers");
    assert!(item.item.is_none(), "{:?}", item.item);
    // and the key is listed once, under its live secret's state
    let keys = app.app.limiter.keys();
    let listed = keys.list().await.expect("the keys are listed");
    assert_eq!(listed.iter().filter(|r| r.id == id_of(&key)).count(), 1);

    // When it is rotated a third time, without a keep
    let fourth = keys
        .rotate(id_of(&key), pinned_now())
        .await
        .expect("the key is rotated")
        .key;

    // Then only the newest secret works
    let cold = key.another_instance().await;
    for secret in [&first, &second, &third] {
        assert_eq!(status_with(&cold, secret).await, 401);
    }
    assert_eq!(status_with(&cold, &fourth).await, 200);
}

#[tokio::test]
async fn concurrent_rotations_keeping_the_old_secret_leave_one_live_and_one_retiring() {
    // Given a key, and no key cache, so every request asks the table
    let (app, _clock) = pinned(config(&[("KEY_CACHE_SECONDS", "0")])).await;
    let key = app.with_new_key(Plan::Free, None).await;
    let id = id_of(&key);

    // When it is rotated 6 times at once, each keeping the old secret
    let rotations = (0..6).map(|_| {
        let keys = app.app.limiter.keys().clone();
        tokio::spawn(async move { keys.rotate_keeping_old(id, pinned_now(), keep("1h")).await })
    });
    let mut secrets = vec![key.api_key.clone().expect("a key")];
    for joined in futures::future::join_all(rotations).await {
        match joined.expect("rotation task") {
            Ok(rotated) => secrets.push(rotated.issued.key),
            Err(error) => assert!(matches!(error, RotateError::Raced(_)), "{error}"),
        }
    }
    assert!(secrets.len() > 1, "at least one rotation succeeds");

    // Then exactly two secrets work, the newest and the one it retires,
    // and the key is listed once
    let mut working = 0;
    for secret in &secrets {
        if status_with(&key, secret).await == 200 {
            working += 1;
        }
    }
    assert_eq!(working, 2, "of {} secrets issued", secrets.len());
    let listed = app.app.limiter.keys().list().await.expect("listed");
    assert_eq!(listed.iter().filter(|r| r.id == id).count(), 1);
}

#[tokio::test]
async fn a_pointer_its_key_does_not_name_back_is_no_key() {
    // Given a staff key, and an item claiming to be a secret it retires
    // (as a forged item, or one a later rotation left behind, would)
    let (app, _clock) = pinned(|_| None).await;
    let staff = app.create_key_as(Plan::Pro, None, Role::Staff).await;
    let forged = "psk_forged-pointer-0000000000000000000000000000";
    let item = [
        (
            "PK",
            AttributeValue::S(format!("APIKEY#{}", ApiKeyHash::of(forged).as_str())),
        ),
        ("SK", AttributeValue::S("APIKEY".into())),
        ("id", AttributeValue::N(staff.record.id.get().to_string())),
        (
            "successor",
            AttributeValue::S(ApiKeyHash::of(&staff.key).as_str().to_string()),
        ),
        ("expiresAt", AttributeValue::N((NOW + 3_600).to_string())),
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
    put.send().await.expect("the item is stored");

    // Then its secret is unknown, and the staff key is listed once
    let found = app.app.limiter.keys().find(&ApiKeyHash::of(forged)).await;
    assert_eq!(found.expect("the store answers"), None);
    let response = app.with_key(forged).get("/me").await;
    response.assert_error(401, "UNAUTHORIZED");
    let listed = app.app.limiter.keys().list().await.expect("listed");
    assert_eq!(listed.iter().filter(|r| r.id == staff.record.id).count(), 1);
}
