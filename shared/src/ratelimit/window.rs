//! Fixed UTC windows, plans, the numbers a response shows and ban lengths:
//! pure arithmetic on Unix seconds, with the clock injected so tests can pin it.

use http::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// Unix seconds.
pub type UnixSeconds = i64;

/// Where the limiter reads the time. Injected, so tests decide which window
/// they are in instead of racing the wall clock's minute boundary.
pub trait Clock: Send + Sync {
    fn now(&self) -> UnixSeconds;
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> UnixSeconds {
        chrono::Utc::now().timestamp()
    }
}

/// A clock that moves only when told to; for tests.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(now: UnixSeconds) -> ManualClock {
        ManualClock(AtomicI64::new(now))
    }

    pub fn set(&self, now: UnixSeconds) {
        self.0.store(now, Ordering::SeqCst);
    }

    pub fn advance(&self, seconds: i64) {
        self.0.fetch_add(seconds, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> UnixSeconds {
        self.0.load(Ordering::SeqCst)
    }
}

/// A key's plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    Free,
    Pro,
    Business,
    /// Limits set on the key itself.
    Enterprise,
}

impl Plan {
    pub fn parse(raw: &str) -> Option<Plan> {
        match raw {
            "free" => Some(Plan::Free),
            "pro" => Some(Plan::Pro),
            "business" => Some(Plan::Business),
            "enterprise" => Some(Plan::Enterprise),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Pro => "pro",
            Plan::Business => "business",
            Plan::Enterprise => "enterprise",
        }
    }

    /// The plan's own limits; `None` for enterprise, whose limits are the key's.
    pub fn limits(self) -> Option<Limits> {
        match self {
            Plan::Free => Some(Limits::FREE),
            Plan::Pro => Some(Limits::new(300, 10_000)),
            Plan::Business => Some(Limits::new(1_000, 100_000)),
            Plan::Enterprise => None,
        }
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
        let (minute, day) = (RateWindow::Minute.start(now), RateWindow::Day.start(now));
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

    fn remaining(self, limits: Limits, window: RateWindow) -> u64 {
        limits.of(window).saturating_sub(self.count(window))
    }

    /// Whether another request would go over a limit at `now`.
    pub fn is_exhausted(self, limits: Limits, now: UnixSeconds) -> bool {
        self.exhausted_until(limits, now).is_some()
    }

    /// When the last exhausted window ends (the day if both are), or `None` if
    /// another request fits.
    pub fn exhausted_until(self, limits: Limits, now: UnixSeconds) -> Option<UnixSeconds> {
        let usage = self.at(now);
        if usage.day_count >= limits.per_day {
            Some(RateWindow::Day.end(now))
        } else if usage.minute_count >= limits.per_minute {
            Some(RateWindow::Minute.end(now))
        } else {
            None
        }
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

    /// The `X-RateLimit-*` headers and the IETF draft's `RateLimit-Policy` / `RateLimit`.
    pub fn headers(&self) -> Vec<(HeaderName, HeaderValue)> {
        let policy = format!(
            "\"minute\";q={};w=60, \"day\";q={};w=86400",
            self.limits.per_minute, self.limits.per_day
        );
        let current = format!(
            "\"{}\";r={};t={}",
            self.window.name(),
            self.remaining,
            self.seconds_to_reset()
        );
        let mut headers = vec![
            (
                HeaderName::from_static("x-ratelimit-limit"),
                HeaderValue::from(self.limit),
            ),
            (
                HeaderName::from_static("x-ratelimit-remaining"),
                HeaderValue::from(self.remaining),
            ),
            (
                HeaderName::from_static("x-ratelimit-reset"),
                HeaderValue::from(self.reset),
            ),
        ];
        // Both are ASCII digits, quotes, letters and punctuation: always valid.
        if let Ok(value) = HeaderValue::from_str(&policy) {
            headers.push((HeaderName::from_static("ratelimit-policy"), value));
        }
        if let Ok(value) = HeaderValue::from_str(&current) {
            headers.push((HeaderName::from_static("ratelimit"), value));
        }
        headers
    }

    /// Sets the headers on a response, replacing any already there.
    pub fn apply(&self, headers: &mut HeaderMap) {
        for (name, value) in self.headers() {
            headers.insert(name, value);
        }
    }
}

/// How long a ban lasts, given how many bans the subject had in the last
/// 24 hours: `base`, doubled for each, at most `max`.
pub fn ban_length(base: Duration, max: Duration, recent_bans: u32) -> Duration {
    let factor = 1u32.checked_shl(recent_bans.min(31)).unwrap_or(u32::MAX);
    base.checked_mul(factor).unwrap_or(max).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2030-01-01T00:00:00Z, a day (and so a minute) boundary.
    const MIDNIGHT: i64 = 1_893_456_000;

    fn usage(now: i64, minute_count: u64, day_count: u64) -> Usage {
        Usage {
            minute: RateWindow::Minute.start(now),
            minute_count,
            day: RateWindow::Day.start(now),
            day_count,
        }
    }

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
    fn the_policy_and_current_window_headers() {
        let now = MIDNIGHT + 15;
        let status = RateStatus::of(Limits::FREE, usage(now, 60, 60), now);
        let headers: HeaderMap = status.headers().into_iter().collect();
        assert_eq!(headers["x-ratelimit-limit"], "60");
        assert_eq!(headers["x-ratelimit-remaining"], "0");
        assert_eq!(
            headers["x-ratelimit-reset"],
            (MIDNIGHT + 60).to_string().as_str()
        );
        assert_eq!(
            headers["ratelimit-policy"],
            "\"minute\";q=60;w=60, \"day\";q=1000;w=86400"
        );
        assert_eq!(headers["ratelimit"], "\"minute\";r=0;t=45");
    }

    #[test]
    fn a_ban_shows_nothing_remaining_until_it_ends() {
        let now = MIDNIGHT + 15;
        let status = RateStatus::banned(Limits::FREE, now + 900, now);
        assert_eq!(status.remaining, 0);
        assert_eq!(status.reset, now + 900);
        assert_eq!(status.seconds_to_reset(), 900);
    }

    #[test]
    fn bans_double_up_to_the_cap() {
        let (base, max) = (Duration::from_secs(900), Duration::from_secs(86_400));
        assert_eq!(ban_length(base, max, 0), Duration::from_secs(900));
        assert_eq!(ban_length(base, max, 1), Duration::from_secs(1_800));
        assert_eq!(ban_length(base, max, 6), Duration::from_secs(57_600));
        assert_eq!(ban_length(base, max, 7), max);
        assert_eq!(ban_length(base, max, 40), max);
    }

    #[test]
    fn plans_have_their_limits() {
        assert_eq!(
            Plan::parse("pro").and_then(Plan::limits),
            Some(Limits::new(300, 10_000))
        );
        assert_eq!(Plan::Business.limits(), Some(Limits::new(1_000, 100_000)));
        assert_eq!(Plan::Enterprise.limits(), None);
        assert_eq!(Plan::parse("gold"), None);
        assert_eq!(Limits::enterprise(0, 10), None);
    }
}
