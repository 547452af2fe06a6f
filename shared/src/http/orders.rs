//! `/store/orders`: list (newest first), place, read, complete, cancel.

use super::request::{next_link, JsonBody, QueryParams};
use super::{created, json, no_content, page};
use crate::error::ApiError;
use crate::model::{Id, NewOrder, OrderPatch};
use crate::store::orders::OrderFilter;
use crate::App;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use chrono::Utc;
use http::StatusCode;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/store/orders", get(list_orders).post(place_order))
        .route(
            "/store/orders/{orderId}",
            get(get_order).patch(update_order).delete(cancel_order),
        )
}

async fn list_orders(State(app): State<App>, query: QueryParams) -> Result<Response, ApiError> {
    let filter = OrderFilter {
        pet_id: query.id("petId")?,
        complete: query.boolean("complete")?,
    };
    let paging = query.paging("orders")?;
    let found = app
        .store
        .list_orders(filter, paging.limit, paging.after)
        .await?;
    let mut filters = Vec::new();
    if let Some(pet) = filter.pet_id {
        filters.push(("petId", pet.to_string()));
    }
    if let Some(complete) = filter.complete {
        filters.push(("complete", complete.to_string()));
    }
    let next = found
        .next_after
        .map(|after| next_link("/store/orders", &filters, &paging, after));
    Ok(page(&found.items, next))
}

async fn place_order(
    State(app): State<App>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let new = NewOrder::parse(&body)?;
    let order = app.store.place_order(new, Utc::now()).await?;
    Ok(created(format!("/store/orders/{}", order.id), &order))
}

async fn get_order(State(app): State<App>, Path(raw): Path<String>) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "orderId")?;
    match app.store.get_order(id).await? {
        Some(order) => Ok(json(StatusCode::OK, &order)),
        None => Err(ApiError::not_found("order", id)),
    }
}

async fn update_order(
    State(app): State<App>,
    Path(raw): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "orderId")?;
    let patch = OrderPatch::parse(&body)?;
    let order = app.store.update_order(id, patch, Utc::now()).await?;
    Ok(json(StatusCode::OK, &order))
}

async fn cancel_order(
    State(app): State<App>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    app.store
        .cancel_order(Id::parse_param(&raw, "orderId")?)
        .await?;
    Ok(no_content())
}
