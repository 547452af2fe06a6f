//! Short-lived keys (the pre-traffic check's, [`super::NewApiKey::short_lived`])
//! are harmless whatever their item says. The check's IAM lets it put key
//! items, and IAM limits an item's attribute names, not their values: an
//! item it put could claim any customer's `id`, any `plan`, no `expiresAt`.
//! So the look-up decides what such a key is, not the item: a reserved
//! identity that owns nothing, the free plan, a customer's role, and known
//! only while its expiry is at most an hour (and some clock skew) away.
//!
//! A key is short-lived when its item is in no key list (no `GSI1PK`, which
//! the check's IAM cannot write) or carries an expiry: the admin tool writes
//! every other key with both a list entry and no expiry.

use super::ApiKeyRecord;
use crate::ratelimit::plan::Plan;
use crate::ratelimit::window::Limits;
use crate::records::{Id, Role};

/// The identity every short-lived key acts as. No issued key has it: key
/// ids are milliseconds since 2024 shifted above random bits
/// ([`crate::db::new_id`]), so 1 never comes up after that epoch's first
/// millisecond. Nothing is stored under it, so it owns nothing.
pub const IDENTITY: u64 = 1;

/// The furthest ahead a short-lived key's expiry may be, at a look-up, for
/// the key to be known: the check's keys live an hour; five minutes more for
/// function hosts whose clocks disagree.
pub const MAX_AHEAD_SECONDS: i64 = 3600 + 300;

/// Whether an item, in a key list or not (`listed`) and with `expires_at`,
/// holds a short-lived key.
pub(super) fn is_short_lived(listed: bool, expires_at: Option<i64>) -> bool {
    !listed || expires_at.is_some()
}

/// What a short-lived key is, from its item's `record`: only its name,
/// creation and revocation are the item's. An item with no expiry expires
/// at once.
pub(super) fn harmless(record: ApiKeyRecord) -> ApiKeyRecord {
    ApiKeyRecord {
        id: Id::clamped(IDENTITY),
        plan: Plan::Free,
        role: Role::Customer,
        per_minute: Limits::FREE.per_minute,
        per_day: Limits::FREE.per_day,
        max_open_orders: None,
        max_webhooks: None,
        expires_at: Some(record.expires_at.unwrap_or(i64::MIN)),
        ..record
    }
}

/// Whether a key with `expires_at` is unknown at `now` (Unix seconds):
/// expired, or (a short-lived key) set to live longer than any such key may.
pub(super) fn expired(expires_at: Option<i64>, now: i64) -> bool {
    expires_at.is_some_and(|at| at <= now || at > now.saturating_add(MAX_AHEAD_SECONDS))
}

#[cfg(test)]
mod tests;
