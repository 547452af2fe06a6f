//! API keys and rate limits: who is calling, and may they.
//!
//! [`RateLimiter::admit`] is called by the wrapper for every request. It
//! finds the caller's key (by SHA-256, cached), picks the subject that is
//! counted (the key, or the source IP on the free plan when there is no valid
//! key), counts the request in the counter table and says what the response
//! must carry: the rate-limit headers ([`RateStatus`]) and, when refused, the
//! error (429 `RATE_LIMITED`, 429 `API_KEY_BANNED`, 503 `SERVICE_UNAVAILABLE`).
//!
//! - [`window`]: plans, fixed UTC windows, header choice, ban lengths (pure);
//! - [`keys`]: keys in the data table (`APIKEY#<sha256>`), for requests and the admin tool;
//! - [`counter`]: the counter table's conditional updates.
//!
//! # DynamoDB calls per request
//!
//! | case | calls |
//! |---|---|
//! | admitted, key known to this process | 1 `UpdateItem` (counter table) |
//! | key not yet seen by this process, or its cache entry older than `KEY_CACHE_SECONDS` | + 1 consistent `GetItem` (data table), unknown keys cached too |
//! | this process's guess of the window is stale (first call of a subject in a process; first call in a minute another instance opened) | + 1 failed conditional `UpdateItem`, whose `ALL_OLD` item picks the right variant |
//! | refused (429), first time this process sees the window exhausted | 1 failed conditional `UpdateItem` |
//! | refused, exhaustion already known here | none; every `REFUSAL_FLUSH_EVERY`th refusal, or sooner when a ban may be due, 1 `UpdateItem` reports them (+ 1 `UpdateItem` to ban) |
//! | banned, known here | none; re-checked with 1 failed `UpdateItem` every `KEY_CACHE_SECONDS` |
//! | no key / unknown / revoked key | as above, on the source IP's subject |
//!
//! For `GET` the count and the handler's data read run concurrently (see the
//! wrapper); the handler's response is dropped when the request is refused.
//! Admin tool: create 1 `PutItem`; list 1 `Query` per page of GSI1; revoke
//! and unban 1 `Query` + 1 `UpdateItem`.
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
//! - Revocations, unbans and ban ends elsewhere take effect within
//!   `KEY_CACHE_SECONDS` (the ban is remembered no longer than that).
//! - If the counter table fails, requests are refused with 503 (or, with
//!   `RATE_LIMIT_FAILURE_MODE=open`, served uncounted with a warning); the
//!   headers then show the minute window as if nothing were counted. Keys live
//!   in the data table so that the open mode still authenticates; a key that
//!   cannot be looked up (data table failing) is 503 in either mode.
//! - The refusal that reaches `BAN_THRESHOLD` is still answered `RATE_LIMITED`;
//!   the ban (`API_KEY_BANNED`) applies from the next request. Sources without
//!   a valid key are banned the same way, per IP.

pub mod counter;
pub mod keys;
pub mod window;

use crate::config::LimitsConfig;
use crate::db::DbError;
use crate::http::error::ApiError;
use aws_sdk_dynamodb::Client;
use counter::{Counted, CounterError, Counters, Stored, Subject, Variant};
use keys::{ApiKeyHash, ApiKeyRecord, KeyStore};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use window::{seconds_until, Clock, Limits, RateStatus, RateWindow, UnixSeconds, Usage};

pub use counter::create_counter_table;
pub use window::{ManualClock, Plan, SystemClock};

/// How many keys or subjects a process remembers before it forgets idle ones.
const MEMORY_LIMIT: usize = 10_000;

/// What the wrapper does with a request.
#[derive(Debug)]
pub struct Admission {
    /// The rate-limit headers every response carries.
    pub status: RateStatus,
    pub verdict: Verdict,
}

#[derive(Debug)]
pub enum Verdict {
    /// Counted (or, failing open, not); `authenticated` when a valid key was sent.
    Admitted { authenticated: bool },
    /// Answer with this error instead.
    Refused(ApiError),
}

/// A key's look-up, as cached.
struct CachedKey {
    record: Option<ApiKeyRecord>,
    fetched_at: UnixSeconds,
}

