//! Building successful responses: JSON bodies, `Location`, list pages, and
//! one record's validator (`ETag`) with the `304` of a `GET` that names it
//! (contract 4c).

use super::error::ApiError;
use crate::records::{none_match_names, ETag};
use axum::response::{IntoResponse, Response};
use http::{header, HeaderMap, HeaderValue, StatusCode};
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

/// One record with its validator: `ETag` is the hash of the very body sent
/// ([`ETag::of_json`]), so a `GET` of the record, a change's answer and a
/// replay of that answer agree.
pub fn record<T: Serialize>(status: StatusCode, value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => tagged(status, body),
        Err(e) => ApiError::internal(e).into_response(),
    }
}

/// `body`, a record's JSON, with its `ETag`.
pub fn tagged(status: StatusCode, body: Vec<u8>) -> Response {
    let etag = ETag::of_json(&body);
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(value) = HeaderValue::from_str(etag.as_str()) {
        headers.insert(header::ETAG, value);
    }
    response
}

/// A `GET` of one record: the record with its `ETag`, or, when the request's
/// `If-None-Match` names that validator, 304 with the `ETag` and no body (the
/// wrapper adds the usual headers to either).
pub fn current<T: Serialize>(request: &HeaderMap, value: &T) -> Response {
    let body = match serde_json::to_vec(value) {
        Ok(body) => body,
        Err(e) => return ApiError::internal(e).into_response(),
    };
    let etag = ETag::of_json(&body);
    let asked = request.get_all(header::IF_NONE_MATCH).iter();
    if !none_match_names(asked.map(HeaderValue::as_bytes), &etag) {
        return tagged(StatusCode::OK, body);
    }
    let mut not_modified = StatusCode::NOT_MODIFIED.into_response();
    if let Ok(value) = HeaderValue::from_str(etag.as_str()) {
        not_modified.headers_mut().insert(header::ETAG, value);
    }
    not_modified
}

/// A 201 with the new record and its `Location`.
pub fn created<T: Serialize>(location: String, value: &T) -> Response {
    located(json(StatusCode::CREATED, value), location)
}

/// A 201 with the new record, its `Location` and its `ETag` (the records
/// of contract 4c: pets, categories, orders).
pub fn created_record<T: Serialize>(location: String, value: &T) -> Response {
    located(record(StatusCode::CREATED, value), location)
}

fn located(mut response: Response, location: String) -> Response {
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
