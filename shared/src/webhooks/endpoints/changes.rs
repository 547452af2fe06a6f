//! An endpoint's conditional writes: its creation within its owner's cap,
//! a patch, a new secret, its deletion.

use super::{count_key, key, time, Endpoint, StoredSecret};
use crate::db::expr::Expr;
use crate::db::write::{Check, OnFailure, Step, Write};
use crate::db::{n, new_id, s, to_item, Changes, DbError};
use crate::records::{Caller, Description, Id};
use crate::rules::RuleViolation;
use crate::webhooks::records::{NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch};
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
            if patch.is_empty() {
                // Nothing to change (`{}`, or only unknown fields).
                return Ok(Step::Answer(endpoint.record(None)));
            }
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
