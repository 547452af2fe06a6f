//! What answers tell caches and browsers (contract section 7): every JSON
//! answer of the wrapper, refusals and errors included, is `Cache-Control:
//! private, no-cache` (`no-store` before 1.3.0: a client may now keep a
//! record and revalidate it, contract 4c) and `X-Content-Type-Options:
//! nosniff`. (The `/docs` page and files, which are cacheable, are in
//! docs.rs.)

use crate::helpers::TestResponse;
use crate::ratelimit::pinned;
use http::Method;
use petstore::ratelimit::Plan;
use serde_json::json;

#[track_caller]
fn assert_kept_by_no_cache(response: &TestResponse, what: &str) {
    assert_eq!(
        response.header("cache-control"),
        Some("private, no-cache"),
        "{what}"
    );
    assert_eq!(
        response.header("x-content-type-options"),
        Some("nosniff"),
        "{what}"
    );
}

#[tokio::test]
async fn every_json_answer_is_kept_by_no_cache() {
    let (app, _clock) = pinned(|_| None).await;
    let staff = app.clone();
    let customer = app.as_customer().await;
    let category = staff.create_category("Dogs").await;

    let answers = [
        ("200", customer.get("/store/orders").await),
        ("200 public", app.without_key().get("/openapi.json").await),
        (
            "201",
            staff.post("/categories", json!({"name": "Cats"})).await,
        ),
        (
            "204",
            staff.delete(&format!("/categories/{category}")).await,
        ),
        ("400", staff.post("/categories", json!({"name": ""})).await),
        ("401", app.without_key().get("/store/orders").await),
        (
            "403",
            customer.post("/categories", json!({"name": "Fish"})).await,
        ),
        ("404", staff.get("/nowhere").await),
        ("405", staff.send(Method::PATCH, "/categories").await),
    ];
    for (what, response) in &answers {
        assert_eq!(response.status.to_string(), what[..3], "{what}");
        assert_kept_by_no_cache(response, what);
    }

    // 413: tower-http's own answer, turned into the Error record
    let big = "x".repeat(70 * 1024);
    let response = staff.post("/categories", json!({"name": big})).await;
    response.assert_error(413, "PAYLOAD_TOO_LARGE");
    assert_kept_by_no_cache(&response, "413");

    // 429
    let tight = app.with_new_key(Plan::Enterprise, Some((1, 100))).await;
    tight.get("/categories").await.assert_status(200);
    let response = tight.get("/categories").await;
    response.assert_error(429, "RATE_LIMITED");
    assert_kept_by_no_cache(&response, "429");
}

#[tokio::test]
async fn the_docs_functions_errors_are_kept_by_no_cache_too() {
    let request = http::Request::builder()
        .uri("/docs/assets/nope.js")
        .body(axum::body::Body::empty())
        .expect("request is valid");
    let response = TestResponse::of(docs::routes(), request).await;
    response.assert_error(404, "NOT_FOUND");
    assert_kept_by_no_cache(&response, "the docs function's 404");
}
