//! The sample events in `events/` (what `cargo lambda invoke --data-file`
//! sends) made ready for a local stack: `make invoke`, `make run-lambda`
//! and the event replays in tests/events.rs all go through here.
//!
//! Every event carries [`EVENTS_API_KEY`], a key only local stacks hold
//! ([`create_events_key`]). Events that need records name them as
//! `{{petId}}`, `{{categoryId}}`, ...: [`prepare`] creates just the records
//! an event names, through the functions' own routers, and fills in their
//! ids, so each event meets the state its expected answer needs.

use axum::body::Body;
use http::{header, Method, Request};
use petstore::db::DbError;
use petstore::ratelimit::keys::{ApiKeyHash, KeyRequestError, NewApiKey};
use petstore::ratelimit::Plan;
use petstore::records::Role;
use petstore::App;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use tower::ServiceExt;

/// The `x-api-key` every sample event carries. Its secret is published (in
/// `events/`), so only local stacks ever store it: a staff key whose limits
/// no one reaches.
pub const EVENTS_API_KEY: &str = "psk_events-demo-key_published-not-a-secret-0000";

/// Per minute, per day.
const EVENTS_KEY_LIMITS: (u64, u64) = (1_000_000, 100_000_000);

/// Placeholders, in the order they are created, with what each needs first.
const PLACEHOLDERS: &[(&str, &[&str])] = &[
    ("uniqueName", &[]),
    ("categoryId", &[]),
    ("categoryName", &["categoryId"]),
    ("emptyCategoryId", &[]),
    ("usedCategoryId", &[]),
    ("petId", &["categoryId"]),
    ("soldPetId", &["categoryId"]),
    ("orderedPetId", &["categoryId"]),
    ("orderId", &["orderedPetId"]),
    ("completeOrderId", &["categoryId"]),
];

/// Why an event could not be made ready.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error(
        "{0} is not a DynamoDB on this machine; the sample events' key is for local stacks only"
    )]
    NotLocal(String),
    #[error(transparent)]
    Store(#[from] DbError),
    #[error(transparent)]
    Key(#[from] KeyRequestError),
    #[error("making the event's records: {request} answered {status}: {body}")]
    Record {
        request: String,
        status: u16,
        body: String,
    },
    #[error("unknown placeholder near `{0}`")]
    UnknownPlaceholder(String),
}

/// Stores [`EVENTS_API_KEY`] unless it is stored already; refuses any
/// DynamoDB but one on this machine.
pub async fn create_events_key(app: &App, endpoint: &str) -> Result<(), EventError> {
    if !crate::is_local_endpoint(endpoint) {
        return Err(EventError::NotLocal(endpoint.to_string()));
    }
    let keys = app.limiter.keys();
    if keys.find(&ApiKeyHash::of(EVENTS_API_KEY)).await?.is_some() {
        return Ok(());
    }
    let new = NewApiKey::new(
        Plan::Enterprise,
        Some(EVENTS_KEY_LIMITS),
        Some("sample events (local only)".into()),
    )?
    .with_role(Role::Staff);
    match keys
        .create_with_secret(new, EVENTS_API_KEY, chrono::Utc::now())
        .await
    {
        Ok(_) => Ok(()),
        // Refused by its condition: another local stack starting on the same
        // DynamoDB stored it between our look-up and our put. It is there.
        Err(error) => match keys.find(&ApiKeyHash::of(EVENTS_API_KEY)).await? {
            Some(_) => Ok(()),
            None => Err(error.into()),
        },
    }
}

/// The event `text` ready to send: the records its placeholders name
/// created, their ids filled in.
pub async fn prepare(app: &App, text: &str) -> Result<String, EventError> {
    let records = Records {
        router: petstore::http::service(pets::routes().merge(store::routes()), app.clone()),
    };
    let mut text = text.to_string();
    for (name, value) in fixtures(&records, &text).await? {
        text = text.replace(&format!("{{{{{name}}}}}"), &value);
    }
    if let Some(start) = text.find("{{") {
        let near = text[start..].chars().take(30).collect();
        return Err(EventError::UnknownPlaceholder(near));
    }
    Ok(text)
}

/// Creates the records `text` names and returns the placeholder values.
async fn fixtures(
    records: &Records,
    text: &str,
) -> Result<BTreeMap<&'static str, String>, EventError> {
    let mut needed: BTreeSet<&str> = PLACEHOLDERS
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| text.contains(&format!("{{{{{name}}}}}")))
        .collect();
    for (name, deps) in PLACEHOLDERS.iter().rev() {
        if needed.contains(name) {
            needed.extend(deps.iter().copied());
        }
    }
    let unique = || format!("Event {:08x}", rand::random::<u32>());
    let mut values: BTreeMap<&'static str, String> = BTreeMap::new();
    for &(name, _) in PLACEHOLDERS {
        if !needed.contains(name) {
            continue;
        }
        // Made before any pet (PLACEHOLDERS' order), by `categoryId` below.
        let category = || values["categoryId"].parse::<u64>().unwrap_or_default();
        let value = match name {
            "uniqueName" => unique(),
            "categoryId" => {
                let category_name = unique();
                let id = records.create_category(&category_name).await?;
                values.insert("categoryName", category_name);
                id.to_string()
            }
            "categoryName" => values["categoryName"].clone(),
            "emptyCategoryId" => records.create_category(&unique()).await?.to_string(),
            "usedCategoryId" => {
                let used = records.create_category(&unique()).await?;
                records.create_pet("Whiskers", used, "available").await?;
                used.to_string()
            }
            "petId" => records
                .create_pet("Rex", category(), "available")
                .await?
                .to_string(),
            "soldPetId" => records
                .create_pet("Old Tom", category(), "sold")
                .await?
                .to_string(),
            "orderedPetId" => {
                let pet = records.create_pet("Fido", category(), "available").await?;
                let order = records.place_order(pet).await?;
                values.insert("orderId", order.to_string());
                pet.to_string()
            }
            "orderId" => values["orderId"].clone(),
            "completeOrderId" => {
                let pet = records.create_pet("Bella", category(), "available").await?;
                let order = records.place_order(pet).await?;
                records.complete_order(order).await?;
                order.to_string()
            }
            other => unreachable!("{other} is not in PLACEHOLDERS"),
        };
        values.insert(name, value);
    }
    Ok(values)
}

