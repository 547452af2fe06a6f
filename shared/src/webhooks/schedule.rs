//! When a failed delivery is tried again, and when an endpoint gives up
//! (contract section 9).
//!
//! The schedule is configuration (`WEBHOOK_RETRY_SCHEDULE`) so the tests can
//! shorten three days to seconds; a value that is not a schedule stops the
//! function at start-up with a message naming the variable, rather than
//! failing every delivery later.

use super::attempt::RetryAfter;
use chrono::{DateTime, Duration, Utc};

/// The variable that overrides the schedule: seconds, comma-separated.
pub const SCHEDULE_VARIABLE: &str = "WEBHOOK_RETRY_SCHEDULE";
/// Section 9's waits after attempts 1, 2, ...: 5 s, 5 min, 30 min, 2 h, 5 h,
/// 10 h, 14 h, 20 h and 24 h; 10 attempts over about 3 days.
pub const DEFAULT_SCHEDULE: &str = "5,300,1800,7200,18000,36000,50400,72000,86400";
/// An endpoint whose every attempt has failed for this long is disabled.
pub const DISABLE_AFTER: Duration = Duration::days(3);
/// How long a delivery (and its record) lasts from its creation, however
/// often it is attempted: a failed one can be retried by hand until then.
/// Fixed, so that retries by hand cannot keep a record for ever.
pub const RECORD_LIFETIME: Duration = Duration::days(30);
/// Each wait is multiplied by a factor drawn uniformly from this range, so
/// that the deliveries of one burst do not come back all at once.
pub const JITTER: std::ops::RangeInclusive<f64> = 0.9..=1.1;
/// The longest wait a `Retry-After` can ask for (section 9, 1.2.0: a longer
/// one counts as this), and the longest wait a schedule may hold.
pub const LONGEST_WAIT: Duration = Duration::hours(24);
/// How late a pending delivery's next attempt may come after its
/// `nextAttemptAt`: a message that finds its endpoint's slots taken waits
/// at most a minute at a time, one whose handling failed comes back after
/// the queue's visibility timeout (6 minutes), a long wait is held in hops
/// of 12 hours less a minute. Later than this, nothing is carrying it
/// (`petstore-admin data check` reports it).
pub const OVERDUE_AFTER: Duration = Duration::hours(1);
/// How long the deliveries queue keeps a message (the template's
/// `MessageRetentionPeriod`): one message carries a delivery through its
/// whole schedule, so the schedule, every wait stretched to its longest,
/// must end a day before it (a day's margin for slot waits and hand-backs).
pub const QUEUE_RETENTION: Duration = Duration::days(14);

/// The waits between attempts: attempt `n` failed, the next comes after
/// `waits[n - 1]`; after the last wait's attempt, the delivery has failed.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrySchedule {
    waits: Vec<Duration>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{SCHEDULE_VARIABLE} must be whole seconds, comma-separated (e.g. `{DEFAULT_SCHEDULE}`), at most 24 hours each and 13 days in all; {problem}")]
pub struct ScheduleError {
    problem: String,
}

impl Default for RetrySchedule {
    fn default() -> RetrySchedule {
        let waits = [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400];
        RetrySchedule {
            waits: waits.into_iter().map(Duration::seconds).collect(),
        }
    }
}

impl RetrySchedule {
    /// From `WEBHOOK_RETRY_SCHEDULE`, or section 9's when it is unset.
    pub fn from_env() -> Result<RetrySchedule, ScheduleError> {
        match std::env::var(SCHEDULE_VARIABLE) {
            Ok(text) => RetrySchedule::parse(&text),
            Err(_) => Ok(RetrySchedule::default()),
        }
    }

    pub fn parse(text: &str) -> Result<RetrySchedule, ScheduleError> {
        let refuse = |problem: String| ScheduleError { problem };
        let waits =
            text.split(',')
                .map(|part| {
                    let seconds = part.trim().parse::<u32>().map_err(|_| {
                        refuse(format!("`{}` is not a number of seconds", part.trim()))
                    })?;
                    let wait = Duration::seconds(i64::from(seconds));
                    if wait > LONGEST_WAIT {
                        return Err(refuse(format!("{seconds} is longer than 24 hours")));
                    }
                    Ok(wait)
                })
                .collect::<Result<Vec<_>, _>>()?;
        let schedule = RetrySchedule { waits };
        if schedule.longest() > QUEUE_RETENTION - Duration::days(1) {
            return Err(refuse(
                "with every wait at its longest it outlives the queue's messages".into(),
            ));
        }
        Ok(schedule)
    }

    /// How long after its creation a delivery's last scheduled attempt comes
    /// at the latest, without `Retry-After`s: every wait jittered up.
    pub fn span(&self) -> Duration {
        let total: i64 = self.waits.iter().map(Duration::num_milliseconds).sum();
        Duration::milliseconds((total as f64 * JITTER.end()).ceil() as i64)
    }

    /// The whole schedule with every wait at its longest: jittered up, or
    /// stretched by a `Retry-After` to [`LONGEST_WAIT`].
    pub fn longest(&self) -> Duration {
        let stretched = self.waits.iter().map(|wait| {
            let jittered = Duration::milliseconds(
                (wait.num_milliseconds() as f64 * JITTER.end()).ceil() as i64,
            );
            jittered.max(LONGEST_WAIT)
        });
        stretched.fold(Duration::zero(), |total, wait| total + wait)
    }

    /// Attempts in all: the first and one after each wait.
    pub fn max_attempts(&self) -> u32 {
        u32::try_from(self.waits.len() + 1).unwrap_or(u32::MAX)
    }

    /// When to try again after attempt number `attempts_made` failed at
    /// `now`: its wait times `jitter` (a factor from [`JITTER`]), and never
    /// sooner than a `Retry-After` asked, up to [`LONGEST_WAIT`] (so the
    /// message that carries the delivery outlives its schedule).
    /// `None`: that was the last attempt.
    pub fn next_attempt(
        &self,
        attempts_made: u32,
        now: DateTime<Utc>,
        retry_after: Option<RetryAfter>,
        jitter: f64,
    ) -> Option<DateTime<Utc>> {
        let index = usize::try_from(attempts_made.checked_sub(1)?).ok()?;
        let wait = self.waits.get(index)?;
        let jittered =
            wait.num_milliseconds() as f64 * jitter.clamp(*JITTER.start(), *JITTER.end());
        let scheduled = now + Duration::milliseconds(jittered.round() as i64);
        let asked = retry_after.map(|asked| asked.not_before(now).min(now + LONGEST_WAIT));
        Some(asked.map_or(scheduled, |asked| asked.max(scheduled)))
    }
}

/// A jitter factor drawn uniformly from [`JITTER`].
pub fn jitter() -> f64 {
    rand::random_range(JITTER)
}

/// Whether an endpoint failing since `failing_since` is to be disabled now.
pub fn disables(failing_since: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    now - failing_since >= DISABLE_AFTER
}

/// Whether a delivery made at `created` may still be retried by hand at
/// `now`: within its record's lifetime (DynamoDB's TTL deletes it some
/// time after, so an item past its `expiresAt` may still be read).
pub fn manual_retry_allowed(created: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    now - created < RECORD_LIFETIME
}

/// The record's `expiresAt` (DynamoDB's TTL, epoch seconds) for a delivery
/// made at `created`.
pub fn expires_at(created: DateTime<Utc>) -> i64 {
    (created + RECORD_LIFETIME).timestamp()
}

#[cfg(test)]
mod tests;
