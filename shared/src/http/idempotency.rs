//! Safe retries (contract section 4b): the `Idempotency-Key` header, and
//! answering a retried change with what it answered the first time.
//!
//! [`settle`] is a route layer inside the access check, acting only on a
//! change (`POST`, `PUT`, `PATCH`, `DELETE`) that sends the header. It runs
//! the handler at once with a [`Recording`] on its [`Changes`] handle, which
//! writes the record in the same write as the change, on the condition that
//! no live record holds the key: the happy path reads nothing and costs one
//! more item in that write. What the record keeps is decided here
//! (`SavedResponse`); the db layer stores it as bytes.
//!
//! If this request wrote no change (a rule refused it, it needed no write, or
//! it lost on the record's condition), the caller's record for the key is
//! read once (`NextAction`): the same request gets the saved answer again,
//! another gets 422, and with no record the handler's answer stands. A loser
//! whose write met the winner's mid-commit finds no record yet and answers
//! 409 `IDEMPOTENCY_KEY_IN_USE` with `Retry-After`.

use super::error::ApiError;
use super::extract::MAX_BODY_BYTES;
use crate::db::idempotency::Recording;
use crate::db::{BoxError, Changes};
use crate::metrics::{self, Metric};
use crate::records::{Caller, ETag, Id, IdempotencyKey, IfMatch};
use crate::App;
use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use http::request::Parts;
use http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::convert::Infallible;
use std::sync::Arc;

