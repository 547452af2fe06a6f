//! What a warm process remembers of each subject between requests: the
//! windows, exhaustion, bans and unreported refusals it has seen (the keys it
//! has looked up are in `key_cache`). Everything here is a hint or a lower
//! bound; the tables decide.

use super::clock::UnixSeconds;
use super::counter::{Counted, Stored, Variant};
use super::window::{Limits, RateWindow, Usage};
use crate::config::LimitsConfig;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// How many subjects a process remembers before it forgets idle ones.
const MEMORY_LIMIT: usize = 10_000;

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The maps hold hints only: a panic elsewhere leaves them usable.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether something learnt at `since` may still be trusted at `now`.
pub(super) fn fresh(ttl: Duration, since: UnixSeconds, now: UnixSeconds) -> bool {
    let ttl = i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX / 2);
    now < since.saturating_add(ttl)
}

/// Makes room among the subjects: idle ones go, unless limited or banned.
pub(super) fn make_room_for_subject<K>(subjects: &mut HashMap<K, Memory>, now: UnixSeconds) {
    if subjects.len() >= MEMORY_LIMIT {
        subjects.retain(|_, s| {
            s.last_used >= now - 120 || s.banned_until > now || s.limited_until > now
        });
    }
}

/// What this process knows about one subject.
#[derive(Debug, Default)]
pub(super) struct Memory {
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
pub(super) struct Flush {
    pub count: u64,
    pub minute: UnixSeconds,
    pub same_minute: bool,
}

/// What to do with a request, decided from memory.
pub(super) enum Decision {
    /// Banned until then: answer without asking.
    Banned(UnixSeconds),
    /// A window is exhausted: refuse with this usage, reporting refusals if due.
    Refuse(Usage, Option<Flush>),
    /// Count it in the table, trying this variant first.
    Ask(Variant),
}

impl Memory {
    /// Decides about one more request at `now`, from memory alone; `unseen`
    /// is the update to try when the stored windows were never seen.
    pub fn decide(&mut self, now: UnixSeconds, config: &LimitsConfig, unseen: Variant) -> Decision {
        let (m, d) = (RateWindow::Minute.start(now), RateWindow::Day.start(now));
        self.last_used = now;
        self.in_minute(m);
        if self.banned_until > now && fresh(config.key_cache_ttl, self.ban_checked_at, now) {
            Decision::Banned(self.banned_until)
        } else if self.limited_until > now {
            Decision::Refuse(self.usage, self.refuse(config))
        } else {
            Decision::Ask(match self.seen {
                None => unseen,
                seen => Variant::for_windows(seen, m, d),
            })
        }
    }

    /// Whether this process knows another request fits at `now`: it has seen
    /// the subject's counts, they leave room, and no refusal or ban is known.
    /// A hint: other instances may have used the room since.
    pub fn has_room(&self, limits: Limits, now: UnixSeconds) -> bool {
        self.seen.is_some()
            && self.banned_until <= now
            && self.limited_until <= now
            && !self.usage.is_exhausted(limits, now)
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
            self.seen = Some((usage.minute, usage.day));
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
