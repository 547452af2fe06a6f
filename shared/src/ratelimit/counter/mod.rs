//! The counter table: one item per subject, counted with conditional atomic
//! updates only, so the limits hold across any number of instances.
//!
//! | attribute | meaning |
//! |---|---|
//! | `PK` | `LIMIT#key:<id>` or `LIMIT#ip:<address>` |
//! | `minuteStart`, `minuteCount` | start of the minute window last counted (Unix s), and its count |
//! | `dayStart`, `dayCount` | the same for the UTC day |
//! | `refusalMinute`, `refusals` | 429s reported for that minute window |
//! | `bannedUntil`, `banLevel`, `lastBanAt` | the ban, how many bans in a row, when the last began |
//! | `expiresAt` | DynamoDB TTL: a day after the day window (and any ban memory) is over |
//!
//! A key's subject is its id, not the hash of its secret, so a rotated key
//! keeps its counts, its refusals and its ban.
//!
//! One item per subject rather than one per day: the ban is then a condition
//! on the very item counting a request updates, so "not banned" costs nothing, and a
//! ban that runs past midnight needs no second item.
//!
//! An admitted request is ONE `UpdateItem`, one of three variants whose
//! conditions are disjoint (so at most one can succeed for a given state):
//!
//! - same minute: `minuteCount + 1, dayCount + 1` if `minuteStart = :m` and both
//!   counts are below their limits;
//! - new minute, same day: `minuteStart = :m, minuteCount = 1, dayCount + 1` if
//!   `dayStart = :d AND minuteStart < :m` and the day count is below its limit;
//! - new day: `dayStart = :d, dayCount = 1, minuteStart = :m, minuteCount = 1` if the
//!   item has no day or an older one.
//!
//! All three also require no ban in force. The process guesses the variant
//! from the windows it last saw; when the condition fails, DynamoDB returns
//! the item as it was (`ReturnValuesOnConditionCheckFailure = ALL_OLD`), which
//! says whether the request is over a limit (429, nothing written, so not
//! counted), banned, or just needs another variant (tried at once, bounded).
//!
//! Refusals and bans on the same item are in `bans`; the table's creation
//! (local runs and tests) in `table`.

mod bans;
mod table;

use super::clock::UnixSeconds;
use super::window::{Limits, RateWindow, Usage};
use crate::db::{classify, from_item, n, s, DbError, Item};
use crate::records::Id;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_dynamodb::Client;
use serde::Deserialize;
use std::fmt;

pub use table::create_counter_table;

/// How many variants counting a request tries before giving up (it needs at most
/// three: a wrong guess, then the variant the stored item calls for).
const MAX_ATTEMPTS: usize = 4;

/// How long an item outlives its day window (and a ban its start), for TTL.
const TTL_SLACK: i64 = 86_400;

/// Who is counted: a key identity, or a source address for requests without a
/// valid key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    Key(Id),
    Ip(String),
}

impl Subject {
    /// The update to try first for a subject this process has not counted
    /// yet. A key was looked up before it is counted, so it exists, and a
    /// new instance (Lambda scales out under load) most likely meets it
    /// already counted this minute by another; an address is as likely new.
    /// A wrong guess costs one more update (the failed one returns the item).
    pub fn first_variant(&self) -> Variant {
        match self {
            Subject::Key(_) => Variant::SameMinute,
            Subject::Ip(_) => Variant::NewDay,
        }
    }

    fn partition(&self) -> String {
        format!("LIMIT#{self}")
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Key(id) => write!(f, "key:{id}"),
            Subject::Ip(ip) => write!(f, "ip:{ip}"),
        }
    }
}

/// The counter table failed: unreachable, throttling, missing or misconfigured,
/// or other instances kept changing the item.
#[derive(Debug, thiserror::Error)]
pub enum CounterError {
    #[error("the rate-limit table failed")]
    Table(#[from] DbError),
    #[error("{operation} {subject}: lost to concurrent updates {attempts} times")]
    Contended {
        operation: &'static str,
        subject: Subject,
        attempts: usize,
    },
}

/// A subject's item as stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stored {
    pub usage: Usage,
    /// Whether the item holds any window (it may hold only refusals).
    pub has_day: bool,
    pub refusal_minute: UnixSeconds,
    pub refusals: u64,
    pub banned_until: UnixSeconds,
    pub ban_level: u32,
    pub last_ban_at: Option<UnixSeconds>,
}

