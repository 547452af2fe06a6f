//! Registering, reading, changing, deleting an endpoint; the per-plan cap
//! under concurrency; who sees what; secret rotation.

use super::{register, register_default, resolving, set_attributes, RECEIVER};
use crate::helpers::TestApp;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{Duration, Utc};
use http::Method;
use petstore::ratelimit::Plan;
use petstore::records::Id;
use petstore::webhooks::secrets::{signing_secrets, SEALED_PREFIX};
use serde_json::json;

#[tokio::test]
async fn registering_answers_201_with_location_and_the_secret_only_then() {
    let staff = TestApp::spawn().await;
    resolving(&staff);
    let body =
        json!({"url": RECEIVER, "events": ["pet.created", "order.placed"], "description": "Ops"});
    let created = staff.post("/webhooks", body).await;
    created.assert_status(201);
    let record = created.json();
    let id = created.id();
    assert_eq!(
        created.header("location"),
        Some(format!("/webhooks/{id}").as_str())
    );
    assert!(record["secret"]
        .as_str()
        .is_some_and(|s| s.starts_with("whsec_")));
    assert_eq!(record["events"], json!(["pet.created", "order.placed"]));
    assert_eq!(record["ownerId"], staff.key_id);
    assert_eq!(record["enabled"], true);
    let read = staff.get(&format!("/webhooks/{id}")).await;
    read.assert_status(200);
    assert!(
        read.json().get("secret").is_none(),
        "only the creation carries the secret"
    );
    assert_eq!(read.json()["url"], RECEIVER);
}

#[tokio::test]
async fn each_bad_field_is_refused_with_400_naming_it() {
    let staff = TestApp::spawn().await;
    resolving(&staff);
    let customer = staff.as_customer().await;
    let long = format!("https://receiver.example/{}", "a".repeat(2048));
    let refused = [
        (&staff, json!({}), "url"),
        (&staff, json!({"url": 7}), "url"),
        (&staff, json!({"url": "http://receiver.example/"}), "https"),
        (
            &staff,
            json!({"url": "https://user:pw@receiver.example/"}),
            "password",
        ),
        (
            &staff,
            json!({"url": "https://receiver.example/#x"}),
            "fragment",
        ),
        (&staff, json!({"url": long}), "2048"),
        (&staff, json!({"url": "https://10.0.0.7/hooks"}), "private"),
        (
            &staff,
            json!({"url": "https://169.254.169.254/"}),
            "link-local",
        ),
        (
            &staff,
            json!({"url": "https://receiver.example:22/"}),
            "port",
        ),
        (
            &staff,
            json!({"url": "https://receiver.example:1023/"}),
            "port",
        ),
        (
            &staff,
            json!({"url": "https://nowhere.example/"}),
            "resolve",
        ),
        (
            &staff,
            json!({"url": RECEIVER, "events": ["order.shipped"]}),
            "order.shipped",
        ),
        (
            &staff,
            json!({"url": RECEIVER, "events": "order.placed"}),
            "events",
        ),
        (
            &staff,
            json!({"url": RECEIVER, "description": "x".repeat(501)}),
            "description",
        ),
        (
            &customer,
            json!({"url": RECEIVER, "events": ["pet.created"]}),
            "pet.created",
        ),
    ];
    for (app, body, named) in refused {
        let response = app.post("/webhooks", body.clone()).await;
        response.assert_error(400, "VALIDATION_FAILED");
        let message = response.json()["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            message.contains(named),
            "{body}: {message} should name {named}"
        );
    }
    let listed = staff.get("/webhooks").await;
    assert_eq!(listed.json(), json!([]), "no refused body made an endpoint");
}

#[tokio::test]
async fn another_customers_endpoint_reads_as_404_on_every_route() {
    let staff = TestApp::spawn().await;
    let owner = staff.as_customer().await;
    let other = staff.as_customer().await;
    let id = register_default(&owner).await;
    resolving(&staff);
    let base = format!("/webhooks/{id}");
    let routes = [
        (Method::GET, base.clone()),
        (Method::DELETE, base.clone()),
        (Method::POST, format!("{base}/secret")),
        (Method::POST, format!("{base}/ping")),
        (Method::GET, format!("{base}/deliveries")),
        (Method::POST, format!("{base}/deliveries/ping_x/retry")),
    ];
    for (method, path) in routes {
        other
            .send(method.clone(), &path)
            .await
            .assert_error(404, "NOT_FOUND");
    }
    other
        .patch(&base, json!({"enabled": false}))
        .await
        .assert_error(404, "NOT_FOUND");
    assert_eq!(other.get("/webhooks").await.json(), json!([]));
    assert_eq!(owner.get("/webhooks").await.ids(), vec![id]);
    owner.get(&base).await.assert_status(200);
    assert!(staff.queue_is_empty(), "no refused ping reached the queue");
}

