//! An endpoint's conditional writes: its creation within its owner's cap,
//! a patch, a new secret, its deletion.

use super::{count_key, key, time, Endpoint, StoredSecret};
use crate::db::expr::Expr;
use crate::db::shards::Kind;
use crate::db::write::{Check, OnFailure, Step, Write};
use crate::db::{n, new_id, s, to_item, Changes, DbError};
use crate::records::{Caller, Description, Id};
use crate::rules::RuleViolation;
use crate::webhooks::records::{NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch};
use crate::webhooks::{secrets, subscriptions};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Duration, Utc};

/// How long a replaced secret keeps signing beside the new one.
pub const SECRET_OVERLAP_HOURS: i64 = 24;

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
    /// Registers an endpoint for `caller` with `secret` (stored sealed),
    /// unless the caller has its plan's most already. The answer, as an
    /// `Idempotency-Key`'s record keeps it, carries no secret: the handler
    /// adds it to this answer alone (section 9), so a replay has none.
    pub async fn create_webhook(
        &self,
        new: NewWebhookEndpoint,
        caller: &Caller,
        secret: &str,
        now: DateTime<Utc>,
    ) -> Result<WebhookEndpoint, DbError> {
        let new = &new;
        self.run("create webhook", move || async move {
            let id = new_id(now);
            let endpoint = Endpoint {
                id,
                owner_id: caller.key_id,
                owner_role: caller.role,
                url: new.url.clone(),
                events: new.events.iter().map(|t| t.as_str().to_string()).collect(),
                description: new.description.clone(),
                enabled: true,
                disabled_reason: None,
                secrets: vec![StoredSecret {
                    secret: sealed(id.get(), secret).await?,
                    retires_at: None,
                }],
                created_at: time(now),
                failing_since: None,
                delivery_shards: self.shards().count(Kind::Delivery),
            };
            let cap = caller.webhooks_cap;
            let count = Expr::new()
                .when_below("endpoints", cap)
                .add("endpoints", 1)
                .update(self.table(), count_key(caller.key_id))?;
            let put = Expr::new().absent().put(self.table(), endpoint.item()?)?;
            let write = Write::new()
                .checked(EndpointCheck::Below(cap), count)
                .checked(EndpointCheck::IdFree, put)
                .unchecked(subscriptions::changed(self.table())?);
            Ok(Step::Write(write, endpoint.record(None)))
        })
        .await
    }

    /// Applies `patch` to an endpoint `caller` may see: only the fields it
    /// carries, so the delivery's own writes (`failingSince`) stay. Under
    /// `If-Match`, only to the endpoint as the validator names it
    /// (validator.rs): 412 otherwise, held in the write's condition. Staff's
    /// reach over another's endpoint is `enabled` alone (section 9, 1.3.0):
    /// where its events go (`url`, `events`) and what its owner calls it
    /// (`description`) are its owner's, staff asking is 403, and the
    /// write's `ownerId` condition keeps that true of the item written.
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
            let owners_only =
                patch.url.is_some() || patch.events.is_some() || patch.description.is_some();
            if owners_only && !endpoint.owned_by(caller) {
                return Err(owner_only("change its url, events or description"));
            }
            self.check_endpoint_precondition(&endpoint)?;
            if patch.is_empty() {
                // Nothing to change (`{}`, or only unknown fields).
                return Ok(Step::Answer(endpoint.record(None)));
            }
            let expr = Expr::new()
                .exists()
                .when_equal("ownerId", n(endpoint.owner_id));
            let mut expr = self.endpoint_as_read(expr, &endpoint)?;
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
            let mut write = Write::new().checked(
                EndpointCheck::AsRead,
                expr.update(self.table(), key(id.get()))?,
            );
            if patch.events.is_some() || patch.enabled == Some(true) {
                // Who receives what changed: a fan-out's held lists are stale.
                write = write.unchecked(subscriptions::changed(self.table())?);
            }
            Ok(Step::Write(write, endpoint.record(None)))
        })
        .await
    }

    /// Gives an endpoint its owner asks for a new secret (staff asking
    /// for another's: 403, so only the receiver's own caller ever holds a
    /// secret it trusts), stored sealed and first in its list; the one it
    /// replaces signs beside it for `overlap` (none: retired at once).
    /// Conditional on the secrets as read: of two rotations at once, the
    /// second reads again and keeps the first's secret beside its own.
    /// The answer carries no secret; the handler adds it.
    pub async fn rotate_webhook_secret(
        &self,
        id: Id,
        caller: &Caller,
        secret: &str,
        rotation: Rotation,
    ) -> Result<WebhookEndpoint, DbError> {
        self.run("rotate webhook secret", move || async move {
            let endpoint = self.visible_webhook(id, caller).await?;
            if !endpoint.owned_by(caller) {
                return Err(owner_only("rotate or read its secret"));
            }
            let as_read = AttributeValue::L(secret_values(&endpoint.secrets)?);
            let new = sealed(id.get(), secret).await?;
            let secrets = rotated(&endpoint.secrets, new, rotation);
            let expr = Expr::new()
                .exists()
                .when_equal("secrets", as_read)
                .set("secrets", AttributeValue::L(secret_values(&secrets)?));
            let write = Write::new().checked(
                EndpointCheck::AsRead,
                expr.update(self.table(), key(id.get()))?,
            );
            Ok(Step::Write(write, endpoint.record(None)))
        })
        .await
    }

    /// Deletes an endpoint `caller` may see, and counts it off its owner's
    /// (under `If-Match`, as [`Changes::update_webhook`] holds it).
    /// Its deliveries stay until they expire (30 days, the table's TTL).
    pub async fn delete_webhook(&self, id: Id, caller: &Caller) -> Result<(), DbError> {
        self.run("delete webhook", move || async move {
            let endpoint = self.visible_webhook(id, caller).await?;
            self.check_endpoint_precondition(&endpoint)?;
            let delete = Expr::new()
                .exists()
                .when_equal("ownerId", n(endpoint.owner_id));
            let delete = self
                .endpoint_as_read(delete, &endpoint)?
                .delete(self.table(), key(id.get()))?;
            let count = Expr::new()
                .add("endpoints", -1)
                .update(self.table(), count_key(endpoint.owner_id))?;
            let write = Write::new()
                .checked(EndpointCheck::AsRead, delete)
                .unchecked(count)
                .unchecked(subscriptions::changed(self.table())?);
            Ok(Step::Write(write, ()))
        })
        .await
    }
}

