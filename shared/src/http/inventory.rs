//! `/store/inventory` (beta): list stock, read one pet's stock, set it.

use super::request::{next_link, JsonBody, QueryParams};
use super::{json, page};
use crate::error::ApiError;
use crate::model::{Id, InventoryUpdate, PetStatus};
use crate::App;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use http::{HeaderValue, StatusCode};

pub fn routes() -> Router<App> {
    Router::new()
        .route("/store/inventory", get(list_inventory))
        .route(
            "/store/inventory/{petId}",
            get(get_inventory).put(set_inventory),
        )
        .layer(axum::middleware::map_response(mark_beta))
}

/// Every inventory answer, errors included, says the operation is beta.
async fn mark_beta(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert("x-api-stability", HeaderValue::from_static("beta"));
    response
}

async fn list_inventory(State(app): State<App>, query: QueryParams) -> Result<Response, ApiError> {
    let status = query
        .get("status")
        .map(|s| PetStatus::parse(s, "status"))
        .transpose()?;
    let paging = query.paging("inventory")?;
    let found = app
        .store
        .list_inventory(status, paging.limit, paging.after)
        .await?;
    let filters: Vec<_> = status.iter().map(|s| ("status", s.to_string())).collect();
    let next = found
        .next_after
        .map(|after| next_link("/store/inventory", &filters, &paging, after));
    Ok(page(&found.items, next))
}

async fn get_inventory(
    State(app): State<App>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "petId")?;
    match app.store.get_inventory(id).await? {
        Some(item) => Ok(json(StatusCode::OK, &item)),
        None => Err(ApiError::not_found("pet", id)),
    }
}

async fn set_inventory(
    State(app): State<App>,
    Path(raw): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "petId")?;
    let update = InventoryUpdate::parse(&body)?;
    let item = app.store.set_stock(id, update.quantity).await?;
    Ok(json(StatusCode::OK, &item))
}
