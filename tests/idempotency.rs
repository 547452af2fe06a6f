//! Safe retries (contract section 4b): `Idempotency-Key` on every change,
//! the outcome recorded with the change and answered again, on DynamoDB
//! Local. `faults` runs shoppers through a fault-injecting `proxy`.

// faults, proxy and shoppers are also domain_events.rs's: the same fault run, read from the stream.
pub(crate) mod faults;
mod lapses;
pub mod proxy;
pub mod races;
mod records;
pub(crate) mod shoppers;

use crate::helpers::{TestApp, TestResponse};
use axum::body::Body;
use http::{header, HeaderValue, Method, Request};
use serde_json::{json, Value};

/// Sends a request with `Idempotency-Key: key` (and `body` as JSON).
pub async fn send_keyed(
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<&Value>,
    key: &str,
) -> TestResponse {
    let key = HeaderValue::from_str(key).expect("a valid header value");
    send_with_key(app, method, path, body, key).await
}

async fn send_with_key(
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<&Value>,
    key: HeaderValue,
) -> TestResponse {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("idempotency-key", key);
    if body.is_some() {
        request = request.header(header::CONTENT_TYPE, "application/json");
    }
    let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
    app.request(request.body(body).expect("request is valid"))
        .await
}

/// A pet with `stock` units, made by `staff`; returns its id.
pub async fn stocked_pet(staff: &TestApp, stock: u64) -> u64 {
    let category = staff
        .create_category(&format!("Category {}", rand::random::<u32>()))
        .await;
    let pet = staff.create_pet("Rex", category, "available").await;
    staff
        .put(
            &format!("/store/inventory/{pet}"),
            json!({ "quantity": stock }),
        )
        .await
        .assert_status(200);
    pet
}

async fn stock(app: &TestApp, pet: u64) -> u64 {
    let response = app.get(&format!("/store/inventory/{pet}")).await;
    response.json()["quantity"].as_u64().unwrap_or(u64::MAX)
}

async fn orders_of(staff: &TestApp, pet: u64) -> Vec<u64> {
    staff
        .get(&format!("/store/orders?petId={pet}&limit=100"))
        .await
        .ids()
}

/// Asserts that `replayed` is `first` answered again.
#[track_caller]
fn assert_replay_of(replayed: &TestResponse, first: &TestResponse) {
    assert_eq!(replayed.status, first.status, "{}", replayed.text());
    assert_eq!(replayed.body, first.body);
    assert_eq!(replayed.header("location"), first.header("location"));
    assert_eq!(
        replayed.header("content-type"),
        first.header("content-type")
    );
    assert_eq!(replayed.header("idempotent-replayed"), Some("true"));
    assert_eq!(first.header("idempotent-replayed"), None);
    assert_ne!(
        replayed.header("x-request-id"),
        first.header("x-request-id"),
        "a replay has a request id of its own"
    );
    assert!(replayed.header("x-ratelimit-remaining").is_some());
}

#[tokio::test]
async fn a_retried_order_is_placed_once_and_answered_again() {
    // Given a pet with 5 units, and a customer's order placed with a key
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 5).await;
    let customer = staff.as_customer().await;
    let body = json!({ "petId": pet, "quantity": 2 });
    let first = send_keyed(&customer, Method::POST, "/store/orders", Some(&body), "o-1").await;
    first.assert_status(201);

    // When the same request is sent again, its JSON written differently (it
    // decides on a second order with a fresh id; the record's put in the same
    // transaction fails on its condition, so nothing of it is written)
    let again = json!({ "quantity": 2.0, "petId": pet });
    let replayed = send_keyed(
        &customer,
        Method::POST,
        "/store/orders",
        Some(&again),
        "o-1",
    )
    .await;

    // Then it gets the first answer again, counted, and the stock moved once
    assert_replay_of(&replayed, &first);
    let remaining = |r: &TestResponse| {
        r.header("x-ratelimit-remaining")
            .and_then(|v| v.parse::<u64>().ok())
    };
    assert!(
        remaining(&replayed) < remaining(&first),
        "a replay is counted"
    );
    assert_eq!(stock(&staff, pet).await, 3);
    assert_eq!(orders_of(&staff, pet).await, vec![first.id()]);
}

