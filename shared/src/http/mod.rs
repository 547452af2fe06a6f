//! The HTTP edge: reading requests, who may call what, the Error record,
//! responses, and the wrapper every request and response passes through.
//!
//! Each Lambda function's crate owns its routes (`pets::routes()`,
//! `store::routes()`, `webhooks::routes(..)`); [`service`] makes a
//! function's routes servable. The
//! same value is handed to `lambda_http::run` in Lambda and to `axum::serve`
//! by `petstore-local`, so local runs go through exactly the code that runs
//! in Lambda.

pub mod access;
pub mod authorize;
pub mod cors;
pub mod docs;
mod docs_assets;
pub mod error;
pub mod extract;
pub mod front;
pub mod idempotency;
pub mod observe;
pub mod openapi;
pub mod rate_limit;
pub mod request_id;
pub mod respond;
pub mod route;

use crate::App;
use axum::body::Body;
use axum::extract::Request;
use axum::middleware::{from_fn, from_fn_with_state, map_response, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use error::ApiError;
use http::{header, HeaderName, HeaderValue, StatusCode};
use route::Route;
use tower::ServiceBuilder;
use tower_http::limit::{RequestBodyLimitLayer, ResponseBody as LimitedBody};
use tower_http::request_id::PropagateRequestIdLayer;
use tower_http::set_header::{SetRequestHeaderLayer, SetResponseHeaderLayer};

/// A function's routes, ready to serve. A request passes, in this order:
/// - [`answer_headers`]: `Cache-Control` and `X-Content-Type-Options` on
///   every answer, refusals and errors included;
/// - [`front::guard`], only when `ORIGIN_SECRET` is set (the optional
///   CloudFront front): a request without the front's secret is refused
///   before anything else is done;
/// - [`cors::around`], only when `ALLOWED_ORIGINS` lists origins (the local
///   stacks; API Gateway does it in AWS): a preflight from a listed origin is
///   answered here, before any key or count, and every answer to that origin
///   gets its CORS headers, refusals included;
/// - the request id (API Gateway's, or fresh), on the request and the response;
/// - [`route::resolve`]: the operation (method, route, who may call it) and
///   the sender (address, key), worked out once for every layer below;
/// - [`observe::observe`]: the request's span, its metrics line and log line;
/// - [`rate_limit::enforce`]: count, answer 401/429/503, the rate-limit headers;
/// - the 64 KiB body limit (its bare 413 becomes the Error record);
/// - the router: `GET /openapi.json` and `GET /docs` added, the JSON 404 for unknown paths,
///   the JSON 405 (axum adds `Allow`) for unserved methods, and on every
///   matched route: `X-API-Stability` on the beta ones, the access table's
///   check (403), and [`idempotency::settle`] (replays, and the record a
///   change writes) before the handler.
pub fn service(routes: Router<App>, app: App) -> Router {
    let allowed_origins = app.config.allowed_origins.clone();
    let origin_secret = app.config.origin_secret.clone();
    let request_id = HeaderName::from_static(request_id::REQUEST_ID);
    let edge = ServiceBuilder::new()
        .layer(SetRequestHeaderLayer::overriding(
            request_id.clone(),
            request_id::request_id,
        ))
        .layer(PropagateRequestIdLayer::new(request_id))
        .layer(from_fn(route::resolve))
        .layer(from_fn_with_state(app.clone(), observe::observe))
        .layer(from_fn_with_state(app.clone(), rate_limit::enforce))
        .layer(map_response(payload_too_large_record))
        // The body limit wraps axum's response body in its own: unwrapped here.
        .map_response(|limited: Response<LimitedBody<Body>>| limited.into_response())
        .layer(RequestBodyLimitLayer::new(extract::MAX_BODY_BYTES));
    let served = routes
        .merge(openapi::routes())
        .merge(docs::routes())
        .fallback(not_found)
        // Route layers wrap each matched route; the last one added is
        // outermost, so a request meets them bottom-up.
        .route_layer(from_fn_with_state(app.clone(), idempotency::settle))
        // The access check wraps every route, including axum's default 405
        // fallback; setting our 405 fallback afterwards replaces that wrapped
        // default, so an unserved method stays 405, never 403.
        .route_layer(from_fn(authorize::enforce))
        .route_layer(from_fn(mark_beta))
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(app)
        .layer(edge);
    // The answer headers outermost: the front's refusal carries them too.
    answer_headers(front::guard(
        cors::around(served, &allowed_origins),
        origin_secret.as_deref(),
    ))
}

/// What every answer tells caches and browsers: `Cache-Control: private,
/// no-cache` unless the handler set its own (the `/docs` page and files):
/// `private` since every caller asks the same URL and the key travels in a
/// header, so a shared cache could hand one caller's orders to another;
/// `no-cache` (in place of 1.2.0's `no-store`) so that a client may keep a
/// record and revalidate it with `If-None-Match` (contract 4c); and
/// `X-Content-Type-Options: nosniff`. Two constant headers per answer.
/// The `docs` function, which has no wrapper, adds it to its routes too.
pub fn answer_headers(routes: Router) -> Router {
    routes
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CACHE_CONTROL,
            HeaderValue::from_static("private, no-cache"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
}

/// The routes of the beta operations (`x-beta: true` in `openapi.yaml`).
pub const BETA_ROUTES: &[&str] = &["/store/inventory", "/store/inventory/{petId}"];

/// Every answer on a beta route says so, its 403 and replays included (so
/// this wraps the access check and the idempotency layer).
async fn mark_beta(req: Request, next: Next) -> Response {
    let beta = Route::of(&req)
        .template
        .is_some_and(|template| BETA_ROUTES.contains(&template));
    let mut response = next.run(req).await;
    if beta {
        response
            .headers_mut()
            .insert("x-api-stability", HeaderValue::from_static("beta"));
    }
    response
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such route".into())
}

async fn method_not_allowed() -> ApiError {
    // axum adds `Allow` on the way out of this fallback.
    ApiError::MethodNotAllowed {
        allow: String::new(),
    }
}

/// tower-http's body limit answers a plain-text 413; the contract wants the
/// Error record.
async fn payload_too_large_record(response: Response) -> Response {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE && !is_json {
        ApiError::PayloadTooLarge.into_response()
    } else {
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_beta_routes_are_the_documents_x_beta_operations() {
        let document: serde_json::Value =
            serde_json::from_str(openapi::OPENAPI_JSON).unwrap_or_default();
        let paths = document["paths"].as_object().cloned().unwrap_or_default();
        let mut documented: Vec<String> = paths
            .iter()
            .filter(|(_, item)| {
                let operations = item.as_object().cloned().unwrap_or_default();
                operations.values().any(|op| op["x-beta"] == true)
            })
            .map(|(path, _)| path.clone())
            .collect();
        documented.sort();
        assert_eq!(documented, BETA_ROUTES);
    }
}