/// The counter item's attributes, as `serde_dynamo` reads them; a missing
/// attribute is zero (an item may hold only refusals, or nothing yet).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct CounterItem {
    minute_start: UnixSeconds,
    minute_count: u64,
    day_start: Option<UnixSeconds>,
    day_count: u64,
    refusal_minute: UnixSeconds,
    refusals: u64,
    banned_until: UnixSeconds,
    ban_level: u32,
    last_ban_at: Option<UnixSeconds>,
}

impl Stored {
    /// Reads an item DynamoDB returned; none is a subject never counted.
    fn read(item: Option<Item>) -> Result<Stored, DbError> {
        let Some(item) = item else {
            return Ok(Stored::default());
        };
        let item: CounterItem = from_item(item)?;
        Ok(Stored {
            usage: Usage {
                minute: item.minute_start,
                minute_count: item.minute_count,
                day: item.day_start.unwrap_or(0),
                day_count: item.day_count,
            },
            has_day: item.day_start.is_some(),
            refusal_minute: item.refusal_minute,
            refusals: item.refusals,
            banned_until: item.banned_until,
            ban_level: item.ban_level,
            last_ban_at: item.last_ban_at,
        })
    }
}

/// Which update counting a request tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    SameMinute,
    NewMinute,
    NewDay,
}

impl Variant {
    /// The variant for a subject whose stored windows start at `minute` and
    /// `day` (as last seen), at window starts `m` and `d`.
    pub fn for_windows(
        seen: Option<(UnixSeconds, UnixSeconds)>,
        m: UnixSeconds,
        d: UnixSeconds,
    ) -> Variant {
        match seen {
            Some((minute, _)) if minute == m => Variant::SameMinute,
            Some((_, day)) if day == d => Variant::NewMinute,
            _ => Variant::NewDay,
        }
    }

    /// The update expression, its condition and their values, for counting
    /// one request against `limits` in the windows starting at `m` and `d`.
    fn update(
        self,
        limits: Limits,
        now: UnixSeconds,
        (m, d): (UnixSeconds, UnixSeconds),
    ) -> (&'static str, String, Vec<(&'static str, AttributeValue)>) {
        let not_banned = "(attribute_not_exists(bannedUntil) OR bannedUntil <= :now)";
        let mut values = vec![(":one", n(1)), (":now", n(now)), (":m", n(m))];
        let (expression, condition) = match self {
            Variant::SameMinute => {
                values.extend([(":ml", n(limits.per_minute)), (":dl", n(limits.per_day))]);
                (
                    "SET minuteCount = minuteCount + :one, dayCount = dayCount + :one",
                    format!("minuteStart = :m AND minuteCount < :ml AND dayCount < :dl AND {not_banned}"),
                )
            }
            Variant::NewMinute => {
                values.extend([
                    (":d", n(d)),
                    (":dl", n(limits.per_day)),
                    (":ttl", n(ttl_for(d))),
                ]);
                (
                    "SET minuteStart = :m, minuteCount = :one, dayCount = dayCount + :one, expiresAt = :ttl",
                    format!("dayStart = :d AND minuteStart < :m AND dayCount < :dl AND {not_banned}"),
                )
            }
            Variant::NewDay => {
                values.extend([(":d", n(d)), (":ttl", n(ttl_for(d)))]);
                (
                    "SET dayStart = :d, dayCount = :one, minuteStart = :m, minuteCount = :one, expiresAt = :ttl",
                    format!("(attribute_not_exists(dayStart) OR dayStart < :d) AND {not_banned}"),
                )
            }
        };
        (expression, condition, values)
    }
}

/// What counting one request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// Counted; the usage after it.
    Admitted(Usage),
    /// Over a limit; not counted. The usage as stored, and the stored item
    /// (for its refusal count).
    Limited(Usage, Stored),
    /// A ban is in force until then.
    Banned(UnixSeconds),
}

/// The counter table.
#[derive(Clone, Debug)]
pub struct Counters {
    client: Client,
    table: String,
}