#[tokio::test]
async fn every_change_answers_its_retry_with_its_first_outcome() {
    let staff = TestApp::spawn().await;
    // Each change is sent twice with its own key; the second is a replay.
    let twice = |method: Method, path: String, body: Option<Value>, key: &'static str| {
        let staff = staff.clone();
        async move {
            let first = send_keyed(&staff, method.clone(), &path, body.as_ref(), key).await;
            assert!(first.status < 300, "{method} {path}: {}", first.text());
            let again = send_keyed(&staff, method, &path, body.as_ref(), key).await;
            assert_replay_of(&again, &first);
            first
        }
    };
    let post = Method::POST;
    let category = json!({"name": "Birds"});
    let c = twice(post.clone(), "/categories".into(), Some(category), "k1").await;
    let c = c.id();
    let renamed = json!({"name": "Parrots", "description": "Loud"});
    twice(Method::PUT, format!("/categories/{c}"), Some(renamed), "k2").await;
    let pet = json!({"name": "Polly", "categoryId": c});
    let p = twice(post.clone(), "/pets".into(), Some(pet), "k3")
        .await
        .id();
    let pending = json!({"name": "Polly", "categoryId": c, "status": "pending"});
    twice(Method::PUT, format!("/pets/{p}"), Some(pending), "k4").await;
    let available = json!({"status": "available"});
    twice(Method::PATCH, format!("/pets/{p}"), Some(available), "k5").await;
    let stock_of_4 = json!({"quantity": 4});
    let inventory = format!("/store/inventory/{p}");
    let set = twice(Method::PUT, inventory.clone(), Some(stock_of_4), "k6").await;
    assert_eq!(set.header("x-api-stability"), Some("beta"));
    let four = json!({"quantity": 4});
    let again = send_keyed(&staff, Method::PUT, &inventory, Some(&four), "k6").await;
    assert_eq!(again.header("x-api-stability"), Some("beta"));
    let order = json!({"petId": p});
    let o1 = twice(
        post.clone(),
        "/store/orders".into(),
        Some(order.clone()),
        "k7",
    )
    .await;
    let o1 = o1.id();
    let complete = json!({"complete": true});
    twice(
        Method::PATCH,
        format!("/store/orders/{o1}"),
        Some(complete),
        "k8",
    )
    .await;
    let o2 = twice(post, "/store/orders".into(), Some(order), "k9")
        .await
        .id();
    twice(Method::DELETE, format!("/store/orders/{o2}"), None, "k10").await;

    // Every change happened once: 4 units, one sold, one returned
    assert_eq!(stock(&staff, p).await, 3);
    assert_eq!(orders_of(&staff, p).await, vec![o1]);
    let names = staff.get("/categories?limit=100").await.json();
    let names: Vec<&str> = names
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["Parrots"]);

    twice(Method::DELETE, format!("/pets/{p}"), None, "k11").await;
    twice(Method::DELETE, format!("/categories/{c}"), None, "k12").await;
    staff
        .get(&format!("/categories/{c}"))
        .await
        .assert_status(404);
}

#[tokio::test]
async fn a_key_sent_with_another_request_is_refused() {
    // Given an order placed with a key
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 5).await;
    let body = json!({ "petId": pet, "quantity": 1 });
    let first = send_keyed(&staff, Method::POST, "/store/orders", Some(&body), "k").await;
    first.assert_status(201);

    // When the key comes again with another body, path or method
    let two = json!({ "petId": pet, "quantity": 2 });
    let order = format!("/store/orders/{}", first.id());
    for response in [
        send_keyed(&staff, Method::POST, "/store/orders", Some(&two), "k").await,
        send_keyed(&staff, Method::DELETE, &order, None, "k").await,
        send_keyed(
            &staff,
            Method::POST,
            "/categories",
            Some(&json!({"name": "X"})),
            "k",
        )
        .await,
    ] {
        // Then it is refused, and nothing changes
        response.assert_error(422, "IDEMPOTENCY_KEY_REUSED");
    }
    assert_eq!(stock(&staff, pet).await, 4);
    staff.get(&order).await.assert_status(200);
}

