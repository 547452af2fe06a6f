//! The two fixed UTC windows, the limits a key has in them, and a subject's
//! usage of them: how many requests each counted, and whether another one
//! fits.

use super::clock::UnixSeconds;

/// The two fixed windows, aligned in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateWindow {
    Minute,
    Day,
}

impl RateWindow {
    pub fn seconds(self) -> i64 {
        match self {
            RateWindow::Minute => 60,
            RateWindow::Day => 86_400,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RateWindow::Minute => "minute",
            RateWindow::Day => "day",
        }
    }

    /// When the window holding `now` started.
    pub fn start(self, now: UnixSeconds) -> UnixSeconds {
        now - now.rem_euclid(self.seconds())
    }

    /// When the window holding `now` ends (the next one's start).
    pub fn end(self, now: UnixSeconds) -> UnixSeconds {
        self.start(now) + self.seconds()
    }
}

/// Requests allowed per minute and per day. Both at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    pub per_minute: u64,
    pub per_day: u64,
}

impl Limits {
    /// The free plan's limits, which also apply to requests without a valid key.
    pub const FREE: Limits = Limits {
        per_minute: 60,
        per_day: 1_000,
    };

    pub const fn new(per_minute: u64, per_day: u64) -> Limits {
        Limits {
            per_minute,
            per_day,
        }
    }

    /// Limits as an enterprise key may carry them.
    pub fn enterprise(per_minute: u64, per_day: u64) -> Option<Limits> {
        (per_minute >= 1 && per_day >= 1).then_some(Limits {
            per_minute,
            per_day,
        })
    }

    pub fn of(self, window: RateWindow) -> u64 {
        match window {
            RateWindow::Minute => self.per_minute,
            RateWindow::Day => self.per_day,
        }
    }
}

/// The counts of one subject, as last stored: which windows they belong to
/// (their start instants) and how many requests each has counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub minute: UnixSeconds,
    pub minute_count: u64,
    pub day: UnixSeconds,
    pub day_count: u64,
}

impl Usage {
    /// The counts as they stand at `now`: a window that has ended counts nothing.
    pub fn at(self, now: UnixSeconds) -> Usage {
        self.in_windows(RateWindow::Minute.start(now), RateWindow::Day.start(now))
    }

    /// The counts in the windows starting at `minute` and `day`: a stored
    /// count of any other window counts nothing there.
    pub fn in_windows(self, minute: UnixSeconds, day: UnixSeconds) -> Usage {
        Usage {
            minute,
            minute_count: if self.minute == minute {
                self.minute_count
            } else {
                0
            },
            day,
            day_count: if self.day == day { self.day_count } else { 0 },
        }
    }

    pub fn count(self, window: RateWindow) -> u64 {
        match window {
            RateWindow::Minute => self.minute_count,
            RateWindow::Day => self.day_count,
        }
    }

    pub fn remaining(self, limits: Limits, window: RateWindow) -> u64 {
        limits.of(window).saturating_sub(self.count(window))
    }

    /// The window another request would go over, as these counts stand (the
    /// day if both would): the one place exhaustion is decided.
    pub fn exhausted(self, limits: Limits) -> Option<RateWindow> {
        if self.day_count >= limits.per_day {
            Some(RateWindow::Day)
        } else if self.minute_count >= limits.per_minute {
            Some(RateWindow::Minute)
        } else {
            None
        }
    }

    /// Whether another request would go over a limit at `now`.
    pub fn is_exhausted(self, limits: Limits, now: UnixSeconds) -> bool {
        self.exhausted_until(limits, now).is_some()
    }

    /// When the last exhausted window ends (the day if both are), or `None` if
    /// another request fits.
    pub fn exhausted_until(self, limits: Limits, now: UnixSeconds) -> Option<UnixSeconds> {
        self.at(now).exhausted(limits).map(|window| window.end(now))
    }

    /// `Retry-After` for a refused request: whole seconds until the exhausted
    /// window ends (the later one if both are), at least 1.
    pub fn retry_after(self, limits: Limits, now: UnixSeconds) -> u64 {
        let until = self.exhausted_until(limits, now).unwrap_or(now + 1);
        seconds_until(until, now)
    }
}

