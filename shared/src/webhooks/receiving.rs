//! May this endpoint receive now, and if not, why (contract section 9,
//! "Authorization follows the key, now"): the one decision the fan-out, every
//! attempt and `GET /webhooks` take, from the endpoint as stored and its
//! key's current state, never from what the key was at registration.
//!
//! The key's state is its item (revoked, expired, gone, its role) and its
//! ban (the counter table's `bannedUntil`), each read at most once per
//! [`KeyStates`]' time-to-live (`KEY_CACHE_SECONDS`, at most 30 seconds, as
//! the API's key cache) for the fan-out and `GET /webhooks`, and at most
//! [`ATTEMPT_KEY_AGE`] before an attempt: a change reaches the fan-out
//! within the time-to-live, and every attempt that starts 5 seconds after
//! it.

use crate::config::Config;
use crate::db::query::Projection;
use crate::db::{classify, Db, DbError, Item, Layout};
use crate::ratelimit::keys::KeyStore;
use crate::records::{Id, Role};
use crate::webhooks::records::WebhookEndpoint;
use crate::webhooks::types::EventType;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};
use held_lists::HeldLists;
use std::collections::{BTreeSet, HashMap};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

/// Why an endpoint receives nothing now (`notReceivingReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotReceiving {
    /// Disabled: by its owner, on 410, or after 3 days of failures.
    Disabled,
    KeyRevoked,
    /// The key's item is gone (deleted, or expired and removed by TTL).
    KeyDeleted,
    /// A short-lived key past its end.
    KeyExpired,
    /// Banned until then: its pending deliveries wait for the ban's end.
    KeyBanned {
        until: DateTime<Utc>,
    },
}

impl NotReceiving {
    pub fn reason(self) -> &'static str {
        match self {
            NotReceiving::Disabled => "disabled",
            NotReceiving::KeyRevoked => "key_revoked",
            NotReceiving::KeyDeleted => "key_deleted",
            NotReceiving::KeyExpired => "key_expired",
            NotReceiving::KeyBanned { .. } => "key_banned",
        }
    }

    /// Every reason, as `notReceivingReason` spells them.
    pub const REASONS: [&'static str; 5] = [
        "disabled",
        "key_revoked",
        "key_deleted",
        "key_expired",
        "key_banned",
    ];
}

/// A key's state as far as its endpoints are concerned; `None` where a
/// key is looked up and has no item.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyState {
    pub role: Role,
    pub revoked: bool,
    /// A short-lived key's end (Unix seconds).
    pub expires_at: Option<i64>,
    pub banned_until: Option<DateTime<Utc>>,
}

/// The decision: the role the endpoint receives as now, or why it receives
/// nothing.
pub fn decide(
    enabled: bool,
    key: Option<&KeyState>,
    now: DateTime<Utc>,
) -> Result<Role, NotReceiving> {
    let Some(key) = key else {
        return Err(NotReceiving::KeyDeleted);
    };
    if key.revoked {
        return Err(NotReceiving::KeyRevoked);
    }
    if key.expires_at.is_some_and(|end| end <= now.timestamp()) {
        return Err(NotReceiving::KeyExpired);
    }
    if let Some(until) = key.banned_until.filter(|until| *until > now) {
        return Err(NotReceiving::KeyBanned { until });
    }
    if !enabled {
        return Err(NotReceiving::Disabled);
    }
    Ok(key.role)
}

/// Whether an endpoint of `owner` receiving as `role` takes an event of
/// `event_type` (section 9, "Who"): a customer its own orders' `order.*`
/// only, staff every type; each as `events` subscribes (empty: every type
/// it may receive).
pub fn takes(
    role: Role,
    owner: u64,
    events: &[String],
    event_type: EventType,
    order_owner: Option<u64>,
) -> bool {
    let allowed = match role {
        Role::Staff => true,
        Role::Customer => event_type.is_order() && order_owner == Some(owner),
    };
    allowed && (events.is_empty() || events.iter().any(|e| e == event_type.as_str()))
}

/// Sets `receiving` and `notReceivingReason` on endpoints as shown to a
/// caller, each as decided now: their owners' states read together
/// ([`KeyStates::states`]), so a page of a hundred owners' endpoints is a
/// bounded number of round trips, not three reads after one another per
/// owner.
pub async fn show(keys: &KeyStates, records: &mut [WebhookEndpoint]) -> Result<(), DbError> {
    let now = Utc::now();
    let owners: Vec<u64> = records.iter().map(|r| r.owner_id.get()).collect();
    let states = keys.states(&owners).await?;
    for record in records {
        let state = states.get(&record.owner_id.get()).and_then(Option::as_ref);
        let decided = decide(record.enabled, state, now);
        record.receiving = Some(decided.is_ok());
        record.not_receiving_reason = decided.err().map(|why| why.reason().to_string());
    }
    Ok(())
}

