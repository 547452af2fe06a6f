//! API keys: issued once, stored only as SHA-256 hashes, looked up by hash.
//!
//! A key is an item in the data table (not the counter table, so a counter
//! table outage can still serve authenticated requests when `fail_open`):
//!
//! | PK | SK | GSI1PK | id | other attributes |
//! |---|---|---|---|---|
//! | `APIKEY#<sha256 hex of the key>` | `APIKEY` | `APIKEY` | key id (number) | `plan`, `perMinute`/`perDay` (enterprise only), `role` (absent on keys made before roles: `customer`), `name`, `createdAt`, `rotatedAt`, `revoked`, `retiring`/`retiringUntil` (while an old secret retires) |
//!
//! A short-lived key ([`NewApiKey::short_lived`], the pre-traffic check's)
//! is a free customer key with an `expiresAt` (the table's TTL attribute, in
//! Unix seconds) and neither `GSI1PK` nor `role`: it is in no key list, and
//! its item has only the attributes the hook's IAM lets it write. TTL deletes
//! an item only within about 48 hours of its time, so a look-up treats a key
//! past its `expiresAt` as unknown ([`ApiKeyRecord::expired`]).
//!
//! The id is the key's identity: counters, bans and orders belong to it, not
//! to the secret. Rotating a key ([`KeyStore::rotate`]) writes the same
//! record under a new secret's hash and deletes the old item in one
//! transaction, so the identity keeps everything and never has two live
//! secrets. A rotation that keeps the old secret for a while
//! ([`KeyStore::rotate_keeping_old`], at most 7 days) turns the old item
//! into a pointer to the new one instead ([`retiring`]): the old secret's
//! look-up answers the live item's state, so a revocation or an update
//! reaches both secrets. Updating a key ([`KeyStore::update`]) changes its
//! plan, role and limits in place, under the same secret.
//!
//! A request's look-up is one consistent `GetItem` by hash (cached by the
//! limiter, role included: authorising costs no further call); a retiring
//! secret's is two, its pointer and then the live item. The admin tool
//! lists keys, and finds one by id, with a `Query` on GSI1 (`GSI1PK = APIKEY`,
//! sort key `id`), never a scan, then reads each item itself with a consistent
//! `GetItem`: GSI1 does not project `role` or `rotatedAt`, and may lag a
//! rotation. Items are written and read through `serde_dynamo` (`item`);
//! the store is in `store`.

mod item;
pub mod retiring;
mod rotate;
mod short_lived;
mod store;
mod update;

use super::plan::Plan;
use super::window::Limits;
use crate::records::{Caller, Id, Role};
use chrono::{DateTime, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};

pub use retiring::{KeepOldFor, KeepOldForError};
pub use rotate::{RotateError, Rotated};
pub use store::KeyStore;
pub use update::{KeyChange, UpdateError};

/// What every issued key starts with, so a leaked one is recognisable.
const PREFIX: &str = "psk_";

/// The base64url characters (no padding) of an issued key's 256 random bits.
const SECRET_CHARS: usize = 43;