/// What this process knows about one subject. Everything here is a hint or a
/// lower bound; the counter table decides.
#[derive(Debug, Default)]
struct Memory {
    /// The window starts (minute, day) of the stored item, as last seen.
    seen: Option<(UnixSeconds, UnixSeconds)>,
    /// The usage last seen, for the headers of refusals answered from memory.
    usage: Usage,
    /// Refused without asking until then.
    limited_until: UnixSeconds,
    banned_until: UnixSeconds,
    ban_checked_at: UnixSeconds,
    /// The minute window the refusal counts below belong to.
    refusal_minute: UnixSeconds,
    /// Refusals in the table for `refusal_minute`, as last seen.
    refusals_known: u64,
    /// Whether the table's `refusalMinute` is `refusal_minute`, as last seen.
    table_has_minute: bool,
    /// Refusals answered here and not yet reported.
    pending: u64,
    last_used: UnixSeconds,
}

/// Refusals to report to the table.
#[derive(Debug, Clone, Copy)]
struct Flush {
    count: u64,
    minute: UnixSeconds,
    same_minute: bool,
}

impl Memory {
    fn in_minute(&mut self, minute: UnixSeconds) {
        if self.refusal_minute != minute {
            // Unreported refusals of an earlier minute could not have reached
            // the threshold (they would have been reported), so they can go.
            self.refusal_minute = minute;
            self.refusals_known = 0;
            self.pending = 0;
            self.table_has_minute = false;
        }
    }

    /// Keeps the newest usage seen: responses to concurrent requests come
    /// back in any order, and counts only grow within a day.
    fn learn_usage(&mut self, usage: Usage) {
        let key = |u: &Usage| (u.day, u.day_count, u.minute, u.minute_count);
        if key(&usage) >= key(&self.usage) {
            self.usage = usage;
            self.seen = Some((usage.minute, usage.day));
        }
    }

    fn learn_refusals(&mut self, stored: &Stored) {
        if stored.refusal_minute == self.refusal_minute {
            self.refusals_known = self.refusals_known.max(stored.refusals);
            self.table_has_minute = true;
        }
    }

    /// Notes one refusal; says what to report, if it is time to.
    fn refuse(&mut self, config: &LimitsConfig) -> Option<Flush> {
        self.pending += 1;
        let due = self.pending >= config.refusal_flush_every
            || self.refusals_known + self.pending >= config.ban_threshold;
        due.then(|| Flush {
            count: std::mem::take(&mut self.pending),
            minute: self.refusal_minute,
            same_minute: self.table_has_minute,
        })
    }
}

/// What to do, decided from memory.
enum Decision {
    Banned(UnixSeconds),
    Refuse(Usage, Option<Flush>),
    Ask(Variant),
}

/// Keys, counters and what this warm process remembers of them.
pub struct RateLimiter {
    keys: KeyStore,
    counters: Counters,
    config: LimitsConfig,
    clock: Arc<dyn Clock>,
    key_cache: Mutex<HashMap<ApiKeyHash, CachedKey>>,
    subjects: Mutex<HashMap<Subject, Memory>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The maps hold hints only: a panic elsewhere leaves them usable.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
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
            key_cache: Mutex::new(HashMap::new()),
            subjects: Mutex::new(HashMap::new()),
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
    pub async fn unban(&self, id: u64) -> Result<bool, CounterError> {
        let subject = Subject::Key(id);
        let was_banned = self.counters.unban(&subject, self.clock.now()).await?;
        lock(&self.subjects).remove(&subject);
        Ok(was_banned)
    }

    /// Whether `key` could be valid without asking DynamoDB: false when there
    /// is none, or it is cached as unknown or revoked. The wrapper starts a
    /// read's handler early only for keys that may be valid.
    pub fn may_be_valid(&self, key: Option<&str>) -> bool {
        let Some(key) = key else {
            return false;
        };
        let now = self.clock.now();
        match lock(&self.key_cache).get(&ApiKeyHash::of(key)) {
            Some(cached) if self.fresh(cached.fetched_at, now) => {
                cached.record.as_ref().is_some_and(|r| !r.revoked)
            }
            _ => true,
        }
    }

    fn fresh(&self, since: UnixSeconds, now: UnixSeconds) -> bool {
        let ttl = i64::try_from(self.config.key_cache_ttl.as_secs()).unwrap_or(i64::MAX / 2);
        now < since.saturating_add(ttl)
    }

