//! What follows a refusal (a 429): reporting refusals answered from memory,
//! and banning a subject whose refusals reach `BAN_THRESHOLD`.

use super::clock::UnixSeconds;
use super::counter::{Counted, Stored, Subject};
use super::memory::Flush;
use super::window::Usage;
use super::RateLimiter;
use crate::db::cause_chain;

impl RateLimiter {
    /// Answers a refusal of `subject`: reports refusals when `flush` says it
    /// is time, and bans when they reach the threshold. A refusal stays a
    /// 429 whatever happens to its report: a failed report only loses
    /// counts towards a ban.
    pub(super) async fn after_refusal(
        &self,
        subject: &Subject,
        usage: Usage,
        flush: Option<Flush>,
        now: UnixSeconds,
    ) -> Counted {
        let limited = Counted::Limited(usage, Stored::default());
        let Some(flush) = flush else {
            return limited;
        };
        let reported = self
            .counters
            .report_refusals(subject, flush.count, flush.minute, now, flush.same_minute)
            .await;
        let stored = match reported {
            Ok(Some(stored)) => stored,
            Ok(None) => return limited,
            Err(error) => {
                tracing::warn!(error = %cause_chain(&error), %subject, "refusals not reported");
                return limited;
            }
        };
        self.remember(subject, |memory| memory.learn_refusals(&stored));
        // The refusal that reaches the threshold is still answered 429
        // `RATE_LIMITED`; the ban applies from the next request on.
        let (until, answer) = if stored.banned_until > now {
            (stored.banned_until, Counted::Banned(stored.banned_until))
        } else if stored.refusals >= self.config.ban_threshold {
            let (base, max) = (self.config.ban_base, self.config.ban_max);
            match self.counters.ban(subject, stored, now, base, max).await {
                Ok(until) => {
                    crate::metrics::count(crate::metrics::Metric::Bans, 1);
                    tracing::info!(%subject, until, refusals = stored.refusals, "banned");
                    (until, limited)
                }
                Err(error) => {
                    tracing::warn!(error = %cause_chain(&error), %subject, "ban not recorded");
                    return limited;
                }
            }
        } else {
            return limited;
        };
        self.remember(subject, |memory| memory.learn_ban(until, now));
        answer
    }
}