/// When a rotation happens and how long the secret it replaces keeps
/// signing (`expireOldAfterSeconds`: 0 to [`SECRET_OVERLAP_HOURS`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rotation {
    pub at: DateTime<Utc>,
    pub overlap: Duration,
}

impl Rotation {
    /// The default: the replaced secret signs for [`SECRET_OVERLAP_HOURS`].
    pub fn at(at: DateTime<Utc>) -> Rotation {
        Rotation {
            at,
            overlap: Duration::hours(SECRET_OVERLAP_HOURS),
        }
    }
}

/// The secrets after `rotation`: `secret` first, and the current one
/// beside it until the overlap ends (none: dropped now). Older ones go, so
/// at most two sign at any time (section 9).
pub fn rotated(secrets: &[StoredSecret], secret: String, rotation: Rotation) -> Vec<StoredSecret> {
    let retires = time(rotation.at + rotation.overlap);
    let replaced = secrets
        .iter()
        .find(|old| old.retires_at.is_none())
        .filter(|_| rotation.overlap > Duration::zero())
        .map(|old| StoredSecret {
            secret: old.secret.clone(),
            retires_at: Some(retires),
        });
    let current = StoredSecret {
        secret,
        retires_at: None,
    };
    std::iter::once(current).chain(replaced).collect()
}

/// `secret` sealed for endpoint `webhook_id` (`secrets`); a key that cannot
/// seal is the service's fault (500, its cause logged, never the secret).
async fn sealed(webhook_id: u64, secret: &str) -> Result<String, DbError> {
    secrets::seal(webhook_id, secret)
        .await
        .map_err(DbError::internal)
}

fn secret_values(secrets: &[StoredSecret]) -> Result<Vec<AttributeValue>, DbError> {
    secrets
        .iter()
        .map(|secret| to_item(secret).map(AttributeValue::M))
        .collect()
}

fn owner_only(change: &'static str) -> DbError {
    DbError::OwnerOnly {
        kind: "webhook endpoint",
        change,
    }
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
