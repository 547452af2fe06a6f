//! The counter table: one item per subject, counted with conditional atomic
//! updates only, so the limits hold across any number of instances.
//!
//! | attribute | meaning |
//! |---|---|
//! | `PK` | `LIMIT#key:<id>` or `LIMIT#ip:<address>` |
//! | `lastMinute` | start of the minute window last counted (Unix s) |
//! | `m7_<r>`, `m8_<r>`, `m9_<r>`, `m11_<r>` | the minute's count: one slot per family, named by the minute's residue (`slots` draws them) |
//! | `d<day>` | the count of day number `day` since the epoch |
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
//! An admitted request is ONE `UpdateItem`, the same whatever the item holds
//! and whatever this process has seen: `slots` says how the item's layout
//! lets one expression count a request in the same minute, a new minute or
//! a new day, and why its condition is exact, and draws the slot families
//! (which names an item holds, the slot a request picks, how a window's
//! count is read, when a slot is reset). It also requires no ban in
//! force. When the condition fails, DynamoDB returns the item as it was
//! (`ReturnValuesOnConditionCheckFailure = ALL_OLD`), which says whether the
//! request is over a limit (429, nothing written, so not counted) or banned;
//! only a clock behind another instance's or an item idle a multiple of
//! 5,544 minutes takes a second update.
//!
//! Items written before this layout (`minuteStart`, `minuteCount`,
//! `dayStart`, `dayCount`) are not read: their counts start again from 0
//! in the minute and day the release comes (see docs/deploy.md).
//!
//! Refusals and bans on the same item are in `bans`; the table's creation
//! (local runs and tests) in `table`.

mod bans;
mod slots;
mod table;

use super::clock::UnixSeconds;
use super::window::{Limits, RateWindow, Usage};
use crate::db::{classify, s, DbError, Item};
use crate::records::Id;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_dynamodb::Client;
use slots::Count;
use std::fmt;

pub use slots::MinuteSlots;
pub use table::create_counter_table;

/// How many updates counting a request tries before giving up (it needs at
/// most three: one, one more for a clock behind the item's, one to reset
/// an item idle a multiple of 5,544 minutes).
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
    /// The counts of the minute last counted and its day.
    pub usage: Usage,
    /// The minute's slots as stored (`slots`).
    pub minute_slots: MinuteSlots,
    pub refusal_minute: UnixSeconds,
    pub refusals: u64,
    pub banned_until: UnixSeconds,
    pub ban_level: u32,
    pub last_ban_at: Option<UnixSeconds>,
}

impl Stored {
    /// Whether one update of every slot family can count a request in the
    /// minute starting at `m` (else one must reset them: see `slots`).
    fn counts_minute(&self, m: UnixSeconds) -> bool {
        self.minute_slots.count_in(m).is_some()
    }

    /// Reads an item DynamoDB returned; none is a subject never counted.
    fn read(item: Option<Item>) -> Result<Stored, DbError> {
        let Some(item) = item else {
            return Ok(Stored::default());
        };
        let minute_slots = MinuteSlots::read(&item);
        let usage = slots::usage_of(&item, &minute_slots);
        Ok(Stored {
            usage,
            minute_slots,
            refusal_minute: number(&item, "refusalMinute")?.unwrap_or_default(),
            refusals: number(&item, "refusals")?.unwrap_or_default(),
            banned_until: number(&item, "bannedUntil")?.unwrap_or_default(),
            ban_level: number(&item, "banLevel")?.unwrap_or_default(),
            last_ban_at: number(&item, "lastBanAt")?,
        })
    }
}

