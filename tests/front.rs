//! The optional front (template.yaml's `Front`): with `ORIGIN_SECRET` set,
//! the API answers only requests that carry it (CloudFront adds it), refusing
//! any other first, before any DynamoDB call; and behind the front a
//! request's source is the viewer CloudFront names, not CloudFront's own
//! address. Through the real router and wrapper; DynamoDB calls counted by
//! the proxy between the service and DynamoDB Local.

use crate::helpers::TestApp;
use crate::idempotency::proxy::{FaultMix, FaultProxy};
use axum::body::Body;
use http::{Method, Request};
use petstore::http::front::{ORIGIN_HEADER, VIEWER_ADDRESS_HEADER};
use serde_json::json;

const SECRET: &str = "front-secret-0123456789abcdef0123456789";

/// `app` behind the front (its secret configured), its DynamoDB calls counted.
async fn behind_the_front(app: &TestApp) -> (TestApp, FaultProxy) {
    let proxy = FaultProxy::start(&app.endpoint, FaultMix::NONE, 1).await;
    let mut config = app.app.config.clone();
    config.origin_secret = Some(SECRET.to_string());
    let client = petstore::local_client(&proxy.endpoint).await;
    (app.instance_on(config, client), proxy)
}

fn request(
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    if body.is_some() {
        builder = builder.header("content-type", "application/json");
    }
    builder
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .expect("a request")
}

#[tokio::test]
async fn requests_that_went_around_the_front_are_refused_before_any_work() {
    let app = TestApp::spawn().await;
    let (front, proxy) = behind_the_front(&app).await;
    let category = json!({ "name": "Dogs" }).to_string();
    let around = [
        request(Method::GET, "/pets", &[], None),
        request(Method::GET, "/pets", &[(ORIGIN_HEADER, "guess")], None),
        request(Method::GET, "/pets", &[(ORIGIN_HEADER, &SECRET[1..])], None),
        request(Method::POST, "/categories", &[], Some(&category)),
        request(Method::GET, "/no/such/path", &[], None),
        request(Method::GET, "/openapi.json", &[], None),
    ];
    for refused in around {
        let what = format!("{} {}", refused.method(), refused.uri());
        // Read unchecked: no client of the API sends these (the front adds
        // its secret to every request), so the contract's headers, which a
        // request earns by being counted, are not theirs.
        let response = front.request_unchecked(refused).await;
        response.assert_error(403, "FORBIDDEN");
        let message = response.json()["message"].as_str().map(str::to_owned);
        assert!(
            message.as_deref().is_some_and(|m| m.contains("front")),
            "{what}: says why, not a role: {message:?}"
        );
        assert_eq!(
            response.header("x-ratelimit-limit"),
            None,
            "{what}: not counted"
        );
    }
    assert_eq!(
        proxy.calls().len(),
        0,
        "no DynamoDB call for a refused request"
    );

    let through = front
        .request(request(
            Method::GET,
            "/pets",
            &[(ORIGIN_HEADER, SECRET)],
            None,
        ))
        .await;
    through.assert_status(200);
    assert!(
        !proxy.calls().is_empty(),
        "a request through the front is served"
    );
}

#[tokio::test]
async fn behind_the_front_each_viewer_is_its_own_source() {
    let app = TestApp::spawn().await;
    let (front, _proxy) = behind_the_front(&app).await;
    let anonymous = front.without_key();
    let from = |viewer: &'static str| {
        request(
            Method::GET,
            "/pets",
            &[(ORIGIN_HEADER, SECRET), (VIEWER_ADDRESS_HEADER, viewer)],
            None,
        )
    };
    // Every viewer reaches the API from CloudFront's address (the socket's
    // here): the limiter counts each viewer, not the edge they share.
    let mut remaining = Vec::new();
    for viewer in [
        "203.0.113.9:50000",
        "203.0.113.9:50001",
        "198.51.100.4:443",
        "2001:db8::7:443",
    ] {
        let response = anonymous.request(from(viewer)).await;
        response.assert_error(401, "UNAUTHORIZED");
        remaining.push(
            response
                .header("x-ratelimit-remaining")
                .unwrap_or_default()
                .to_string(),
        );
    }
    assert_eq!(remaining, ["59", "58", "59", "59"]);
}
