//! Webhook endpoint items, their per-key count, and who receives an event.
//!
//! | PK | SK | GSI1PK | GSI2PK | GSI4PK | attributes |
//! |---|---|---|---|---|---|
//! | `WEBHOOK#<id>` | `ENDPOINT` | `WEBHOOK` | `WEBHOOKSTAFF` (staff's only) | `WEBHOOKOWNER#<ownerId>` | `id`, `ownerId`, `ownerRole`, `url`, `events`, `description`, `enabled`, `disabledReason`, `secrets`, `createdAt`, `failingSince` |
//! | `WEBHOOKOWNER#<ownerId>` | `WEBHOOKS` | | | | `endpoints`: how many the key has |
//!
//! The lists run on the existing GSIs (sorted by the numeric `id`), so
//! webhooks need no new index: GSI1 holds every endpoint (staff's list),
//! GSI4 each owner's (a customer's list, and an order's owner's at fan-out),
//! GSI2 the staff endpoints (every event may go to them). The indexes do not
//! project the endpoint's attributes: a list reads the keys from the index
//! and the items themselves by key ([`super::list`]).
//!
//! The count item makes the per-plan cap exact under concurrency: a creation
//! adds 1 on condition that the count is below the cap, in the transaction
//! that puts the endpoint; a deletion takes 1 off in the one that deletes it.

use super::list::{keys_page, KeyList};
use super::records::{NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch};
use super::types::EventType;
use crate::db::expr::Expr;
use crate::db::write::{Check, OnFailure, Step, Write};
use crate::db::{from_item, n, new_id, s, to_item, Changes, Db, DbError, Item, Layout, Page};
use crate::ratelimit::keys::KeyStore;
use crate::records::{Caller, Description, Id, Role};
use crate::rules::RuleViolation;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

pub(crate) const SK: &str = "ENDPOINT";
/// GSI1's list of every endpoint.
const ALL: &str = "WEBHOOK";
/// GSI2's list of the staff endpoints.
const STAFF: &str = "WEBHOOKSTAFF";
/// How long a replaced secret keeps signing beside the new one.
pub const SECRET_OVERLAP_HOURS: i64 = 24;

pub(crate) fn key(id: u64) -> Item {
    HashMap::from([
        ("PK".to_string(), s(format!("WEBHOOK#{id}"))),
        ("SK".to_string(), s(SK)),
    ])
}

fn owner_list(owner: Id) -> String {
    format!("WEBHOOKOWNER#{owner}")
}

fn count_key(owner: Id) -> Item {
    HashMap::from([
        ("PK".to_string(), s(owner_list(owner))),
        ("SK".to_string(), s("WEBHOOKS")),
    ])
}

/// RFC 3339 with milliseconds, UTC: every stored instant, comparable as text.
pub fn time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// One signing secret; `retiresAt` absent on the current one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredSecret {
    pub secret: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retires_at: Option<String>,
}

/// An endpoint as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub id: Id,
    pub owner_id: Id,
    pub owner_role: Role,
    pub url: String,
    #[serde(default)]
    pub events: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Description>,
    pub enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    /// Newest first.
    #[serde(default)]
    pub secrets: Vec<StoredSecret>,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<String>,
}

#[derive(Serialize)]
struct EndpointItem<'a> {
    #[serde(rename = "PK")]
    pk: String,
    #[serde(rename = "SK")]
    sk: &'static str,
    #[serde(rename = "GSI1PK")]
    gsi1: &'static str,
    #[serde(rename = "GSI2PK", skip_serializing_if = "Option::is_none")]
    gsi2: Option<&'static str>,
    #[serde(rename = "GSI4PK")]
    gsi4: String,
    #[serde(flatten)]
    endpoint: &'a Endpoint,
}

impl Endpoint {
    /// The record the API shows; `secret` only where the contract says.
    /// Destructured, so a stored field added and not shown is a compile error.
    pub fn record(&self, secret: Option<String>) -> WebhookEndpoint {
        let Endpoint {
            id,
            owner_id,
            owner_role: _,
            url,
            events,
            description,
            enabled,
            disabled_reason,
            secrets: _,
            created_at,
            failing_since,
        } = self.clone();
        WebhookEndpoint {
            id,
            owner_id,
            url,
            events,
            description,
            enabled,
            disabled_reason,
            failing_since,
            created_at,
            secret,
        }
    }

