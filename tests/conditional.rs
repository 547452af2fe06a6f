//! Conditional requests (contract 4c): every single-record answer carries
//! an `ETag` that a `GET` of the record sends too; `If-None-Match` is a 304;
//! `If-Match` is held in the write's own condition, so a write that lands
//! between a change's read and its write (the last release's, which knows
//! nothing of validators, included) makes it 412, and of N writes sent with
//! one validator exactly one is made.

mod lost_answers;
mod races;
mod webhooks;

use crate::helpers::{TestApp, TestResponse};
use crate::idempotency::stocked_pet;
use axum::body::Body;
use http::{header, Method, Request};
use serde_json::{json, Value};

/// Sends `method path` (with `body` as JSON, if any) carrying `headers`.
pub async fn send_with(
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> TestResponse {
    let mut request = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = match body {
        Some(body) => request
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string())),
        None => request.body(Body::empty()),
    };
    app.request(request.expect("a valid request")).await
}

/// The `ETag` of `response`, which must carry one.
#[track_caller]
pub fn etag(response: &TestResponse) -> String {
    response
        .header("etag")
        .unwrap_or_else(|| panic!("no ETag on a {} answer", response.status))
        .to_string()
}

/// The validator a `GET` of `path` sends now.
pub async fn current_etag(app: &TestApp, path: &str) -> String {
    let response = app.get(path).await;
    response.assert_status(200);
    etag(&response)
}

#[tokio::test]
async fn every_single_record_answer_carries_the_validator_a_get_sends() {
    // Given a category, a pet in stock and a customer
    let staff = TestApp::spawn().await;
    let created = staff.post("/categories", json!({"name": "Dogs"})).await;
    created.assert_status(201);
    let category = created.id();
    let category_path = format!("/categories/{category}");
    let pet = stocked_pet(&staff, 5).await;
    let (pet_path, stock_path) = (format!("/pets/{pet}"), format!("/store/inventory/{pet}"));
    let customer = staff.as_customer().await;

    // Then a created record's ETag is what a GET of it sends
    assert_eq!(etag(&created), current_etag(&staff, &category_path).await);
    let placed = customer
        .post("/store/orders", json!({"petId": pet, "quantity": 1}))
        .await;
    placed.assert_status(201);
    let order_path = format!("/store/orders/{}", placed.id());
    assert_eq!(etag(&placed), current_etag(&customer, &order_path).await);

    // And a change's answer carries the new one, which a GET sends too
    let before = current_etag(&staff, &category_path).await;
    let replaced = staff
        .put(
            &category_path,
            json!({"name": "Dogs", "description": "Loyal"}),
        )
        .await;
    replaced.assert_status(200);
    assert_ne!(etag(&replaced), before);
    assert_eq!(etag(&replaced), current_etag(&staff, &category_path).await);
    let patched = staff.patch(&pet_path, json!({"name": "Rex II"})).await;
    patched.assert_status(200);
    assert_eq!(etag(&patched), current_etag(&staff, &pet_path).await);
    let patched = staff
        .patch(&order_path, json!({"shipDate": "2030-01-01T00:00:00Z"}))
        .await;
    patched.assert_status(200);
    assert_eq!(etag(&patched), current_etag(&customer, &order_path).await);

    // And a stock level an order moves has a new validator
    let stock_before = staff.get(&stock_path).await;
    let ordered = customer
        .post("/store/orders", json!({"petId": pet, "quantity": 2}))
        .await;
    ordered.assert_status(201);
    assert_ne!(etag(&stock_before), current_etag(&staff, &stock_path).await);
    let set = staff.put(&stock_path, json!({"quantity": 9})).await;
    set.assert_status(200);
    assert_eq!(etag(&set), current_etag(&staff, &stock_path).await);

    // And a list answer carries none
    for list in ["/pets", "/categories", "/store/orders", "/store/inventory"] {
        let page = staff.get(list).await;
        page.assert_status(200);
        assert_eq!(page.header("etag"), None, "{list}");
    }
}

