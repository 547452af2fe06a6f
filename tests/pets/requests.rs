//! What every request and response share, met on the pets routes: bodies
//! are JSON objects within 64 KiB, unknown routes and methods answer JSON
//! errors, every response has a request id, and the OpenAPI document is
//! served.

use super::raw;
use crate::helpers::TestApp;
use http::Method;
use serde_json::{json, Value};
use std::collections::HashSet;

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
    assert_eq!(document["info"]["version"], "1.3.0");
}
