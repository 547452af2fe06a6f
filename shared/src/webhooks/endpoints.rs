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
//! GSI2 the staff endpoints (every event may go to them; the list follows
//! the key's role: [`follow_role`]). `GET /webhooks` reads its page from
//! the index alone, without the secrets ([`super::list`]).
//!
//! The count item makes the per-plan cap exact under concurrency: a creation
//! adds 1 on condition that the count is below the cap, in the transaction
//! that puts the endpoint; a deletion takes 1 off in the one that deletes it.

mod changes;
mod receivers;
mod roles;
mod validator;

use super::list::{items_page, KeyList};
use super::records::WebhookEndpoint;
use crate::db::query::Projection;
use crate::db::{from_item, record_fields, s, to_item, Db, DbError, Item, Page};
use crate::records::{Caller, Description, Id, Role};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::LazyLock;

pub use changes::{rotated, EndpointCheck, Rotation, SECRET_OVERLAP_HOURS};
pub use receivers::subscribers;
pub use roles::follow_role;

pub(crate) const SK: &str = "ENDPOINT";
/// GSI1's list of every endpoint.
const ALL: &str = "WEBHOOK";
/// GSI2's list of the staff endpoints.
pub(crate) const STAFF: &str = "WEBHOOKSTAFF";

pub(crate) fn key(id: u64) -> Item {
    HashMap::from([
        ("PK".to_string(), s(format!("WEBHOOK#{id}"))),
        ("SK".to_string(), s(SK)),
    ])
}

pub(crate) fn owner_list(owner: Id) -> String {
    format!("WEBHOOKOWNER#{owner}")
}

pub(crate) fn count_key(owner: Id) -> Item {
    HashMap::from([
        ("PK".to_string(), s(owner_list(owner))),
        ("SK".to_string(), s("WEBHOOKS")),
    ])
}

/// RFC 3339 with milliseconds, UTC: every stored instant, comparable as text.
pub fn time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// What an endpoint list reads: every field of an endpoint but its sealed
/// `secrets`, which no list opens or shows (contract 9: secrets are read
/// only to sign an attempt). An endpoint read so has no secrets.
pub(crate) static LISTED_ENDPOINT_FIELDS: LazyLock<Projection> = LazyLock::new(|| {
    let fields: Vec<&str> = record_fields::<Endpoint>()
        .iter()
        .copied()
        .filter(|field| *field != "secrets")
        .collect();
    Projection::of_attributes(&fields)
});

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
    /// How many partitions its deliveries spread over: the stack's count
    /// when it was registered (`WEBHOOK_DELIVERY_SHARDS`), kept for its
    /// life, since a delivery's key depends on it
    /// ([`super::deliveries::shard_of_event`]).
    #[serde(default = "super::deliveries::one_shard")]
    pub delivery_shards: u16,
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
            delivery_shards: _,
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
            receiving: None,
            not_receiving_reason: None,
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

    /// Whether `caller` may see it, and disable, enable or delete it: its
    /// owner, or staff.
    pub fn visible_to(&self, caller: &Caller) -> bool {
        caller.role == Role::Staff || self.owned_by(caller)
    }

    /// Whether `caller` is its own key: the only one that may say where its
    /// events go and hold its secret.
    pub fn owned_by(&self, caller: &Caller) -> bool {
        caller.key_id == self.owner_id
    }

    pub(crate) fn item(&self) -> Result<Item, DbError> {
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
        let fields = &LISTED_ENDPOINT_FIELDS;
        let page = items_page(self, &list, fields, limit, after, "list webhooks").await?;
        let mut endpoints = page
            .items
            .into_iter()
            .map(from_item::<Endpoint>)
            .collect::<Result<Vec<_>, _>>()?;
        endpoints.sort_by_key(|e| std::cmp::Reverse(e.id));
        Ok(Page {
            items: endpoints,
            next_after: page.next_after,
        })
    }
}
