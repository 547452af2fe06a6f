//! `/store/inventory` (beta): list stock, read one pet's stock, set it.

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use http::{HeaderMap, StatusCode};
use petstore::db::Changes;
use petstore::http::error::ApiError;
use petstore::http::extract::{next_link, JsonBody, QueryParams};
use petstore::http::respond::{current, list_page, record};
use petstore::records::{Id, InventoryUpdate, PetStatus};
use petstore::App;

/// Every answer on these routes says they are beta: the shared wrapper adds
/// `X-API-Stability` (`petstore::http::BETA_ROUTES`).
pub fn routes() -> Router<App> {
    Router::new()
        .route("/store/inventory", get(list_inventory))
        .route(
            "/store/inventory/{petId}",
            get(get_inventory).put(set_inventory),
        )
}

async fn list_inventory(State(app): State<App>, query: QueryParams) -> Result<Response, ApiError> {
    let status = query
        .get("status")
        .map(|s| PetStatus::parse(s, "status"))
        .transpose()?;
    let page = query.page_request("inventory")?;
    let found = app
        .db
        .list_inventory(status, page.limit, page.after)
        .await?;
    let filters: Vec<_> = status.iter().map(|s| ("status", s.to_string())).collect();
    let next = found
        .next_after
        .map(|after| next_link("/store/inventory", &filters, &page, after));
    Ok(list_page(&found.items, next))
}

async fn get_inventory(
    State(app): State<App>,
    Path(raw): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "petId")?;
    match app.db.get_inventory(id).await? {
        Some(item) => Ok(current(&headers, &item)),
        None => Err(ApiError::not_found("pet", id)),
    }
}

async fn set_inventory(
    db: Changes,
    Path(raw): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "petId")?;
    let update = InventoryUpdate::parse(&body)?;
    let item = db.set_stock(id, update.quantity).await?;
    Ok(record(StatusCode::OK, &item))
}
