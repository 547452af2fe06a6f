//! Reading requests: JSON bodies, query strings, path ids, paging.
//!
//! axum's own extractors answer with their own plain-text errors; these answer
//! with the contract's Error record and name the field or parameter at fault.

use super::error::ApiError;
use crate::db::Cursor;
use crate::records::{Caller, Id, JsonObject, ValidationError};
use axum::extract::{FromRequest, FromRequestParts, Request};
use http::request::Parts;
use http::{header, HeaderMap};
use std::collections::HashMap;

/// The largest body accepted: 64 KiB.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::Validation(ValidationError::new(message))
}

/// A request body that is a JSON object, sent as JSON, at most 64 KiB.
pub struct JsonBody(pub JsonObject);

fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Parses a body already read into memory.
pub fn parse_json_body(headers: &HeaderMap, bytes: &[u8]) -> Result<JsonObject, ApiError> {
    if bytes.len() > MAX_BODY_BYTES {
        return Err(ApiError::PayloadTooLarge);
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::MalformedJson(
            "a JSON object body is required".into(),
        ));
    }
    if !is_json(headers) {
        return Err(ApiError::UnsupportedMediaType);
    }
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(serde_json::Value::Object(object)) => Ok(object),
        Ok(_) => Err(ApiError::MalformedJson(
            "the body must be a JSON object".into(),
        )),
        Err(e) => Err(ApiError::MalformedJson(format!(
            "the body is not valid JSON: {e}"
        ))),
    }
}

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let (parts, body) = req.into_parts();
        let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES)
            .await
            .map_err(|_| ApiError::PayloadTooLarge)?;
        parse_json_body(&parts.headers, &bytes).map(JsonBody)
    }
}

/// The caller the wrapper admitted (it puts one on every request with a
/// valid key); a handler that takes one answers 401 to any other request.
impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Caller>()
            .copied()
            .ok_or(ApiError::Unauthorized)
    }
}

/// The query string as name → value (the last one wins on repeats).
pub struct QueryParams(pub HashMap<String, String>);

impl<S: Send + Sync> FromRequestParts<S> for QueryParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let raw = parts.uri.query().unwrap_or("");
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw)
            .map_err(|_| invalid("the query string is not valid"))?;
        Ok(QueryParams(pairs.into_iter().collect()))
    }
}

impl QueryParams {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    pub fn id(&self, name: &str) -> Result<Option<Id>, ApiError> {
        self.get(name)
            .map(|raw| Id::parse_param(raw, name))
            .transpose()
            .map_err(ApiError::from)
    }

    pub fn boolean(&self, name: &str) -> Result<Option<bool>, ApiError> {
        self.get(name)
            .map(|raw| match raw {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(invalid(format!("{name} must be true or false"))),
            })
            .transpose()
    }

    /// `limit` (1–100, default 20) and `cursor`, for the list named `list`.
    pub fn page_request(&self, list: &'static str) -> Result<PageRequest, ApiError> {
        let limit = self.page_limit()?;
        let after = self
            .get("cursor")
            .map(|raw| {
                Cursor::decode(raw, list)
                    .map(|c| c.after())
                    .ok_or_else(|| invalid("cursor is not valid for this list"))
            })
            .transpose()?;
        Ok(PageRequest { list, limit, after })
    }

    /// `limit`: 1 to 100, 20 when absent.
    pub fn page_limit(&self) -> Result<usize, ApiError> {
        match self.get("limit") {
            None => Ok(20),
            Some(raw) => raw
                .parse::<usize>()
                .ok()
                .filter(|l| (1..=100).contains(l))
                .ok_or_else(|| invalid("limit must be an integer from 1 to 100")),
        }
    }
}

/// Where a list page starts and how long it is.
#[derive(Debug, Clone, Copy)]
pub struct PageRequest {
    pub list: &'static str,
    pub limit: usize,
    pub after: Option<u64>,
}

/// The `Link: <...>; rel="next"` value for the page after `next_after`,
/// keeping the request's filters.
pub fn next_link(
    path: &str,
    filters: &[(&str, String)],
    page: &PageRequest,
    next_after: u64,
) -> String {
    let cursor = Cursor::new(page.list, next_after).encode();
    next_link_with_cursor(path, filters, page.limit, cursor)
}

/// The same, for a list whose cursor is its own (`cursor`, encoded).
pub fn next_link_with_cursor(
    path: &str,
    filters: &[(&str, String)],
    limit: usize,
    cursor: String,
) -> String {
    let mut query = filters.to_vec();
    query.push(("limit", limit.to_string()));
    query.push(("cursor", cursor));
    let encoded = serde_urlencoded::to_string(&query).unwrap_or_default();
    format!("<{path}?{encoded}>; rel=\"next\"")
}
