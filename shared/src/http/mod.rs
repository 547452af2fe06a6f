//! The HTTP layer: routes, request parsing, responses, and the wrapper that
//! every response passes through.
//!
//! Each function's router is an axum [`Router`]; [`service`] adds the JSON
//! 404 fallback and the [`wrapper::ApiLayer`]. The same value is handed to
//! `lambda_http::run` in Lambda and to `axum::serve` by `petstore-local`, so
//! local runs go through exactly the code that runs in Lambda.

mod categories;
mod inventory;
mod openapi;
mod orders;
mod pets;
pub mod request;
pub mod wrapper;

use crate::error::ApiError;
use crate::App;
use axum::response::{IntoResponse, Response};
use axum::Router;
use http::{header, HeaderValue, StatusCode};
use serde::Serialize;

/// The routes of the `pets` function: pets and categories.
pub fn pets_routes() -> Router<App> {
    pets::routes()
        .merge(categories::routes())
        .merge(openapi::routes())
}

/// The routes of the `store` function: orders and inventory.
pub fn store_routes() -> Router<App> {
    orders::routes()
        .merge(inventory::routes())
        .merge(openapi::routes())
}

/// A function's routes, ready to serve: unknown paths answer the JSON 404, and
/// every request goes through the wrapper.
pub fn service(routes: Router<App>, app: App) -> Router {
    routes
        .fallback(not_found)
        .with_state(app.clone())
        .layer(wrapper::ApiLayer::new(app))
}

/// Both functions' routes on one router, as API Gateway presents them.
pub fn local_router(app: App) -> Router {
    let routes = pets::routes()
        .merge(categories::routes())
        .merge(orders::routes())
        .merge(inventory::routes())
        .merge(openapi::routes());
    service(routes, app)
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such route".into())
}

/// A JSON response with the given status.
pub(crate) fn json<T: Serialize>(status: StatusCode, value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => {
            let mut response = (status, body).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(e) => ApiError::Internal(format!("response does not serialize: {e}")).into_response(),
    }
}

/// A 201 with the new record and its `Location`.
pub(crate) fn created<T: Serialize>(location: String, value: &T) -> Response {
    let mut response = json(StatusCode::CREATED, value);
    if let Ok(location) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

/// A list page, with `Link: rel="next"` when more records exist.
pub(crate) fn page<T: Serialize>(items: &[T], next: Option<String>) -> Response {
    let mut response = json(StatusCode::OK, &items);
    if let Some(link) = next.and_then(|l| HeaderValue::from_str(&l).ok()) {
        response.headers_mut().insert(header::LINK, link);
    }
    response
}

pub(crate) fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}
