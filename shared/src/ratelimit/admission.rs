//! The admission of one request: who is calling, which subject is counted,
//! and whether the request may go on.

use super::clock::UnixSeconds;
use super::counter::{Counted, CounterError, Subject};
use super::key_cache::Lookup;
use super::keys::{ApiKeyHash, ApiKeyRecord};
use super::memory::{lock, Decision, Refused};
use super::plan::Plan;
use super::status::RateStatus;
use super::window::{seconds_until, Limits, Usage};
use super::RateLimiter;
use crate::db::{cause_chain, DbError};
use crate::records::Caller;
use std::net::{IpAddr, Ipv6Addr};

/// What the wrapper does with a request.
#[derive(Debug)]
pub struct Admission {
    /// The rate-limit headers every response carries.
    pub status: RateStatus,
    pub verdict: Verdict,
    /// The plan of the key sent, when it is valid (for the request's log line).
    pub plan: Option<Plan>,
    /// Both windows' counts after this request, which `status` picks from
    /// (none counted when the count is unknown or the key banned): what
    /// `GET /me` shows per window.
    pub usage: Usage,
    /// The Unix second from which the key sent is unknown, if it has one.
    pub key_expires_at: Option<i64>,
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
    /// A key this process does not know, sent from a source it refuses or
    /// bans: refused for the source, the key unread (429 `SOURCE_REFUSED`).
    SourceRefused { retry_after: u64 },
    /// A table the limiter needs failed (503 `SERVICE_UNAVAILABLE`).
    Unavailable,
}

impl RateLimiter {
    /// Authenticates and counts one request, the cheapest refusals first: a
    /// string that cannot be a key is no key (no look-up); a key this
    /// process does not know valid gets no look-up while the source is
    /// refused or banned here (the source's refusal answers it); only then
    /// the look-up, and the count.
    pub async fn admit(&self, api_key: Option<&str>, source_ip: Option<IpAddr>) -> Admission {
        let key = ApiKeyHash::presented(api_key);
        self.admit_presented(key.as_ref(), source_ip).await
    }

    /// [`RateLimiter::admit`] of the key whose hash is `key`
    /// ([`ApiKeyHash::presented`]), hashed once for the request.
    pub async fn admit_presented(
        &self,
        key: Option<&ApiKeyHash>,
        source_ip: Option<IpAddr>,
    ) -> Admission {
        let now = self.clock.now();
        let record = match key {
            None => None,
            Some(hash) => match self.find_key(hash, source_ip, now).await {
                Ok(Found::Lookup(lookup)) => lookup.into_record(),
                Ok(Found::SourceRefused(counted)) => {
                    let (subject, limits) = subject_of(None, source_ip);
                    return self
                        .admission(Ok(counted), &subject, limits, None, now)
                        .for_the_source();
                }
                Err(error) => {
                    tracing::warn!(error = %cause_chain(&error), "API key look-up failed");
                    return Admission {
                        status: RateStatus::unknown(Limits::FREE, now),
                        verdict: Verdict::Refused(Refusal::Unavailable),
                        plan: None,
                        usage: Usage::default(),
                        key_expires_at: None,
                    };
                }
            },
        };
        let (subject, limits) = subject_of(record.as_ref(), source_ip);
        let ttl = self.config.key_cache_ttl;
        let refresh = key.filter(|hash| lock(&self.key_cache).refresh_due(hash, ttl, now));
        let counted = match refresh {
            None => self.count(&subject, limits, now).await,
            // The key's look-up is read again beside its count, before it expires.
            Some(hash) => {
                let counting = self.count(&subject, limits, now);
                let (counted, valid) = tokio::join!(counting, self.refresh_key(hash, now));
                if !valid {
                    return self.admission(counted, &subject, limits, None, now);
                }
                counted
            }
        };
        self.admission(counted, &subject, limits, record.as_ref(), now)
    }

