//! The admission of one request: who is calling, which subject is counted,
//! and whether the request may go on.

use super::clock::UnixSeconds;
use super::counter::{Counted, CounterError, Subject};
use super::key_cache::Lookup;
use super::keys::{ApiKeyHash, ApiKeyRecord};
use super::memory::{lock, Decision};
use super::plan::Plan;
use super::status::RateStatus;
use super::window::{seconds_until, Limits};
use super::RateLimiter;
use crate::db::DbError;
use crate::records::Caller;
use std::net::IpAddr;

/// What the wrapper does with a request.
#[derive(Debug)]
pub struct Admission {
    /// The rate-limit headers every response carries.
    pub status: RateStatus,
    pub verdict: Verdict,
    /// The plan of the key sent, when it is valid (for the request's log line).
    pub plan: Option<Plan>,
}

/// Whether the request goes on to the wrapper's checks and its handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Counted (or, failing open, not). `caller` is the key's identity and
    /// role when a valid key was sent; `None` for no key, or an unknown or
    /// revoked one (counted per source IP; the wrapper decides).
    Admitted { caller: Option<Caller> },
    /// Turned away by the limiter: no handler runs (or, for a read served
    /// while counting, its answer is dropped).
    Refused(Refusal),
}

/// Why the limiter turns a request away: a 429, or a 503 when it cannot
/// count. (A missing or unknown key is not a refusal: such requests are
/// admitted, counted per source IP, and the wrapper decides.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Over a limit (429 `RATE_LIMITED`).
    RateLimited { retry_after: u64 },
    /// Banned for calling on after 429s (429 `API_KEY_BANNED`).
    Banned { retry_after: u64 },
    /// A table the limiter needs failed (503 `SERVICE_UNAVAILABLE`).
    Unavailable,
}

impl RateLimiter {
    /// Authenticates and counts one request.
    pub async fn admit(&self, api_key: Option<&str>, source_ip: Option<IpAddr>) -> Admission {
        let now = self.clock.now();
        let record = match api_key {
            None => None,
            Some(key) => match self.find_key(key, now).await {
                Ok(lookup) => lookup.into_record(),
                Err(error) => {
                    tracing::warn!(error = ?error, "API key look-up failed");
                    return Admission {
                        status: RateStatus::unknown(Limits::FREE, now),
                        verdict: Verdict::Refused(Refusal::Unavailable),
                        plan: None,
                    };
                }
            },
        };
        let caller = record.as_ref().map(ApiKeyRecord::caller);
        let plan = record.as_ref().map(|record| record.plan);
        let (subject, limits) = subject_of(record.as_ref(), source_ip);
        let (status, verdict) = match self.count(&subject, limits, now).await {
            Ok(Counted::Admitted(usage)) => (
                RateStatus::of(limits, usage, now),
                Verdict::Admitted { caller },
            ),
            Ok(Counted::Limited(usage, _)) => (
                RateStatus::of(limits, usage, now),
                Verdict::Refused(Refusal::RateLimited {
                    retry_after: usage.retry_after(limits, now),
                }),
            ),
            Ok(Counted::Banned(until)) => (
                RateStatus::banned(limits, until, now),
                Verdict::Refused(Refusal::Banned {
                    retry_after: seconds_until(until, now),
                }),
            ),
            Err(error) if self.config.fail_open => {
                tracing::warn!(error = ?error, %subject, "serving uncounted: the rate-limit table failed");
                (
                    RateStatus::unknown(limits, now),
                    Verdict::Admitted { caller },
                )
            }
            Err(error) => {
                tracing::warn!(error = ?error, %subject, "refusing: the rate-limit table failed");
                (
                    RateStatus::unknown(limits, now),
                    Verdict::Refused(Refusal::Unavailable),
                )
            }
        };
        Admission {
            status,
            verdict,
            plan,
        }
    }

    /// The look-up of the key sent, from this process's cache while fresh.
    async fn find_key(&self, key: &str, now: UnixSeconds) -> Result<Lookup, DbError> {
        let hash = ApiKeyHash::of(key);
        let ttl = self.config.key_cache_ttl;
        if let Some(lookup) = lock(&self.key_cache).get(&hash, ttl, now) {
            return Ok(lookup);
        }
        let lookup = Lookup::of(self.keys.find(&hash).await?);
        lock(&self.key_cache).insert(hash, lookup.clone(), ttl, now);
        Ok(lookup)
    }

    /// Counts one request of `subject`, from memory when that suffices.
    async fn count(
        &self,
        subject: &Subject,
        limits: Limits,
        now: UnixSeconds,
    ) -> Result<Counted, CounterError> {
        let config = &self.config;
        let variant = match self.remember(subject, |memory| {
            memory.decide(now, config, subject.first_variant())
        }) {
            Decision::Banned(until) => return Ok(Counted::Banned(until)),
            Decision::Refuse(usage, flush) => {
                return self.after_refusal(subject, usage, flush, now).await
            }
            Decision::Ask(variant) => variant,
        };
        let counted = self.counters.count(subject, limits, now, variant).await?;
        let flush = self.remember(subject, |memory| {
            memory.learn(&counted, limits, now, config)
        });
        match counted {
            Counted::Limited(usage, _) => self.after_refusal(subject, usage, flush, now).await,
            other => Ok(other),
        }
    }
}

/// The subject a request is counted against, and its limits: the key's
/// identity for a valid key, else the source IP on the free plan.
pub(super) fn subject_of(
    record: Option<&ApiKeyRecord>,
    source_ip: Option<IpAddr>,
) -> (Subject, Limits) {
    match record {
        Some(record) => (Subject::Key(record.id), record.limits()),
        None => {
            let ip = source_ip.map_or_else(|| "unknown".to_string(), |ip| ip.to_string());
            (Subject::Ip(ip), Limits::FREE)
        }
    }
}
