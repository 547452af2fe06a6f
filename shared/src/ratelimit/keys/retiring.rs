//! A rotation that keeps the old secret for a while (contract 4d, 1.3.0):
//! `keys rotate ID --keep-old-for DURATION`, so a caller can switch to the
//! new secret without an outage.
//!
//! The old secret's item becomes a pointer to the key's live item (its
//! `successor`), and the live item names the secret it is retiring and
//! until when (`retiring`, `retiringUntil`). A look-up of the old secret
//! reads both and answers the live item's state: a revocation, or a change
//! of plan, role or limits, made on the live item reaches the old secret as
//! it reaches the new one, and nothing has to be written twice. The pointer
//! counts only while the live item names it back, so an item claiming to
//! retire into some key (a forged one, or one a later rotation left behind)
//! is unknown. At most one secret retires at a time: a rotation while one
//! does ends the older one at once (its pointer is deleted in the same
//! transaction), whether or not the new rotation keeps its own old secret.
//!
//! | PK | SK | attributes |
//! |---|---|---|
//! | `APIKEY#<old hash>` | `APIKEY` | `id`, `successor` (the live hash), `expiresAt` (TTL: `retiringUntil`) |
//!
//! The pointer has no `GSI1PK`: it is in no key list, and the key is listed
//! once. It carries `successor`, which no short-lived key's item may (the
//! pre-traffic check's IAM writes no such attribute), so it is never read
//! as one.

use super::ApiKeyHash;
use chrono::{DateTime, Duration, Utc};

/// The longest an old secret may be kept (contract 4d).
pub const MAX_KEEP_OLD_DAYS: i64 = 7;

/// How long a rotated key's old secret keeps working: more than nothing and
/// at most [`MAX_KEEP_OLD_DAYS`], in whole seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepOldFor(Duration);

/// Why a duration cannot be a `--keep-old-for`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeepOldForError {
    #[error("`{0}` is not a duration: a whole number and s, m, h or d (30m, 2h, 7d)")]
    NotADuration(String),
    #[error(
        "`{0}` keeps the old secret for no time: leave --keep-old-for out to retire it at once"
    )]
    Zero(String),
    #[error("`{0}` is longer than 7 days: an old secret is kept at most 7d (168h)")]
    TooLong(String),
}

impl KeepOldFor {
    /// `raw` as `30m`, `2h`, `7d` or `90s`.
    pub fn parse(raw: &str) -> Result<KeepOldFor, KeepOldForError> {
        let not_one = || KeepOldForError::NotADuration(raw.to_string());
        let digits = raw.len().saturating_sub(1);
        let (number, unit) = (raw.get(..digits).ok_or_else(not_one)?, &raw[digits..]);
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            return Err(not_one());
        }
        let seconds_per: i64 = match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3_600,
            "d" => 86_400,
            _ => return Err(not_one()),
        };
        let too_long = || KeepOldForError::TooLong(raw.to_string());
        let count: i64 = number.parse().map_err(|_| too_long())?;
        let seconds = count.checked_mul(seconds_per).ok_or_else(too_long)?;
        if seconds == 0 {
            return Err(KeepOldForError::Zero(raw.to_string()));
        }
        if seconds > MAX_KEEP_OLD_DAYS * 86_400 {
            return Err(too_long());
        }
        Ok(KeepOldFor(Duration::seconds(seconds)))
    }

    /// The Unix second from which the old secret of a rotation at `now` is
    /// unknown.
    pub fn until(self, now: DateTime<Utc>) -> i64 {
        (now + self.0).timestamp()
    }
}

/// The secret a key's live item is retiring, as the live item states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Retiring {
    pub hash: ApiKeyHash,
    /// The Unix second from which it is unknown.
    pub until: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keep_is_a_whole_number_of_seconds_minutes_hours_or_days() {
        for (raw, seconds) in [
            ("90s", 90),
            ("30m", 1_800),
            ("2h", 7_200),
            ("7d", 604_800),
            ("168h", 604_800),
        ] {
            assert_eq!(
                KeepOldFor::parse(raw),
                Ok(KeepOldFor(Duration::seconds(seconds)))
            );
        }
    }

    #[test]
    fn a_keep_longer_than_7_days_is_refused() {
        for raw in ["8d", "169h", "604801s", "99999999999999999999d"] {
            assert_eq!(
                KeepOldFor::parse(raw),
                Err(KeepOldForError::TooLong(raw.into()))
            );
        }
    }

    #[test]
    fn anything_but_a_duration_is_refused() {
        for raw in ["", "d", "7", "7w", "-1d", "1.5h", " 7d", "7 d", "7D", "7dé"] {
            assert_eq!(
                KeepOldFor::parse(raw),
                Err(KeepOldForError::NotADuration(raw.into())),
                "{raw}"
            );
        }
        assert_eq!(
            KeepOldFor::parse("0m"),
            Err(KeepOldForError::Zero("0m".into()))
        );
    }

    #[test]
    fn the_old_secret_ends_the_keep_after_the_rotation() {
        let now = DateTime::from_timestamp(1_893_499_230, 0).unwrap_or_default();
        let keep = KeepOldFor::parse("2h");
        assert_eq!(keep.map(|k| k.until(now)), Ok(1_893_499_230 + 7_200));
    }
}
