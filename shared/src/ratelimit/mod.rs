//! API keys and rate limits: who is calling, and may they.
//!
//! [`RateLimiter::admit`] is called by the wrapper for every request. It
//! finds the caller's key (by SHA-256, cached), picks the subject that is
//! counted (the key's identity, or the source IP on the free plan when there
//! is no valid key), counts the request in the counter table and says what
//! the response must carry: the rate-limit headers ([`RateStatus`]), and
//! either the caller ([`Verdict::Admitted`], with the key's id and role, for
//! the wrapper's role check) or the [`Refusal`] (429 `RATE_LIMITED`, 429
//! `API_KEY_BANNED`, 429 `SOURCE_REFUSED` for a key refused unread with its
//! source, 503 `SERVICE_UNAVAILABLE`), which the HTTP edge turns into the
//! Error record.
//!
//! - [`clock`], [`plan`], [`window`], [`status`]: the time, plans, the limits
//!   in fixed UTC windows and usage of them (whether another request fits is
//!   decided once, in [`window::Usage::exhausted`]), the numbers a response
//!   shows (pure; `http::rate_limit` renders them as headers);
//! - [`keys`]: keys in the data table (`APIKEY#<sha256>`), for requests and the admin tool;
//! - [`counter`]: the counter table's conditional updates, refusals and bans;
//! - `admission`: [`RateLimiter::admit`], the decision for one request (the
//!   only meaning of "admit" here: the counter table *counts*);
//! - `key_cache`: the keys a warm process has looked up, valid and invalid apart;
//! - `memory`: what a warm process remembers of each subject (both bounded,
//!   least recently used out first);
//! - `refusals`: what follows a 429 (reporting refusals, banning).
//!
//! # DynamoDB calls per request
//!
//! | case | calls |
//! |---|---|
//! | admitted, key known to this process | 1 `UpdateItem` (counter table) |
//! | key not yet seen by this process, or its cache entry older than `KEY_CACHE_SECONDS` | + 1 consistent `GetItem` (data table), before the count ([`RateLimiter::look_up_ahead`]); unknown and revoked keys are cached apart from valid ones, so a repeated one costs no look-up and made-up keys never push a valid one out; the role comes with the key, so authorising costs nothing more |
//! | a valid key whose look-up is past half of `KEY_CACHE_SECONDS` | + 1 consistent `GetItem` beside the count, not before it: a key in use never expires from the cache |
//! | first call of a subject in a process, first call in a minute or day (whoever opened it) | the same 1 `UpdateItem`: one update counts in any window (`counter`'s slots), so there is nothing to guess |
//! | this process's clock behind the minute another instance counted, or the subject idle a multiple of 5,544 minutes | + 1 `UpdateItem` after a failed one, whose `ALL_OLD` item says which |
//! | refused (429), first time this process sees the window exhausted | 1 failed conditional `UpdateItem` |
//! | refused, exhaustion already known here | none; every `REFUSAL_FLUSH_EVERY`th refusal, or sooner when a ban may be due, 1 `UpdateItem` reports them (+ 1 `UpdateItem` to ban) |
//! | banned, known here | none; re-checked with 1 failed `UpdateItem` every `KEY_CACHE_SECONDS` |
//! | no key / unknown / revoked key | as above, on the source's subject (an IPv4 address or an IPv6 /64) |
//! | a string that cannot be a key (not `psk_` + 43 base64url characters) | no look-up (no hash either); counted on the source's subject |
//! | a key not known valid here, from a source refused or banned here | none: no look-up, refused like the source (refusals reported as above) |
//!
//! A refused request writes nothing and reads at most one record or page:
//! the edge runs a handler beside its count only when this process knows
//! the caller and has no sign that its window is exhausted
//! ([`RateLimiter::known_with_room`]), and then only the handler's first
//! read goes out before the count admits it (`sdk::gate`); should other
//! instances have used the room meanwhile, the handler is dropped.
//! Admin tool: create 1 `PutItem`; list 1 `Query` per page of GSI1 and 1
//! consistent `GetItem` per key (GSI1 does not project `role`); rotate 1
//! `Query` + 1 `GetItem` + 1 `TransactWriteItems` (put the new item, delete
//! the old, or with `--keep-old-for` make it a pointer to the new; and
//! delete a secret an earlier rotation kept); revoke, and unban, 1 `Query` + 1 `GetItem` + 1 `UpdateItem`.
//!
//! # Trade-offs
//!
//! - Limits are exact: only conditional updates count, and a refused request
//!   writes nothing. A process that knows a window is exhausted answers 429
//!   from memory until the window ends; counts never go down within a window,
//!   so that answer is always right.
//! - Refusals answered from memory are reported in batches. A process reports
//!   as soon as its own pending refusals plus the table's last known count
//!   could reach `BAN_THRESHOLD`, so one process alone bans exactly on time.
//!   With several warm processes each may hold up to `REFUSAL_FLUSH_EVERY - 1`
//!   unreported refusals, so a ban can come that many refusals per process
//!   late (or not at all, if the minute ends first). Bans are a deterrent, not
//!   a limit: the limit itself stays exact.
//! - Revocations, rotations, unbans and ban ends elsewhere take effect within
//!   `KEY_CACHE_SECONDS` (the ban is remembered no longer than that): a
//!   rotated key's old secret works on a warm process until its cache entry
//!   expires. Counters and bans belong to the key's id, so a rotated key
//!   keeps them.
//! - If the counter table fails, requests are refused with 503 (or, with
//!   `RATE_LIMIT_FAILURE_MODE=open`, served uncounted with a warning); the
//!   headers then show the minute window as if nothing were counted. Keys live
//!   in the data table so that the open mode still authenticates; a key that
//!   cannot be looked up (data table failing) is 503 in either mode.
//! - The refusal that reaches `BAN_THRESHOLD` is still answered `RATE_LIMITED`;
//!   the ban (`API_KEY_BANNED`) applies from the next request. Sources without
//!   a valid key are banned the same way, per IP.