    /// The secrets that sign at `now` (not yet retired), newest first.
    pub fn active_secrets(&self, now: DateTime<Utc>) -> Vec<String> {
        let now = time(now);
        let active = self.secrets.iter().filter(|s| {
            s.retires_at
                .as_ref()
                .is_none_or(|at| at.as_str() > now.as_str())
        });
        active.map(|s| s.secret.clone()).collect()
    }

    /// Whether it receives an event of `event_type` (section 9, "Who"): its
    /// owner's orders' events, and staff every type; as `events` subscribes.
    pub fn receives(&self, event_type: EventType, order_owner: Option<u64>) -> bool {
        let allowed = match self.owner_role {
            Role::Staff => true,
            Role::Customer => event_type.is_order() && order_owner == Some(self.owner_id.get()),
        };
        let subscribed =
            self.events.is_empty() || self.events.iter().any(|e| e == event_type.as_str());
        allowed && subscribed
    }

    /// Whether `caller` may see and change it: its owner, or staff.
    pub fn visible_to(&self, caller: &Caller) -> bool {
        caller.role == Role::Staff || caller.key_id == self.owner_id
    }

    fn item(&self) -> Result<Item, DbError> {
        to_item(&EndpointItem {
            pk: format!("WEBHOOK#{}", self.id),
            sk: SK,
            gsi1: ALL,
            gsi2: (self.owner_role == Role::Staff).then_some(STAFF),
            gsi4: owner_list(self.owner_id),
            endpoint: self,
        })
    }
}

/// The conditions of an endpoint's writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointCheck {
    /// A new endpoint's id is not taken.
    IdFree,
    /// The endpoint is still there, and still as the decision read it.
    AsRead,
    /// The owner has fewer endpoints than its cap.
    Below(u32),
}

impl Check for EndpointCheck {
    fn on_failure(self) -> OnFailure {
        match self {
            EndpointCheck::IdFree | EndpointCheck::AsRead => OnFailure::ReadAgain,
            EndpointCheck::Below(cap) => {
                OnFailure::Fail(RuleViolation::TooManyWebhooks { cap }.into())
            }
        }
    }
}

impl Changes {
    /// Registers an endpoint for `caller` with a new secret, unless the
    /// caller has its plan's most already. The answer carries the secret.
    pub async fn create_webhook(
        &self,
        new: NewWebhookEndpoint,
        caller: &Caller,
        secret: String,
        now: DateTime<Utc>,
    ) -> Result<WebhookEndpoint, DbError> {
        let (new, secret) = (&new, &secret);
        self.run("create webhook", move || async move {
            let endpoint = Endpoint {
                id: new_id(now),
                owner_id: caller.key_id,
                owner_role: caller.role,
                url: new.url.clone(),
                events: new.events.iter().map(|t| t.as_str().to_string()).collect(),
                description: new.description.clone(),
                enabled: true,
                disabled_reason: None,
                secrets: vec![StoredSecret {
                    secret: secret.clone(),
                    retires_at: None,
                }],
                created_at: time(now),
                failing_since: None,
            };
            let cap = caller.webhooks_cap;
            let count = Expr::new()
                .when_below("endpoints", cap)
                .add("endpoints", 1)
                .update(self.table(), count_key(caller.key_id))?;
            let put = Expr::new().absent().put(self.table(), endpoint.item()?)?;
            let write = Write::new()
                .checked(EndpointCheck::Below(cap), count)
                .checked(EndpointCheck::IdFree, put);
            Ok(Step::Write(write, endpoint.record(Some(secret.clone()))))
        })
        .await
    }

    /// Applies `patch` to an endpoint `caller` may see: only the fields it
    /// carries, so the delivery's own writes (`failingSince`) stay.
    /// `enabled: true` clears `disabledReason` and `failingSince`.
    pub async fn update_webhook(
        &self,
        id: Id,
        patch: WebhookEndpointPatch,
        caller: &Caller,
    ) -> Result<WebhookEndpoint, DbError> {
        let patch = &patch;
        self.run("update webhook", move || async move {
            let mut endpoint = self.visible_webhook(id, caller).await?;
            let mut expr = Expr::new()
                .exists()
                .when_equal("ownerId", n(endpoint.owner_id));
            if let Some(url) = &patch.url {
                endpoint.url = url.clone();
                expr = expr.set("url", s(url.as_str()));
            }
            if let Some(events) = &patch.events {
                endpoint.events = events.iter().map(|t| t.as_str().to_string()).collect();
                let list = endpoint.events.iter().map(|e| s(e.as_str())).collect();
                expr = expr.set("events", AttributeValue::L(list));
            }
            match &patch.description {
                Some(Some(text)) => expr = expr.set("description", s(text_of(text)?)),
                Some(None) => expr = expr.remove("description"),
                None => {}
            }
            if let Some(description) = &patch.description {
                endpoint.description = description.clone();
            }
            expr = enable(expr, &mut endpoint, patch.enabled);
            let write = Write::new().checked(
                EndpointCheck::AsRead,
                expr.update(self.table(), key(id.get()))?,
            );
            Ok(Step::Write(write, endpoint.record(None)))
        })
        .await
    }

