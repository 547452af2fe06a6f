//! `GET /openapi.json`: the OpenAPI document, public (but still metered).

use crate::App;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::{header, HeaderValue};

/// `openapi.yaml`, converted to JSON by `build.rs`.
pub const OPENAPI_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/openapi.json"));

pub fn routes() -> Router<App> {
    Router::new().route("/openapi.json", get(document))
}

async fn document() -> Response {
    let mut response = OPENAPI_JSON.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
