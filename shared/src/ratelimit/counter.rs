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
//! One item per subject rather than one per day: the ban is then a condition
//! on the very item an admission updates, so "not banned" costs nothing, and a
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

use super::window::{ban_length, Limits, RateWindow, UnixSeconds, Usage};
use crate::db::tables::table_exists;
use crate::db::{classify, DbError};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType, ReturnValue,
    ReturnValuesOnConditionCheckFailure, ScalarAttributeType, TimeToLiveSpecification,
};
use aws_sdk_dynamodb::Client;
use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

type Item = HashMap<String, AttributeValue>;

/// How many variants an admission tries before giving up (it needs at most
/// three: a wrong guess, then the variant the stored item calls for).
const MAX_ATTEMPTS: usize = 4;

/// How long an item outlives its day window (and a ban its start), for TTL.
const TTL_SLACK: i64 = 86_400;

/// Who is counted: a key, or a source address for requests without a valid key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    Key(u64),
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

/// The counter table failed: unreachable, throttling, missing or misconfigured.
#[derive(Debug, thiserror::Error)]
#[error("the rate-limit table is unavailable: {0}")]
pub struct CounterError(pub String);

fn failed<E, R>(err: SdkError<E, R>) -> CounterError
where
    E: std::error::Error + Send + Sync + 'static,
    R: fmt::Debug,
{
    CounterError(format!(
        "{}",
        aws_sdk_dynamodb::error::DisplayErrorContext(&err)
    ))
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

fn number(item: &Item, name: &str) -> Option<i64> {
    item.get(name)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
}

impl Stored {
    fn from_item(item: &Item) -> Stored {
        let count = |name| {
            number(item, name)
                .and_then(|v| u64::try_from(v).ok())
                .unwrap_or(0)
        };
        Stored {
            usage: Usage {
                minute: number(item, "minuteStart").unwrap_or(0),
                minute_count: count("minuteCount"),
                day: number(item, "dayStart").unwrap_or(0),
                day_count: count("dayCount"),
            },
            has_day: number(item, "dayStart").is_some(),
            refusal_minute: number(item, "refusalMinute").unwrap_or(0),
            refusals: count("refusals"),
            banned_until: number(item, "bannedUntil").unwrap_or(0),
            ban_level: u32::try_from(count("banLevel")).unwrap_or(u32::MAX),
            last_ban_at: number(item, "lastBanAt"),
        }
    }
}

/// Which update an admission tries.
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

/// A failed conditional update: the item as it was, or a real failure.
enum UpdateFailure {
    Condition(Stored),
    Other(CounterError),
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
    ) -> Result<Stored, UpdateFailure> {
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("PK", AttributeValue::S(subject.partition()))
            .update_expression(expression)
            .condition_expression(condition)
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        for (name, value) in values {
            request = request.expression_attribute_values(name, value);
        }
        match request.send().await {
            Ok(out) => Ok(out
                .attributes
                .as_ref()
                .map(Stored::from_item)
                .unwrap_or_default()),
            Err(SdkError::ServiceError(service)) => match service.err() {
                UpdateItemError::ConditionalCheckFailedException(e) => Err(
                    UpdateFailure::Condition(e.item().map(Stored::from_item).unwrap_or_default()),
                ),
                other => Err(UpdateFailure::Other(CounterError(format!("{other:?}")))),
            },
            Err(other) => Err(UpdateFailure::Other(failed(other))),
        }
    }

    /// Counts one request against `limits` at `now`, trying `first` first.
    pub async fn admit(
        &self,
        subject: &Subject,
        limits: Limits,
        now: UnixSeconds,
        first: Variant,
    ) -> Result<Counted, CounterError> {
        let (mut m, mut d) = (RateWindow::Minute.start(now), RateWindow::Day.start(now));
        let mut variant = first;
        for _ in 0..MAX_ATTEMPTS {
            let not_banned = "(attribute_not_exists(bannedUntil) OR bannedUntil <= :now)";
            let (expression, condition) = match variant {
                Variant::SameMinute => (
                    "SET minuteCount = minuteCount + :one, dayCount = dayCount + :one".to_string(),
                    format!("minuteStart = :m AND minuteCount < :ml AND dayCount < :dl AND {not_banned}"),
                ),
                Variant::NewMinute => (
                    "SET minuteStart = :m, minuteCount = :one, dayCount = dayCount + :one, expiresAt = :ttl".to_string(),
                    format!("dayStart = :d AND minuteStart < :m AND dayCount < :dl AND {not_banned}"),
                ),
                Variant::NewDay => (
                    "SET dayStart = :d, dayCount = :one, minuteStart = :m, minuteCount = :one, expiresAt = :ttl".to_string(),
                    format!("(attribute_not_exists(dayStart) OR dayStart < :d) AND {not_banned}"),
                ),
            };
            let mut values = vec![(":one", n(1)), (":now", n(now)), (":m", n(m))];
            match variant {
                Variant::SameMinute => {
                    values.extend([(":ml", n(limits.per_minute)), (":dl", n(limits.per_day))]);
                }
                Variant::NewMinute => {
                    values.extend([
                        (":d", n(d)),
                        (":dl", n(limits.per_day)),
                        (":ttl", n(ttl_for(d))),
                    ]);
                }
                Variant::NewDay => values.extend([(":d", n(d)), (":ttl", n(ttl_for(d)))]),
            }
            let result = self.update(subject, &expression, &condition, values).await;
            let stored = match result {
                Ok(stored) => return Ok(Counted::Admitted(stored.usage)),
                Err(UpdateFailure::Other(e)) => return Err(e),
                Err(UpdateFailure::Condition(stored)) => stored,
            };
            if stored.banned_until > now {
                return Ok(Counted::Banned(stored.banned_until));
            }
            // Another instance's clock may run ahead: windows never go back.
            if stored.has_day {
                m = m.max(stored.usage.minute);
                d = d.max(stored.usage.day);
            }
            let exhausted = |usage: Usage| {
                usage.minute_count >= limits.per_minute || usage.day_count >= limits.per_day
            };
            variant = if stored.has_day && stored.usage.minute == m {
                if exhausted(stored.usage) {
                    return Ok(Counted::Limited(stored.usage, stored));
                }
                Variant::SameMinute
            } else if stored.has_day && stored.usage.day == d {
                if stored.usage.day_count >= limits.per_day {
                    let usage = Usage {
                        minute: m,
                        minute_count: 0,
                        ..stored.usage
                    };
                    return Ok(Counted::Limited(usage, stored));
                }
                Variant::NewMinute
            } else {
                Variant::NewDay
            };
        }
        Err(CounterError(format!(
            "counting {subject} still contended after {MAX_ATTEMPTS} attempts"
        )))
    }

    /// Adds `count` refusals made in the minute window `m`; returns the item
    /// after. Refusals of a minute that is already over are dropped: they can
    /// no longer earn a ban.
    pub async fn report_refusals(
        &self,
        subject: &Subject,
        count: u64,
        m: UnixSeconds,
        now: UnixSeconds,
        same_minute: bool,
    ) -> Result<Option<Stored>, CounterError> {
        let mut same = same_minute;
        for _ in 0..MAX_ATTEMPTS {
            let (expression, condition) = if same {
                ("SET refusals = refusals + :c", "refusalMinute = :m")
            } else {
                (
                    "SET refusalMinute = :m, refusals = :c, expiresAt = if_not_exists(expiresAt, :ttl)",
                    "attribute_not_exists(refusalMinute) OR refusalMinute < :m",
                )
            };
            let mut values = vec![(":c", n(count)), (":m", n(m))];
            if !same {
                values.push((":ttl", n(ttl_for(RateWindow::Day.start(now)))));
            }
            match self.update(subject, expression, condition, values).await {
                Ok(stored) => return Ok(Some(stored)),
                Err(UpdateFailure::Other(e)) => return Err(e),
                Err(UpdateFailure::Condition(stored)) if stored.refusal_minute > m => {
                    return Ok(None)
                }
                Err(UpdateFailure::Condition(stored)) => same = stored.refusal_minute == m,
            }
        }
        Err(CounterError(format!(
            "reporting refusals of {subject} still contended"
        )))
    }

    /// Bans `subject` from `now`, as `stored` (the item with refusals over the
    /// threshold) calls for: the length doubles for each ban in the last 24
    /// hours. Only one instance's ban takes effect; the others learn it.
    /// Returns when the ban ends.
    pub async fn ban(
        &self,
        subject: &Subject,
        stored: Stored,
        now: UnixSeconds,
        base: Duration,
        max: Duration,
    ) -> Result<UnixSeconds, CounterError> {
        let recent = stored.last_ban_at.is_some_and(|at| at > now - 86_400);
        let level = if recent { stored.ban_level } else { 0 };
        let length = ban_length(base, max, level);
        let until = now + i64::try_from(length.as_secs()).unwrap_or(i64::MAX / 2);
        let last = match stored.last_ban_at {
            Some(_) => "lastBanAt = :last",
            None => "attribute_not_exists(lastBanAt)",
        };
        let condition =
            format!("(attribute_not_exists(bannedUntil) OR bannedUntil <= :now) AND {last}");
        let mut values = vec![
            (":until", n(until)),
            (":level", n(level.saturating_add(1))),
            (":now", n(now)),
            (":zero", n(0)),
            (":ttl", n(until.max(now + 86_400) + TTL_SLACK)),
        ];
        if let Some(at) = stored.last_ban_at {
            values.push((":last", n(at)));
        }
        let expression =
            "SET bannedUntil = :until, banLevel = :level, lastBanAt = :now, refusals = :zero, expiresAt = :ttl";
        match self.update(subject, expression, &condition, values).await {
            Ok(_) => Ok(until),
            // Another instance banned it first.
            Err(UpdateFailure::Condition(current)) if current.banned_until > now => {
                Ok(current.banned_until)
            }
            Err(UpdateFailure::Condition(_)) => {
                Err(CounterError(format!("banning {subject} lost a race")))
            }
            Err(UpdateFailure::Other(e)) => Err(e),
        }
    }

    /// Lifts a ban and forgets earlier ones and pending refusals. Returns
    /// whether a ban was in force at `now`.
    pub async fn unban(&self, subject: &Subject, now: UnixSeconds) -> Result<bool, CounterError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("PK", AttributeValue::S(subject.partition()))
            .update_expression("REMOVE bannedUntil, banLevel, lastBanAt, refusals, refusalMinute")
            .condition_expression("attribute_exists(PK)")
            .return_values(ReturnValue::AllOld)
            .send()
            .await;
        match result {
            Ok(out) => Ok(out
                .attributes
                .as_ref()
                .is_some_and(|item| Stored::from_item(item).banned_until > now)),
            Err(SdkError::ServiceError(service))
                if service.err().is_conditional_check_failed_exception() =>
            {
                Ok(false)
            }
            Err(other) => Err(failed(other)),
        }
    }
}

/// Creates the counter table unless it exists, with TTL on `expiresAt`; for
/// local runs and tests (production's comes from `template.yaml`).
pub async fn create_counter_table(client: &Client, table: &str) -> Result<(), DbError> {
    if table_exists(client, table).await? {
        return Ok(());
    }
    let built = |e: aws_sdk_dynamodb::error::BuildError| DbError::internal(e);
    let created = client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("PK")
                .key_type(KeyType::Hash)
                .build()
                .map_err(built)?,
        )
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("PK")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(built)?,
        )
        .send()
        .await;
    match created {
        Ok(_) => {}
        // Another process created it between our check and our create.
        Err(err)
            if err
                .as_service_error()
                .is_some_and(|e| e.is_resource_in_use_exception()) =>
        {
            return Ok(())
        }
        Err(err) => return Err(classify(err)),
    }
    client
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .attribute_name("expiresAt")
                .enabled(true)
                .build()
                .map_err(built)?,
        )
        .send()
        .await
        .map_err(classify)?;
    Ok(())
}

fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
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
}