/// Whole seconds from `now` to `until`, at least 1 (for `Retry-After`).
pub fn seconds_until(until: UnixSeconds, now: UnixSeconds) -> u64 {
    u64::try_from(until - now).unwrap_or(0).max(1)
}

/// Counts for tests: `minute_count` and `day_count` in the windows holding `now`.
#[cfg(test)]
pub(crate) fn usage(now: UnixSeconds, minute_count: u64, day_count: u64) -> Usage {
    Usage {
        minute: RateWindow::Minute.start(now),
        minute_count,
        day: RateWindow::Day.start(now),
        day_count,
    }
}

/// 2030-01-01T00:00:00Z, a day (and so a minute) boundary, for tests.
#[cfg(test)]
pub(crate) const MIDNIGHT: UnixSeconds = 1_893_456_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_aligned_in_utc() {
        let now = MIDNIGHT + 3_600 + 125; // 01:02:05
        assert_eq!(RateWindow::Minute.start(now), MIDNIGHT + 3_600 + 120);
        assert_eq!(RateWindow::Minute.end(now), MIDNIGHT + 3_600 + 180);
        assert_eq!(RateWindow::Day.start(now), MIDNIGHT);
        assert_eq!(RateWindow::Day.end(now), MIDNIGHT + 86_400);
        // The boundary instant belongs to the window it starts.
        assert_eq!(RateWindow::Minute.start(MIDNIGHT), MIDNIGHT);
        assert_eq!(RateWindow::Day.end(MIDNIGHT), MIDNIGHT + 86_400);
        assert_eq!(RateWindow::Minute.end(MIDNIGHT - 1), MIDNIGHT);
    }

    #[test]
    fn counts_of_ended_windows_do_not_count() {
        let earlier = MIDNIGHT - 30;
        let stored = usage(earlier, 60, 1_000);
        // A new minute on a new day: both windows fresh.
        assert_eq!(stored.at(MIDNIGHT).minute_count, 0);
        assert_eq!(stored.at(MIDNIGHT).day_count, 0);
        // A new minute on the same day: only the minute is fresh.
        let stored = usage(MIDNIGHT + 30, 60, 500);
        let later = stored.at(MIDNIGHT + 60);
        assert_eq!((later.minute_count, later.day_count), (0, 500));
        assert!(!stored.is_exhausted(Limits::FREE, MIDNIGHT + 60));
        assert!(stored.is_exhausted(Limits::FREE, MIDNIGHT + 59));
    }

    #[test]
    fn retry_after_runs_to_the_end_of_the_exhausted_window() {
        let limits = Limits::FREE;
        // Minute exhausted, 1 s before its end: at least 1.
        let now = MIDNIGHT + 119;
        assert_eq!(usage(now, 60, 100).retry_after(limits, now), 1);
        // At the minute's first second: a full minute.
        let now = MIDNIGHT + 120;
        assert_eq!(usage(now, 60, 100).retry_after(limits, now), 60);
        // Day exhausted: until midnight.
        let now = MIDNIGHT + 86_400 - 45;
        assert_eq!(usage(now, 3, 1_000).retry_after(limits, now), 45);
        // Both exhausted: the later one, the day.
        let now = MIDNIGHT + 86_400 - 3_600 - 30;
        assert_eq!(usage(now, 60, 1_000).retry_after(limits, now), 3_630);
        assert_eq!(seconds_until(now - 5, now), 1);
    }

    #[test]
    fn the_day_is_the_exhausted_window_when_both_are() {
        let now = MIDNIGHT + 10;
        let limits = Limits::new(10, 100);
        assert_eq!(
            usage(now, 10, 100).at(now).exhausted(limits),
            Some(RateWindow::Day)
        );
        assert_eq!(
            usage(now, 10, 50).at(now).exhausted(limits),
            Some(RateWindow::Minute)
        );
        assert_eq!(usage(now, 9, 99).at(now).exhausted(limits), None);
        // A stored count of another window counts nothing in this one.
        let stale = usage(now - 60, 10, 50).in_windows(MIDNIGHT, MIDNIGHT);
        assert_eq!(stale.exhausted(limits), None);
    }
}