/// Records made as any client makes them: requests with the events' key,
/// through both functions' routers (and so their wrapper and rules).
struct Records {
    router: axum::Router,
}

impl Records {
    /// Sends `body` as JSON; the answer's `id` (0 if it has none) unless it
    /// is not a success.
    async fn send(&self, method: Method, path: &str, body: Value) -> Result<u64, EventError> {
        let described = format!("{method} {path}");
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::CONTENT_TYPE, "application/json")
            .header("x-api-key", EVENTS_API_KEY)
            .body(Body::from(body.to_string()))
            .map_err(|e| EventError::Record {
                request: described.clone(),
                status: 0,
                body: e.to_string(),
            })?;
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .unwrap_or_else(|never| match never {});
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap_or_default();
        if !status.is_success() {
            return Err(EventError::Record {
                request: described,
                status: status.as_u16(),
                body: String::from_utf8_lossy(&bytes).into_owned(),
            });
        }
        let answer: Value = serde_json::from_slice(&bytes).unwrap_or_default();
        Ok(answer["id"].as_u64().unwrap_or_default())
    }

    async fn create_category(&self, name: &str) -> Result<u64, EventError> {
        self.send(Method::POST, "/categories", json!({ "name": name }))
            .await
    }

    async fn create_pet(&self, name: &str, category: u64, status: &str) -> Result<u64, EventError> {
        let pet = json!({ "name": name, "categoryId": category, "status": status });
        self.send(Method::POST, "/pets", pet).await
    }

    async fn place_order(&self, pet: u64) -> Result<u64, EventError> {
        self.send(Method::POST, "/store/orders", json!({ "petId": pet }))
            .await
    }

    async fn complete_order(&self, order: u64) -> Result<(), EventError> {
        let path = format!("/store/orders/{order}");
        self.send(Method::PATCH, &path, json!({ "complete": true }))
            .await
            .map(|_| ())
    }
}
