//! `/pets`: list, create, read (deprecated), replace, patch, delete.
//!
//! Handlers that change something take their [`Changes`] from the request, which
//! writes the request's idempotency record with the change (contract 4b).

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use chrono::Utc;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use petstore::db::pets::PetFilter;
use petstore::db::Changes;
use petstore::http::error::ApiError;
use petstore::http::extract::{next_link, JsonBody, QueryParams};
use petstore::http::respond::{created_record, current, list_page, no_content, record};
use petstore::records::{Id, NewPet, PetPatch, PetStatus, ValidationError};
use petstore::App;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/pets", get(list_pets).post(create_pet))
        .route(
            "/pets/{petId}",
            get(get_pet)
                .put(replace_pet)
                .patch(update_pet)
                .delete(delete_pet),
        )
}

/// Most ids one `ids` batch look-up may name.
const MAX_BATCH_IDS: usize = 100;

fn parse_ids(raw: &str) -> Result<Vec<Id>, ApiError> {
    let ids = raw
        .split(',')
        .map(|part| Id::parse_param(part, "ids"))
        .collect::<Result<Vec<_>, _>>()?;
    if ids.len() > MAX_BATCH_IDS {
        return Err(
            ValidationError::new(format!("ids may name at most {MAX_BATCH_IDS} pets")).into(),
        );
    }
    Ok(ids)
}

async fn list_pets(State(app): State<App>, query: QueryParams) -> Result<Response, ApiError> {
    let filter = PetFilter {
        status: query
            .get("status")
            .map(|s| PetStatus::parse(s, "status"))
            .transpose()?,
        category_id: query.id("categoryId")?,
    };
    let page = query.page_request("pets")?;
    if let Some(raw) = query.get("ids") {
        let ids = parse_ids(raw)?;
        let pets = app.db.batch_get_pets(&ids).await?;
        let pets: Vec<_> = pets
            .into_iter()
            .filter(|p| filter.status.is_none_or(|s| p.status == s))
            .filter(|p| filter.category_id.is_none_or(|c| p.category_id == c))
            .collect();
        return Ok(list_page(&pets, None));
    }
    let found = app.db.list_pets(filter, page.limit, page.after).await?;
    let mut filters = Vec::new();
    if let Some(status) = filter.status {
        filters.push(("status", status.to_string()));
    }
    if let Some(category) = filter.category_id {
        filters.push(("categoryId", category.to_string()));
    }
    Ok(list_page(
        &found.items,
        found
            .next_after
            .map(|after| next_link("/pets", &filters, &page, after)),
    ))
}

async fn create_pet(db: Changes, JsonBody(body): JsonBody) -> Result<Response, ApiError> {
    let new = NewPet::parse(&body)?;
    let pet = db.create_pet(new, Utc::now()).await?;
    Ok(created_record(format!("/pets/{}", pet.id), &pet))
}

/// Deprecated in favour of `GET /pets?ids=`, and gone after the sunset.
async fn get_pet(State(app): State<App>, Path(raw): Path<String>, headers: HeaderMap) -> Response {
    let config = &app.config;
    // Headers are built from validated values only: the successor names the
    // parsed id, never the raw path segment; for an id that is not one, it
    // is the list itself.
    let id = Id::parse_param(&raw, "petId");
    let successor = match &id {
        Ok(id) => format!("</pets?ids={id}>; rel=\"successor-version\""),
        Err(_) => "</pets>; rel=\"successor-version\"".to_string(),
    };
    let mut response = read_pet(&app, id, &headers).await.into_response();
    let headers = response.headers_mut();
    let deprecation = format!("@{}", config.deprecated_at.timestamp());
    let sunset = config
        .sunset_at
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    for (name, value) in [("deprecation", deprecation), ("sunset", sunset)] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
    if let Ok(value) = HeaderValue::from_str(&successor) {
        headers.append(header::LINK, value);
    }
    response
}

/// The answer `GET /pets/{petId}` gives before its deprecation headers (a
/// 304 too: they are on every answer).
async fn read_pet(
    app: &App,
    id: Result<Id, ValidationError>,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    if Utc::now() >= app.config.sunset_at {
        return Err(ApiError::Sunset);
    }
    let id = id?;
    match app.db.get_pet_record(id).await? {
        Some(pet) => Ok(current(headers, &pet)),
        None => Err(ApiError::not_found("pet", id)),
    }
}

async fn replace_pet(
    db: Changes,
    Path(raw): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "petId")?;
    let new = NewPet::parse(&body)?;
    let pet = db.update_pet(id, |_| new.clone()).await?;
    Ok(record(StatusCode::OK, &pet))
}

async fn update_pet(
    db: Changes,
    Path(raw): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let id = Id::parse_param(&raw, "petId")?;
    let patch = PetPatch::parse(&body)?;
    let pet = db.update_pet(id, |current| patch.apply(current)).await?;
    Ok(record(StatusCode::OK, &pet))
}

async fn delete_pet(db: Changes, Path(raw): Path<String>) -> Result<Response, ApiError> {
    db.delete_pet(Id::parse_param(&raw, "petId")?).await?;
    Ok(no_content())
}