mod admission;
pub mod clock;
pub mod counter;
mod key_cache;
pub mod keys;
mod memory;
pub mod plan;
mod refusals;
pub mod status;
pub mod window;

use crate::config::LimitsConfig;
use crate::records::{Caller, Id};
use aws_sdk_dynamodb::Client;
use counter::{CounterError, Counters, Subject};
use key_cache::KeyCache;
use keys::{ApiKeyHash, ApiKeyRecord, KeyStore};
use memory::{lock, Memory, Subjects};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

pub use admission::{Admission, Refusal, Verdict};
pub use clock::{Clock, ManualClock, SystemClock, UnixSeconds};
pub use counter::create_counter_table;
pub use key_cache::KEY_CACHE_LIMIT;
pub use memory::MEMORY_LIMIT;
pub use plan::Plan;
pub use status::RateStatus;
pub use window::Limits;

/// Keys, counters and what this warm process remembers of them.
pub struct RateLimiter {
    keys: KeyStore,
    counters: Counters,
    config: LimitsConfig,
    clock: Arc<dyn Clock>,
    key_cache: Mutex<KeyCache>,
    subjects: Mutex<Subjects>,
}

impl RateLimiter {
    pub fn new(
        client: Client,
        data_table: &str,
        counter_table: &str,
        config: LimitsConfig,
        clock: Arc<dyn Clock>,
    ) -> RateLimiter {
        RateLimiter {
            keys: KeyStore::new(client.clone(), data_table),
            counters: Counters::new(client, counter_table),
            config,
            clock,
            key_cache: Mutex::new(KeyCache::default()),
            subjects: Mutex::new(Subjects::default()),
        }
    }

    /// This limiter, its keys read from a data table stored in `layout`.
    pub fn with_layout(self, layout: crate::db::Layout) -> RateLimiter {
        RateLimiter {
            keys: self.keys.with_layout(layout),
            ..self
        }
    }

    /// The key store, as the admin tool uses it.
    pub fn keys(&self) -> &KeyStore {
        &self.keys
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Lifts the ban of key `id` (and forgets its earlier bans). `Ok(false)`
    /// when it was not banned. Other warm processes notice within
    /// `KEY_CACHE_SECONDS`; this one at once.
    pub async fn unban(&self, id: Id) -> Result<bool, CounterError> {
        let subject = Subject::Key(id);
        let was_banned = self.counters.unban(&subject, self.clock.now()).await?;
        lock(&self.subjects).forget(&subject);
        Ok(was_banned)
    }

    /// What this process knows, without asking DynamoDB, of a request from
    /// `api_key` at `source_ip`: `Some` when the key's look-up is fresh in
    /// the cache (or no key was sent) and the counted subject's window is
    /// known to have room. The edge serves a read while counting only then.
    /// `key` is the hash of the key sent ([`ApiKeyHash::presented`]).
    pub fn known_with_room(
        &self,
        key: Option<&ApiKeyHash>,
        source_ip: Option<IpAddr>,
    ) -> Option<Known> {
        let now = self.clock.now();
        let record = match key {
            None => None,
            Some(hash) => {
                let ttl = self.config.key_cache_ttl;
                lock(&self.key_cache).get(hash, ttl, now)?.into_record()
            }
        };
        let (subject, limits) = admission::subject_of(record.as_ref(), source_ip);
        let room = lock(&self.subjects)
            .get_mut(&subject)
            .is_none_or(|memory| memory.has_room(limits, now));
        let caller = record.as_ref().map(ApiKeyRecord::caller);
        room.then_some(Known { caller })
    }

    /// Runs `f` on what this process remembers of `subject`.
    fn remember<R>(&self, subject: &Subject, f: impl FnOnce(&mut Memory) -> R) -> R {
        f(lock(&self.subjects).entry(subject))
    }

    /// Runs `f` on what this process remembers of `subject`, if anything.
    fn recall<R>(&self, subject: &Subject, f: impl FnOnce(&mut Memory) -> R) -> Option<R> {
        lock(&self.subjects).get_mut(subject).map(f)
    }
}

/// A request whose caller and room this process knows (see
/// [`RateLimiter::known_with_room`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    /// The key's identity and role; `None` for no key, or an unknown or
    /// revoked one.
    pub caller: Option<Caller>,
}
