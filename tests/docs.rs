//! `GET /docs` and its static files, through the real routers: the page is
//! public and metered like `GET /openapi.json` and carries the
//! Content-Security-Policy; every file it references is one the `docs`
//! function serves. (The page in a real browser: scripts/docs-browser.sh.)

use crate::helpers::{TestApp, TestResponse};
use axum::body::Body;
use http::{Method, Request};

async fn asset(method: Method, path: &str) -> TestResponse {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .body(Body::empty())
        .expect("request is valid");
    TestResponse::of(docs::routes(), request).await
}

/// The `docs/assets/...` paths the page's `src` and `href` attributes name.
fn referenced_assets(page: &str) -> Vec<String> {
    page.split(['"', '\''])
        .filter(|part| part.starts_with("docs/assets/"))
        .map(|part| format!("/{part}"))
        .collect()
}

#[tokio::test]
async fn the_page_is_public_metered_and_same_origin_only() {
    let app = TestApp::spawn().await;
    let response = app.without_key().get("/docs").await;
    response.assert_status(200);
    assert_eq!(
        response.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(
        response.header("content-security-policy"),
        Some(petstore::http::docs::CONTENT_SECURITY_POLICY)
    );
    assert!(response.header("x-ratelimit-remaining").is_some());
    assert!(response.text().contains(r#"<div id="swagger-ui">"#));
    let policy = petstore::http::docs::CONTENT_SECURITY_POLICY;
    assert!(policy.starts_with("default-src 'none';"), "{policy}");
    assert!(!policy.contains("http"), "no other origin: {policy}");
    assert!(!policy.contains("unsafe"), "no inline or eval: {policy}");
}

#[tokio::test]
async fn every_file_the_page_loads_is_served_by_the_docs_function() {
    let app = TestApp::spawn().await;
    let page = app.without_key().get("/docs").await.text();
    let referenced = referenced_assets(&page);
    assert_eq!(referenced.len(), 4, "{referenced:?}");
    let mut served: Vec<String> = docs::asset_names()
        .map(|name| format!("/docs/assets/{name}"))
        .collect();
    served.sort();
    let mut sorted = referenced.clone();
    sorted.sort();
    assert_eq!(sorted, served, "the page loads exactly the files served");
    for path in referenced {
        let response = asset(Method::GET, &path).await;
        response.assert_status(200);
        assert!(!response.body.is_empty(), "{path}");
        let gzip_magic = response.body.starts_with(&[0x1f, 0x8b]);
        assert_eq!(
            response.header("content-encoding") == Some("gzip"),
            gzip_magic,
            "{path}: Content-Encoding says what the bytes are"
        );
        assert_eq!(response.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(
            response.header("cache-control"),
            Some("public, max-age=31536000, immutable"),
            "{path}: named by its content, so cacheable for a year"
        );
    }
}

#[tokio::test]
async fn the_page_is_fetched_again_every_time_and_names_its_files_by_content() {
    let app = TestApp::spawn().await;
    let response = app.without_key().get("/docs").await;
    assert_eq!(response.header("cache-control"), Some("no-cache"));
    assert_eq!(response.header("x-content-type-options"), Some("nosniff"));
    for path in referenced_assets(&response.text()) {
        let name = path.rsplit('/').next().unwrap_or_default();
        let parts: Vec<&str> = name.split('.').collect();
        let hash = parts.get(parts.len().saturating_sub(2)).copied();
        assert!(
            hash.is_some_and(|h| h.len() == 12 && h.bytes().all(|b| b.is_ascii_hexdigit())),
            "{path}: no content hash in its name"
        );
    }
    // A name without its hash is no file: it would outlive a new release
    let response = asset(Method::GET, "/docs/assets/swagger-ui.css").await;
    response.assert_error(404, "NOT_FOUND");
    assert_eq!(response.header("cache-control"), Some("private, no-cache"));
}

#[tokio::test]
async fn unknown_files_and_other_methods_get_the_error_record() {
    asset(Method::GET, "/docs/assets/nope.js")
        .await
        .assert_error(404, "NOT_FOUND");
    let response = asset(Method::POST, "/docs/assets/docs.js").await;
    response.assert_error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(response.header("allow"), Some("GET,HEAD"));
}