    async fn find_key(&self, key: &str, now: UnixSeconds) -> Result<Option<ApiKeyRecord>, DbError> {
        let hash = ApiKeyHash::of(key);
        if let Some(cached) = lock(&self.key_cache).get(&hash) {
            if self.fresh(cached.fetched_at, now) {
                return Ok(cached.record.clone());
            }
        }
        let record = self.keys.find(&hash).await?;
        let mut cache = lock(&self.key_cache);
        if cache.len() >= MEMORY_LIMIT {
            cache.retain(|_, c| now < c.fetched_at.saturating_add(60));
            if cache.len() >= MEMORY_LIMIT {
                cache.clear();
            }
        }
        cache.insert(
            hash,
            CachedKey {
                record: record.clone(),
                fetched_at: now,
            },
        );
        Ok(record)
    }

    /// Authenticates and counts one request.
    pub async fn admit(&self, api_key: Option<&str>, source_ip: Option<IpAddr>) -> Admission {
        let now = self.clock.now();
        let record = match api_key {
            None => None,
            Some(key) => match self.find_key(key, now).await {
                Ok(record) => record.filter(|r| !r.revoked),
                Err(error) => {
                    tracing::warn!(%error, "API key look-up failed");
                    return Admission {
                        status: RateStatus::unknown(Limits::FREE, now),
                        verdict: Verdict::Refused(ApiError::Unavailable { retry_after: 1 }),
                    };
                }
            },
        };
        let (subject, limits, authenticated) = match &record {
            Some(record) => (Subject::Key(record.id), record.limits(), true),
            None => {
                let ip = source_ip.map_or_else(|| "unknown".to_string(), |ip| ip.to_string());
                (Subject::Ip(ip), Limits::FREE, false)
            }
        };
        match self.count(&subject, limits, now).await {
            Ok(Counted::Admitted(usage)) => Admission {
                status: RateStatus::of(limits, usage, now),
                verdict: Verdict::Admitted { authenticated },
            },
            Ok(Counted::Limited(usage, _)) => Admission {
                status: RateStatus::of(limits, usage, now),
                verdict: Verdict::Refused(ApiError::RateLimited {
                    retry_after: usage.retry_after(limits, now),
                }),
            },
            Ok(Counted::Banned(until)) => Admission {
                status: RateStatus::banned(limits, until, now),
                verdict: Verdict::Refused(ApiError::Banned {
                    retry_after: seconds_until(until, now),
                }),
            },
            Err(error) if self.config.fail_open => {
                tracing::warn!(%error, %subject, "serving uncounted: the rate-limit table failed");
                Admission {
                    status: RateStatus::unknown(limits, now),
                    verdict: Verdict::Admitted { authenticated },
                }
            }
            Err(error) => {
                tracing::warn!(%error, %subject, "refusing: the rate-limit table failed");
                Admission {
                    status: RateStatus::unknown(limits, now),
                    verdict: Verdict::Refused(ApiError::Unavailable { retry_after: 1 }),
                }
            }
        }
    }

    /// Counts one request of `subject`, from memory when that suffices.
    async fn count(
        &self,
        subject: &Subject,
        limits: Limits,
        now: UnixSeconds,
    ) -> Result<Counted, CounterError> {
        let (m, d) = (RateWindow::Minute.start(now), RateWindow::Day.start(now));
        let plan = {
            let mut subjects = lock(&self.subjects);
            if subjects.len() >= MEMORY_LIMIT {
                subjects.retain(|_, s| {
                    s.last_used >= now - 120 || s.banned_until > now || s.limited_until > now
                });
            }
            let memory = subjects.entry(subject.clone()).or_default();
            memory.last_used = now;
            memory.in_minute(m);
            if memory.banned_until > now && self.fresh(memory.ban_checked_at, now) {
                Decision::Banned(memory.banned_until)
            } else if memory.limited_until > now {
                Decision::Refuse(memory.usage, memory.refuse(&self.config))
            } else {
                Decision::Ask(Variant::for_windows(memory.seen, m, d))
            }
        };
        let variant = match plan {
            Decision::Banned(until) => return Ok(Counted::Banned(until)),
            Decision::Refuse(usage, flush) => {
                return self.refused(subject, usage, flush, now).await
            }
            Decision::Ask(variant) => variant,
        };
        let counted = self.counters.admit(subject, limits, now, variant).await?;
        let flush = {
            let mut subjects = lock(&self.subjects);
            let memory = subjects.entry(subject.clone()).or_default();
            memory.in_minute(m);
            match &counted {
                Counted::Admitted(usage) => {
                    memory.learn_usage(*usage);
                    memory.banned_until = 0;
                    // The last request a window allows: the next is refused here.
                    if let Some(until) = usage.exhausted_until(limits, now) {
                        memory.limited_until = until;
                    }
                    None
                }
                Counted::Limited(usage, stored) => {
                    memory.learn_usage(*usage);
                    memory.limited_until = usage.exhausted_until(limits, now).unwrap_or(now + 1);
                    memory.learn_refusals(stored);
                    memory.refuse(&self.config)
                }
                Counted::Banned(until) => {
                    memory.banned_until = *until;
                    memory.ban_checked_at = now;
                    None
                }
            }
        };
        match counted {
            Counted::Limited(usage, _) => self.refused(subject, usage, flush, now).await,
            other => Ok(other),
        }
    }

