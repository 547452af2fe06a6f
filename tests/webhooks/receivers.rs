//! Who receives an event (`endpoints::subscribers`, what the fan-out asks,
//! and `receiving::KeyStates::decide`, what each attempt asks): the order's
//! owner's own endpoints for `order.*`, every staff endpoint as subscribed;
//! never a disabled one, nor one whose key is revoked.

use super::{register, set_attributes, RECEIVER};
use crate::helpers::TestApp;
use aws_sdk_dynamodb::types::AttributeValue;
use petstore::webhooks::endpoints::subscribers;
use petstore::webhooks::receiving::{KeyStates, NotReceiving};
use petstore::webhooks::types::EventType;
use serde_json::json;

/// The keys' states, read at every decision (a time-to-live of zero).
fn key_states(app: &TestApp) -> KeyStates {
    let config = &app.app.config;
    KeyStates::new(
        app.app.db.client().clone(),
        &config.table_name,
        &config.rate_limit_table_name,
        config.data_layout,
        std::time::Duration::ZERO,
    )
}

async fn receiving(app: &TestApp, event_type: &str, owner: Option<u64>) -> Vec<u64> {
    let (client, table) = (app.app.db.client(), &app.app.config.table_name);
    let Some(event_type) = EventType::parse(event_type) else {
        return Vec::new();
    };
    let found = subscribers(client, table, &key_states(app), event_type, owner)
        .await
        .expect("subscribers reads DynamoDB Local");
    found.iter().map(|endpoint| endpoint.id.get()).collect()
}

/// What an attempt of an endpoint of `owner` (enabled) is decided by.
async fn decided(app: &TestApp, owner: u64) -> Result<petstore::records::Role, NotReceiving> {
    let now = chrono::Utc::now();
    key_states(app)
        .decide(true, owner, now)
        .await
        .expect("reads DynamoDB Local")
}

fn id_of(record: &serde_json::Value) -> u64 {
    record["id"].as_u64().expect("a webhook id")
}

#[tokio::test]
async fn each_event_goes_to_its_order_owner_and_to_staff_as_subscribed() {
    let staff = TestApp::spawn().await;
    let (alice, bob) = (staff.as_customer().await, staff.as_customer().await);
    let every = id_of(&register(&staff, json!({"url": RECEIVER})).await);
    let pets_only =
        id_of(&register(&staff, json!({"url": RECEIVER, "events": ["pet.created"]})).await);
    let alice_all = id_of(&register(&alice, json!({"url": RECEIVER})).await);
    let completed = json!({"url": RECEIVER, "events": ["order.completed"]});
    let bob_completed = id_of(&register(&bob, completed).await);

    let mut placed = receiving(&staff, "order.placed", Some(alice.key_id)).await;
    placed.sort();
    let mut expected = vec![every, alice_all];
    expected.sort();
    assert_eq!(
        placed, expected,
        "alice's order: alice and staff's catch-all"
    );
    let bobs = receiving(&staff, "order.completed", Some(bob.key_id)).await;
    assert_eq!(bobs.len(), 2, "bob's completion: bob and staff's catch-all");
    assert!(bobs.contains(&bob_completed) && bobs.contains(&every));
    let mut pets = receiving(&staff, "pet.created", None).await;
    pets.sort();
    let mut expected = vec![every, pets_only];
    expected.sort();
    assert_eq!(pets, expected, "no customer receives a pet event");
    assert_eq!(
        receiving(&staff, "no.such.type", None).await,
        Vec::<u64>::new()
    );

    assert!(decided(&staff, alice.key_id).await.is_ok());
    set_attributes(
        &staff,
        format!("WEBHOOK#{alice_all}"),
        "ENDPOINT".into(),
        &[("enabled", AttributeValue::Bool(false))],
    )
    .await;
    assert_eq!(
        receiving(&staff, "order.placed", Some(alice.key_id)).await,
        vec![every]
    );

    let bob_key = petstore::records::Id::new(bob.key_id).expect("an id");
    staff
        .app
        .limiter
        .keys()
        .revoke(bob_key)
        .await
        .expect("revoked");
    assert_eq!(
        decided(&staff, bob.key_id).await,
        Err(NotReceiving::KeyRevoked)
    );
    assert_eq!(
        receiving(&staff, "order.completed", Some(bob.key_id)).await,
        vec![every]
    );
}

#[tokio::test]
async fn a_registration_replayed_with_its_idempotency_key_makes_one_endpoint() {
    let staff = TestApp::spawn().await;
    let free = staff
        .with_new_key(petstore::ratelimit::Plan::Free, None)
        .await;
    super::resolving(&free);
    let request = || {
        http::Request::builder()
            .method(http::Method::POST)
            .uri("/webhooks")
            .header("content-type", "application/json")
            .header("idempotency-key", "register-once")
            .body(axum::body::Body::from(json!({"url": RECEIVER}).to_string()))
            .expect("a request")
    };
    let first = free.request(request()).await;
    first.assert_status(201);
    let again = free.request(request()).await;
    again.assert_status(201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    // The same endpoint; its secret was in the first answer alone, never
    // in the record a replay is made from (section 9, "Secrets").
    let mut without_secret = first.json();
    let secret = without_secret
        .as_object_mut()
        .and_then(|o| o.remove("secret"));
    assert!(secret.is_some_and(|s| s.is_string()));
    assert_eq!(again.json(), without_secret, "the same endpoint, no secret");
    assert_eq!(
        free.get("/webhooks").await.ids().len(),
        1,
        "the cap counted it once"
    );
}