#[tokio::test]
async fn staff_see_every_endpoint_and_filter_by_owner() {
    let staff = TestApp::spawn().await;
    let (a, b) = (staff.as_customer().await, staff.as_customer().await);
    let (id_a, id_b) = (register_default(&a).await, register_default(&b).await);
    let own = register_default(&staff).await;
    let mut all = staff.get("/webhooks").await.ids();
    all.sort();
    let mut expected = vec![id_a, id_b, own];
    expected.sort();
    assert_eq!(all, expected);
    let only_a = staff.get(&format!("/webhooks?ownerId={}", a.key_id)).await;
    assert_eq!(only_a.ids(), vec![id_a]);
    staff
        .get(&format!("/webhooks/{id_b}"))
        .await
        .assert_status(200);
    staff
        .patch(&format!("/webhooks/{id_b}"), json!({"enabled": false}))
        .await
        .assert_status(200);
}

#[tokio::test]
async fn a_list_pages_newest_first() {
    let staff = TestApp::spawn().await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(register_default(&staff).await);
    }
    ids.reverse();
    let first = staff.get("/webhooks?limit=2").await;
    assert_eq!(first.ids(), ids[..2].to_vec());
    let next = first.next_page().expect("a next page");
    let second = staff.get(&next).await;
    assert_eq!(second.ids(), ids[2..].to_vec());
    assert_eq!(second.next_page(), None);
}

/// `attempts` creations at once with a key of `plan`: how many succeed, and
/// that every other one is 409 `TOO_MANY_WEBHOOKS`.
async fn race(staff: &TestApp, plan: Plan, attempts: usize) -> (TestApp, usize) {
    let app = staff.with_new_key(plan, None).await;
    resolving(&app);
    let tasks: Vec<_> = (0..attempts)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move { app.post("/webhooks", json!({"url": RECEIVER})).await })
        })
        .collect();
    let mut created = 0;
    for task in tasks {
        let response = task.await.expect("the request task runs");
        match response.status {
            201 => created += 1,
            _ => response.assert_error(409, "TOO_MANY_WEBHOOKS"),
        }
    }
    (app, created)
}

#[tokio::test]
async fn the_plans_cap_holds_exactly_under_concurrent_creations() {
    let staff = TestApp::spawn().await;
    let (free, created) = race(&staff, Plan::Free, 2).await;
    assert_eq!(created, 1, "free: 1 endpoint");
    let (_, created) = race(&staff, Plan::Pro, 6).await;
    assert_eq!(created, 5, "pro: 5 endpoints");
    let listed = free.get("/webhooks").await.ids();
    assert_eq!(listed.len(), 1);
    free.delete(&format!("/webhooks/{}", listed[0]))
        .await
        .assert_status(204);
    free.get(&format!("/webhooks/{}", listed[0]))
        .await
        .assert_error(404, "NOT_FOUND");
    let again = free.post("/webhooks", json!({"url": RECEIVER})).await;
    again.assert_status(201);
    free.post("/webhooks", json!({"url": RECEIVER}))
        .await
        .assert_error(409, "TOO_MANY_WEBHOOKS");
}

#[tokio::test]
async fn patch_changes_the_fields_sent_and_resuming_clears_the_failure() {
    let staff = TestApp::spawn().await;
    let customer = staff.as_customer().await;
    let id = register_default(&customer).await;
    let path = format!("/webhooks/{id}");
    let patched = customer
        .patch(
            &path,
            json!({"events": ["order.completed"], "description": "Shipping"}),
        )
        .await;
    patched.assert_status(200);
    assert_eq!(patched.json()["events"], json!(["order.completed"]));
    assert_eq!(patched.json()["url"], RECEIVER);
    customer
        .patch(&path, json!({"events": ["stock.changed"]}))
        .await
        .assert_error(400, "VALIDATION_FAILED");
    customer
        .patch(&path, json!({"url": "https://192.168.1.1/"}))
        .await
        .assert_error(400, "VALIDATION_FAILED");
    customer
        .patch(&path, json!({"enabled": "yes"}))
        .await
        .assert_error(400, "VALIDATION_FAILED");
    set_attributes(
        &staff,
        format!("WEBHOOK#{id}"),
        "ENDPOINT".into(),
        &[
            ("enabled", AttributeValue::Bool(false)),
            (
                "disabledReason",
                AttributeValue::S("every attempt failed for 3 days".into()),
            ),
            (
                "failingSince",
                AttributeValue::S("2026-01-01T00:00:00.000Z".into()),
            ),
        ],
    )
    .await;
    let disabled = customer.get(&path).await.json();
    assert_eq!(disabled["enabled"], false);
    assert!(disabled["disabledReason"].is_string() && disabled["failingSince"].is_string());
    let resumed = customer.patch(&path, json!({"enabled": true})).await;
    resumed.assert_status(200);
    let resumed = customer.get(&path).await.json();
    assert_eq!(resumed["enabled"], true);
    assert!(resumed.get("disabledReason").is_none() && resumed.get("failingSince").is_none());
    assert_eq!(resumed["description"], "Shipping");
    let cleared = customer.patch(&path, json!({"description": null})).await;
    assert!(cleared.json().get("description").is_none());
}

