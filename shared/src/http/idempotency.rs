//! Safe retries (contract section 4b): the `Idempotency-Key` header, and
//! answering a retried change with what it answered the first time.
//!
//! [`settle`] is a route layer inside the access check, so it sees only
//! callers allowed the operation. It acts on a `POST`, `PUT`, `PATCH` or
//! `DELETE` that sends the header, and on nothing else: a request without it
//! costs what it always did. For one with it:
//!
//! 1. the key must be 1–255 printable ASCII characters (else 400);
//! 2. the request's fingerprint is taken: method, path, and the body as a JSON
//!    value (keys sorted, numbers in one form), so equal JSON matches;
//! 3. the handler runs at once, with a [`Recording`] on its [`Db`] handle
//!    (the [`Db`] extractor), which writes the record in the same write as
//!    the change, on the condition that no live record holds the key. When
//!    that write commits, its answer is the recorded outcome and goes out as
//!    it is: nothing is read;
//! 4. otherwise the change was not made by this request: its plan failed or
//!    needed no write (a 4xx, a 503, a `PUT` that changes nothing), or its
//!    write failed on the record's condition (409 `IDEMPOTENCY_KEY_IN_USE`
//!    from `Db::run`). The caller's record for the key is read (one
//!    consistent `GetItem`): the same fingerprint gets the recorded outcome
//!    again, with `Idempotent-Replayed: true` ([`replay`]); another is 422
//!    `IDEMPOTENCY_KEY_REUSED`; with none, the handler's answer stands.
//!
//! So a retry whose first try committed is recognised however its own plan
//! ends: failing on the change already made (an order cancelled twice is
//! 404), needing no write (a `PUT` already applied), or planning the change
//! again (a `POST` re-plans with a fresh id: the record's `Put`, in the same
//! transaction, fails on its condition, so nothing is written).
//!
//! Concurrent requests with one key: every one but the first to commit loses
//! on the record's condition (or its plan fails on the change the first one
//! made) and, by step 4, replays the winner's outcome. A loser whose write
//! met the winner's while it was being committed (a transaction conflict on
//! the record item) finds no record yet and answers 409
//! `IDEMPOTENCY_KEY_IN_USE` with `Retry-After`, as does one whose conflicting
//! record expired between its write and its read. Nothing extra is written to
//! say a request is running, and nothing is read before the change: the happy
//! path costs one more item in the change's write, and the read is paid only
//! by a keyed request that made no change (a replay among them).
//!
//! A change whose plan needed no write (a `PUT` that changes nothing)
//! records nothing, as a 4xx does: its retry is judged afresh and, changing
//! nothing either, answers the same.

use super::error::ApiError;
use super::extract::MAX_BODY_BYTES;
use crate::db::idempotency::{Outcome, OutcomeShape, Recording};
use crate::db::Db;
use crate::metrics::{self, Metric};
use crate::records::{Caller, Id, IdempotencyKey};
use crate::App;
use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use http::request::Parts;
use http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::convert::Infallible;
use std::sync::Arc;

