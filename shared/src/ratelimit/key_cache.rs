//! The keys a warm process has looked up: valid ones, and, apart from them,
//! keys that turned out unknown or revoked.
//!
//! The two are kept apart so that a flood of made-up keys costs honest
//! callers nothing: an unknown key never displaces a valid one (each side
//! makes room only among its own entries), and a repeated unknown key is
//! answered from here, without a look-up, until its entry expires. Both sides
//! are bounded (the one used least recently goes first, in O(1)); entries
//! are trusted for `KEY_CACHE_SECONDS`.

use super::clock::UnixSeconds;
use super::keys::{ApiKeyHash, ApiKeyRecord};
use super::memory::{bounded, fresh};
use lru::LruCache;
use std::time::Duration;

/// How many keys each side of the cache holds.
pub const KEY_CACHE_LIMIT: usize = 10_000;

/// What a look-up found, as far as a request is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Lookup {
    /// A live key.
    Valid(ApiKeyRecord),
    /// No such key, or a revoked one: the request is counted per source IP.
    Invalid,
}

impl Lookup {
    /// What a look-up at `now` found: an expired key is as unknown as a
    /// revoked one (TTL deletes its item only within about 48 hours).
    pub fn of(record: Option<ApiKeyRecord>, now: UnixSeconds) -> Lookup {
        match record {
            Some(record) if !record.revoked && !record.expired(now) => Lookup::Valid(record),
            _ => Lookup::Invalid,
        }
    }

    pub fn into_record(self) -> Option<ApiKeyRecord> {
        match self {
            Lookup::Valid(record) => Some(record),
            Lookup::Invalid => None,
        }
    }
}

/// Look-ups, each with the instant it was made.
pub(super) struct KeyCache {
    valid: LruCache<ApiKeyHash, (ApiKeyRecord, UnixSeconds)>,
    invalid: LruCache<ApiKeyHash, UnixSeconds>,
}

impl Default for KeyCache {
    fn default() -> KeyCache {
        KeyCache {
            valid: bounded(KEY_CACHE_LIMIT),
            invalid: bounded(KEY_CACHE_LIMIT),
        }
    }
}

impl KeyCache {
    /// The look-up of `hash`, if one made within `ttl` of `now` is held; a
    /// key held as valid that has expired since is unknown from `now` on.
    pub fn get(&mut self, hash: &ApiKeyHash, ttl: Duration, now: UnixSeconds) -> Option<Lookup> {
        if let Some((record, at)) = self.valid.get(hash) {
            let lookup = Lookup::of(Some(record.clone()), now);
            return fresh(ttl, *at, now).then_some(lookup);
        }
        let at = self.invalid.get(hash)?;
        fresh(ttl, *at, now).then_some(Lookup::Invalid)
    }

    /// Whether the look-up of `hash`, a valid key's, is past half of `ttl`
    /// at `now`: time to read it again beside a request's count, so that it
    /// never expires while the key is in use.
    pub fn refresh_due(&self, hash: &ApiKeyHash, ttl: Duration, now: UnixSeconds) -> bool {
        self.valid
            .peek(hash)
            .is_some_and(|(_, at)| !fresh(ttl / 2, *at, now))
    }

    /// Holds `lookup` of `hash`, made at `now`; a full side forgets its own
    /// least recently used entry, never one of the other side.
    pub fn insert(&mut self, hash: ApiKeyHash, lookup: Lookup, now: UnixSeconds) {
        match lookup {
            Lookup::Valid(record) => {
                self.invalid.pop(&hash);
                self.valid.put(hash, (record, now));
            }
            Lookup::Invalid => {
                self.valid.pop(&hash);
                self.invalid.put(hash, now);
            }
        }
    }

    #[cfg(test)]
    fn sizes(&self) -> (usize, usize) {
        (self.valid.len(), self.invalid.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ratelimit::plan::Plan;
    use crate::records::{Id, Role};

    const TTL: Duration = Duration::from_secs(30);

    fn record() -> Option<ApiKeyRecord> {
        Some(ApiKeyRecord {
            id: Id::new(7)?,
            plan: Plan::Free,
            role: Role::Customer,
            per_minute: 60,
            per_day: 1_000,
            name: None,
            created_at: "2030-01-01T00:00:00Z".into(),
            rotated_at: None,
            revoked: false,
            max_open_orders: None,
            expires_at: None,
            max_webhooks: None,
            retires_at: None,
        })
    }

    #[test]
    fn made_up_keys_never_displace_a_valid_one() {
        let mut cache = KeyCache::default();
        assert!(record().is_some());
        let valid = ApiKeyHash::of("psk_valid");
        let lookup = Lookup::of(record(), 100);
        cache.insert(valid.clone(), lookup.clone(), 100);
        for n in 0..(3 * KEY_CACHE_LIMIT) {
            let made_up = ApiKeyHash::of(&format!("psk_made-up-{n}"));
            cache.insert(made_up, Lookup::Invalid, 101);
        }
        assert_eq!(cache.get(&valid, TTL, 102), Some(lookup));
        let (valid_held, invalid_held) = cache.sizes();
        assert_eq!(valid_held, 1);
        assert!(invalid_held <= KEY_CACHE_LIMIT);
    }

    #[test]
    fn a_key_is_unknown_from_its_expiry_on_even_when_cached() {
        let mut cache = KeyCache::default();
        let short = record().map(|r| ApiKeyRecord {
            expires_at: Some(110),
            ..r
        });
        let hash = ApiKeyHash::of("psk_short");
        let lookup = Lookup::of(short.clone(), 100);
        assert!(matches!(lookup, Lookup::Valid(_)));
        cache.insert(hash.clone(), lookup.clone(), 100);
        assert_eq!(cache.get(&hash, TTL, 109), Some(lookup));
        // Still within the cache's lifetime, but past the key's own.
        assert_eq!(cache.get(&hash, TTL, 110), Some(Lookup::Invalid));
        assert_eq!(Lookup::of(short, 110), Lookup::Invalid);
    }

    #[test]
    fn an_unknown_key_is_remembered_as_unknown_until_its_entry_expires() {
        let mut cache = KeyCache::default();
        let unknown = ApiKeyHash::of("psk_unknown");
        assert_eq!(cache.get(&unknown, TTL, 100), None);
        cache.insert(unknown.clone(), Lookup::Invalid, 100);
        assert_eq!(cache.get(&unknown, TTL, 129), Some(Lookup::Invalid));
        assert_eq!(cache.get(&unknown, TTL, 130), None);
    }
}
