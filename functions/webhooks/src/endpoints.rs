//! `/webhooks`: register, list, read, change, delete an endpoint, and give
//! it a new secret.
//!
//! An endpoint is the key identity's that registered it: another's answers
//! 404, exactly as a missing one; staff see and change every endpoint.
//! `POST /webhooks`, `PATCH` and `DELETE` take their [`Changes`] from the
//! request, so an `Idempotency-Key` replays them (contract 4b). A secret is
//! in the answer that made it and nowhere else: the answer the write
//! records leaves it out and the handler adds it, so the replay of a
//! registration answers the endpoint without one (its owner rotates to get
//! one), and a new secret is made anew on every rotation.
//!
//! Every answer carrying one endpoint carries its `ETag` (contract 4c): the
//! hash of the endpoint as sent without its secret (the shared crate's
//! `webhooks/endpoints/validator.rs` says why), which `If-Match` on `PATCH`
//! and `DELETE` names and `If-None-Match` on `GET` answers 304 to.

use crate::Webhooks;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Extension, Router};
use chrono::{DateTime, Duration, Utc};
use http::{header, HeaderMap, HeaderValue, StatusCode};
use petstore::db::Changes;
use petstore::http::error::ApiError;
use petstore::http::extract::{next_link, parse_json_body, JsonBody, QueryParams};
use petstore::http::respond::{created, current, json, list_page, no_content, record};
use petstore::records::{Caller, ETag, Id, JsonObject, Role, ValidationError};
use petstore::webhooks::endpoints::{Rotation, SECRET_OVERLAP_HOURS};
use petstore::webhooks::receiving;
use petstore::webhooks::records::{NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch};
use petstore::webhooks::sign::new_secret;
use petstore::App;
use serde_json::Value;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/webhooks", get(list_webhooks).post(create_webhook))
        .route(
            "/webhooks/{webhookId}",
            get(get_webhook)
                .patch(update_webhook)
                .delete(delete_webhook),
        )
        .route("/webhooks/{webhookId}/secret", post(rotate_secret))
}

async fn create_webhook(
    db: Changes,
    caller: Caller,
    Extension(webhooks): Extension<Webhooks>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let new = NewWebhookEndpoint::parse(&body, caller.role)?;
    webhooks.check(&new.url).await?;
    let secret = new_secret();
    let mut endpoint = db.create_webhook(new, &caller, &secret, Utc::now()).await?;
    let validator = ETag::of(&endpoint).map_err(ApiError::internal)?;
    endpoint.secret = Some(secret);
    let answer = created(format!("/webhooks/{}", endpoint.id), &endpoint);
    Ok(tagged_with(answer, &validator))
}

/// `answer`, which shows an endpoint with its secret, tagged with the
/// validator of the endpoint without it: the one a replay of the answer
/// (which never holds the secret) and a change's answer agree with.
fn tagged_with(mut answer: Response, validator: &ETag) -> Response {
    if let Ok(value) = HeaderValue::from_str(validator.as_str()) {
        answer.headers_mut().insert(header::ETAG, value);
    }
    answer
}

/// A customer's own endpoints; staff's every endpoint, or `ownerId`'s.
async fn list_webhooks(
    State(app): State<App>,
    caller: Caller,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let owner_filter = query.id("ownerId")?;
    let owner = match caller.role {
        Role::Staff => owner_filter,
        Role::Customer => Some(caller.key_id),
    };
    let page = query.page_request("webhooks")?;
    let found = app.db.list_webhooks(owner, page.limit, page.after).await?;
    let mut records: Vec<WebhookEndpoint> = found.items.iter().map(|e| e.record(None)).collect();
    receiving::show(&key_states(&app), &mut records).await?;
    let filters: Vec<(&str, String)> = owner_filter
        .map(|owner| vec![("ownerId", owner.to_string())])
        .unwrap_or_default();
    let next = found
        .next_after
        .map(|after| next_link("/webhooks", &filters, &page, after));
    Ok(list_page(&records, next))
}

async fn get_webhook(
    State(app): State<App>,
    caller: Caller,
    Path(raw): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "webhookId")?;
    let endpoint = app.db.visible_webhook(id, &caller).await?;
    let mut record = [endpoint.record(None)];
    receiving::show(&key_states(&app), &mut record).await?;
    // Its validator covers `receiving` too: a 304 never leaves a caller
    // with a copy that says otherwise.
    Ok(current(&headers, &record[0]))
}

/// The endpoints' keys' states, read afresh for this request.
fn key_states(app: &App) -> receiving::KeyStates {
    receiving::KeyStates::of(app.db.client().clone(), &app.config)
}

async fn update_webhook(
    db: Changes,
    caller: Caller,
    Extension(webhooks): Extension<Webhooks>,
    Path(raw): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "webhookId")?;
    let patch = WebhookEndpointPatch::parse(&body, caller.role)?;
    if let Some(url) = &patch.url {
        webhooks.check(url).await?;
    }
    let endpoint = db.update_webhook(id, patch, &caller).await?;
    Ok(record(StatusCode::OK, &endpoint))
}

async fn delete_webhook(
    db: Changes,
    caller: Caller,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "webhookId")?;
    db.delete_webhook(id, &caller).await?;
    Ok(no_content())
}

/// A new secret, in this answer only; the one it replaces keeps signing
/// beside it for a day, or as long as `expireOldAfterSeconds` says (0: it
/// stops at once). The body is optional.
async fn rotate_secret(
    State(app): State<App>,
    caller: Caller,
    Path(raw): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "webhookId")?;
    let now = Utc::now();
    let rotation = if body.iter().all(u8::is_ascii_whitespace) {
        Rotation::at(now)
    } else {
        rotation(&parse_json_body(&headers, &body)?, now)?
    };
    let secret = new_secret();
    let mut endpoint = app
        .db
        .unrecorded()
        .rotate_webhook_secret(id, &caller, &secret, rotation)
        .await?;
    let validator = ETag::of(&endpoint).map_err(ApiError::internal)?;
    endpoint.secret = Some(secret);
    Ok(tagged_with(json(StatusCode::OK, &endpoint), &validator))
}

/// `expireOldAfterSeconds`: how long the replaced secret keeps signing, 0
/// to 86,400 seconds (absent or `null`: the whole day).
fn rotation(body: &JsonObject, now: DateTime<Utc>) -> Result<Rotation, ApiError> {
    let most = SECRET_OVERLAP_HOURS * 3600;
    let seconds = match body.get("expireOldAfterSeconds") {
        None | Some(Value::Null) => return Ok(Rotation::at(now)),
        Some(value) => value.as_i64().filter(|s| (0..=most).contains(s)),
    };
    let seconds = seconds.ok_or_else(|| {
        ValidationError::new(format!(
            "expireOldAfterSeconds must be a whole number of seconds from 0 to {most}"
        ))
    })?;
    Ok(Rotation {
        at: now,
        overlap: Duration::seconds(seconds),
    })
}