    /// A refusal: reports refusals when due, and bans when they reach the threshold.
    async fn refused(
        &self,
        subject: &Subject,
        usage: Usage,
        flush: Option<Flush>,
        now: UnixSeconds,
    ) -> Result<Counted, CounterError> {
        let limited = Counted::Limited(usage, Stored::default());
        let Some(flush) = flush else {
            return Ok(limited);
        };
        // A refusal stays a 429 whatever happens to its report: a failed
        // report only loses counts towards a ban.
        let reported = self
            .counters
            .report_refusals(subject, flush.count, flush.minute, now, flush.same_minute)
            .await;
        let stored = match reported {
            Ok(Some(stored)) => stored,
            Ok(None) => return Ok(limited),
            Err(error) => {
                tracing::warn!(%error, %subject, "refusals not reported");
                return Ok(limited);
            }
        };
        lock(&self.subjects)
            .entry(subject.clone())
            .or_default()
            .learn_refusals(&stored);
        // The refusal that reaches the threshold is still answered 429
        // `RATE_LIMITED`; the ban applies from the next request on.
        let (until, answer) = if stored.banned_until > now {
            (stored.banned_until, Counted::Banned(stored.banned_until))
        } else if stored.refusals >= self.config.ban_threshold {
            match self
                .counters
                .ban(
                    subject,
                    stored,
                    now,
                    self.config.ban_base,
                    self.config.ban_max,
                )
                .await
            {
                Ok(until) => {
                    crate::metrics::count(crate::metrics::Metric::Bans, 1);
                    tracing::info!(%subject, until, refusals = stored.refusals, "banned");
                    (until, limited)
                }
                Err(error) => {
                    tracing::warn!(%error, %subject, "ban not recorded");
                    return Ok(limited);
                }
            }
        } else {
            return Ok(limited);
        };
        let mut subjects = lock(&self.subjects);
        let memory = subjects.entry(subject.clone()).or_default();
        memory.banned_until = until;
        memory.ban_checked_at = now;
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn config(threshold: u64, flush_every: u64) -> LimitsConfig {
        LimitsConfig {
            ban_threshold: threshold,
            ban_base: Duration::from_secs(900),
            ban_max: Duration::from_secs(86_400),
            key_cache_ttl: Duration::from_secs(30),
            fail_open: false,
            refusal_flush_every: flush_every,
        }
    }

    #[test]
    fn refusals_are_reported_in_batches_or_when_a_ban_may_be_due() {
        let config = config(30, 5);
        let mut memory = Memory::default();
        memory.in_minute(60);
        let reports: Vec<u64> = (0..12)
            .filter_map(|_| memory.refuse(&config))
            .map(|f| f.count)
            .collect();
        assert_eq!(reports, vec![5, 5]);

        // The table holds 27: the third refusal here could reach 30.
        let mut memory = Memory::default();
        memory.in_minute(60);
        memory.learn_refusals(&Stored {
            refusal_minute: 60,
            refusals: 27,
            ..Stored::default()
        });
        assert!(memory.refuse(&config).is_none());
        assert!(memory.refuse(&config).is_none());
        let flush = memory.refuse(&config);
        assert_eq!(
            flush.as_ref().map(|f| (f.count, f.same_minute)),
            Some((3, true)),
            "a ban may be due"
        );
    }

    #[test]
    fn a_new_minute_starts_refusals_afresh() {
        let config = config(30, 5);
        let mut memory = Memory::default();
        memory.in_minute(60);
        memory.refuse(&config);
        memory.in_minute(120);
        assert_eq!(memory.pending, 0);
        assert_eq!(memory.refusals_known, 0);
        assert!(!memory.table_has_minute);
    }
}
