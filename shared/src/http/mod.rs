//! The HTTP edge: reading requests, who may call what, the Error record,
//! responses, and the wrapper every request and response passes through.
//!
//! Each Lambda function's crate owns its routes (`pets::routes()`,
//! `store::routes()`); [`service`] makes a function's routes servable. The
//! same value is handed to `lambda_http::run` in Lambda and to `axum::serve`
//! by `petstore-local`, so local runs go through exactly the code that runs
//! in Lambda.

pub mod access;
pub mod admission;
pub mod docs;
pub mod error;
pub mod extract;
pub mod idempotency;
pub mod observe;
pub mod openapi;
pub mod request_id;
pub mod respond;

use crate::App;
use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use error::ApiError;
use http::{header, HeaderName, HeaderValue, StatusCode};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::PropagateRequestIdLayer;
use tower_http::set_header::SetRequestHeaderLayer;

/// A function's routes, ready to serve. From the outside in:
/// - the request id (API Gateway's, or fresh), on the request and the response;
/// - [`observe::observe`]: the request's span, its metrics line and log line;
/// - [`admission::admit`]: count, answer 401/429/503, the rate-limit headers;
/// - the 64 KiB body limit (its bare 413 becomes the Error record);
/// - the router: `GET /openapi.json` and `GET /docs` added, the JSON 404 for unknown paths,
///   the JSON 405 (axum adds `Allow`) for unserved methods, and on every
///   matched route: `X-API-Stability` on the beta ones, the access table's
///   check (403), and [`idempotency::settle`] (replays, and the record a
///   change writes) before the handler.
pub fn service(routes: Router<App>, app: App) -> Router {
    let request_id = HeaderName::from_static(admission::REQUEST_ID);
    let observing = axum::middleware::from_fn_with_state(app.clone(), observe::observe);
    routes
        .merge(openapi::routes())
        .merge(docs::routes())
        .fallback(not_found)
        .route_layer(axum::middleware::from_fn_with_state(
            app.clone(),
            idempotency::settle,
        ))
        // The access check wraps every route, including axum's default 405
        // fallback; setting our 405 fallback afterwards replaces that wrapped
        // default, so an unserved method stays 405, never 403.
        .route_layer(axum::middleware::from_fn(access::authorize))
        .route_layer(axum::middleware::from_fn(mark_beta))
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(app.clone())
        // Each `layer` wraps everything above it: the last one is outermost.
        .layer(RequestBodyLimitLayer::new(extract::MAX_BODY_BYTES))
        .layer(axum::middleware::map_response(payload_too_large_record))
        .layer(axum::middleware::from_fn_with_state(app, admission::admit))
        .layer(observing)
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(SetRequestHeaderLayer::overriding(
            request_id,
            request_id::request_id,
        ))
}

/// The routes of the beta operations (`x-beta: true` in `openapi.yaml`).
pub const BETA_ROUTES: &[&str] = &["/store/inventory", "/store/inventory/{petId}"];

/// Every answer on a beta route says so, its 403 and replays included (so
/// this wraps the access check and the idempotency layer).
async fn mark_beta(matched: Option<MatchedPath>, req: Request, next: Next) -> Response {
    let beta = matched.is_some_and(|m| BETA_ROUTES.contains(&m.as_str()));
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
