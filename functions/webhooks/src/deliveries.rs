//! `/webhooks/{webhookId}/deliveries` (newest first), a ping, and a retry by
//! hand: both put one message on the deliveries queue and answer 202 with
//! the delivery as it stands; the attempt is the delivery handler's.

use crate::Webhooks;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Extension, Router};
use chrono::Utc;
use http::StatusCode;
use petstore::http::error::ApiError;
use petstore::http::extract::{next_link, QueryParams};
use petstore::http::respond::{json, list_page};
use petstore::records::{Caller, Id};
use petstore::webhooks::deliveries::{self, NewDelivery};
use petstore::webhooks::endpoints::time;
use petstore::webhooks::queue::DeliveryMessage;
use petstore::webhooks::types::EventType;
use petstore::App;
use serde::Serialize;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/webhooks/{webhookId}/deliveries", get(list_deliveries))
        .route("/webhooks/{webhookId}/ping", post(ping))
        .route(
            "/webhooks/{webhookId}/deliveries/{eventId}/retry",
            post(retry),
        )
}

async fn list_deliveries(
    State(app): State<App>,
    caller: Caller,
    Path(raw): Path<String>,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "webhookId")?;
    let page = query.page_request("deliveries")?;
    app.db.visible_webhook(id, &caller).await?;
    let found = deliveries::list_page(&app.db, id, page.limit, page.after).await?;
    let path = format!("/webhooks/{id}/deliveries");
    let next = found
        .next_after
        .map(|after| next_link(&path, &[], &page, after));
    Ok(list_page(&found.items, next))
}

/// A ping's payload: `{"type","timestamp","data"}` in this order, compact.
#[derive(Serialize)]
struct PingPayload<'a> {
    #[serde(rename = "type")]
    event_type: &'static str,
    timestamp: &'a str,
    data: PingData<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PingData<'a> {
    webhook_id: Id,
    event_id: &'a str,
    occurred_at: &'a str,
}

/// Sends a `webhook.ping` event to the endpoint now.
async fn ping(
    State(app): State<App>,
    caller: Caller,
    Extension(webhooks): Extension<Webhooks>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "webhookId")?;
    app.db.visible_webhook(id, &caller).await?;
    let now = Utc::now();
    let event_id = format!("ping_{:032x}", rand::random::<u128>());
    let occurred_at = time(now);
    let body = serde_json::to_string(&PingPayload {
        event_type: EventType::Ping.as_str(),
        timestamp: &occurred_at,
        data: PingData {
            webhook_id: id,
            event_id: &event_id,
            occurred_at: &occurred_at,
        },
    })
    .map_err(ApiError::internal)?;
    let new = NewDelivery {
        webhook_id: id.get(),
        event_id: &event_id,
        event_type: EventType::Ping,
        body: &body,
    };
    let (client, table) = (app.db.client(), app.db.table());
    deliveries::create(client, table, &new, now).await?;
    enqueue(&webhooks, id, &event_id, false).await?;
    accepted(&app, id, &event_id).await
}

/// One more attempt now, whatever the delivery's state. The state changes
/// only when it succeeds: a `failed` delivery whose retry fails stays
/// `failed`, and a `pending` one keeps its schedule (and the message that
/// carries it), so no delivery is left `pending` with nothing to come.
async fn retry(
    State(app): State<App>,
    caller: Caller,
    Extension(webhooks): Extension<Webhooks>,
    Path((raw, event_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "webhookId")?;
    app.db.visible_webhook(id, &caller).await?;
    let (client, table) = (app.db.client(), app.db.table());
    if deliveries::get(client, table, id.get(), &event_id)
        .await?
        .is_none()
    {
        return Err(ApiError::not_found("delivery", &event_id));
    }
    enqueue(&webhooks, id, &event_id, true).await?;
    accepted(&app, id, &event_id).await
}

async fn enqueue(
    webhooks: &Webhooks,
    id: Id,
    event_id: &str,
    manual: bool,
) -> Result<(), ApiError> {
    let message = DeliveryMessage {
        webhook_id: id.get(),
        event_id: event_id.to_string(),
        manual,
    };
    webhooks
        .queue
        .send(vec![message])
        .await
        .map_err(ApiError::internal)
}

/// 202 and the delivery as it stands.
async fn accepted(app: &App, id: Id, event_id: &str) -> Result<Response, ApiError> {
    let (client, table) = (app.db.client(), app.db.table());
    let delivery = deliveries::get(client, table, id.get(), event_id)
        .await?
        .ok_or_else(|| ApiError::not_found("delivery", event_id))?;
    Ok(json(StatusCode::ACCEPTED, &delivery))
}
