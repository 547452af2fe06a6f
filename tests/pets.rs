//! Pets and categories (contract sections 1, 2 (Pets), 3 (direct status
//! changes), 5, 6 and 7), rule by rule, against DynamoDB Local.

mod categories;
mod lists;
mod requests;

use crate::helpers::{TestApp, TestResponse};
use axum::body::Body;
use futures::future::join_all;
use http::{header, Method, Request};
use serde_json::json;
use std::collections::HashSet;

fn ids(response: &TestResponse) -> Vec<u64> {
    response
        .json()
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|record| record["id"].as_u64())
        .collect()
}

/// The target of a `Link: <...>; rel="next"` header.
fn next_url(response: &TestResponse) -> Option<String> {
    let link = response.header("link")?;
    assert!(link.ends_with("rel=\"next\""), "{link}");
    Some(link.trim_start_matches('<').split('>').next()?.to_string())
}

pub(crate) async fn raw(
    app: &TestApp,
    method: Method,
    path: &str,
    content_type: Option<&str>,
    body: impl Into<Body>,
) -> TestResponse {
    let mut request = Request::builder().method(method).uri(path);
    if let Some(content_type) = content_type {
        request = request.header(header::CONTENT_TYPE, content_type);
    }
    app.request(request.body(body.into()).expect("request is valid"))
        .await
}

#[tokio::test]
async fn creating_a_pet_answers_201_with_the_record_and_its_location() {
    let app = TestApp::spawn().await;
    let category = app.create_category("Dogs").await;

    let response = app
        .post(
            "/pets",
            json!({ "name": "  Rex  ", "categoryId": category, "id": 7, "colour": "brown" }),
        )
        .await;

    response.assert_status(201);
    assert_eq!(response.header("content-type"), Some("application/json"));
    let pet = response.json();
    let id = response.id();
    assert_ne!(id, 7, "an id in the body is ignored");
    assert!(id < (1u64 << 53), "ids are JavaScript-safe");
    assert_eq!(
        pet,
        json!({ "id": id, "name": "Rex", "categoryId": category, "status": "available" })
    );
    assert_eq!(
        response.header("location"),
        Some(format!("/pets/{id}").as_str())
    );
}

#[tokio::test]
async fn a_pet_needs_an_existing_category() {
    let app = TestApp::spawn().await;
    app.post(
        "/pets",
        json!({ "name": "Rex", "categoryId": 4_242_424_242u64 }),
    )
    .await
    .assert_error(422, "UNKNOWN_REFERENCE");
}