/// What a conditional update came to.
enum Update {
    /// Written; the item after.
    Done(Stored),
    /// The condition failed; the item as it was, unchanged.
    ConditionFailed(Stored),
}

impl Counters {
    pub fn new(client: Client, table: impl Into<String>) -> Counters {
        Counters {
            client,
            table: table.into(),
        }
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    async fn update(
        &self,
        subject: &Subject,
        expression: &str,
        condition: &str,
        values: Vec<(&str, AttributeValue)>,
    ) -> Result<Update, CounterError> {
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("PK", s(subject.partition()))
            .update_expression(expression)
            .condition_expression(condition)
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        for (name, value) in values {
            request = request.expression_attribute_values(name, value);
        }
        match request.send().await {
            Ok(out) => Ok(Update::Done(Stored::read(out.attributes)?)),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(UpdateItemError::is_conditional_check_failed_exception) =>
            {
                let item = match err.into_service_error() {
                    UpdateItemError::ConditionalCheckFailedException(failed) => failed.item,
                    _ => None,
                };
                Ok(Update::ConditionFailed(Stored::read(item)?))
            }
            Err(err) => Err(classify(&self.table, err).into()),
        }
    }

    /// Counts one request against `limits` at `now`, trying `first` first.
    pub async fn count(
        &self,
        subject: &Subject,
        limits: Limits,
        now: UnixSeconds,
        first: Variant,
    ) -> Result<Counted, CounterError> {
        let (mut m, mut d) = (RateWindow::Minute.start(now), RateWindow::Day.start(now));
        let mut variant = first;
        // Not db::Retry: a failed condition here returns the item as it is
        // (ALL_OLD), so the next attempt is planned from fresh state at once,
        // and a lone UpdateItem never meets a transaction conflict to back
        // off from.
        for _ in 0..MAX_ATTEMPTS {
            let (expression, condition, values) = variant.update(limits, now, (m, d));
            let stored = match self.update(subject, expression, &condition, values).await? {
                Update::Done(stored) => return Ok(Counted::Admitted(stored.usage)),
                Update::ConditionFailed(stored) => stored,
            };
            if stored.banned_until > now {
                return Ok(Counted::Banned(stored.banned_until));
            }
            if !stored.has_day {
                variant = Variant::NewDay;
                continue;
            }
            // Another instance's clock may run ahead: windows never go back.
            m = m.max(stored.usage.minute);
            d = d.max(stored.usage.day);
            let usage = stored.usage.in_windows(m, d);
            if usage.exhausted(limits).is_some() {
                return Ok(Counted::Limited(usage, stored));
            }
            variant = Variant::for_windows(Some((stored.usage.minute, stored.usage.day)), m, d);
        }
        Err(CounterError::Contended {
            operation: "counting",
            subject: subject.clone(),
            attempts: MAX_ATTEMPTS,
        })
    }
}

/// When an item whose day window starts at `day` may go.
fn ttl_for(day: UnixSeconds) -> UnixSeconds {
    day + RateWindow::Day.seconds() + TTL_SLACK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variant_follows_the_windows_last_seen() {
        let (m, d) = (1_893_456_060, 1_893_456_000);
        assert_eq!(
            Variant::for_windows(Some((m, d)), m, d),
            Variant::SameMinute
        );
        assert_eq!(
            Variant::for_windows(Some((m - 60, d)), m, d),
            Variant::NewMinute
        );
        assert_eq!(
            Variant::for_windows(Some((m - 86_400, d - 86_400)), m, d),
            Variant::NewDay
        );
        assert_eq!(Variant::for_windows(None, m, d), Variant::NewDay);
    }

    #[test]
    fn a_stored_item_reads_with_absent_attributes_as_zero() -> Result<(), DbError> {
        let item = Item::from([
            ("PK".to_string(), s("LIMIT#key:7")),
            ("refusalMinute".to_string(), n(60)),
            ("refusals".to_string(), n(3)),
            ("expiresAt".to_string(), n(999)),
        ]);
        let stored = Stored::read(Some(item))?;
        assert!(!stored.has_day);
        assert_eq!((stored.refusal_minute, stored.refusals), (60, 3));
        assert_eq!((stored.banned_until, stored.last_ban_at), (0, None));
        assert_eq!(Stored::read(None)?, Stored::default());
        Ok(())
    }
}