#[tokio::test]
async fn a_key_belongs_to_the_key_identity_that_sent_it() {
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 5).await;
    let body = json!({ "petId": pet });
    let (alice, bob) = (staff.as_customer().await, staff.as_customer().await);

    let a = send_keyed(&alice, Method::POST, "/store/orders", Some(&body), "same").await;
    let b = send_keyed(&bob, Method::POST, "/store/orders", Some(&body), "same").await;

    a.assert_status(201);
    b.assert_status(201);
    assert_ne!(a.id(), b.id());
    assert_eq!(b.header("idempotent-replayed"), None);
    assert_eq!(stock(&staff, pet).await, 3);
}

#[tokio::test]
async fn a_bad_key_is_refused_before_anything_is_read_or_changed() {
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 5).await;
    let body = json!({ "petId": pet });
    for bad in [
        HeaderValue::from_static(""),
        HeaderValue::from_str(&"k".repeat(256)).expect("ASCII"),
        HeaderValue::from_bytes(b"caf\xe9").expect("a header may hold Latin-1"),
        HeaderValue::from_static("tab\there"),
    ] {
        let response = send_with_key(&staff, Method::POST, "/store/orders", Some(&body), bad);
        response.await.assert_error(400, "VALIDATION_FAILED");
    }
    let twice = Request::builder()
        .method(Method::DELETE)
        .uri(format!("/pets/{pet}"))
        .header("idempotency-key", "a")
        .header("idempotency-key", "b")
        .body(Body::empty())
        .expect("request is valid");
    staff
        .request(twice)
        .await
        .assert_error(400, "VALIDATION_FAILED");
    assert_eq!(stock(&staff, pet).await, 5);

    let longest = "~".repeat(255);
    let response = send_keyed(&staff, Method::POST, "/store/orders", Some(&body), &longest);
    response.await.assert_status(201);
    // A read ignores the header, whatever it holds.
    let read = send_with_key(
        &staff,
        Method::GET,
        "/pets",
        None,
        HeaderValue::from_static(""),
    );
    read.await.assert_status(200);
}

#[tokio::test]
async fn a_request_that_changed_nothing_is_judged_afresh() {
    // Given a pet with 1 unit
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 1).await;
    let two = json!({ "petId": pet, "quantity": 2 });

    // When an order is refused for the stock, the stock grows, and it is retried
    let refused = send_keyed(&staff, Method::POST, "/store/orders", Some(&two), "k").await;
    refused.assert_error(409, "INSUFFICIENT_STOCK");
    let invalid = json!({ "petId": pet, "quantity": 0 });
    let invalid = send_keyed(&staff, Method::POST, "/store/orders", Some(&invalid), "k");
    invalid.await.assert_error(400, "VALIDATION_FAILED");
    let inventory = format!("/store/inventory/{pet}");
    staff.put(&inventory, json!({"quantity": 3})).await;
    let retried = send_keyed(&staff, Method::POST, "/store/orders", Some(&two), "k").await;

    // Then the retry is judged on the stock now: placed, not a replay
    retried.assert_status(201);
    assert_eq!(retried.header("idempotent-replayed"), None);
    assert_eq!(stock(&staff, pet).await, 1);

    // A PUT that changes nothing records nothing either: the key stays free
    let pet_path = format!("/pets/{pet}");
    let current = staff.get(&format!("/pets?ids={pet}")).await.json()[0].clone();
    let unchanged = send_keyed(&staff, Method::PUT, &pet_path, Some(&current), "p").await;
    unchanged.assert_status(200);
    let mut renamed = current.clone();
    renamed["name"] = json!("Max");
    let changed = send_keyed(&staff, Method::PUT, &pet_path, Some(&renamed), "p").await;
    changed.assert_status(200);
    assert_eq!(changed.json()["name"], "Max");
}