/// Whether `key` has the form of an issued key: [`PREFIX`] and 43 base64url
/// characters. Anything else cannot be one, so it is refused without a
/// look-up (and without hashing it).
pub fn is_well_formed(key: &str) -> bool {
    key.len() == PREFIX.len() + SECRET_CHARS
        && key.starts_with(PREFIX)
        && key.as_bytes()[PREFIX.len()..]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The SHA-256 of a key, in lower-case hex: the only form a key is stored in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApiKeyHash(String);

impl ApiKeyHash {
    pub fn of(key: &str) -> ApiKeyHash {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let digest = Sha256::digest(key.as_bytes());
        let mut hex = String::with_capacity(2 * digest.len());
        for byte in digest {
            hex.push(char::from(HEX[usize::from(byte >> 4)]));
            hex.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
        ApiKeyHash(hex)
    }

    /// The hash of the key a request sent, made once per request; `None`
    /// for no key or a string that cannot be one ([`is_well_formed`]: it is
    /// not hashed at all).
    pub fn presented(key: Option<&str>) -> Option<ApiKeyHash> {
        key.filter(|key| is_well_formed(key)).map(ApiKeyHash::of)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A key as stored, without its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyRecord {
    /// The key identity: it survives rotation.
    pub id: Id,
    pub plan: Plan,
    pub role: Role,
    pub per_minute: u64,
    pub per_day: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub created_at: String,
    /// When the key last got a new secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rotated_at: Option<String>,
    pub revoked: bool,
    /// Enterprise only: the most incomplete orders the key may hold at once
    /// (absent: [`Plan::ENTERPRISE_OPEN_ORDERS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_open_orders: Option<u32>,
    /// Short-lived keys only: the Unix second from which the key is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// Enterprise only: the most webhook endpoints the key may have
    /// (absent: [`Plan::ENTERPRISE_WEBHOOKS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_webhooks: Option<u32>,
    /// A look-up of a retiring secret only ([`retiring`]): the Unix second
    /// from which that secret is unknown. The key identity and its live
    /// secret go on; everything else is the live item's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retires_at: Option<i64>,
}

impl ApiKeyRecord {
    /// Whether the key has expired at `now` (Unix seconds): then it is
    /// unknown, whether or not TTL has deleted its item yet.
    pub fn expired(&self, now: i64) -> bool {
        short_lived::expired(self.expires_at, now) || self.retires_at.is_some_and(|end| end <= now)
    }

    /// The Unix second from which the secret looked up stops working, if
    /// it does: a short-lived key's expiry, or a retiring secret's end.
    pub fn secret_ends_at(&self) -> Option<i64> {
        self.expires_at.or(self.retires_at)
    }

    pub fn limits(&self) -> Limits {
        Limits::new(self.per_minute, self.per_day)
    }

    /// Who calls with this key.
    pub fn caller(&self) -> Caller {
        Caller {
            key_id: self.id,
            role: self.role,
            open_orders_cap: match self.role {
                Role::Staff => None,
                Role::Customer => Some(self.open_orders_cap()),
            },
            webhooks_cap: self.webhooks_cap(),
        }
    }

    /// The most webhook endpoints this key may have (contract 9).
    pub fn webhooks_cap(&self) -> u32 {
        self.plan
            .webhooks_cap()
            .or(self.max_webhooks)
            .unwrap_or(Plan::ENTERPRISE_WEBHOOKS)
    }

    /// The most incomplete orders a customer with this key may hold.
    pub fn open_orders_cap(&self) -> u32 {
        self.plan
            .open_orders_cap()
            .or(self.max_open_orders)
            .unwrap_or(Plan::ENTERPRISE_OPEN_ORDERS)
    }
}

/// A freshly created key: the only time its secret exists outside the caller.
#[derive(Debug, Clone, Serialize)]
pub struct IssuedKey {
    #[serde(flatten)]
    pub record: ApiKeyRecord,
    pub key: String,
}

/// Why a key cannot be created as asked.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyRequestError {
    #[error("an enterprise key needs --per-minute and --per-day, both at least 1")]
    EnterpriseNeedsLimits,
    #[error("only enterprise keys carry their own limits")]
    LimitsOnlyForEnterprise,
    #[error("--max-open-orders is at least 1")]
    NoOpenOrders,
    #[error("--max-webhooks is at least 1")]
    NoWebhooks,
}

/// What a new key is to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewApiKey {
    plan: Plan,
    limits: Limits,
    role: Role,
    name: Option<String>,
    max_open_orders: Option<u32>,
    expires_at: Option<i64>,
    max_webhooks: Option<u32>,
}

impl NewApiKey {
    /// A key of `plan`; `own_limits` (per minute, per day) are required for
    /// enterprise and not allowed for the other plans.
    pub fn new(
        plan: Plan,
        own_limits: Option<(u64, u64)>,
        name: Option<String>,
    ) -> Result<NewApiKey, KeyRequestError> {
        let limits = match (plan.limits(), own_limits) {
            (Some(limits), None) => limits,
            (Some(_), Some(_)) => return Err(KeyRequestError::LimitsOnlyForEnterprise),
            (None, Some((minute, day))) => {
                Limits::enterprise(minute, day).ok_or(KeyRequestError::EnterpriseNeedsLimits)?
            }
            (None, None) => return Err(KeyRequestError::EnterpriseNeedsLimits),
        };
        Ok(NewApiKey {
            plan,
            limits,
            role: Role::default(),
            name,
            max_open_orders: None,
            expires_at: None,
            max_webhooks: None,
        })
    }

    /// A free customer key that is unknown from `expires_at` on and in no
    /// key list: what the pre-traffic check makes for each run, so that no
    /// long-lived secret exists for it.
    pub fn short_lived(name: impl Into<String>, expires_at: DateTime<Utc>) -> NewApiKey {
        NewApiKey {
            plan: Plan::Free,
            limits: Limits::FREE,
            role: Role::Customer,
            name: Some(name.into()),
            max_open_orders: None,
            expires_at: Some(expires_at.timestamp()),
            max_webhooks: None,
        }
    }

    /// The same key holding at most `cap` incomplete orders: enterprise only
    /// (the other plans' caps are the plan's).
    pub fn with_max_open_orders(self, cap: u32) -> Result<NewApiKey, KeyRequestError> {
        if self.plan != Plan::Enterprise {
            return Err(KeyRequestError::LimitsOnlyForEnterprise);
        }
        if cap == 0 {
            return Err(KeyRequestError::NoOpenOrders);
        }
        Ok(NewApiKey {
            max_open_orders: Some(cap),
            ..self
        })
    }

    /// The same key with at most `cap` webhook endpoints: enterprise only
    /// (the other plans' caps are the plan's).
    pub fn with_max_webhooks(self, cap: u32) -> Result<NewApiKey, KeyRequestError> {
        if self.plan != Plan::Enterprise {
            return Err(KeyRequestError::LimitsOnlyForEnterprise);
        }
        if cap == 0 {
            return Err(KeyRequestError::NoWebhooks);
        }
        Ok(NewApiKey {
            max_webhooks: Some(cap),
            ..self
        })
    }

    /// The same key with `role` (a customer's unless set).
    pub fn with_role(self, role: Role) -> NewApiKey {
        NewApiKey { role, ..self }
    }
}

/// Ids shown to people are the key's numeric id.
pub fn parse_key_id(raw: &str) -> Option<Id> {
    Id::parse_param(raw, "id").ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_stored_as_its_sha256() {
        assert_eq!(
            ApiKeyHash::of("abc").as_str(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn only_the_issued_form_is_a_key() {
        let issued = format!("{PREFIX}{}", "A".repeat(SECRET_CHARS));
        assert!(is_well_formed(&issued));
        assert!(is_well_formed(
            "psk_0123456789abcdefghijklmnopqrstuvwxyzABCDE-_"
        ));
        for not_a_key in [
            "psk_".to_string(),
            format!("{PREFIX}{}", "A".repeat(SECRET_CHARS - 1)),
            format!("{PREFIX}{}", "A".repeat(SECRET_CHARS + 1)),
            format!("pk_{}", "A".repeat(SECRET_CHARS + 1)),
            format!("{PREFIX}{}=", "A".repeat(SECRET_CHARS - 1)),
            format!("{PREFIX}{}+", "A".repeat(SECRET_CHARS - 1)),
            format!("{PREFIX}{}é", "A".repeat(SECRET_CHARS - 2)),
        ] {
            assert!(!is_well_formed(&not_a_key), "{not_a_key}");
        }
    }

    #[test]
    fn only_enterprise_keys_carry_limits() {
        assert!(NewApiKey::new(Plan::Pro, None, None).is_ok());
        assert_eq!(
            NewApiKey::new(Plan::Pro, Some((1, 1)), None).unwrap_err(),
            KeyRequestError::LimitsOnlyForEnterprise
        );
        assert_eq!(
            NewApiKey::new(Plan::Enterprise, None, None).unwrap_err(),
            KeyRequestError::EnterpriseNeedsLimits
        );
        let key = NewApiKey::new(Plan::Enterprise, Some((10, 20)), None);
        assert_eq!(key.map(|k| k.limits), Ok(Limits::new(10, 20)));
    }

    #[test]
    fn only_enterprise_keys_carry_their_open_orders_cap() -> Result<(), KeyRequestError> {
        let free = NewApiKey::new(Plan::Free, None, None)?;
        assert_eq!(
            free.with_max_open_orders(50).unwrap_err(),
            KeyRequestError::LimitsOnlyForEnterprise
        );
        let enterprise = NewApiKey::new(Plan::Enterprise, Some((10, 20)), None)?;
        assert_eq!(
            enterprise.clone().with_max_open_orders(0).unwrap_err(),
            KeyRequestError::NoOpenOrders
        );
        assert_eq!(
            enterprise.with_max_open_orders(5_000)?.max_open_orders,
            Some(5_000)
        );
        Ok(())
    }

    #[test]
    fn a_retiring_secret_works_until_its_end_however_far_ahead() {
        let record = ApiKeyRecord {
            id: Id::clamped(42),
            plan: Plan::Pro,
            role: Role::Staff,
            per_minute: 300,
            per_day: 10_000,
            name: None,
            created_at: "2030-01-01T00:00:00Z".into(),
            rotated_at: None,
            revoked: false,
            max_open_orders: None,
            expires_at: None,
            max_webhooks: None,
            retires_at: Some(1_000 + 7 * 86_400),
        };
        // Seven days ahead is no short-lived key's hour: it is not refused.
        assert!(!record.expired(1_000));
        assert!(!record.expired(1_000 + 7 * 86_400 - 1));
        assert!(record.expired(1_000 + 7 * 86_400));
        assert_eq!(record.secret_ends_at(), Some(1_000 + 7 * 86_400));
        let live = ApiKeyRecord {
            retires_at: None,
            ..record
        };
        assert!(!live.expired(i64::MAX));
        assert_eq!(live.secret_ends_at(), None);
    }

    #[test]
    fn a_key_is_a_customers_unless_made_staff() {
        let key = NewApiKey::new(Plan::Free, None, None).map(|k| k.role);
        assert_eq!(key, Ok(Role::Customer));
        let key = NewApiKey::new(Plan::Free, None, None).map(|k| k.with_role(Role::Staff));
        assert_eq!(key.map(|k| k.role), Ok(Role::Staff));
    }
}
