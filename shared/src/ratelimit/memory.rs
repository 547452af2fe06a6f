//! What a warm process remembers of each subject between requests: the
//! windows, exhaustion, bans and unreported refusals it has seen (the keys it
//! has looked up are in `key_cache`). Everything here is a hint or a lower
//! bound; the tables decide.
//!
//! The memory is bounded: at most [`MEMORY_LIMIT`] subjects, the one used
//! least recently forgotten first, in O(1) per request. A source flooding
//! the process is the most recent, so a flood of distinct sources pushes out
//! idle subjects, not the flooding one. Forgetting costs at most what a
//! subject first seen costs (the refusals not yet reported: a ban may come
//! that much later); the limits stay exact, as the counter table decides
//! them.

use super::clock::UnixSeconds;
use super::counter::{Counted, Stored, Subject};
use super::window::{Limits, RateWindow, Usage};
use crate::config::LimitsConfig;
use lru::LruCache;
use std::num::NonZeroUsize;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// How many subjects a process remembers.
pub const MEMORY_LIMIT: usize = 10_000;

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The maps hold hints only: a panic elsewhere leaves them usable.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether something learnt at `since` may still be trusted at `now`.
pub(super) fn fresh(ttl: Duration, since: UnixSeconds, now: UnixSeconds) -> bool {
    let ttl = i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX / 2);
    now < since.saturating_add(ttl)
}

/// A least-recently-used cache holding at most `limit` entries (at least
/// one). Sparse: it allocates as it fills, not at init (cold start).
pub(super) fn bounded<K: std::hash::Hash + Eq, V>(limit: usize) -> LruCache<K, V> {
    LruCache::sparse(NonZeroUsize::new(limit).unwrap_or(NonZeroUsize::MIN))
}

/// The subjects this process remembers, at most [`MEMORY_LIMIT`].
pub(super) struct Subjects(LruCache<Subject, Memory>);

impl Default for Subjects {
    fn default() -> Subjects {
        Subjects(bounded(MEMORY_LIMIT))
    }
}

impl Subjects {
    /// What is remembered of `subject`, made afresh if nothing is (which
    /// forgets the least recently used subject when full).
    pub fn entry(&mut self, subject: &Subject) -> &mut Memory {
        self.0.get_or_insert_mut_ref(subject, Memory::default)
    }

    /// What is remembered of `subject`, if anything.
    pub fn get_mut(&mut self, subject: &Subject) -> Option<&mut Memory> {
        self.0.get_mut(subject)
    }