    /// Reads the key whose hash is `hash` again and holds what it found;
    /// says whether it is still valid. A failed read keeps the held look-up,
    /// which is still within its time.
    async fn refresh_key(&self, hash: &ApiKeyHash, now: UnixSeconds) -> bool {
        match self.keys.find(hash).await {
            Ok(record) => {
                let lookup = Lookup::of(record, now);
                let valid = matches!(lookup, Lookup::Valid(_));
                lock(&self.key_cache).insert(hash.clone(), lookup, now);
                valid
            }
            Err(error) => {
                tracing::warn!(error = %cause_chain(&error), "API key refresh failed");
                true
            }
        }
    }

    /// Looks up the key whose hash is `key` ahead of its request's count,
    /// so that the count can run beside the handler's first read: when this
    /// process holds no fresh look-up of it and its source is not refused or
    /// banned here (such a key gets no look-up: [`RateLimiter::admit`]).
    /// Says whether it looked the key up; a failed look-up is left to the
    /// count's admission, which answers it.
    pub async fn look_up_ahead(&self, key: &ApiKeyHash, source_ip: Option<IpAddr>) -> bool {
        let now = self.clock.now();
        let ttl = self.config.key_cache_ttl;
        if lock(&self.key_cache).get(key, ttl, now).is_some() {
            return false;
        }
        let (source, _) = subject_of(None, source_ip);
        let config = &self.config;
        let refused = self.recall(&source, |memory| memory.refusing(now, config));
        if refused == Some(true) {
            return false;
        }
        match self.keys.find(key).await {
            Ok(record) => {
                lock(&self.key_cache).insert(key.clone(), Lookup::of(record, now), now);
                true
            }
            Err(_) => false,
        }
    }

    /// What the wrapper is told of a request of `subject`, counted as `counted`.
    fn admission(
        &self,
        counted: Result<Counted, CounterError>,
        subject: &Subject,
        limits: Limits,
        record: Option<&ApiKeyRecord>,
        now: UnixSeconds,
    ) -> Admission {
        let caller = record.map(ApiKeyRecord::caller);
        let counts = match &counted {
            Ok(Counted::Admitted(usage)) | Ok(Counted::Limited(usage, _)) => usage.at(now),
            _ => Usage::default(),
        };
        let (status, verdict) = match counted {
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
                tracing::warn!(error = %cause_chain(&error), %subject, "serving uncounted: the rate-limit table failed");
                (
                    RateStatus::unknown(limits, now),
                    Verdict::Admitted { caller },
                )
            }
            Err(error) => {
                tracing::warn!(error = %cause_chain(&error), %subject, "refusing: the rate-limit table failed");
                (
                    RateStatus::unknown(limits, now),
                    Verdict::Refused(Refusal::Unavailable),
                )
            }
        };
        Admission {
            status,
            verdict,
            plan: record.map(|record| record.plan),
            usage: counts,
            key_expires_at: record.and_then(ApiKeyRecord::secret_ends_at),
        }
    }

    /// The look-up of the key sent, from this process's cache while fresh;
    /// none while the source is refused or banned here.
    async fn find_key(
        &self,
        hash: &ApiKeyHash,
        source_ip: Option<IpAddr>,
        now: UnixSeconds,
    ) -> Result<Found, DbError> {
        let ttl = self.config.key_cache_ttl;
        if let Some(lookup) = lock(&self.key_cache).get(hash, ttl, now) {
            return Ok(Found::Lookup(lookup));
        }
        if let Some(counted) = self.refused_from_memory(source_ip, now).await {
            return Ok(Found::SourceRefused(counted));
        }
        let lookup = Lookup::of(self.keys.find(hash).await?, now);
        lock(&self.key_cache).insert(hash.clone(), lookup.clone(), now);
        Ok(Found::Lookup(lookup))
    }

    /// The refusal of a request from `source_ip` when this process knows the
    /// source refused or banned (as a request without a valid key is):
    /// counted as its refusal, reported like any other.
    async fn refused_from_memory(
        &self,
        source_ip: Option<IpAddr>,
        now: UnixSeconds,
    ) -> Option<Counted> {
        let (source, _) = subject_of(None, source_ip);
        let refused = self
            .recall(&source, |memory| memory.refusal(now, &self.config))
            .flatten()?;
        Some(self.answer(&source, refused, now).await)
    }

    /// Counts one request of `subject`, from memory when that suffices.
    async fn count(
        &self,
        subject: &Subject,
        limits: Limits,
        now: UnixSeconds,
    ) -> Result<Counted, CounterError> {
        let config = &self.config;
        match self.remember(subject, |memory| memory.decide(now, config)) {
            Decision::Ask => {}
            Decision::Refuse(refused) => return Ok(self.answer(subject, refused, now).await),
        }
        let counted = self.counters.count(subject, limits, now).await?;
        let flush = self.remember(subject, |memory| {
            memory.learn(&counted, limits, now, config)
        });
        Ok(match counted {
            Counted::Limited(usage, _) => self.after_refusal(subject, usage, flush, now).await,
            other => other,
        })
    }

    /// Answers a request that memory refused.
    async fn answer(&self, subject: &Subject, refused: Refused, now: UnixSeconds) -> Counted {
        match refused {
            Refused::Banned(until) => Counted::Banned(until),
            Refused::Limited(usage, flush) => self.after_refusal(subject, usage, flush, now).await,
        }
    }
}

