//! `/categories`: list, create, read, replace, delete.

use super::request::{next_link, JsonBody, QueryParams};
use super::{created, json, no_content, page};
use crate::error::ApiError;
use crate::model::{Id, NewCategory};
use crate::App;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use chrono::Utc;
use http::StatusCode;

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
    let paging = query.paging("categories")?;
    let found = app
        .store
        .list_categories(paging.limit, paging.after)
        .await?;
    let next = found
        .next_after
        .map(|after| next_link("/categories", &[], &paging, after));
    Ok(page(&found.items, next))
}

async fn create_category(
    State(app): State<App>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let new = NewCategory::parse(&body)?;
    let category = app.store.create_category(new, Utc::now()).await?;
    Ok(created(format!("/categories/{}", category.id), &category))
}

async fn get_category(
    State(app): State<App>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "categoryId")?;
    match app.store.get_category(id).await? {
        Some(stored) => Ok(json(StatusCode::OK, &stored.category)),
        None => Err(ApiError::not_found("category", id)),
    }
}

async fn replace_category(
    State(app): State<App>,
    Path(raw): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "categoryId")?;
    let new = NewCategory::parse(&body)?;
    let category = app.store.replace_category(id, new).await?;
    Ok(json(StatusCode::OK, &category))
}

async fn delete_category(
    State(app): State<App>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    app.store
        .delete_category(Id::parse_param(&raw, "categoryId")?)
        .await?;
    Ok(no_content())
}