#[tokio::test]
async fn if_none_match_naming_the_current_validator_is_a_304_with_the_usual_headers() {
    // Given one record of each kind
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 5).await;
    let customer = staff.as_customer().await;
    let order = customer
        .post("/store/orders", json!({"petId": pet, "quantity": 1}))
        .await
        .id();
    let category = staff.get(&format!("/pets/{pet}")).await.json()["categoryId"]
        .as_u64()
        .expect("a category id");
    let paths = [
        format!("/pets/{pet}"),
        format!("/categories/{category}"),
        format!("/store/orders/{order}"),
        format!("/store/inventory/{pet}"),
    ];
    for path in &paths {
        let tag = current_etag(&customer, path).await;

        // When a GET names its validator, then it is 304 without a body
        let asks = [
            tag.clone(),
            format!("\"other\", {tag}"),
            format!("W/{tag}"),
            "*".to_string(),
        ];
        for asked in &asks {
            let asked = [("if-none-match", asked.as_str())];
            let response = send_with(&customer, Method::GET, path, None, &asked).await;
            response.assert_status(304);
            assert!(response.body.is_empty(), "{path}");
            assert_eq!(response.header("etag"), Some(tag.as_str()), "{path}");
            assert_eq!(response.header("cache-control"), Some("private, no-cache"));
            assert!(response.header("x-ratelimit-remaining").is_some());
            assert!(response.header("x-request-id").is_some());
        }

        // And a validator it no longer has is the record as usual
        let stale = send_with(
            &customer,
            Method::GET,
            path,
            None,
            &[("if-none-match", "\"stale\"")],
        )
        .await;
        stale.assert_status(200);
        assert_eq!(etag(&stale), tag);
    }

    // And the deprecated GET's 304 has its deprecation headers
    let tag = current_etag(&customer, &paths[0]).await;
    let response = send_with(
        &customer,
        Method::GET,
        &paths[0],
        None,
        &[("if-none-match", &tag)],
    )
    .await;
    response.assert_status(304);
    assert!(response.header("deprecation").is_some() && response.header("sunset").is_some());
}

#[tokio::test]
async fn if_match_naming_another_validator_is_a_412_and_changes_nothing() {
    // Given a pet in stock, a category, and a customer's order
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 5).await;
    let category = staff.get(&format!("/pets/{pet}")).await.json()["categoryId"].clone();
    let customer = staff.as_customer().await;
    let order = customer
        .post("/store/orders", json!({"petId": pet, "quantity": 1}))
        .await
        .id();
    let spare = staff.create_category("Spare").await;
    let ship = json!({"shipDate": "2030-01-01T00:00:00Z"});
    let changes: Vec<(Method, String, Option<Value>, &TestApp)> = vec![
        (
            Method::PUT,
            format!("/pets/{pet}"),
            Some(json!({"name": "Max", "categoryId": category})),
            &staff,
        ),
        (
            Method::PATCH,
            format!("/pets/{pet}"),
            Some(json!({"name": "Mo"})),
            &staff,
        ),
        (
            Method::PUT,
            format!("/categories/{spare}"),
            Some(json!({"name": "Other"})),
            &staff,
        ),
        (
            Method::PATCH,
            format!("/store/orders/{order}"),
            Some(ship),
            &staff,
        ),
        (
            Method::PUT,
            format!("/store/inventory/{pet}"),
            Some(json!({"quantity": 3})),
            &staff,
        ),
        (Method::DELETE, format!("/pets/{pet}"), None, &staff),
        (Method::DELETE, format!("/categories/{spare}"), None, &staff),
        (
            Method::DELETE,
            format!("/store/orders/{order}"),
            None,
            &customer,
        ),
    ];
    for (method, path, body, caller) in &changes {
        let before = staff.get(path).await.body;

        // When it is sent with a validator the record does not have
        let stale = [("if-match", "\"stale\"")];
        let response = send_with(caller, method.clone(), path, body.as_ref(), &stale).await;

        // Then it is 412 and the record is as it was
        response.assert_error(412, "PRECONDITION_FAILED");
        assert_eq!(staff.get(path).await.body, before, "{method} {path}");
    }

    // And with the record's current validator, or `*`, each is made (the
    // pet, with an open order, only to its delete's own 409)
    for (method, path, body, caller) in &changes {
        let tag = current_etag(&staff, path).await;
        let asked = [("if-match", tag.as_str())];
        let response = send_with(caller, method.clone(), path, body.as_ref(), &asked).await;
        if path.starts_with("/pets/") && *method == Method::DELETE {
            response.assert_error(409, "PET_HAS_OPEN_ORDERS");
            continue;
        }
        assert!(
            response.status == 200 || response.status == 204,
            "{method} {path}: {}",
            response.text()
        );
        if response.status == 200 {
            assert_ne!(etag(&response), tag, "{method} {path}");
            let any = [("if-match", "*")];
            let again = send_with(caller, method.clone(), path, body.as_ref(), &any).await;
            again.assert_status(200);
        }
    }
}

#[tokio::test]
async fn if_match_on_a_missing_or_another_customer_s_record_is_a_404() {
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 5).await;
    let customer = staff.as_customer().await;
    let order = customer
        .post("/store/orders", json!({"petId": pet, "quantity": 1}))
        .await;
    let tag = etag(&order);
    let order = format!("/store/orders/{}", order.id());

    // Another customer naming the order's very validator learns nothing
    let other = staff.as_customer().await;
    for asked in [tag.as_str(), "*"] {
        let response =
            send_with(&other, Method::DELETE, &order, None, &[("if-match", asked)]).await;
        response.assert_error(404, "NOT_FOUND");
    }
    // And a missing record is 404 too
    let response = send_with(
        &staff,
        Method::PATCH,
        "/pets/999999999",
        Some(&json!({"name": "Ghost"})),
        &[("if-match", "*")],
    )
    .await;
    response.assert_error(404, "NOT_FOUND");
    customer.get(&order).await.assert_status(200);
}