impl Admission {
    /// This refusal, said to be the source's: the key sent was never read,
    /// so its owner must not be told that the key is over a limit or banned.
    fn for_the_source(self) -> Admission {
        let verdict = match self.verdict {
            Verdict::Refused(Refusal::RateLimited { retry_after })
            | Verdict::Refused(Refusal::Banned { retry_after }) => {
                Verdict::Refused(Refusal::SourceRefused { retry_after })
            }
            other => other,
        };
        Admission { verdict, ..self }
    }
}

/// What became of the key sent.
enum Found {
    Lookup(Lookup),
    /// Not looked up: the source is refused or banned here, and so is this request.
    SourceRefused(Counted),
}

/// The subject a request is counted against, and its limits: the key's
/// identity for a valid key, else the source on the free plan.
pub(super) fn subject_of(
    record: Option<&ApiKeyRecord>,
    source_ip: Option<IpAddr>,
) -> (Subject, Limits) {
    match record {
        Some(record) => (Subject::Key(record.id), record.limits()),
        None => (Subject::Ip(source_of(source_ip)), Limits::FREE),
    }
}

/// The source a request without a valid key is counted as: an IPv4 address,
/// or an IPv6 /64 (the least a site is given, so one holder gets one budget
/// and one ban, not 2^64). An IPv4 address written as IPv6 is IPv4.
fn source_of(source_ip: Option<IpAddr>) -> String {
    match source_ip.map(|ip| ip.to_canonical()) {
        None => "unknown".to_string(),
        Some(IpAddr::V4(v4)) => v4.to_string(),
        Some(IpAddr::V6(v6)) => {
            let network = Ipv6Addr::from_bits(v6.to_bits() & !u128::from(u64::MAX));
            format!("{network}/64")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(ip: &str) -> String {
        source_of(ip.parse().ok())
    }

    #[test]
    fn ipv6_sources_are_counted_per_64() {
        assert_eq!(
            source("2001:db8:1:2:aaaa:bbbb:cccc:dddd"),
            "2001:db8:1:2::/64"
        );
        assert_eq!(source("2001:db8:1:2::1"), source("2001:db8:1:2:ffff::9"));
        assert_ne!(source("2001:db8:1:2::1"), source("2001:db8:1:3::1"));
        assert_eq!(source("::ffff:198.51.100.7"), "198.51.100.7");
        assert_eq!(source("198.51.100.7"), "198.51.100.7");
        assert_ne!(source("198.51.100.7"), source("198.51.100.8"));
        assert_eq!(source_of(None), "unknown");
    }
}
