//! `/store/orders`: list (newest first), place, read, complete, cancel.
//!
//! Every handler takes the [`Caller`]: an order is the caller's who placed it,
//! and a customer sees and changes only its own (another's answers 404,
//! exactly as a missing one); staff see and change every order. Handlers that
//! change something take their [`Changes`] from the request, which writes the
//! request's idempotency record with the change (contract 4b).

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use chrono::Utc;
use http::{HeaderMap, StatusCode};
use petstore::db::orders::OrderFilter;
use petstore::db::Changes;
use petstore::http::error::ApiError;
use petstore::http::extract::{next_link, JsonBody, QueryParams};
use petstore::http::respond::{created_record, current, list_page, no_content, record};
use petstore::records::{Caller, Id, NewOrder, OrderPatch};
use petstore::App;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/store/orders", get(list_orders).post(place_order))
        .route(
            "/store/orders/{orderId}",
            get(get_order).patch(update_order).delete(cancel_order),
        )
}

async fn list_orders(
    State(app): State<App>,
    caller: Caller,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let filter = OrderFilter {
        pet_id: query.id("petId")?,
        complete: query.boolean("complete")?,
    };
    let page = query.page_request("orders")?;
    let found = app
        .db
        .list_orders(filter, caller.owner_scope(), page.limit, page.after)
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
        .map(|after| next_link("/store/orders", &filters, &page, after));
    Ok(list_page(&found.items, next))
}

async fn place_order(
    db: Changes,
    caller: Caller,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let now = Utc::now();
    let new = NewOrder::parse(&body)?;
    new.check_ship_window(&caller, now)?;
    let order = db
        .place_order(new, caller.key_id, caller.open_orders_cap, now)
        .await?;
    petstore::metrics::order_placed(order.quantity.get());
    Ok(created_record(
        format!("/store/orders/{}", order.id),
        &order,
    ))
}

async fn get_order(
    State(app): State<App>,
    caller: Caller,
    Path(raw): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "orderId")?;
    match app.db.get_order(id, caller.owner_scope()).await? {
        Some(order) => Ok(current(&headers, &order)),
        None => Err(ApiError::not_found("order", id)),
    }
}

async fn update_order(
    db: Changes,
    caller: Caller,
    Path(raw): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "orderId")?;
    let patch = OrderPatch::parse(&body)?;
    let order = db
        .update_order(id, patch, caller.owner_scope(), Utc::now())
        .await?;
    Ok(record(StatusCode::OK, &order))
}

async fn cancel_order(
    db: Changes,
    caller: Caller,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "orderId")?;
    db.cancel_order(id, caller.owner_scope()).await?;
    Ok(no_content())
}