    /// Gives an endpoint a new secret, first in its list; the one it
    /// replaces retires in [`SECRET_OVERLAP_HOURS`], and ones already retired
    /// are dropped. Conditional on the secrets as read: of two rotations at
    /// once, the second reads again and keeps the first's secret beside it.
    pub async fn rotate_webhook_secret(
        &self,
        id: Id,
        caller: &Caller,
        secret: String,
        now: DateTime<Utc>,
    ) -> Result<WebhookEndpoint, DbError> {
        let secret = &secret;
        self.run("rotate webhook secret", move || async move {
            let endpoint = self.visible_webhook(id, caller).await?;
            let as_read = AttributeValue::L(secret_values(&endpoint.secrets)?);
            let secrets = rotated(&endpoint.secrets, secret.clone(), now);
            let expr = Expr::new()
                .exists()
                .when_equal("secrets", as_read)
                .set("secrets", AttributeValue::L(secret_values(&secrets)?));
            let write = Write::new().checked(
                EndpointCheck::AsRead,
                expr.update(self.table(), key(id.get()))?,
            );
            Ok(Step::Write(write, endpoint.record(Some(secret.clone()))))
        })
        .await
    }

    /// Deletes an endpoint `caller` may see, and counts it off its owner's.
    /// Its deliveries stay until they expire (30 days, the table's TTL).
    pub async fn delete_webhook(&self, id: Id, caller: &Caller) -> Result<(), DbError> {
        self.run("delete webhook", move || async move {
            let endpoint = self.visible_webhook(id, caller).await?;
            let delete = Expr::new()
                .exists()
                .when_equal("ownerId", n(endpoint.owner_id))
                .delete(self.table(), key(id.get()))?;
            let count = Expr::new()
                .add("endpoints", -1)
                .update(self.table(), count_key(endpoint.owner_id))?;
            let write = Write::new()
                .checked(EndpointCheck::AsRead, delete)
                .unchecked(count);
            Ok(Step::Write(write, ()))
        })
        .await
    }
}

/// The secrets after a rotation at `now`: `secret` first, the current one
/// retiring in a day, the still-retiring kept, the retired dropped.
pub fn rotated(secrets: &[StoredSecret], secret: String, now: DateTime<Utc>) -> Vec<StoredSecret> {
    let retires = time(now + Duration::hours(SECRET_OVERLAP_HOURS));
    let now = time(now);
    let kept = secrets.iter().filter_map(|old| match &old.retires_at {
        None => Some(StoredSecret {
            secret: old.secret.clone(),
            retires_at: Some(retires.clone()),
        }),
        Some(at) if at.as_str() > now.as_str() => Some(old.clone()),
        Some(_) => None,
    });
    let current = StoredSecret {
        secret,
        retires_at: None,
    };
    std::iter::once(current).chain(kept).collect()
}

fn secret_values(secrets: &[StoredSecret]) -> Result<Vec<AttributeValue>, DbError> {
    secrets
        .iter()
        .map(|secret| to_item(secret).map(AttributeValue::M))
        .collect()
}

fn text_of(description: &Description) -> Result<String, DbError> {
    match serde_json::to_value(description) {
        Ok(serde_json::Value::String(text)) => Ok(text),
        _ => Err(DbError::internal("a description is not text")),
    }
}

/// `enabled` set as the patch asks: resuming clears why it stopped and
/// since when it has failed; stopping by hand says so.
fn enable(expr: Expr, endpoint: &mut Endpoint, enabled: Option<bool>) -> Expr {
    match enabled {
        Some(true) => {
            endpoint.enabled = true;
            endpoint.disabled_reason = None;
            endpoint.failing_since = None;
            expr.set("enabled", AttributeValue::Bool(true))
                .remove("disabledReason")
                .remove("failingSince")
        }
        Some(false) if endpoint.enabled => {
            endpoint.enabled = false;
            let reason = "disabled by its owner";
            endpoint.disabled_reason = Some(reason.to_string());
            expr.set("enabled", AttributeValue::Bool(false))
                .set("disabledReason", s(reason))
        }
        _ => expr,
    }
}

