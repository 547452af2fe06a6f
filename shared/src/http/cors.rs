//! Browsers on other origins (contract, section 7): what a page from a listed
//! origin may send and read, in one place for both places that answer it.
//!
//! In AWS, API Gateway answers: the template's `AllowedOrigins` parameter
//! turns on the HTTP API's `CorsConfiguration`, built from the lists below
//! (`tests/cors.rs` holds the template to them). API Gateway then answers
//! preflights itself, invoking no function, and ignores CORS headers a
//! function returns ("Configure CORS for HTTP APIs in API Gateway", Amazon
//! API Gateway developer guide). So the deployed functions are not given
//! `ALLOWED_ORIGINS`: this layer would only do work API Gateway discards.
//!
//! The local stacks (`make run`, `make run-lambda`) have no API Gateway in
//! front: [`around`] gives the wrapper the same behaviour from the same
//! setting (`ALLOWED_ORIGINS`, [`crate::config::Config::allowed_origins`]),
//! outermost, so a preflight needs no key and is never counted.

use axum::extract::Request;
use axum::Router;
use http::{header, HeaderName, HeaderValue, Method};
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;
use tower_http::cors::{AllowOrigin, CorsLayer};

/// The methods a preflight allows: the contract's (`HEAD` needs no preflight).
pub const ALLOWED_METHODS: [Method; 5] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
];

/// The request headers a preflight allows (`Content-Type` is listed because
/// `application/json` is not one of the types a browser sends unasked; the
/// two preconditions of contract 4c are no safelisted headers either).
pub const ALLOWED_HEADERS: [&str; 5] = [
    "x-api-key",
    "idempotency-key",
    "content-type",
    "if-match",
    "if-none-match",
];

/// The response headers a page may read besides the ones every browser shows
/// (`Content-Type`, `Content-Length`, ...): the rate-limit ones, and those
/// the contract gives a meaning.
pub const EXPOSED_HEADERS: [&str; 13] = [
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "ratelimit-policy",
    "ratelimit",
    "retry-after",
    "link",
    "x-request-id",
    "deprecation",
    "sunset",
    "idempotent-replayed",
    "x-api-stability",
    "etag",
];

/// How long a browser may reuse a preflight's answer: two hours, the most
/// Chromium honours. Nothing in it depends on the key, and an origin taken
/// off the list is refused anyway: its actual responses lose
/// `Access-Control-Allow-Origin`.
pub const MAX_AGE: Duration = Duration::from_secs(2 * 60 * 60);

/// `served`, answering browsers from `origins` (lower-case web origins, as
/// [`crate::config::Config`] reads them); `served` itself when there are
/// none, so the default costs nothing.
///
/// tower-http's `CorsLayer` renders the headers, but it answers every
/// `OPTIONS` itself, with `Access-Control-Allow-Methods` even for an origin
/// it does not allow. The contract wants the other origins to see no CORS
/// at all (their `OPTIONS` is the usual 405), so only a request from a listed
/// origin goes through it; any other goes straight to `served`.
pub fn around(served: Router, origins: &[String]) -> Router {
    let listed: Arc<[HeaderValue]> = origins
        .iter()
        .filter_map(|origin| HeaderValue::from_str(origin).ok())
        .collect();
    if listed.is_empty() {
        return served;
    }
    let cross_origin = served.clone().layer(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(listed.iter().cloned()))
            .allow_methods(ALLOWED_METHODS)
            .allow_headers(ALLOWED_HEADERS.map(HeaderName::from_static))
            .expose_headers(EXPOSED_HEADERS.map(HeaderName::from_static))
            .max_age(MAX_AGE),
    );
    let gate = tower::service_fn(move |req: Request| {
        let target = if for_listed_origin(&req, &listed) {
            cross_origin.clone()
        } else {
            served.clone()
        };
        target.oneshot(req)
    });
    Router::new().fallback_service(gate)
}

/// Whether `req` is a CORS request from one of `listed`: any request with
/// that `Origin`, except an `OPTIONS` that is no preflight (no
/// `Access-Control-Request-Method`), which is served like any method.
fn for_listed_origin(req: &Request, listed: &[HeaderValue]) -> bool {
    let listed_origin = req
        .headers()
        .get(header::ORIGIN)
        .is_some_and(|origin| listed.contains(origin));
    listed_origin
        && (req.method() != Method::OPTIONS
            || req
                .headers()
                .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD))
}
