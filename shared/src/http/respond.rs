//! Building successful responses: JSON bodies, `Location`, list pages.

use super::error::ApiError;
use axum::response::{IntoResponse, Response};
use http::{header, HeaderValue, StatusCode};
use serde::Serialize;

/// A JSON response with the given status.
pub fn json<T: Serialize>(status: StatusCode, value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => {
            let mut response = (status, body).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(e) => ApiError::internal(e).into_response(),
    }
}

/// A 200 with the record.
pub fn ok<T: Serialize>(value: &T) -> Response {
    json(StatusCode::OK, value)
}

/// A 201 with the new record and its `Location`.
pub fn created<T: Serialize>(location: String, value: &T) -> Response {
    let mut response = json(StatusCode::CREATED, value);
    if let Ok(location) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

/// One page of a list, with `Link: rel="next"` when more records exist.
pub fn list_page<T: Serialize>(items: &[T], next: Option<String>) -> Response {
    let mut response = json(StatusCode::OK, &items);
    if let Some(link) = next.and_then(|l| HeaderValue::from_str(&l).ok()) {
        response.headers_mut().insert(header::LINK, link);
    }
    response
}

/// A 204.
pub fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}
