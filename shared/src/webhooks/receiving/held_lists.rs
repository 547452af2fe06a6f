//! The subscription lists the fan-out holds (`KeyStates::lists`), each for
//! the key cache's time-to-live and for the subscriptions' version it was
//! read at ([`crate::webhooks::subscriptions`]): a registration moves the
//! version, and the next fan-out reads the lists again.

use super::{KeyStates, REMEMBERED_KEYS};
use crate::db::Item;
use std::collections::HashMap;
use std::time::Instant;

/// The subscription lists held, and the subscriptions' version they were
/// read at.
#[derive(Default)]
pub(super) struct HeldLists {
    version: u64,
    lists: HashMap<String, (Instant, Vec<Item>)>,
}

impl KeyStates {
    /// The subscriptions are at `version` now (as a fan-out just read it):
    /// lists held at another are dropped.
    pub fn subscriptions_at(&self, version: u64) {
        let mut held = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        if held.version != version {
            held.lists.clear();
            held.version = version;
        }
    }

    /// The subscriptions' version the held lists are of: what a list about
    /// to be read is held at ([`KeyStates::hold_list`]).
    pub fn subscriptions_version(&self) -> u64 {
        self.lists.lock().unwrap_or_else(|e| e.into_inner()).version
    }

    /// The endpoint items of list `partition`, if read within the
    /// time-to-live and at the subscriptions' current version.
    pub fn held_list(&self, partition: &str) -> Option<Vec<Item>> {
        let held = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        let (at, items) = held.lists.get(partition)?;
        (at.elapsed() < self.ttl).then(|| items.clone())
    }

    /// Holds list `partition`'s items, read after the subscriptions were
    /// seen at `version`: not if they have been seen at another since (the
    /// items may be older than that change).
    pub fn hold_list(&self, partition: &str, version: u64, items: Vec<Item>) {
        if self.ttl.is_zero() {
            return;
        }
        let mut held = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        if held.version != version {
            return;
        }
        if held.lists.len() >= REMEMBERED_KEYS {
            held.lists.clear();
        }
        held.lists
            .insert(partition.to_string(), (Instant::now(), items));
    }
}