/// The number `item` holds as `name`; `None` when it holds none (absent,
/// or NULL). Anything else is a broken item. Read by hand, not through
/// `serde_dynamo`, which copied the whole item into its own map first:
/// about 25,000 instructions a count.
fn number<T: std::str::FromStr>(item: &Item, name: &str) -> Result<Option<T>, DbError> {
    match item.get(name) {
        None | Some(AttributeValue::Null(_)) => Ok(None),
        Some(AttributeValue::N(number)) => number
            .parse()
            .map(Some)
            .map_err(|_| DbError::internal(format!("counter item: {name} is {number}"))),
        Some(other) => Err(DbError::internal(format!(
            "counter item: {name} is not a number: {other:?}"
        ))),
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
    /// Written; the item after, as far as the update asked it returned.
    Done(Option<Item>),
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

    /// One conditional update of `subject`'s item; when it is written, the
    /// item after as far as `returned` asks (ALL_NEW, or UPDATED_NEW: only
    /// what the update set).
    async fn update(
        &self,
        subject: &Subject,
        expression: &str,
        condition: &str,
        values: Vec<(&str, AttributeValue)>,
        returned: ReturnValue,
    ) -> Result<Update, CounterError> {
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("PK", s(subject.partition()))
            .update_expression(expression)
            .condition_expression(condition)
            .return_values(returned)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        for (name, value) in values {
            request = request.expression_attribute_values(name, value);
        }
        match request.send().await {
            Ok(out) => Ok(Update::Done(out.attributes)),
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

    /// Counts one request against `limits` at `now`: one update, whatever
    /// the item holds (a second only for a clock behind the item's, or an
    /// item idle a multiple of 5,544 minutes; see `slots`).
    pub async fn count(
        &self,
        subject: &Subject,
        limits: Limits,
        now: UnixSeconds,
    ) -> Result<Counted, CounterError> {
        let mut m = RateWindow::Minute.start(now);
        let mut count = Count::Any;
        // Not db::Retry: a failed condition here returns the item as it is
        // (ALL_OLD), so the next attempt is planned from fresh state at once,
        // and a lone UpdateItem never meets a transaction conflict to back
        // off from.
        for _ in 0..MAX_ATTEMPTS {
            let ttl = ttl_for(RateWindow::Day.start(m));
            let expression = count.expression(limits, now, m, ttl);
            let update = self
                .update(
                    subject,
                    &expression.update,
                    &expression.condition,
                    expression.values,
                    // An admitted count needs only its usage, which the
                    // attributes it sets hold (lastMinute, the day's and the
                    // minute's slots); not the key, refusals or ban memory.
                    ReturnValue::UpdatedNew,
                )
                .await?;
            let stored = match update {
                Update::Done(set) => return Ok(Counted::Admitted(counted_usage(set, m))),
                Update::ConditionFailed(stored) => stored,
            };
            if stored.banned_until > now {
                return Ok(Counted::Banned(stored.banned_until));
            }
            // Another instance's clock may run ahead: windows never go back.
            m = m.max(stored.usage.minute);
            let usage = stored.usage.in_windows(m, RateWindow::Day.start(m));
            if usage.exhausted(limits).is_some() {
                return Ok(Counted::Limited(usage, stored));
            }
            count = if stored.counts_minute(m) {
                Count::Any
            } else {
                Count::Reset
            };
        }
        Err(CounterError::Contended {
            operation: "counting",
            subject: subject.clone(),
            attempts: MAX_ATTEMPTS,
        })
    }
}

/// The usage after a count written in the minute starting at `m`, from the
/// attributes it set (UPDATED_NEW). Its condition kept `lastMinute` at or
/// below `m` and it set `lastMinute = m`, so the count is `m`'s: that is
/// taken from the count itself, not from the returned `lastMinute`, which
/// DynamoDB, returning "the updated attributes", could leave out when it
/// already held `m` (DynamoDB Local returns it). Every slot read here is one
/// the count changed.
fn counted_usage(set: Option<Item>, m: UnixSeconds) -> Usage {
    let set = set.unwrap_or_default();
    slots::usage_in(&set, &MinuteSlots::read(&set), m)
}

/// When an item whose day window starts at `day` may go.
fn ttl_for(day: UnixSeconds) -> UnixSeconds {
    day + RateWindow::Day.seconds() + TTL_SLACK
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::n;

    #[test]
    fn a_counts_usage_is_its_minutes_whether_or_not_last_minute_came_back() {
        let m = 1_893_456_060;
        let written = Count::Any.expression(Limits::new(60, 1_000), m + 5, m, m + 86_400);
        assert!(written.update.contains("lastMinute = :m"));
        let k = m.div_euclid(60);
        // What the count set: every family's slot of minute k at 3, the day's at 7.
        let mut set: Item = [7_i64, 8, 9, 11]
            .iter()
            .map(|p| {
                (
                    format!("m{p}_{}", k.rem_euclid(*p)),
                    n(i128::from(k) * 1_000_000_000_000 + 3),
                )
            })
            .collect();
        set.insert(format!("d{}", m.div_euclid(86_400)), n(7));
        let without = counted_usage(Some(set.clone()), m);
        set.insert("lastMinute".to_string(), n(m));
        assert_eq!(without, counted_usage(Some(set), m));
        assert_eq!(
            (without.minute, without.minute_count, without.day_count),
            (m, 3, 7)
        );
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
        assert_eq!(stored.usage, Usage::default());
        assert_eq!((stored.refusal_minute, stored.refusals), (60, 3));
        assert_eq!((stored.banned_until, stored.last_ban_at), (0, None));
        assert_eq!(Stored::read(None)?, Stored::default());
        let broken = Item::from([("refusals".to_string(), s("3"))]);
        assert!(
            Stored::read(Some(broken)).is_err(),
            "a count that is no number"
        );
        Ok(())
    }
}
