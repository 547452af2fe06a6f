//! `/webhooks/{webhookId}/deliveries` (newest first), a ping, and a retry by
//! hand: both put one message on the deliveries queue and answer 202 with
//! the delivery as it stands; the attempt is the delivery handler's.

use crate::Webhooks;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Extension, Router};
use chrono::{DateTime, Utc};
use http::StatusCode;
use petstore::db::DbError;
use petstore::http::error::ApiError;
use petstore::http::extract::{next_link_with_cursor, QueryParams};
use petstore::http::respond::{json, list_page};
use petstore::records::{Caller, Id, ValidationError};
use petstore::webhooks::deliveries::{self, ListPosition, NewDelivery, Start};
use petstore::webhooks::endpoints::{time, Endpoint};
use petstore::webhooks::queue::DeliveryMessage;
use petstore::webhooks::schedule::manual_retry_allowed;
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
    let limit = query.page_limit()?;
    let after = query
        .get("cursor")
        .map(|raw| {
            ListPosition::from_cursor(raw).ok_or_else(|| {
                ApiError::Validation(ValidationError::new("cursor is not valid for this list"))
            })
        })
        .transpose()?;
    let endpoint = app.db.visible_webhook(id, &caller).await?;
    let shards = endpoint.delivery_shards;
    let found = deliveries::list_page(&app.db, id, shards, limit, after).await?;
    let path = format!("/webhooks/{id}/deliveries");
    let next = found
        .next_after
        .map(|after| next_link_with_cursor(&path, &[], limit, after.cursor()));
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

/// Sends a `webhook.ping` event to the endpoint now: its own key's to ask
/// (section 9, 1.3.0), since a ping is a signed request to the receiver that
/// its caller never made; staff asking of another's is 403.
async fn ping(
    State(app): State<App>,
    caller: Caller,
    Extension(webhooks): Extension<Webhooks>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "webhookId")?;
    let endpoint = app.db.visible_webhook(id, &caller).await?;
    if !endpoint.owned_by(&caller) {
        return Err(DbError::OwnerOnly {
            kind: "webhook endpoint",
            change: "ping it",
        }
        .into());
    }
    let now = Utc::now();
    // Its time first, as every event id (`deliveries::timed_event_id`).
    let ping = format!("ping_{:032x}", rand::random::<u128>());
    let event_id = deliveries::timed_event_id(now, &ping);
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
        shard: deliveries::shard_of_event(&event_id, endpoint.delivery_shards),
        event_id: &event_id,
        event_type: EventType::Ping,
        body: &body,
    };
    let (client, table) = (app.db.client(), app.db.table());
    deliveries::create(client, table, &new, Start::Due, now).await?;
    enqueue(&webhooks, &endpoint, &event_id, false).await?;
    accepted(&app, &endpoint, &event_id).await
}

/// One more attempt now, whatever the delivery's state. The state changes
/// only when it succeeds: a `failed` delivery whose retry fails stays
/// `failed`, and a `pending` one keeps its schedule (and the message that
/// carries it), so no delivery is left `pending` with nothing to come.
/// Only within its 30 days (section 9): one made earlier is gone as far as
/// the API goes (404), whether or not DynamoDB's TTL has deleted it yet.
async fn retry(
    State(app): State<App>,
    caller: Caller,
    Extension(webhooks): Extension<Webhooks>,
    Path((raw, event_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "webhookId")?;
    if !deliveries::is_event_id(&event_id) {
        return Err(ApiError::NotFound(
            "no delivery has an eventId of this form".into(),
        ));
    }
    let endpoint = app.db.visible_webhook(id, &caller).await?;
    let (client, table) = (app.db.client(), app.db.table());
    let shards = endpoint.delivery_shards;
    let stored = deliveries::get(client, table, id.get(), shards, &event_id).await?;
    let retriable = match &stored {
        Some(delivery) => {
            let created = DateTime::parse_from_rfc3339(&delivery.created_at)
                .map_err(ApiError::internal)?
                .with_timezone(&Utc);
            manual_retry_allowed(created, Utc::now())
        }
        None => false,
    };
    if !retriable {
        return Err(ApiError::not_found("delivery", &event_id));
    }
    enqueue(&webhooks, &endpoint, &event_id, true).await?;
    accepted(&app, &endpoint, &event_id).await
}

/// One message for the delivery of `event_id` to `endpoint`.
async fn enqueue(
    webhooks: &Webhooks,
    endpoint: &Endpoint,
    event_id: &str,
    manual: bool,
) -> Result<(), ApiError> {
    let shard = deliveries::shard_of_event(event_id, endpoint.delivery_shards);
    let message = DeliveryMessage::new(endpoint.id.get(), shard, event_id, manual);
    webhooks
        .queue
        .send(vec![message])
        .await
        .map_err(ApiError::internal)
}

/// 202 and the delivery of `event_id` to `endpoint` as it stands.
async fn accepted(app: &App, endpoint: &Endpoint, event_id: &str) -> Result<Response, ApiError> {
    let (client, table) = (app.db.client(), app.db.table());
    let (id, shards) = (endpoint.id.get(), endpoint.delivery_shards);
    let delivery = deliveries::get(client, table, id, shards, event_id)
        .await?
        .ok_or_else(|| ApiError::not_found("delivery", event_id))?;
    Ok(json(StatusCode::ACCEPTED, &delivery))
}