/// The request header.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// The response header that marks a replayed outcome.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// The route layer (see the module documentation).
pub async fn settle(State(app): State<App>, req: Request, next: Next) -> Response {
    let changes = matches!(
        *req.method(),
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    );
    if !changes || !req.headers().contains_key(IDEMPOTENCY_KEY) {
        return next.run(req).await;
    }
    settle_keyed(&app, req, next)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn settle_keyed(app: &App, req: Request, next: Next) -> Result<Response, ApiError> {
    let key = idempotency_key(req.headers())?;
    // Every changing operation needs a key identity; without one the handler
    // answers 401, and there is nobody to scope the key to.
    let Some(caller) = req.extensions().get::<Caller>().copied() else {
        return Ok(next.run(req).await);
    };
    let (mut parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| ApiError::PayloadTooLarge)?;
    let fingerprint = fingerprint(&parts.method, parts.uri.path(), &body);
    let owner = caller.key_id;
    let shape = outcome_shape(&parts.method, parts.uri.path());
    let recording = Arc::new(Recording::new(owner, &key, fingerprint.clone(), shape));
    parts.extensions.insert(recording.clone());
    let response = next.run(Request::from_parts(parts, Body::from(body))).await;
    if recording.committed() {
        return Ok(response);
    }
    Ok(match look_up(app, owner, &key, &fingerprint).await {
        Ok(Some(answer)) => answer,
        Err(ApiError::IdempotencyKeyReused) => ApiError::IdempotencyKeyReused.into_response(),
        Ok(None) => response,
        // The record could not be read. A success that changed nothing is
        // still true; a refusal may be the shadow of this key's own earlier
        // change (a cancel retried after it committed finds no order), so
        // the outcome is unknown: 503, and the client retries with the key.
        Err(_) if response.status().is_success() => response,
        Err(_) => ApiError::Unavailable { retry_after: 1 }.into_response(),
    })
}

/// The header's key: 400 when it is not 1–255 printable ASCII characters,
/// or sent more than once.
fn idempotency_key(headers: &HeaderMap) -> Result<IdempotencyKey, ApiError> {
    let mut values = headers.get_all(IDEMPOTENCY_KEY).iter();
    match (values.next(), values.next()) {
        (Some(value), None) => Ok(IdempotencyKey::parse(value.as_bytes())?),
        _ => Err(ApiError::Validation(crate::records::ValidationError::new(
            "send one Idempotency-Key header",
        ))),
    }
}

/// What a change answers, by its method: every `POST` of this API creates a
/// record at `<path>/<id>`; `PUT` and `PATCH` answer the record; `DELETE`
/// answers 204.
fn outcome_shape(method: &Method, path: &str) -> OutcomeShape {
    match *method {
        Method::POST => OutcomeShape::Created {
            collection: path.to_string(),
        },
        Method::DELETE => OutcomeShape::NoContent,
        _ => OutcomeShape::Returned,
    }
}

/// The answer a live record gives this request: its outcome again when it
/// was made by the same request, 422 when by another; `None` with no record.
async fn look_up(
    app: &App,
    owner: Id,
    key: &IdempotencyKey,
    fingerprint: &str,
) -> Result<Option<Response>, ApiError> {
    match app.db.recorded(owner, key, Utc::now()).await? {
        None => Ok(None),
        Some(recorded) if recorded.fingerprint == fingerprint => {
            Ok(Some(replay(&recorded.outcome)))
        }
        Some(_) => Err(ApiError::IdempotencyKeyReused),
    }
}

/// A recorded outcome, answered again. Every replay is made here, so this is
/// where one is counted (`IdempotentReplays`). The request id and the
/// rate-limit headers are added on the way out, fresh, as on any answer.
pub fn replay(outcome: &Outcome) -> Response {
    tracing::info!(status = outcome.status, "idempotent replay");
    metrics::count(Metric::IdempotentReplays, 1);
    let status = StatusCode::from_u16(outcome.status).unwrap_or(StatusCode::OK);
    let mut response = match &outcome.body {
        Some(body) => {
            let mut response = (status, body.clone()).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        None => status.into_response(),
    };
    let headers = response.headers_mut();
    if let Some(location) = outcome.location.as_deref() {
        if let Ok(location) = HeaderValue::from_str(location) {
            headers.insert(header::LOCATION, location);
        }
    }
    headers.insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    response
}

/// Tells one request from another: SHA-256 of the method, the path and the
/// body, in lower-case hex. A JSON body counts as its value (see
/// [`canonical_json`]); any other body (which the handler refuses, recording
/// nothing) as its bytes.
pub fn fingerprint(method: &Method, path: &str, body: &[u8]) -> String {
    let mut hash = Sha256::new();
    hash.update(method.as_str());
    hash.update(b"\n");
    hash.update(path);
    hash.update(b"\n");
    match serde_json::from_slice::<Value>(body) {
        Ok(value) => {
            hash.update(b"json:");
            hash.update(canonical_json(&value));
        }
        Err(_) => {
            hash.update(b"bytes:");
            hash.update(body);
        }
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// One text for every JSON text of the same value: object keys sorted, no
/// whitespace, and a number with no fraction written as an integer (`1.0`,
/// `1e0` and `1` are one number), others as serde_json writes them.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// 2^53: every integer below it is exactly a float.
const EXACT: f64 = 9_007_199_254_740_992.0;

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(object) => {
            let mut fields: Vec<_> = object.iter().collect();
            fields.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (name, value)) in fields.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(name.as_str()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Number(number) => {
            // Below 2^53 a float with no fraction is exactly an integer.
            match number.as_f64() {
                Some(f) if number.is_f64() && f.fract() == 0.0 && f.abs() < EXACT => {
                    out.push_str(&(f as i64).to_string())
                }
                _ => out.push_str(&number.to_string()),
            }
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The database as a changing handler uses it: the app's, carrying this
/// request's [`Recording`] when [`settle`] made one, so the change writes
/// its record. Every handler that changes something takes its `Db` this way.
impl FromRequestParts<App> for Db {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Db, Infallible> {
        Ok(match parts.extensions.get::<Arc<Recording>>() {
            Some(recording) => app.db.recording(recording.clone()),
            None => app.db.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_json_values_have_one_fingerprint() {
        let post = |body: &str| fingerprint(&Method::POST, "/store/orders", body.as_bytes());
        let one = post(r#"{"petId": 7, "quantity": 1, "shipDate": null}"#);
        assert_eq!(one, post(r#"{"shipDate":null,"quantity":1.0,"petId":7}"#));
        assert_eq!(
            one,
            post("{\"quantity\" : 1e0 ,\n \"petId\":7,\"shipDate\":null}")
        );
        assert_ne!(
            one,
            post(r#"{"petId": 7, "quantity": 2, "shipDate": null}"#)
        );
        assert_ne!(one, post(r#"{"petId": 7, "quantity": 1}"#));
        assert_ne!(
            one,
            fingerprint(
                &Method::PUT,
                "/store/orders",
                br#"{"petId": 7, "quantity": 1}"#
            )
        );
        let path = |path: &str| fingerprint(&Method::DELETE, path, b"");
        assert_ne!(path("/pets/1"), path("/pets/2"));
        assert_eq!(
            canonical_json(&serde_json::json!({"b": [1.5, "é\n"], "a": {"y": true, "x": 0}})),
            r#"{"a":{"x":0,"y":true},"b":[1.5,"é\n"]}"#
        );
    }

    #[test]
    fn the_key_is_checked_and_sent_once() {
        let mut headers = HeaderMap::new();
        headers.insert(IDEMPOTENCY_KEY, HeaderValue::from_static("k-1"));
        assert!(idempotency_key(&headers).is_ok());
        headers.append(IDEMPOTENCY_KEY, HeaderValue::from_static("k-2"));
        assert!(idempotency_key(&headers).is_err());
        let mut long = HeaderMap::new();
        let value = HeaderValue::from_str(&"k".repeat(256)).unwrap_or(HeaderValue::from_static(""));
        long.insert(IDEMPOTENCY_KEY, value);
        assert!(matches!(
            idempotency_key(&long),
            Err(ApiError::Validation(_))
        ));
    }

    // Counted inside a request's tally: a count made outside any request
    // would land in whichever request of another test comes next.
    #[tokio::test]
    async fn a_replay_is_the_outcome_marked_as_replayed_and_counted() {
        let created = Outcome {
            status: 201,
            body: Some(r#"{"id":5}"#.into()),
            location: Some("/pets/5".into()),
        };
        let (response, counts) = metrics::tallied(async { replay(&created) }).await;
        assert_eq!(counts.get(Metric::IdempotentReplays), 1);
        assert_eq!(response.status(), 201);
        let headers = response.headers();
        assert_eq!(headers[header::LOCATION], "/pets/5");
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
        assert_eq!(headers[IDEMPOTENT_REPLAYED], "true");
        let deleted = Outcome {
            status: 204,
            body: None,
            location: None,
        };
        let (gone, _) = metrics::tallied(async { replay(&deleted) }).await;
        assert_eq!(gone.status(), 204);
        assert!(gone.headers().get(header::CONTENT_TYPE).is_none());
    }
}
