//! Requests with one key at once: exactly one takes effect.

use super::proxy::{FaultMix, FaultProxy};
use super::{orders_of, send_keyed, stock, stocked_pet};
use crate::helpers::{TestApp, TestResponse};
use futures::future::join_all;
use http::Method;
use serde_json::{json, Value};

#[tokio::test]
async fn concurrent_requests_with_one_key_take_effect_once() {
    one_key_takes_effect_once(TestApp::spawn().await).await;
}

/// 12 orders, then 12 cancellations, at once with one key each (also run
/// through `make run-lambda`'s function instances, by tests/lambda.rs).
pub async fn one_key_takes_effect_once(staff: TestApp) {
    // Given a pet with 10 units and an order of it
    let pet = stocked_pet(&staff, 10).await;
    let customer = staff.as_customer().await;
    let fire = |method: Method, path: String, body: Option<Value>, key: &'static str| {
        join_all((0..12).map(|_| {
            let (customer, method, path, body) =
                (customer.clone(), method.clone(), path.clone(), body.clone());
            tokio::spawn(
                async move { send_keyed(&customer, method, &path, body.as_ref(), key).await },
            )
        }))
    };

    // When 12 identical orders with one key arrive at once
    let body = json!({ "petId": pet, "quantity": 2 });
    let placed = fire(Method::POST, "/store/orders".into(), Some(body), "once").await;

    // Then one order is placed; each other request got it too, or was told to come back
    let placed: Vec<TestResponse> = placed.into_iter().map(|r| r.expect("task ran")).collect();
    let created: Vec<&TestResponse> = placed.iter().filter(|r| r.status == 201).collect();
    assert!(!created.is_empty());
    assert!(created.iter().all(|r| r.body == created[0].body));
    for other in placed.iter().filter(|r| r.status != 201) {
        other.assert_error(409, "IDEMPOTENCY_KEY_IN_USE");
        assert_eq!(other.header("retry-after"), Some("1"));
    }
    let order = created[0].id();
    assert_eq!(orders_of(&staff, pet).await, vec![order]);
    assert_eq!(stock(&staff, pet).await, 8);

    // And 12 identical cancellations with one key cancel it once
    let path = format!("/store/orders/{order}");
    let cancelled = fire(Method::DELETE, path, None, "cancel").await;
    for response in cancelled.into_iter().map(|r| r.expect("task ran")) {
        if response.status != 204 {
            response.assert_error(409, "IDEMPOTENCY_KEY_IN_USE");
        }
    }
    assert_eq!(stock(&staff, pet).await, 10);
    assert!(orders_of(&staff, pet).await.is_empty());
}

#[tokio::test]
async fn a_key_whose_record_another_transaction_holds_is_in_use() {
    // Given a pet with 5 units, reached through a proxy that will cancel the
    // next transaction by a conflict on its last item
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 5).await;
    let proxy = FaultProxy::start(&staff.endpoint, FaultMix::NONE, 0).await;
    let through = staff.instance_reaching(&proxy.endpoint).await;
    let body = json!({ "petId": pet });

    // When a keyed order's transaction meets another one on its record
    proxy.cancel_next_transaction();
    let busy = send_keyed(&through, Method::POST, "/store/orders", Some(&body), "k").await;

    // Then the key is in use (no record is in), nothing changed, and the retry places it
    busy.assert_error(409, "IDEMPOTENCY_KEY_IN_USE");
    assert_eq!(busy.header("retry-after"), Some("1"));
    assert_eq!(stock(&staff, pet).await, 5);
    let placed = send_keyed(&through, Method::POST, "/store/orders", Some(&body), "k").await;
    placed.assert_status(201);
    assert_eq!(placed.header("idempotent-replayed"), None);

    // Without a key the same conflict is an ordinary one, tried again
    proxy.cancel_next_transaction();
    through.post("/store/orders", body).await.assert_status(201);
    assert_eq!(stock(&staff, pet).await, 3);
    crate::data::check::assert_sound(&staff).await;
}

#[tokio::test]
async fn a_retry_whose_record_cannot_be_read_is_503_never_a_false_refusal() {
    // Given an order cancelled with key "c", reached through a proxy
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 5).await;
    let proxy = FaultProxy::start(&staff.endpoint, FaultMix::NONE, 0).await;
    let through = staff.instance_reaching(&proxy.endpoint).await;
    let order = through
        .post("/store/orders", json!({ "petId": pet }))
        .await
        .id();
    let path = format!("/store/orders/{order}");
    send_keyed(&through, Method::DELETE, &path, None, "c")
        .await
        .assert_status(204);

    // When the cancel is retried (its answer lost) while the record cannot be read
    proxy.throttle_record_reads(10);
    let retried = send_keyed(&through, Method::DELETE, &path, None, "c").await;

    // Then it is 503, not the 404 its second attempt met: the outcome is unknown
    retried.assert_error(503, "SERVICE_UNAVAILABLE");
    assert!(retried.header("retry-after").is_some());

    // And once the record can be read, the retry gets the recorded 204
    proxy.throttle_record_reads(0);
    let again = send_keyed(&through, Method::DELETE, &path, None, "c").await;
    again.assert_status(204);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(stock(&staff, pet).await, 5);
    crate::data::check::assert_sound(&staff).await;
}