/// How old a key's state an attempt goes by at most: under the 5 seconds
/// within which section 9 (1.3.0) has every attempt obey a change of the
/// key, the margin for the read itself (its age counts from its start). A
/// process delivering steadily reads each owner's key about once in this
/// time, so a first attempt stays within its calls (docs/webhooks.md, "Cost").
pub const ATTEMPT_KEY_AGE: Duration = Duration::from_secs(4);

/// The most keys a process remembers; past it, it starts afresh.
const REMEMBERED_KEYS: usize = 10_000;

/// Key states, each read at most once per time-to-live.
pub struct KeyStates {
    keys: KeyStore,
    client: Client,
    limits_table: String,
    ttl: Duration,
    known: Mutex<HashMap<u64, (Instant, Option<KeyState>)>>,
    /// The endpoints of each list the fan-out reads (the staff-registered
    /// ones, GSI2 `WEBHOOKSTAFF`, and each order owner's), held as long as
    /// a key's state: the subscriptions' view. The fan-out reads a list once
    /// per time-to-live, not once per event (the staff list is one
    /// partition every event would read), and an event nobody takes costs
    /// no list read while its lists are held; every attempt reads its
    /// endpoint afresh, so a change an attempt must obey (disabled, a new
    /// URL or secret) is obeyed at once. Held for the subscriptions' version
    /// they were read at ([`crate::webhooks::subscriptions`]): another drops
    /// them, so a registration reaches the next fan-out.
    lists: Mutex<HeldLists>,
}

impl KeyStates {
    /// Keys in `table` (read in `layout`), bans in `limits_table`, each
    /// trusted for `ttl`.
    pub fn new(
        client: Client,
        table: &str,
        limits_table: &str,
        layout: Layout,
        ttl: Duration,
    ) -> KeyStates {
        KeyStates {
            keys: KeyStore::new(client.clone(), table).with_layout(layout),
            client,
            limits_table: limits_table.to_string(),
            ttl,
            known: Mutex::new(HashMap::new()),
            lists: Mutex::new(HeldLists::default()),
        }
    }

    /// As the functions are configured (`TABLE_NAME`, `RATE_LIMIT_TABLE_NAME`,
    /// `DATA_LAYOUT`, `KEY_CACHE_SECONDS`).
    pub fn of(client: Client, config: &Config) -> KeyStates {
        KeyStates::new(
            client,
            &config.table_name,
            &config.rate_limit_table_name,
            config.data_layout,
            config.limits.key_cache_ttl,
        )
    }

    /// Key `owner`'s state, as read within the time-to-live.
    pub async fn state(&self, owner: u64) -> Result<Option<KeyState>, DbError> {
        self.state_within(owner, self.ttl).await
    }

    /// Key `owner`'s state, as read at most `age` ago (and within the
    /// time-to-live), else read now. The age is the read's start, not its
    /// end: a change made while it was under way may be missing from it.
    pub async fn state_within(
        &self,
        owner: u64,
        age: Duration,
    ) -> Result<Option<KeyState>, DbError> {
        if let Some(known) = self.remembered(owner, age.min(self.ttl)) {
            return Ok(known);
        }
        let started = Instant::now();
        let state = self.read(owner).await?;
        self.remember(owner, started, state.clone());
        Ok(state)
    }

    /// Holds `owner`'s state as read `at` (the read's start: a change made
    /// while it was under way may be missing from it).
    fn remember(&self, owner: u64, at: Instant, state: Option<KeyState>) {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if known.len() >= REMEMBERED_KEYS {
            known.clear();
        }
        known.insert(owner, (at, state));
    }

    /// The states of `owners`, each as read within the time-to-live; those
    /// not held are read together: their keys by
    /// [`KeyStore::find_all_by_id`] and, beside those, their bans in one
    /// batch read a hundred (`BatchGetItem` of the counter table).
    pub async fn states(&self, owners: &[u64]) -> Result<HashMap<u64, Option<KeyState>>, DbError> {
        let mut states = HashMap::with_capacity(owners.len());
        let mut unread = BTreeSet::new();
        for &owner in owners {
            match self.remembered(owner, self.ttl) {
                Some(known) => {
                    states.insert(owner, known);
                }
                None => {
                    unread.insert(owner);
                }
            }
        }
        let ids: Vec<Id> = unread.iter().filter_map(|owner| Id::new(*owner)).collect();
        let started = Instant::now();
        let (records, bans) = futures::try_join!(self.keys.find_all_by_id(&ids), self.bans(&ids))?;
        for owner in unread {
            let state = Id::new(owner).and_then(|id| {
                records.get(&id).map(|record| KeyState {
                    role: record.role,
                    revoked: record.revoked,
                    expires_at: record.expires_at,
                    banned_until: bans.get(&id).copied(),
                })
            });
            self.remember(owner, started, state.clone());
            states.insert(owner, state);
        }
        Ok(states)
    }

