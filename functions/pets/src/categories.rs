//! `/categories`: list, create, read, replace, delete.
//!
//! Handlers that change something take their [`Changes`] from the request, which
//! writes the request's idempotency record with the change (contract 4b).

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use chrono::Utc;
use http::{HeaderMap, StatusCode};
use petstore::db::Changes;
use petstore::http::error::ApiError;
use petstore::http::extract::{next_link, JsonBody, QueryParams};
use petstore::http::respond::{created_record, current, list_page, no_content, record};
use petstore::records::{Id, NewCategory};
use petstore::App;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/categories", get(list_categories).post(create_category))
        .route(
            "/categories/{categoryId}",
            get(get_category)
                .put(replace_category)
                .delete(delete_category),
        )
}

async fn list_categories(State(app): State<App>, query: QueryParams) -> Result<Response, ApiError> {
    let page = query.page_request("categories")?;
    let found = app.db.list_categories(page.limit, page.after).await?;
    let next = found
        .next_after
        .map(|after| next_link("/categories", &[], &page, after));
    Ok(list_page(&found.items, next))
}

async fn create_category(db: Changes, JsonBody(body): JsonBody) -> Result<Response, ApiError> {
    let new = NewCategory::parse(&body)?;
    let category = db.create_category(new, Utc::now()).await?;
    Ok(created_record(
        format!("/categories/{}", category.id),
        &category,
    ))
}

async fn get_category(
    State(app): State<App>,
    Path(raw): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "categoryId")?;
    match app.db.get_category(id).await? {
        Some(stored) => Ok(current(&headers, &stored.category)),
        None => Err(ApiError::not_found("category", id)),
    }
}

async fn replace_category(
    db: Changes,
    Path(raw): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "categoryId")?;
    let new = NewCategory::parse(&body)?;
    let category = db.replace_category(id, new).await?;
    Ok(record(StatusCode::OK, &category))
}

async fn delete_category(db: Changes, Path(raw): Path<String>) -> Result<Response, ApiError> {
    db.delete_category(Id::parse_param(&raw, "categoryId")?)
        .await?;
    Ok(no_content())
}