/// `id`'s secrets that sign at `at`, opened as an attempt opens them.
async fn signing(app: &TestApp, id: u64, at: chrono::DateTime<Utc>) -> Vec<String> {
    let webhook_id = Id::new(id).expect("a valid id");
    let stored = app.app.db.get_webhook(webhook_id).await.ok().flatten();
    let stored = stored.expect("stored");
    for secret in &stored.secrets {
        assert!(secret.secret.starts_with(SEALED_PREFIX), "stored sealed");
    }
    signing_secrets(id, &stored.active_secrets(at))
        .await
        .expect("the secrets open")
}

/// Rotates `id`'s secret with `body`; answers the new one.
async fn rotate(app: &TestApp, id: u64, body: serde_json::Value) -> String {
    let rotated = app.post(&format!("/webhooks/{id}/secret"), body).await;
    rotated.assert_status(200);
    let secret = rotated.json()["secret"].as_str().map(str::to_string);
    secret.expect("a new secret")
}

#[tokio::test]
async fn a_new_secret_signs_beside_the_old_for_a_day_or_alone_at_once() {
    let staff = TestApp::spawn().await;
    let created = register(&staff, json!({"url": RECEIVER})).await;
    let id = created["id"].as_u64().expect("an id");
    let first = created["secret"].as_str().expect("a secret").to_string();
    let second = rotate(&staff, id, json!({})).await;
    assert_ne!(first, second);
    let now = Utc::now();
    assert_eq!(
        signing(&staff, id, now).await,
        [second.as_str(), first.as_str()]
    );
    let later = now + Duration::hours(24) + Duration::minutes(1);
    assert_eq!(signing(&staff, id, later).await, [second.as_str()]);

    // A leaked secret is retired at once.
    let third = rotate(&staff, id, json!({"expireOldAfterSeconds": 0})).await;
    assert_eq!(signing(&staff, id, Utc::now()).await, [third.as_str()]);
    let fourth = rotate(&staff, id, json!({"expireOldAfterSeconds": 60})).await;
    let now = Utc::now();
    assert_eq!(
        signing(&staff, id, now).await,
        [fourth.as_str(), third.as_str()]
    );
    let later = now + Duration::seconds(61);
    assert_eq!(signing(&staff, id, later).await, [fourth.as_str()]);
    // At most two sign at any time: the one still retiring goes.
    let fifth = rotate(&staff, id, json!({})).await;
    assert_eq!(
        signing(&staff, id, Utc::now()).await,
        [fifth.as_str(), fourth.as_str()]
    );

    for bad in [json!(-1), json!(86_401), json!("0"), json!(1.5)] {
        let body = json!({"expireOldAfterSeconds": bad});
        let refused = staff.post(&format!("/webhooks/{id}/secret"), body).await;
        refused.assert_error(400, "VALIDATION_FAILED");
        assert!(refused.text().contains("expireOldAfterSeconds"));
    }
    assert_eq!(
        signing(&staff, id, Utc::now()).await,
        [fifth.as_str(), fourth.as_str()]
    );
}

#[tokio::test]
async fn an_enterprise_key_has_the_cap_set_on_it() {
    use petstore::ratelimit::keys::NewApiKey;
    let staff = TestApp::spawn().await;
    let new = NewApiKey::new(Plan::Enterprise, Some((1_000, 100_000)), None)
        .and_then(|new| new.with_max_webhooks(2))
        .expect("an enterprise key may set its cap");
    let key = staff
        .app
        .limiter
        .keys()
        .create(new, Utc::now())
        .await
        .expect("the key is stored");
    let enterprise = staff.with_key(key.key);
    resolving(&enterprise);
    for _ in 0..2 {
        let created = enterprise.post("/webhooks", json!({"url": RECEIVER})).await;
        created.assert_status(201);
    }
    enterprise
        .post("/webhooks", json!({"url": RECEIVER}))
        .await
        .assert_error(409, "TOO_MANY_WEBHOOKS");
}
