//! Pets and categories (contract sections 1, 2 (Pets), 3 (direct status
//! changes), 5, 6 and 7), rule by rule, against DynamoDB Local.

use crate::helpers::{TestApp, TestResponse};
use axum::body::Body;
use futures::future::join_all;
use http::{header, Method, Request};
use serde_json::{json, Value};
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

async fn raw(
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

// ---- pets ----

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
async fn pets_list_in_pages_with_a_next_link_keeping_the_filters() {
    let app = TestApp::spawn().await;
    let dogs = app.create_category("Dogs").await;
    let cats = app.create_category("Cats").await;
    let mut available_dogs = Vec::new();
    for i in 0..5 {
        available_dogs.push(app.create_pet(&format!("Dog {i}"), dogs, "available").await);
    }
    let sold_dog = app.create_pet("Old dog", dogs, "sold").await;
    let cat = app.create_pet("Cat", cats, "available").await;

    // Default page holds everything here; ids ascend.
    let all = ids(&app.get("/pets").await);
    assert_eq!(all.len(), 7);
    assert!(all.windows(2).all(|w| w[0] < w[1]));

    // Filters, alone and together.
    assert_eq!(
        ids(&app.get(&format!("/pets?categoryId={cats}")).await),
        vec![cat]
    );
    assert_eq!(ids(&app.get("/pets?status=sold").await), vec![sold_dog]);
    assert_eq!(
        ids(&app
            .get(&format!("/pets?categoryId={dogs}&status=available"))
            .await),
        available_dogs
    );

    // Paging through a filtered list.
    let mut seen = Vec::new();
    let mut next = Some(format!("/pets?categoryId={dogs}&status=available&limit=2"));
    let mut pages = 0;
    while let Some(url) = next {
        let page = app.get(&url).await;
        page.assert_status(200);
        seen.extend(ids(&page));
        next = next_url(&page);
        if let Some(url) = &next {
            assert!(
                url.contains(&format!("categoryId={dogs}"))
                    && url.contains("status=available")
                    && url.contains("limit=2"),
                "{url}"
            );
        }
        pages += 1;
        assert!(pages <= 3, "paging must end");
    }
    assert_eq!(seen, available_dogs);
}

#[tokio::test]
async fn bad_list_parameters_are_400() {
    let app = TestApp::spawn().await;
    for query in [
        "limit=0",
        "limit=101",
        "limit=ten",
        "status=lost",
        "categoryId=-3",
        "cursor=abc",
        "ids=1,x",
    ] {
        let response = app.get(&format!("/pets?{query}")).await;
        response.assert_error(400, "VALIDATION_FAILED");
    }
    // A cursor from another list is not valid here.
    let category = app.create_category("A").await;
    app.create_category("B").await;
    let _ = category;
    let page = app.get("/categories?limit=1").await;
    let foreign = next_url(&page).unwrap_or_default();
    let cursor = foreign
        .split("cursor=")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    app.get(&format!("/pets?cursor={cursor}"))
        .await
        .assert_error(400, "VALIDATION_FAILED");
}

#[tokio::test]
async fn ids_look_up_pets_in_the_order_asked_leaving_out_missing_ones() {
    let app = TestApp::spawn().await;
    let category = app.create_category("Dogs").await;
    let a = app.create_pet("A", category, "available").await;
    let b = app.create_pet("B", category, "pending").await;
    let c = app.create_pet("C", category, "sold").await;

    let response = app.get(&format!("/pets?ids={c},4242424242,{a},{b}")).await;

    response.assert_status(200);
    assert_eq!(ids(&response), vec![c, a, b]);
    assert_eq!(
        ids(&app
            .get(&format!("/pets?ids={c},{a},{b}&status=pending"))
            .await),
        vec![b]
    );
    let too_many: Vec<String> = (1..=101).map(|i| i.to_string()).collect();
    app.get(&format!("/pets?ids={}", too_many.join(",")))
        .await
        .assert_error(400, "VALIDATION_FAILED");
    let hundred: Vec<String> = (1..=100).map(|i| i.to_string()).collect();
    app.get(&format!("/pets?ids={}", hundred.join(",")))
        .await
        .assert_status(200);
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

// ---- categories ----

#[tokio::test]
async fn categories_are_created_read_and_listed() {
    let app = TestApp::spawn().await;
    let response = app
        .post(
            "/categories",
            json!({ "name": "Dogs", "description": "Loyal" }),
        )
        .await;
    response.assert_status(201);
    let id = response.id();
    assert_eq!(
        response.header("location"),
        Some(format!("/categories/{id}").as_str())
    );
    assert_eq!(
        response.json(),
        json!({ "id": id, "name": "Dogs", "description": "Loyal" })
    );
    assert_eq!(
        app.get(&format!("/categories/{id}")).await.json(),
        response.json()
    );

    let bare = app.post("/categories", json!({ "name": "Cats" })).await;
    assert_eq!(
        bare.json(),
        json!({ "id": bare.id(), "name": "Cats" }),
        "no null description"
    );

    let first = app.get("/categories?limit=1").await;
    assert_eq!(ids(&first), vec![id]);
    let second = app.get(&next_url(&first).unwrap_or_default()).await;
    assert_eq!(ids(&second), vec![bare.id()]);
    assert_eq!(next_url(&second), None);
    app.get("/categories/4242424242")
        .await
        .assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn category_names_are_unique_ignoring_case() {
    let app = TestApp::spawn().await;
    app.create_category("Dogs").await;
    app.post("/categories", json!({ "name": "dOGS" }))
        .await
        .assert_error(409, "CATEGORY_EXISTS");
    let cats = app.create_category("Cats").await;
    app.put(&format!("/categories/{cats}"), json!({ "name": "DOGS" }))
        .await
        .assert_error(409, "CATEGORY_EXISTS");

    // A rename frees the old name and may change only the case.
    let renamed = app
        .put(
            &format!("/categories/{cats}"),
            json!({ "name": "CATS", "description": "Aloof" }),
        )
        .await;
    renamed.assert_status(200);
    assert_eq!(
        renamed.json(),
        json!({ "id": cats, "name": "CATS", "description": "Aloof" })
    );
    app.put(&format!("/categories/{cats}"), json!({ "name": "Felines" }))
        .await
        .assert_status(200);
    app.create_category("cats").await;
    assert!(app
        .get(&format!("/categories/{cats}"))
        .await
        .json()
        .get("description")
        .is_none());
}

#[tokio::test]
async fn concurrent_creates_of_one_name_make_one_category() {
    let app = TestApp::spawn().await;
    let responses = join_all((0..10).map(|i| {
        let app = app.clone();
        let name = if i % 2 == 0 { "Birds" } else { "BIRDS" };
        tokio::spawn(async move { app.post("/categories", json!({ "name": name })).await })
    }))
    .await;
    let statuses: Vec<u16> = responses
        .into_iter()
        .map(|r| r.expect("task ran").status)
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        9,
        "{statuses:?}"
    );
}

#[tokio::test]
async fn a_category_in_use_cannot_be_deleted() {
    let app = TestApp::spawn().await;
    let category = app.create_category("Dogs").await;
    let pet = app.create_pet("Rex", category, "available").await;
    app.delete(&format!("/categories/{category}"))
        .await
        .assert_error(409, "CATEGORY_IN_USE");
    app.delete(&format!("/pets/{pet}")).await.assert_status(204);
    app.delete(&format!("/categories/{category}"))
        .await
        .assert_status(204);
    app.get(&format!("/categories/{category}"))
        .await
        .assert_error(404, "NOT_FOUND");
    // Its name is free again.
    app.create_category("dogs").await;
}

#[tokio::test]
async fn invalid_categories_are_refused() {
    let app = TestApp::spawn().await;
    for body in [
        json!({}),
        json!({ "name": "" }),
        json!({ "name": "Dogs", "description": "x".repeat(501) }),
        json!({ "name": "Dogs", "description": 5 }),
    ] {
        app.post("/categories", body)
            .await
            .assert_error(400, "VALIDATION_FAILED");
    }
    app.post(
        "/categories",
        json!({ "name": "Dogs", "description": "x".repeat(500) }),
    )
    .await
    .assert_status(201);
}

// ---- bodies, routes, every response ----

#[tokio::test]
async fn bodies_must_be_json_objects_sent_as_json_within_64_kib() {
    let app = TestApp::spawn().await;
    let json_type = Some("application/json");
    raw(&app, Method::POST, "/categories", json_type, "{not json")
        .await
        .assert_error(400, "MALFORMED_JSON");
    raw(&app, Method::POST, "/categories", json_type, "[1, 2]")
        .await
        .assert_error(400, "MALFORMED_JSON");
    raw(&app, Method::POST, "/categories", json_type, "")
        .await
        .assert_error(400, "MALFORMED_JSON");
    raw(
        &app,
        Method::POST,
        "/categories",
        Some("text/plain"),
        r#"{"name":"Dogs"}"#,
    )
    .await
    .assert_error(415, "UNSUPPORTED_MEDIA_TYPE");
    raw(
        &app,
        Method::POST,
        "/categories",
        None,
        r#"{"name":"Dogs"}"#,
    )
    .await
    .assert_error(415, "UNSUPPORTED_MEDIA_TYPE");
    raw(
        &app,
        Method::POST,
        "/categories",
        Some("application/json; charset=utf-8"),
        r#"{"name":"Dogs"}"#,
    )
    .await
    .assert_status(201);
    let big = format!(
        r#"{{"name":"Cats","description":"{}"}}"#,
        "x".repeat(64 * 1024)
    );
    raw(&app, Method::POST, "/categories", json_type, big)
        .await
        .assert_error(413, "PAYLOAD_TOO_LARGE");
    let fits = format!(r#"{{"name":"Cats","pad":"{}"}}"#, "x".repeat(60 * 1024));
    raw(&app, Method::POST, "/categories", json_type, fits)
        .await
        .assert_status(201);
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_json_errors() {
    let app = TestApp::spawn().await;
    let response = app.get("/unicorns").await;
    response.assert_error(404, "NOT_FOUND");
    assert_eq!(response.header("content-type"), Some("application/json"));

    let response = app.send(Method::DELETE, "/pets").await;
    response.assert_error(405, "METHOD_NOT_ALLOWED");
    let allow = response.header("allow").unwrap_or_default().to_string();
    assert!(
        allow.contains("GET") && allow.contains("POST") && !allow.contains("DELETE"),
        "{allow}"
    );

    let response = app.send(Method::POST, "/pets/1").await;
    response.assert_error(405, "METHOD_NOT_ALLOWED");
    let allow = response.header("allow").unwrap_or_default().to_string();
    for method in ["GET", "PUT", "PATCH", "DELETE"] {
        assert!(allow.contains(method), "{allow}");
    }
}

#[tokio::test]
async fn every_response_has_a_request_id() {
    let app = TestApp::spawn().await;
    let mut seen = HashSet::new();
    for response in [
        app.get("/pets").await,
        app.get("/nowhere").await,
        app.post("/pets", json!({})).await,
    ] {
        let id = response
            .header("x-request-id")
            .unwrap_or_default()
            .to_string();
        assert!(!id.is_empty());
        assert!(seen.insert(id), "request ids are fresh");
    }
}

#[tokio::test]
async fn the_openapi_document_is_served_as_json() {
    let app = TestApp::spawn().await;
    let response = app.get("/openapi.json").await;
    response.assert_status(200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    let document: Value = response.json();
    assert_eq!(document["openapi"], "3.0.3");
    assert_eq!(document["info"]["version"], "1.0.0");
}