#[tokio::test]
async fn invalid_pets_are_refused_naming_the_field() {
    let app = TestApp::spawn().await;
    let category = app.create_category("Dogs").await;
    for (body, field) in [
        (json!({ "categoryId": category }), "name"),
        (json!({ "name": "", "categoryId": category }), "name"),
        (json!({ "name": "   ", "categoryId": category }), "name"),
        (
            json!({ "name": "x".repeat(101), "categoryId": category }),
            "name",
        ),
        (json!({ "name": "a\u{0}b", "categoryId": category }), "name"),
        (json!({ "name": 12, "categoryId": category }), "name"),
        (json!({ "name": "Rex" }), "categoryId"),
        (json!({ "name": "Rex", "categoryId": "1" }), "categoryId"),
        (json!({ "name": "Rex", "categoryId": 0 }), "categoryId"),
        (
            json!({ "name": "Rex", "categoryId": 9_007_199_254_740_992u64 }),
            "categoryId",
        ),
        (
            json!({ "name": "Rex", "categoryId": category, "status": "lost" }),
            "status",
        ),
    ] {
        let response = app.post("/pets", body.clone()).await;
        response.assert_error(400, "VALIDATION_FAILED");
        let message = response.json()["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(message.contains(field), "{body} → {message}");
    }
    assert_eq!(
        app.get("/pets").await.json(),
        json!([]),
        "nothing half-written"
    );
}

#[tokio::test]
async fn concurrent_creates_get_distinct_ids() {
    let app = TestApp::spawn().await;
    let category = app.create_category("Dogs").await;
    let responses = join_all((0..20).map(|i| {
        let app = app.clone();
        tokio::spawn(async move {
            app.post(
                "/pets",
                json!({ "name": format!("Pet {i}"), "categoryId": category }),
            )
            .await
        })
    }))
    .await;
    let created: HashSet<u64> = responses
        .into_iter()
        .map(|r| {
            let r = r.expect("task ran");
            r.assert_status(201);
            r.id()
        })
        .collect();
    assert_eq!(created.len(), 20);
    let listed: HashSet<u64> = ids(&app.get("/pets?limit=100").await).into_iter().collect();
    assert_eq!(listed, created);
}

#[tokio::test]
async fn reading_a_pet_by_id_is_deprecated_with_a_successor() {
    let app = TestApp::spawn().await;
    let category = app.create_category("Dogs").await;
    let id = app.create_pet("Rex", category, "available").await;

    let response = app.get(&format!("/pets/{id}")).await;

    response.assert_status(200);
    assert_eq!(response.json()["id"], id);
    let deprecation = response.header("deprecation").unwrap_or_default();
    assert!(
        deprecation.starts_with('@') && deprecation[1..].parse::<i64>().is_ok(),
        "{deprecation}"
    );
    assert_eq!(
        response.header("sunset"),
        Some("Wed, 30 Jun 2027 00:00:00 GMT")
    );
    assert_eq!(
        response.header("link"),
        Some(format!("</pets?ids={id}>; rel=\"successor-version\"").as_str())
    );
    let missing = app.get("/pets/4242424242").await;
    missing.assert_error(404, "NOT_FOUND");
    assert!(missing.header("deprecation").is_some());
    app.get("/pets/abc")
        .await
        .assert_error(400, "VALIDATION_FAILED");
}

#[tokio::test]
async fn after_the_sunset_reading_a_pet_by_id_is_gone() {
    let app = TestApp::spawn_with(|name| {
        (name == "SUNSET_AT").then(|| "2020-01-01T00:00:00Z".to_string())
    })
    .await;
    let category = app.create_category("Dogs").await;
    let id = app.create_pet("Rex", category, "available").await;

    let response = app.get(&format!("/pets/{id}")).await;

    response.assert_error(410, "SUNSET");
    assert_eq!(
        response.header("sunset"),
        Some("Wed, 01 Jan 2020 00:00:00 GMT")
    );
    app.get(&format!("/pets?ids={id}")).await.assert_status(200);
}

#[tokio::test]
async fn replacing_a_pet_checks_the_status_transition() {
    let app = TestApp::spawn().await;
    let category = app.create_category("Dogs").await;
    let allowed = [
        ("available", "pending"),
        ("available", "sold"),
        ("pending", "available"),
        ("pending", "sold"),
        ("sold", "available"),
        ("sold", "sold"),
    ];
    for (from, to) in allowed {
        let id = app.create_pet("Rex", category, from).await;
        let response = app
            .put(
                &format!("/pets/{id}"),
                json!({ "name": "Max", "categoryId": category, "status": to }),
            )
            .await;
        response.assert_status(200);
        assert_eq!(
            response.json(),
            json!({ "id": id, "name": "Max", "categoryId": category, "status": to })
        );
    }
    let id = app.create_pet("Rex", category, "sold").await;
    app.put(
        &format!("/pets/{id}"),
        json!({ "name": "Rex", "categoryId": category, "status": "pending" }),
    )
    .await
    .assert_error(409, "INVALID_STATUS_TRANSITION");
    assert_eq!(
        app.get(&format!("/pets?ids={id}")).await.json()[0]["status"],
        "sold"
    );
}

#[tokio::test]
async fn put_replaces_the_whole_pet_and_defaults_the_status() {
    let app = TestApp::spawn().await;
    let category = app.create_category("Dogs").await;
    let id = app.create_pet("Rex", category, "pending").await;
    let response = app
        .put(
            &format!("/pets/{id}"),
            json!({ "name": "Rex", "categoryId": category }),
        )
        .await;
    response.assert_status(200);
    assert_eq!(response.json()["status"], "available");
    app.put(&format!("/pets/{id}"), json!({ "name": "Rex" }))
        .await
        .assert_error(400, "VALIDATION_FAILED");
    app.put(
        "/pets/4242424242",
        json!({ "name": "Rex", "categoryId": category }),
    )
    .await
    .assert_error(404, "NOT_FOUND");
    app.put(
        &format!("/pets/{id}"),
        json!({ "name": "Rex", "categoryId": 4_242_424_242u64 }),
    )
    .await
    .assert_error(422, "UNKNOWN_REFERENCE");
}

#[tokio::test]
async fn patch_merges_the_given_fields() {
    let app = TestApp::spawn().await;
    let dogs = app.create_category("Dogs").await;
    let cats = app.create_category("Cats").await;
    let id = app.create_pet("Rex", dogs, "available").await;

    let response = app
        .patch(&format!("/pets/{id}"), json!({ "status": "pending" }))
        .await;
    response.assert_status(200);
    assert_eq!(
        response.json(),
        json!({ "id": id, "name": "Rex", "categoryId": dogs, "status": "pending" })
    );

    let merge_patch = raw(
        &app,
        Method::PATCH,
        &format!("/pets/{id}"),
        Some("application/merge-patch+json"),
        json!({ "categoryId": cats }).to_string(),
    )
    .await;
    merge_patch.assert_status(200);
    assert_eq!(merge_patch.json()["categoryId"], cats);
    assert_eq!(merge_patch.json()["status"], "pending");

    app.patch(&format!("/pets/{id}"), json!({ "name": null }))
        .await
        .assert_error(400, "VALIDATION_FAILED");
    app.patch(&format!("/pets/{id}"), json!({ "status": "lost" }))
        .await
        .assert_error(400, "VALIDATION_FAILED");
    // The pet moved category, so the old one is no longer in use.
    app.delete(&format!("/categories/{dogs}"))
        .await
        .assert_status(204);
    app.delete(&format!("/categories/{cats}"))
        .await
        .assert_error(409, "CATEGORY_IN_USE");
}

#[tokio::test]
async fn deleting_a_pet_removes_it_and_its_inventory_entry() {
    let app = TestApp::spawn().await;
    let category = app.create_category("Dogs").await;
    let id = app.create_pet("Rex", category, "available").await;

    let response = app.delete(&format!("/pets/{id}")).await;

    response.assert_status(204);
    assert!(response.body.is_empty());
    assert_eq!(
        response.header("content-type"),
        None,
        "no body, no content type"
    );
    app.get(&format!("/pets/{id}"))
        .await
        .assert_error(404, "NOT_FOUND");
    app.get(&format!("/store/inventory/{id}"))
        .await
        .assert_error(404, "NOT_FOUND");
    app.delete(&format!("/pets/{id}"))
        .await
        .assert_error(404, "NOT_FOUND");
    app.delete(&format!("/categories/{category}"))
        .await
        .assert_status(204);
}
