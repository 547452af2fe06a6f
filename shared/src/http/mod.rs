//! The HTTP edge: reading requests, the Error record, responses, and the
//! wrapper every request and response passes through.
//!
//! Each Lambda function's crate owns its routes (`pets::routes()`,
//! `store::routes()`); [`service`] makes a function's routes servable: the
//! public `GET /openapi.json`, the JSON 404 fallback, and the
//! [`wrapper::ApiLayer`]. The same value is handed to `lambda_http::run` in
//! Lambda and to `axum::serve` by `petstore-local`, so local runs go through
//! exactly the code that runs in Lambda.

pub mod error;
pub mod extract;
pub mod openapi;
pub mod respond;
pub mod wrapper;

use crate::App;
use axum::Router;
use error::ApiError;

/// A function's routes, ready to serve: `GET /openapi.json` is added, unknown
/// paths answer the JSON 404, and every request goes through the wrapper.
pub fn service(routes: Router<App>, app: App) -> Router {
    routes
        .merge(openapi::routes())
        .fallback(not_found)
        .with_state(app.clone())
        .layer(wrapper::ApiLayer::new(app))
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such route".into())
}
