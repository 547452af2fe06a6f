//! What a response says about its subject's limits: the numbers of the
//! rate-limit headers (the edge renders them, in `http::rate_limit`).

use super::clock::UnixSeconds;
use super::window::{Limits, RateWindow, Usage};

/// What a response says about its subject's limits: one window, chosen as the
/// contract says, plus both windows' policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateStatus {
    pub window: RateWindow,
    pub limit: u64,
    pub remaining: u64,
    /// Unix seconds when `window` ends (for a ban: when the ban ends).
    pub reset: UnixSeconds,
    pub now: UnixSeconds,
    pub limits: Limits,
}

impl RateStatus {
    /// The window with the fewest requests remaining after this request (on a
    /// tie, the day), for `usage` as it stands after this request.
    pub fn of(limits: Limits, usage: Usage, now: UnixSeconds) -> RateStatus {
        let usage = usage.at(now);
        let minute = usage.remaining(limits, RateWindow::Minute);
        let day = usage.remaining(limits, RateWindow::Day);
        let window = if minute < day {
            RateWindow::Minute
        } else {
            RateWindow::Day
        };
        RateStatus {
            window,
            limit: limits.of(window),
            remaining: minute.min(day),
            reset: window.end(now),
            now,
            limits,
        }
    }

    /// While banned: nothing remains until the ban ends.
    pub fn banned(limits: Limits, until: UnixSeconds, now: UnixSeconds) -> RateStatus {
        RateStatus {
            window: RateWindow::Minute,
            limit: limits.per_minute,
            remaining: 0,
            reset: until,
            now,
            limits,
        }
    }

    /// When the counts are unknown (the counter table failed): the minute
    /// window as if nothing were counted yet.
    pub fn unknown(limits: Limits, now: UnixSeconds) -> RateStatus {
        RateStatus::of(limits, Usage::default(), now)
    }

    /// Seconds until `reset`, never negative.
    pub fn seconds_to_reset(&self) -> u64 {
        u64::try_from(self.reset - self.now).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ratelimit::window::{usage, MIDNIGHT};

    #[test]
    fn the_window_with_fewer_remaining_is_shown() {
        let now = MIDNIGHT + 90;
        let status = RateStatus::of(Limits::FREE, usage(now, 50, 100), now);
        assert_eq!(status.window, RateWindow::Minute);
        assert_eq!((status.limit, status.remaining), (60, 10));
        assert_eq!(status.reset, MIDNIGHT + 120);
        assert_eq!(status.seconds_to_reset(), 30);

        let status = RateStatus::of(Limits::FREE, usage(now, 5, 990), now);
        assert_eq!(status.window, RateWindow::Day);
        assert_eq!((status.limit, status.remaining), (1_000, 10));
        assert_eq!(status.reset, MIDNIGHT + 86_400);
    }

    #[test]
    fn a_tie_shows_the_day() {
        let now = MIDNIGHT + 10;
        let status = RateStatus::of(Limits::new(10, 100), usage(now, 5, 95), now);
        assert_eq!(status.window, RateWindow::Day);
        assert_eq!(status.remaining, 5);
        // Both exhausted is a tie too.
        let status = RateStatus::of(Limits::new(10, 100), usage(now, 10, 100), now);
        assert_eq!(status.window, RateWindow::Day);
        assert_eq!(status.remaining, 0);
    }

    #[test]
    fn remaining_never_goes_below_zero() {
        let now = MIDNIGHT + 10;
        let status = RateStatus::of(Limits::new(10, 100), usage(now, 25, 30), now);
        assert_eq!(status.remaining, 0);
        assert_eq!(status.window, RateWindow::Minute);
    }

    #[test]
    fn a_ban_shows_nothing_remaining_until_it_ends() {
        let now = MIDNIGHT + 15;
        let status = RateStatus::banned(Limits::FREE, now + 900, now);
        assert_eq!(status.remaining, 0);
        assert_eq!(status.reset, now + 900);
        assert_eq!(status.seconds_to_reset(), 900);
    }
}