impl Db {
    /// An endpoint by id, whoever owns it.
    pub async fn get_webhook(&self, id: Id) -> Result<Option<Endpoint>, DbError> {
        self.get_item(format!("WEBHOOK#{id}"), SK)
            .await?
            .map(from_item)
            .transpose()
    }

    /// An endpoint `caller` may see; another's is as missing (404).
    pub async fn visible_webhook(&self, id: Id, caller: &Caller) -> Result<Endpoint, DbError> {
        self.get_webhook(id)
            .await?
            .filter(|endpoint| endpoint.visible_to(caller))
            .ok_or_else(|| DbError::not_found("webhook", id))
    }

    /// A page of endpoints, highest id first: `owner`'s, or (None) all.
    pub async fn list_webhooks(
        &self,
        owner: Option<Id>,
        limit: usize,
        after: Option<u64>,
    ) -> Result<Page<Endpoint>, DbError> {
        let list = match owner {
            Some(owner) => KeyList::new("GSI4", owner_list(owner)),
            None => KeyList::new("GSI1", ALL.to_string()),
        };
        let page = keys_page(self, &list, limit, after).await?;
        let items = self
            .batch_get_consistent("list webhooks", page.items, None)
            .await?;
        let mut endpoints = items
            .into_iter()
            .map(from_item::<Endpoint>)
            .collect::<Result<Vec<_>, _>>()?;
        endpoints.sort_by(|a, b| b.id.cmp(&a.id));
        Ok(Page {
            items: endpoints,
            next_after: page.next_after,
        })
    }
}

/// The endpoint when it exists, is enabled and its owner's key is not
/// revoked; `None` otherwise.
pub async fn deliverable(
    client: &Client,
    table: &str,
    webhook_id: u64,
) -> Result<Option<Endpoint>, DbError> {
    let db = Db::new(client.clone(), table);
    let Some(endpoint) = db.get_item(format!("WEBHOOK#{webhook_id}"), SK).await? else {
        return Ok(None);
    };
    let endpoint: Endpoint = from_item(endpoint)?;
    let live = endpoint.enabled && owner_live(client, table, endpoint.owner_id).await?;
    Ok(live.then_some(endpoint))
}

async fn owner_live(client: &Client, table: &str, owner: Id) -> Result<bool, DbError> {
    let keys = KeyStore::new(client.clone(), table).with_layout(Layout::default());
    Ok(keys
        .find_by_id(owner)
        .await?
        .is_some_and(|key| !key.revoked))
}

/// Every deliverable endpoint that receives an event of `event_type`: the
/// order owner's own (an `order.*` type), and every staff endpoint.
/// Customers never receive non-order types or others' orders.
pub async fn subscribers(
    client: &Client,
    table: &str,
    event_type: &str,
    order_owner: Option<u64>,
) -> Result<Vec<Endpoint>, DbError> {
    let Some(event_type) = EventType::parse(event_type) else {
        return Ok(Vec::new());
    };
    let db = Db::new(client.clone(), table);
    let mut lists = vec![KeyList::new("GSI2", STAFF.to_string())];
    if let Some(owner) = order_owner
        .and_then(Id::new)
        .filter(|_| event_type.is_order())
    {
        lists.push(KeyList::new("GSI4", owner_list(owner)));
    }
    let mut keys: Vec<Item> = Vec::new();
    for list in &lists {
        let mut after = None;
        loop {
            let page = keys_page(&db, list, 100, after).await?;
            for key in page.items {
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
            match page.next_after {
                Some(next) => after = Some(next),
                None => break,
            }
        }
    }
    let items = db
        .batch_get_consistent("webhook subscribers", keys, None)
        .await?;
    let mut found = Vec::new();
    let mut owners: HashMap<Id, bool> = HashMap::new();
    for item in items {
        let endpoint: Endpoint = from_item(item)?;
        if !endpoint.enabled || !endpoint.receives(event_type, order_owner) {
            continue;
        }
        let live = match owners.get(&endpoint.owner_id) {
            Some(live) => *live,
            None => {
                let live = owner_live(client, table, endpoint.owner_id).await?;
                owners.insert(endpoint.owner_id, live);
                live
            }
        };
        if live {
            found.push(endpoint);
        }
    }
    found.sort_by_key(|e| e.id);
    Ok(found)
}