    /// [`decide`] for an endpoint of `owner`, its key's state as held for
    /// the time-to-live: the fan-out's and `GET /webhooks`' bound.
    pub async fn decide(
        &self,
        enabled: bool,
        owner: u64,
        now: DateTime<Utc>,
    ) -> Result<Result<Role, NotReceiving>, DbError> {
        let state = self.state(owner).await?;
        Ok(decide(enabled, state.as_ref(), now))
    }

    /// [`decide`] for an attempt: the key's state read at most
    /// [`ATTEMPT_KEY_AGE`] ago, so an attempt that starts 5 seconds or more
    /// after a revocation, ban, demotion or deletion obeys it (section 9,
    /// 1.3.0) however long the cache holds states for the fan-out.
    pub async fn decide_for_attempt(
        &self,
        enabled: bool,
        owner: u64,
        now: DateTime<Utc>,
    ) -> Result<Result<Role, NotReceiving>, DbError> {
        let state = self.state_within(owner, ATTEMPT_KEY_AGE).await?;
        Ok(decide(enabled, state.as_ref(), now))
    }

    fn remembered(&self, owner: u64, age: Duration) -> Option<Option<KeyState>> {
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        let (at, state) = known.get(&owner)?;
        (at.elapsed() < age).then(|| state.clone())
    }

    async fn read(&self, owner: u64) -> Result<Option<KeyState>, DbError> {
        let Some(id) = Id::new(owner) else {
            return Ok(None);
        };
        let Some(record) = self.keys.find_by_id(id).await? else {
            return Ok(None);
        };
        Ok(Some(KeyState {
            role: record.role,
            revoked: record.revoked,
            expires_at: record.expires_at,
            banned_until: self.banned_until(id).await?,
        }))
    }

    /// The bans recorded for `ids` (some may be over), by key: one batch
    /// read a hundred keys.
    async fn bans(&self, ids: &[Id]) -> Result<HashMap<Id, DateTime<Utc>>, DbError> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let keys = ids
            .iter()
            .map(|id| Item::from([("PK".to_string(), AttributeValue::S(ban_key(*id)))]))
            .collect();
        let limits = Db::new(self.client.clone(), &self.limits_table);
        let read = limits
            .batch_get("read bans", keys, Some(&BAN_FIELDS))
            .await?;
        let mut bans = HashMap::new();
        for item in read {
            let id = match item.get("PK") {
                Some(AttributeValue::S(pk)) => {
                    pk.strip_prefix(BAN_PREFIX).and_then(|id| id.parse().ok())
                }
                _ => None,
            };
            if let (Some(id), Some(until)) = (id.and_then(Id::new), banned_until_of(&item)) {
                bans.insert(id, until);
            }
        }
        Ok(bans)
    }

    /// The key's ban, if one is recorded (it may be over).
    async fn banned_until(&self, id: Id) -> Result<Option<DateTime<Utc>>, DbError> {
        let got = self
            .client
            .get_item()
            .table_name(&self.limits_table)
            .key("PK", AttributeValue::S(ban_key(id)))
            .projection_expression("bannedUntil")
            // Consistent: an attempt's bound (ATTEMPT_KEY_AGE) counts from
            // this read, so it must see a ban stored before it began.
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| classify(&self.limits_table, e))?;
        Ok(got.item.as_ref().and_then(banned_until_of))
    }
}

/// The counter table's item that holds key `id`'s ban: its `PK`'s start.
const BAN_PREFIX: &str = "LIMIT#key:";

fn ban_key(id: Id) -> String {
    format!("{BAN_PREFIX}{id}")
}

/// What a batch read of bans reads: the key, to tell whose, and the ban.
static BAN_FIELDS: LazyLock<Projection> =
    LazyLock::new(|| Projection::of_attributes(&["PK", "bannedUntil"]));

/// A counter item's ban (`bannedUntil`, Unix seconds), if it has one.
fn banned_until_of(item: &Item) -> Option<DateTime<Utc>> {
    let until = match item.get("bannedUntil") {
        Some(AttributeValue::N(raw)) => raw.parse::<i64>().ok(),
        _ => None,
    };
    until.and_then(|at| DateTime::from_timestamp(at, 0))
}

mod held_lists;
#[cfg(test)]
mod tests;
