//! `GET /me` (contract 4d): the calling key identity's own record, its
//! counts the very numbers its answer's rate-limit headers state, never
//! its secret or hash, for what a warm keyed read costs.

use crate::helpers::TestApp;
use crate::idempotency::proxy::{FaultMix, FaultProxy};
use crate::ratelimit::{pinned, NOW};
use crate::webhooks::register_default;
use chrono::DateTime;
use petstore::ratelimit::keys::{ApiKeyHash, NewApiKey};
use petstore::ratelimit::Plan;
use petstore::records::Role;
use serde_json::json;

#[tokio::test]
async fn me_is_the_key_s_own_record_counted_as_its_headers_say() {
    // Given a pro customer key, on a clock that stays in one minute
    let (app, _clock) = pinned(|_| None).await;
    let issued = app.create_key(Plan::Pro, None).await;
    let customer = app.with_key(issued.key.clone());

    // When it asks twice
    let first = customer.get("/me").await;
    first.assert_status(200);
    let second = customer.get("/me").await;
    second.assert_status(200);

    // Then it is the key identity with its role, plan and limits
    let me = second.json();
    assert_eq!(me["id"], issued.record.id.get());
    assert_eq!(
        (me["role"].clone(), me["plan"].clone()),
        (json!("customer"), json!("pro"))
    );
    let (minute, day) = (&me["limits"]["minute"], &me["limits"]["day"]);
    assert_eq!(
        (minute["limit"].clone(), day["limit"].clone()),
        (json!(300), json!(10_000))
    );
    // and each window counts this request, one more than the first
    assert_eq!(first.json()["limits"]["minute"]["used"], 1);
    assert_eq!(
        (minute["used"].clone(), day["used"].clone()),
        (json!(2), json!(2))
    );
    assert_eq!(minute["remaining"], 298);
    // and the headers state the window with fewer remaining, as the body does
    let header = |name: &str| second.header(name).and_then(|v| v.parse::<i64>().ok());
    assert_eq!(
        header("x-ratelimit-remaining"),
        minute["remaining"].as_i64()
    );
    assert_eq!(header("x-ratelimit-limit"), minute["limit"].as_i64());
    assert_eq!(header("x-ratelimit-reset"), minute["reset"].as_i64());
    assert_eq!(minute["reset"], NOW - NOW % 60 + 60);
    assert_eq!(day["reset"], NOW - NOW % 86_400 + 86_400);
    // and it holds no endpoint, of the pro plan's 5, and never expires
    assert_eq!(me["webhooks"], json!({"held": 0, "max": 5}));
    assert!(me.get("expiresAt").is_none());

    // And neither its secret nor its hash is anywhere in the answer
    let text = second.text();
    assert!(!text.contains(&issued.key));
    assert!(!text.contains(ApiKeyHash::of(&issued.key).as_str()));
}

#[tokio::test]
async fn me_shows_the_endpoints_held_the_role_and_a_key_s_expiry() {
    // Given a staff key holding one webhook endpoint
    let staff = TestApp::spawn().await;
    register_default(&staff).await;
    let me = staff.get("/me").await;
    me.assert_status(200);
    let me = me.json();
    assert_eq!(me["role"], "staff");
    assert_eq!(me["webhooks"]["held"], 1);

    // And a key that stops at a known time says when
    let at = DateTime::from_timestamp(chrono::Utc::now().timestamp() + 1_800, 0)
        .expect("a time in range");
    let short = NewApiKey::short_lived("expiring", at);
    let issued = staff
        .app
        .limiter
        .keys()
        .create(short, chrono::Utc::now())
        .await
        .expect("the key is stored");
    let answer = staff.with_key(issued.key).get("/me").await;
    answer.assert_status(200);
    let shown = answer.json()["expiresAt"].as_str().map(str::to_string);
    assert_eq!(
        shown,
        Some(at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
    );
    assert_eq!(answer.json()["role"], json!(Role::Customer.as_str()));
}

#[tokio::test]
async fn me_costs_what_a_warm_keyed_read_costs() {
    // Given a warm key on an instance whose DynamoDB calls pass a proxy
    let staff = TestApp::spawn().await;
    let category = staff.create_category("Dogs").await;
    let proxy = FaultProxy::start(&staff.endpoint, FaultMix::NONE, 5).await;
    let app = staff.instance_reaching(&proxy.endpoint).await;
    app.get("/me").await.assert_status(200);
    let calls = |from: usize| {
        let mut operations: Vec<String> = proxy.calls()[from..]
            .iter()
            .map(|call| call.operation.clone())
            .collect();
        operations.sort();
        operations
    };

    // When it reads a category, then asks for itself
    let before = proxy.calls().len();
    app.get(&format!("/categories/{category}"))
        .await
        .assert_status(200);
    let read = calls(before);
    let before = proxy.calls().len();
    app.get("/me").await.assert_status(200);

    // Then both make the same calls: the count and one GetItem
    assert_eq!(read, vec!["GetItem".to_string(), "UpdateItem".to_string()]);
    assert_eq!(calls(before), read);
}

#[tokio::test]
async fn me_on_any_instance_counts_the_key_s_one_window_as_its_headers_say() {
    // Given a key allowing 10 a minute, served by two instances, on a clock
    // that stays in one minute
    let (app, _clock) = pinned(|_| None).await;
    let one = app.with_new_key(Plan::Enterprise, Some((10, 1_000))).await;
    let two = one.another_instance().await;

    // When it asks for itself on each in turn
    for (n, instance) in [&one, &two, &two, &one, &two].into_iter().enumerate() {
        let answer = instance.get("/me").await;
        answer.assert_status(200);

        // Then each answer counts every request so far, on either instance,
        // and states the numbers its own rate-limit headers state
        let me = answer.json();
        let minute = &me["limits"]["minute"];
        let used = n as u64 + 1;
        assert_eq!(minute["used"], json!(used), "answer {n}");
        assert_eq!(me["limits"]["day"]["used"], json!(used), "answer {n}");
        assert_eq!(minute["remaining"], json!(10 - used), "answer {n}");
        let header = |name: &str| answer.header(name).and_then(|v| v.parse::<i64>().ok());
        assert_eq!(
            header("x-ratelimit-remaining"),
            minute["remaining"].as_i64()
        );
        assert_eq!(header("x-ratelimit-limit"), minute["limit"].as_i64());
        assert_eq!(header("x-ratelimit-reset"), minute["reset"].as_i64());
    }
}