/// The request header.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// The response header that marks a replayed answer.
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
    let (method, path) = (parts.method.clone(), parts.uri.path().to_string());
    let render =
        Box::new(move |answer: &[u8]| SavedResponse::of(&method, &path, answer)?.to_bytes());
    let recording = Arc::new(Recording::new(owner, &key, fingerprint.clone(), render));
    parts.extensions.insert(recording.clone());
    let response = next.run(Request::from_parts(parts, Body::from(body))).await;
    if recording.written() {
        return Ok(response);
    }
    Ok(match next_action(app, owner, &key, &fingerprint).await {
        Ok(NextAction::ReturnSavedResponse(saved)) => replay(&saved),
        Ok(NextAction::RefuseReuse) => ApiError::IdempotencyKeyReused.into_response(),
        Ok(NextAction::ReturnHandlerResponse) => response,
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

/// What a record keeps of a change's answer: what a replay sends again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct SavedResponse {
    status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    location: Option<String>,
    /// The JSON body, if the answer has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    body: Option<String>,
    /// The record's validator, sent again as `ETag` (contract 4c); absent
    /// from records written before 1.3.0 and from answers with no record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    etag: Option<String>,
}

impl SavedResponse {
    /// The answer to a change of `method` on `path` whose result is `answer`
    /// (its JSON, as `http::respond` sends it). Made before the change is
    /// written, so it follows the contract's shapes: every `POST` creates a
    /// record at `<path>/<id>`; `PUT` and `PATCH` answer the record; `DELETE`
    /// answers 204. The replay tests hold each change route to them.
    fn of(method: &Method, path: &str, answer: &[u8]) -> Result<SavedResponse, BoxError> {
        let body = || String::from_utf8(answer.to_vec());
        // The records of contract 4c carry their validator. A webhook
        // endpoint's recorded answer holds neither its secret nor its key's
        // state (webhooks/endpoints/validator.rs): its hash is the endpoint's
        // validator too. Nothing else under /webhooks is a record.
        let etag = || {
            let record = !path.starts_with("/webhooks") || webhook_endpoint(path);
            record.then(|| ETag::of_json(answer).as_str().to_string())
        };
        Ok(match *method {
            Method::POST => {
                let id = serde_json::from_slice::<Value>(answer)?
                    .get("id")
                    .and_then(Value::as_u64)
                    .ok_or("a created record without an id")?;
                SavedResponse {
                    status: 201,
                    location: Some(format!("{path}/{id}")),
                    body: Some(body()?),
                    etag: etag(),
                }
            }
            Method::DELETE => SavedResponse {
                status: 204,
                location: None,
                body: None,
                etag: None,
            },
            _ => SavedResponse {
                status: 200,
                location: None,
                body: Some(body()?),
                etag: etag(),
            },
        })
    }

    fn to_bytes(&self) -> Result<Vec<u8>, BoxError> {
        Ok(serde_json::to_vec(self)?)
    }

    fn from_bytes(bytes: &[u8]) -> Result<SavedResponse, ApiError> {
        serde_json::from_slice(bytes).map_err(ApiError::internal)
    }
}

/// What to answer when this request did not write the key's record.
#[derive(Debug)]
enum NextAction {
    /// This very request made the record on an earlier try: answer as then.
    ReturnSavedResponse(SavedResponse),
    /// Another request made it: 422.
    RefuseReuse,
    /// No live record: the handler's answer stands.
    ReturnHandlerResponse,
}

/// Reads the caller's record for `key` (one consistent `GetItem`).
async fn next_action(
    app: &App,
    owner: Id,
    key: &IdempotencyKey,
    fingerprint: &str,
) -> Result<NextAction, ApiError> {
    Ok(match app.db.recorded(owner, key, Utc::now()).await? {
        None => NextAction::ReturnHandlerResponse,
        Some(recorded) if recorded.fingerprint == fingerprint => {
            NextAction::ReturnSavedResponse(SavedResponse::from_bytes(&recorded.response)?)
        }
        Some(_) => NextAction::RefuseReuse,
    })
}

/// A saved answer, sent again. Every replay is made here, so this is where
/// one is counted (`IdempotentReplays`). The request id and the rate-limit
/// headers are added on the way out, fresh, as on any answer.
fn replay(saved: &SavedResponse) -> Response {
    tracing::debug!(status = saved.status, "idempotent replay");
    metrics::count(Metric::IdempotentReplays, 1);
    let status = StatusCode::from_u16(saved.status).unwrap_or(StatusCode::OK);
    let mut response = match &saved.body {
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
    if let Some(location) = saved.location.as_deref() {
        if let Ok(location) = HeaderValue::from_str(location) {
            headers.insert(header::LOCATION, location);
        }
    }
    if let Some(etag) = saved.etag.as_deref() {
        if let Ok(etag) = HeaderValue::from_str(etag) {
            headers.insert(header::ETAG, etag);
        }
    }
    headers.insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    response
}

/// Tells one request from another: SHA-256 of the method, the path and the
/// body, in lower-case hex. A JSON body counts as its value (see
/// [`canonical_json`]); any other body (which the handler refuses, recording
/// nothing) as its bytes.
fn fingerprint(method: &Method, path: &str, body: &[u8]) -> String {
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
fn canonical_json(value: &Value) -> String {
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

/// Whether `path` is that of webhook endpoints or of one endpoint.
fn webhook_endpoint(path: &str) -> bool {
    match path.strip_prefix("/webhooks") {
        Some("") => true,
        Some(rest) => rest
            .strip_prefix('/')
            .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())),
        None => false,
    }
}

/// The handle a changing handler takes: the app's table, carrying this
/// request's [`Recording`] when [`settle`] made one, so the change writes
/// its record, and its `If-Match`, which the change holds in its write's
/// condition (contract 4c).
impl FromRequestParts<App> for Changes {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Changes, Infallible> {
        let changes = match parts.extensions.get::<Arc<Recording>>() {
            Some(recording) => app.db.recording(recording.clone()),
            None => app.db.unrecorded(),
        };
        let if_match = parts.headers.get_all(header::IF_MATCH).iter();
        Ok(changes.with_precondition(IfMatch::parse(if_match.map(HeaderValue::as_bytes))))
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

    #[test]
    fn a_saved_response_is_the_answer_as_the_handler_sends_it() -> Result<(), BoxError> {
        let pet = serde_json::json!({"id": 42, "name": "Rex"});
        let answer = serde_json::to_vec(&pet)?;
        let created = SavedResponse::of(&Method::POST, "/pets", &answer)?;
        let expected = SavedResponse {
            status: 201,
            location: Some("/pets/42".into()),
            body: Some(String::from_utf8(answer.clone())?),
            etag: Some(ETag::of_json(&answer).as_str().to_string()),
        };
        assert_eq!(created, expected);
        let read_back = SavedResponse::from_bytes(&created.to_bytes()?).ok();
        assert_eq!(read_back, Some(expected));
        let replaced = SavedResponse::of(&Method::PUT, "/pets/42", &answer)?;
        assert_eq!((replaced.status, replaced.location), (200, None));
        let gone = SavedResponse::of(&Method::DELETE, "/pets/42", b"null")?;
        assert_eq!((gone.status, gone.body), (204, None));
        Ok(())
    }

    // Counted inside a request's tally: a count made outside any request
    // would land in whichever request of another test comes next.
    #[tokio::test]
    async fn a_replay_is_the_outcome_marked_as_replayed_and_counted() {
        let created = SavedResponse {
            status: 201,
            body: Some(r#"{"id":5}"#.into()),
            location: Some("/pets/5".into()),
            etag: Some(ETag::of_json(br#"{"id":5}"#).as_str().to_string()),
        };
        let (response, counts) = metrics::tallied(async { replay(&created) }).await;
        assert_eq!(counts.get(Metric::IdempotentReplays), 1);
        assert_eq!(response.status(), 201);
        let headers = response.headers();
        assert_eq!(headers[header::LOCATION], "/pets/5");
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
        assert_eq!(headers[IDEMPOTENT_REPLAYED], "true");
        assert_eq!(
            headers[header::ETAG],
            ETag::of_json(br#"{"id":5}"#).as_str()
        );
        let deleted = SavedResponse {
            status: 204,
            body: None,
            location: None,
            etag: None,
        };
        let (gone, _) = metrics::tallied(async { replay(&deleted) }).await;
        assert_eq!(gone.status(), 204);
        assert!(gone.headers().get(header::CONTENT_TYPE).is_none());
    }
}