    pub fn forget(&mut self, subject: &Subject) {
        self.0.pop(subject);
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

/// What this process knows about one subject.
#[derive(Debug, Default)]
pub(super) struct Memory {
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
}

/// Refusals to report to the table.
#[derive(Debug, Clone, Copy)]
pub(super) struct Flush {
    pub count: u64,
    pub minute: UnixSeconds,
    pub same_minute: bool,
}

/// What to do with a request, decided from memory.
pub(super) enum Decision {
    Refuse(Refused),
    /// Count it in the table.
    Ask,
}

/// A refusal decided from memory alone.
pub(super) enum Refused {
    /// Banned until then: answer without asking.
    Banned(UnixSeconds),
    /// A window is exhausted: refuse with this usage, reporting refusals if due.
    Limited(Usage, Option<Flush>),
}

impl Memory {
    /// Decides about one more request at `now`, from memory alone.
    pub fn decide(&mut self, now: UnixSeconds, config: &LimitsConfig) -> Decision {
        match self.refusal(now, config) {
            Some(refused) => Decision::Refuse(refused),
            None => Decision::Ask,
        }
    }

    /// The refusal of one more request at `now` when memory alone decides
    /// it (banned, or a window known exhausted); `None` when the table must
    /// be asked.
    pub fn refusal(&mut self, now: UnixSeconds, config: &LimitsConfig) -> Option<Refused> {
        self.in_minute(RateWindow::Minute.start(now));
        if self.banned_until > now && fresh(config.key_cache_ttl, self.ban_checked_at, now) {
            Some(Refused::Banned(self.banned_until))
        } else if self.limited_until > now {
            Some(Refused::Limited(self.usage, self.refuse(config)))
        } else {
            None
        }
    }

    /// Whether this process has no sign that another request does not fit
    /// at `now`: no refusal or ban known, and the counts it has seen leave
    /// room. A hint: other instances may have used the room since.
    pub fn has_room(&self, limits: Limits, now: UnixSeconds) -> bool {
        self.banned_until <= now
            && self.limited_until <= now
            && !self.usage.is_exhausted(limits, now)
    }

    /// Whether memory alone refuses the subject's next request at `now`
    /// (banned, or a window known exhausted); nothing is noted.
    pub fn refusing(&self, now: UnixSeconds, config: &LimitsConfig) -> bool {
        (self.banned_until > now && fresh(config.key_cache_ttl, self.ban_checked_at, now))
            || self.limited_until > now
    }

    /// Learns what the table said when asked; says which refusals to report.
    pub fn learn(
        &mut self,
        counted: &Counted,
        limits: Limits,
        now: UnixSeconds,
        config: &LimitsConfig,
    ) -> Option<Flush> {
        self.in_minute(RateWindow::Minute.start(now));
        match counted {
            Counted::Admitted(usage) => {
                self.learn_usage(*usage);
                self.banned_until = 0;
                // The last request a window allows: the next is refused here.
                if let Some(until) = usage.exhausted_until(limits, now) {
                    self.limited_until = until;
                }
                None
            }
            Counted::Limited(usage, stored) => {
                self.learn_usage(*usage);
                self.limited_until = usage.exhausted_until(limits, now).unwrap_or(now + 1);
                self.learn_refusals(stored);
                self.refuse(config)
            }
            Counted::Banned(until) => {
                self.learn_ban(*until, now);
                None
            }
        }
    }

    /// Learns a ban in force until `until`, as the table said at `now`.
    pub fn learn_ban(&mut self, until: UnixSeconds, now: UnixSeconds) {
        self.banned_until = until;
        self.ban_checked_at = now;
    }

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
        }
    }

    pub fn learn_refusals(&mut self, stored: &Stored) {
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

#[cfg(test)]
mod tests {
    use super::*;

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

    fn source(n: u32) -> Subject {
        Subject::Ip(std::net::Ipv4Addr::from(n).to_string())
    }

    #[test]
    fn a_million_distinct_sources_stay_within_the_bound() {
        // Given a banned source flooding the process
        let config = config(30, 5);
        let mut subjects = Subjects::default();
        let flooding = source(u32::MAX);
        subjects.entry(&flooding).learn_ban(10_000, 100);

        // When a million other sources arrive, the flood going on among them
        for n in 0..1_000_000 {
            subjects.entry(&source(n)).decide(100, &config);
            if n % 1_000 == 0 {
                let refusal = subjects.entry(&flooding).refusal(100, &config);
                assert!(matches!(refusal, Some(Refused::Banned(10_000))));
            }
            assert!(subjects.len() <= MEMORY_LIMIT);
        }

        // Then at most MEMORY_LIMIT subjects are held, the flooding one among them
        assert_eq!(subjects.len(), MEMORY_LIMIT);
        let refusal = subjects.get_mut(&flooding).map(|m| m.refusal(100, &config));
        assert!(matches!(refusal, Some(Some(Refused::Banned(10_000)))));
        // The oldest of the million are forgotten
        assert!(subjects.get_mut(&source(0)).is_none());
    }

    /// Not a check (timings vary): what one count's memory work costs with
    /// 10,000 and 1,000,000 distinct sources. Run with
    /// `cargo test -p petstore --release --lib cost_of_remembering -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement, not a check"]
    fn cost_of_remembering() {
        let config = config(30, 5);
        for distinct in [10_000u32, 1_000_000] {
            let mut subjects = Subjects::default();
            let started = std::time::Instant::now();
            for n in 0..distinct {
                subjects.entry(&source(n)).decide(100, &config);
            }
            let per_count = started.elapsed() / distinct;
            // The entry, its two list links, and the hash table's slot (two pointers).
            let entry = std::mem::size_of::<(Subject, Memory)>() + 4 * std::mem::size_of::<usize>();
            println!(
                "{distinct} distinct sources: {per_count:?} per count, {} subjects held, \
                 about {} KiB (+ each address's text)",
                subjects.len(),
                subjects.len() * entry / 1024
            );
        }
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
