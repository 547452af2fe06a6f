//! The keys a warm process has looked up: valid ones, and, apart from them,
//! keys that turned out unknown or revoked.
//!
//! The two are kept apart so that a flood of made-up keys costs honest
//! callers nothing: an unknown key never displaces a valid one (each side
//! makes room only among its own entries), and a repeated unknown key is
//! answered from here, without a look-up, until its entry expires. Both sides
//! are bounded; entries are trusted for `KEY_CACHE_SECONDS`.

use super::clock::UnixSeconds;
use super::keys::{ApiKeyHash, ApiKeyRecord};
use super::memory::fresh;
use std::collections::HashMap;
use std::time::Duration;

/// How many keys each side of the cache holds before it makes room.
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
    pub fn of(record: Option<ApiKeyRecord>) -> Lookup {
        match record {
            Some(record) if !record.revoked => Lookup::Valid(record),
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
#[derive(Default)]
pub(super) struct KeyCache {
    valid: HashMap<ApiKeyHash, (ApiKeyRecord, UnixSeconds)>,
    invalid: HashMap<ApiKeyHash, UnixSeconds>,
}

impl KeyCache {
    /// The look-up of `hash`, if one made within `ttl` of `now` is held.
    pub fn get(&self, hash: &ApiKeyHash, ttl: Duration, now: UnixSeconds) -> Option<Lookup> {
        if let Some((record, at)) = self.valid.get(hash) {
            return fresh(ttl, *at, now).then(|| Lookup::Valid(record.clone()));
        }
        let at = self.invalid.get(hash)?;
        fresh(ttl, *at, now).then_some(Lookup::Invalid)
    }

    /// Holds `lookup` of `hash`, made at `now`, making room on its side only.
    pub fn insert(&mut self, hash: ApiKeyHash, lookup: Lookup, ttl: Duration, now: UnixSeconds) {
        match lookup {
            Lookup::Valid(record) => {
                self.invalid.remove(&hash);
                make_room(&mut self.valid, |(_, at)| fresh(ttl, *at, now));
                self.valid.insert(hash, (record, now));
            }
            Lookup::Invalid => {
                self.valid.remove(&hash);
                make_room(&mut self.invalid, |at| fresh(ttl, *at, now));
                self.invalid.insert(hash, now);
            }
        }
    }

    #[cfg(test)]
    fn sizes(&self) -> (usize, usize) {
        (self.valid.len(), self.invalid.len())
    }
}

/// Makes room in a full side: expired look-ups go first, and if all are
/// fresh, the side starts afresh (still only its own entries).
fn make_room<V>(side: &mut HashMap<ApiKeyHash, V>, keep: impl Fn(&V) -> bool) {
    if side.len() >= KEY_CACHE_LIMIT {
        side.retain(|_, v| keep(v));
        if side.len() >= KEY_CACHE_LIMIT {
            side.clear();
        }
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
        })
    }

    #[test]
    fn made_up_keys_never_displace_a_valid_one() {
        let mut cache = KeyCache::default();
        assert!(record().is_some());
        let valid = ApiKeyHash::of("psk_valid");
        let lookup = Lookup::of(record());
        cache.insert(valid.clone(), lookup.clone(), TTL, 100);
        for n in 0..(3 * KEY_CACHE_LIMIT) {
            let made_up = ApiKeyHash::of(&format!("psk_made-up-{n}"));
            cache.insert(made_up, Lookup::Invalid, TTL, 101);
        }
        assert_eq!(cache.get(&valid, TTL, 102), Some(lookup));
        let (valid_held, invalid_held) = cache.sizes();
        assert_eq!(valid_held, 1);
        assert!(invalid_held <= KEY_CACHE_LIMIT);
    }

    #[test]
    fn an_unknown_key_is_remembered_as_unknown_until_its_entry_expires() {
        let mut cache = KeyCache::default();
        let unknown = ApiKeyHash::of("psk_unknown");
        assert_eq!(cache.get(&unknown, TTL, 100), None);
        cache.insert(unknown.clone(), Lookup::Invalid, TTL, 100);
        assert_eq!(cache.get(&unknown, TTL, 129), Some(Lookup::Invalid));
        assert_eq!(cache.get(&unknown, TTL, 130), None);
    }
}
