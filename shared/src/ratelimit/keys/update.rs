//! A key identity's plan, role and limits changed in place (contract 4,
//! 1.2.0): the same id and secret, so its orders, endpoints, counters and
//! bans stay its own. Every process sees the change when its key cache
//! entry for the key ends (`KEY_CACHE_SECONDS`, at most 30 s): limits,
//! caps (open orders, webhook endpoints) and role are read from it.
//!
//! The write is conditional on what it changes being as read, the key live
//! (not revoked, not rotated away meanwhile): of an update racing another
//! update, a revocation or a rotation, none is lost. A rotation is
//! conditional the same way ([`as_read`]), so it never copies a record an
//! update has changed since.

use super::item::{as_read, item_of, key_of, CHANGED};
use super::{ApiKeyRecord, KeyRequestError, KeyStore};
use crate::db::expr::Expr;
use crate::db::{Check, DbError, OnFailure, Pause, Retry, Write, Written};
use crate::ratelimit::plan::Plan;
use crate::ratelimit::window::Limits;
use crate::records::{Id, Role};

/// What to change; `None` keeps what the key has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyChange {
    pub plan: Option<Plan>,
    pub role: Option<Role>,
    /// Per minute and per day (enterprise only).
    pub limits: Option<(u64, u64)>,
    pub max_open_orders: Option<u32>,
    pub max_webhooks: Option<u32>,
}

/// Why a key was not updated.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    #[error("no key has id {0}")]
    NotFound(Id),
    #[error("key {0} is revoked; a revoked key is not updated")]
    Revoked(Id),
    #[error("key {0} is a short-lived key; it is not updated")]
    ShortLived(Id),
    #[error(transparent)]
    Request(#[from] KeyRequestError),
    #[error("the key store failed")]
    Db(#[from] DbError),
}

impl KeyChange {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == KeyChange::default()
    }

    /// `record` as changed, under the rules of a new key: limits and caps
    /// of its own only on enterprise (a plan without leaves them), and an
    /// enterprise key keeps its own limits unless new ones are given.
    pub fn applied(&self, record: &ApiKeyRecord) -> Result<ApiKeyRecord, KeyRequestError> {
        let plan = self.plan.unwrap_or(record.plan);
        let was_enterprise = record.plan == Plan::Enterprise;
        let kept = |own: Option<u32>| own.filter(|_| was_enterprise);
        let (limits, max_open_orders, max_webhooks) = match plan.limits() {
            Some(limits) => {
                let own = self.limits.is_some()
                    || self.max_open_orders.is_some()
                    || self.max_webhooks.is_some();
                if own {
                    return Err(KeyRequestError::LimitsOnlyForEnterprise);
                }
                (limits, None, None)
            }
            None => {
                let limits = match self.limits {
                    Some((minute, day)) => Limits::enterprise(minute, day),
                    None if was_enterprise => Some(record.limits()),
                    None => None,
                };
                let limits = limits.ok_or(KeyRequestError::EnterpriseNeedsLimits)?;
                let open = self.max_open_orders.or(kept(record.max_open_orders));
                let webhooks = self.max_webhooks.or(kept(record.max_webhooks));
                match (open, webhooks) {
                    (Some(0), _) => return Err(KeyRequestError::NoOpenOrders),
                    (_, Some(0)) => return Err(KeyRequestError::NoWebhooks),
                    _ => (limits, open, webhooks),
                }
            }
        };
        Ok(ApiKeyRecord {
            plan,
            role: self.role.unwrap_or(record.role),
            per_minute: limits.per_minute,
            per_day: limits.per_day,
            max_open_orders,
            max_webhooks,
            ..record.clone()
        })
    }
}

/// The condition of an update's write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AsRead;

impl Check for AsRead {
    fn on_failure(self) -> OnFailure {
        OnFailure::ReadAgain
    }
}

impl KeyStore {
    /// Changes the key with this id as `change` says; answers its record.
    pub async fn update(&self, id: Id, change: &KeyChange) -> Result<ApiKeyRecord, UpdateError> {
        let mut retry = Retry::new("update key");
        loop {
            let live = self.by_id(id).await?.ok_or(UpdateError::NotFound(id))?;
            // On the live item only: a retiring secret's look-up reads it.
            let (hash, record) = (live.hash, live.record);
            if record.revoked {
                return Err(UpdateError::Revoked(id));
            }
            if record.expires_at.is_some() {
                return Err(UpdateError::ShortLived(id));
            }
            let updated = change.applied(&record)?;
            let item = item_of(&hash, &updated)?;
            let mut expr = as_read(Expr::new(), &hash, &record)?;
            for attribute in CHANGED {
                expr = match item.get(attribute) {
                    Some(value) => expr.set(attribute, value.clone()),
                    None => expr.remove(attribute),
                };
            }
            let update = expr.update(self.db.table(), key_of(&hash))?;
            match self.db.write(Write::new().checked(AsRead, update)).await? {
                Written::Done => return Ok(updated),
                Written::Failed(_) => retry.again(Pause::None).await?,
                Written::Conflict => retry.again(Pause::Backoff).await?,
            }
        }
    }
}
