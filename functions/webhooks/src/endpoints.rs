//! `/webhooks`: register, list, read, change, delete an endpoint, and give
//! it a new secret.
//!
//! An endpoint is the key identity's that registered it: another's answers
//! 404, exactly as a missing one; staff see and change every endpoint.
//! `POST /webhooks`, `PATCH` and `DELETE` take their [`Changes`] from the
//! request, so an `Idempotency-Key` replays them (contract 4b); a new
//! secret is made anew on every call (a replay would hand out an old one).

use crate::Webhooks;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Extension, Router};
use chrono::Utc;
use http::StatusCode;
use petstore::db::Changes;
use petstore::http::error::ApiError;
use petstore::http::extract::{next_link, JsonBody, QueryParams};
use petstore::http::respond::{created, json, list_page, no_content};
use petstore::records::{Caller, Id, Role};
use petstore::webhooks::receiving;
use petstore::webhooks::records::{NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch};
use petstore::webhooks::sign::new_secret;
use petstore::App;

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
    let endpoint = db
        .create_webhook(new, &caller, new_secret(), Utc::now())
        .await?;
    Ok(created(format!("/webhooks/{}", endpoint.id), &endpoint))
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
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "webhookId")?;
    let endpoint = app.db.visible_webhook(id, &caller).await?;
    let mut record = [endpoint.record(None)];
    receiving::show(&key_states(&app), &mut record).await?;
    Ok(json(StatusCode::OK, &record[0]))
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
    Ok(json(StatusCode::OK, &endpoint))
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
/// beside it for a day.
async fn rotate_secret(
    State(app): State<App>,
    caller: Caller,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "webhookId")?;
    let endpoint = app
        .db
        .unrecorded()
        .rotate_webhook_secret(id, &caller, new_secret(), Utc::now())
        .await?;
    Ok(json(StatusCode::OK, &endpoint))
}
