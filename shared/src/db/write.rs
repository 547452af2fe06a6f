//! The one way to write: read and decide, write on the condition that the
//! decision still holds, and try again when a race is lost.
//!
//! An operation hands [`Changes::run`] an attempt: a closure that reads what it
//! needs and decides with [`crate::rules`]. It comes to an answer, or a [`Write`]: one
//! conditional item or a transaction, each item carrying the name of its
//! condition, a [`Check`] that says what its failure means (decide again from a
//! fresh read, or a particular error). [`Retry`] is the one retry policy of
//! every operation, batch reads included.
//!
//! When the request sent an `Idempotency-Key`, its [`Changes`] handle carries a
//! [`Recording`](super::idempotency::Recording): [`Changes::run`] adds the record
//! of the attempt's answer to every write it sends, as one more item after the
//! attempt's own (whose conditions stay as they are). A failed condition on
//! that item, or a conflict on it, means another request with the key made
//! or is making its change: [`DbError::IdempotencyKeyInUse`], never another attempt.
//!
//! A write decided once, whose failed condition is its caller's answer and
//! not a cue to decide again (webhook delivery's records, decided from a
//! batch's read), goes through [`Db::write_decided`]: the same write, sent
//! again only after a conflict.

use super::error::is_throttling;
use super::{classify, Changes, Db, DbError, DbFailure, Item};
use crate::metrics::{count, Metric};
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::TransactWriteItem;
use chrono::Utc;
use serde::Serialize;
use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

mod lone;

/// How many attempts an operation makes before it answers
/// [`DbError::Contended`].
pub(crate) const MAX_ATTEMPTS: u32 = 8;

/// The name of a write's condition, and what its failure means.
pub trait Check: Copy + Debug {
    fn on_failure(self) -> OnFailure;
}

/// What a failed condition means.
#[derive(Debug)]
pub enum OnFailure {
    /// The state the decision was made from has changed: read and decide again.
    ReadAgain,
    /// The write cannot succeed: answer this.
    Fail(DbError),
}

/// One write: a lone item, or the items of one transaction, each with the
/// name of its condition (`None` for an item written unconditionally), and
/// the request's idempotency record, if it has one.
#[derive(Debug, Clone)]
pub struct Write<C> {
    items: Vec<(Option<C>, TransactWriteItem)>,
    /// Boxed: most writes have none, and an item is large.
    record: Option<Box<TransactWriteItem>>,
}

impl<C: Check> Write<C> {
    pub(crate) fn new() -> Write<C> {
        Write {
            items: Vec::new(),
            record: None,
        }
    }

    /// Adds the idempotency record of the change: it goes last, and makes
    /// even a lone update a transaction.
    pub(crate) fn recording(mut self, record: TransactWriteItem) -> Write<C> {
        self.record = Some(Box::new(record));
        self
    }

    /// Adds an item whose condition is named `check`.
    pub(crate) fn checked(mut self, check: C, item: TransactWriteItem) -> Write<C> {
        self.items.push((Some(check), item));
        self
    }

    /// Adds items that rest on the same condition.
    pub(crate) fn checked_each(self, check: C, items: Vec<TransactWriteItem>) -> Write<C> {
        items
            .into_iter()
            .fold(self, |write, item| write.checked(check, item))
    }

    /// Adds an item with no condition.
    pub(crate) fn unchecked(mut self, item: TransactWriteItem) -> Write<C> {
        self.items.push((None, item));
        self
    }
}

/// What one attempt came to.
pub(crate) enum Step<T, C> {
    /// Nothing to write: this is the answer.
    Answer(T),
    /// Write this; once written, the answer is `T`.
    Write(Write<C>, T),
}

/// What DynamoDB made of a write.
#[derive(Debug, PartialEq, Eq)]
pub enum Written<C> {
    Done,
    /// This condition failed; nothing was written.
    Failed(C),
    /// Another transaction held one of the items; nothing was written.
    Conflict,
}

/// What a write decided once came to ([`Db::write_decided`]).
#[derive(Debug, PartialEq)]
pub enum Decided<C> {
    Done,
    /// This condition failed; nothing was written. The item as it was,
    /// when the failed item asked for it (`ReturnValuesOnConditionCheckFailure`).
    Failed(C, Option<Item>),
}

/// Whether to wait before the next attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pause {
    /// A condition failed: the state moved on, so decide again at once.
    None,
    /// A conflict, or work DynamoDB left undone: wait, then try again.
    Backoff,
}

/// The one retry policy: at most [`MAX_ATTEMPTS`] attempts; a lost race to a
/// change is tried again at once, anything else after a jittered, growing
/// pause; then [`DbError::Contended`].
#[derive(Debug)]
pub(crate) struct Retry {
    operation: &'static str,
    attempts: u32,
}

impl Retry {
    pub(crate) fn new(operation: &'static str) -> Retry {
        Retry {
            operation,
            attempts: 1,
        }
    }

    /// Allows one more attempt after one that lost.
    pub(crate) async fn again(&mut self, pause: Pause) -> Result<(), DbError> {
        if self.attempts >= MAX_ATTEMPTS {
            return Err(DbError::Contended {
                operation: self.operation,
                attempts: self.attempts,
            });
        }
        count(Metric::DbRetries, 1);
        if pause == Pause::Backoff {
            backoff(self.attempts - 1).await;
        }
        self.attempts += 1;
        Ok(())
    }
}

/// Jittered exponential backoff, 5 ms to ~300 ms.
async fn backoff(attempt: u32) {
    let ceiling = 5u64 << attempt.min(6);
    let millis = rand::random_range(ceiling / 2..=ceiling);
    tokio::time::sleep(Duration::from_millis(millis)).await;
}

impl Changes {
    /// Runs an operation: `attempt` reads and decides, its write is sent, and
    /// a lost race makes another attempt as [`Retry`] allows.
    pub(crate) async fn run<T, C, F, Fut>(
        &self,
        operation: &'static str,
        attempt: F,
    ) -> Result<T, DbError>
    where
        T: Serialize,
        C: Check,
        F: Fn() -> Fut,
        Fut: Future<Output = Result<Step<T, C>, DbError>>,
    {
        let mut retry = Retry::new(operation);
        loop {
            let (write, answer) = match attempt().await? {
                Step::Answer(answer) => return Ok(answer),
                Step::Write(write, answer) => (write, answer),
            };
            let write = match &self.recording {
                Some(recording) => {
                    write.recording(recording.put(self.table(), &answer, Utc::now())?)
                }
                None => write,
            };
            let pause = match self.write(write).await? {
                Written::Done => {
                    if let Some(recording) = &self.recording {
                        recording.note_written();
                    }
                    return Ok(answer);
                }
                Written::Failed(check) => match check.on_failure() {
                    OnFailure::ReadAgain => Pause::None,
                    OnFailure::Fail(error) => return Err(error),
                },
                Written::Conflict => Pause::Backoff,
            };
            retry.again(pause).await?;
        }
    }
}

impl Db {
    /// Sends a write once, as it was decided, and says which condition, if
    /// any, failed. Operations go through `Changes::run`; this is its one step.
    ///
    /// A lone update, put or delete is sent as a plain conditional
    /// `UpdateItem`, `PutItem` or `DeleteItem`: just as atomic, at half the
    /// write units of a one-item transaction.
    pub async fn write<C: Check>(&self, write: Write<C>) -> Result<Written<C>, DbError> {
        Ok(self.send(write).await?.0)
    }

    /// Sends a write decided once, whose failed condition is its caller's
    /// answer (the state moved on; there is nothing to decide again): sent
    /// again after a conflict as [`Retry`] allows, else as [`Db::write`]
    /// sends it, with the item that failed the condition when it asked for it.
    pub(crate) async fn write_decided<C: Check>(
        &self,
        operation: &'static str,
        write: Write<C>,
    ) -> Result<Decided<C>, DbError> {
        let mut retry = Retry::new(operation);
        loop {
            match self.send(write.clone()).await? {
                (Written::Done, _) => return Ok(Decided::Done),
                (Written::Failed(check), found) => return Ok(Decided::Failed(check, found)),
                (Written::Conflict, _) => retry.again(Pause::Backoff).await?,
            }
        }
    }

    /// [`Db::write`], and the item a failed condition found, if its write
    /// asked for it.
    async fn send<C: Check>(&self, write: Write<C>) -> Result<(Written<C>, Option<Item>), DbError> {
        let (checks, mut items): (Vec<Option<C>>, Vec<TransactWriteItem>) =
            write.items.into_iter().unzip();
        let record_at = write.record.is_some().then_some(items.len());
        items.extend(write.record.map(|record| *record));
        let failed = match items.as_mut_slice() {
            [lone] if lone.update.is_some() => self.conditional_update(lone.update.take()).await?,
            [lone] if lone.put.is_some() => self.conditional_put(lone.put.take()).await?,
            [lone] if lone.delete.is_some() => self.conditional_delete(lone.delete.take()).await?,
            _ => self.transact(items, record_at).await?,
        };
        match failed {
            Sent::Done => Ok((Written::Done, None)),
            Sent::Conflict => Ok((Written::Conflict, None)),
            Sent::RecordTaken => Err(DbError::IdempotencyKeyInUse),
            Sent::ConditionFailed(index, found) => match checks.get(index).copied().flatten() {
                Some(check) => Ok((Written::Failed(check), found)),
                None => Err(DbError::internal(format!(
                    "DynamoDB reports a failed condition on item {index}, which has none"
                ))),
            },
        }
    }

    /// Sends a transaction; `record_at` is the position of the idempotency
    /// record, whose failure outranks any other item's.
    async fn transact(
        &self,
        items: Vec<TransactWriteItem>,
        record_at: Option<usize>,
    ) -> Result<Sent, DbError> {
        let tables = tables_of(&items);
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await;
        let service = match result {
            Ok(_) => return Ok(Sent::Done),
            Err(SdkError::ServiceError(service)) => service.into_err(),
            Err(other) => return Err(classify(&tables, other)),
        };
        match service {
            TransactWriteItemsError::TransactionCanceledException(cancelled) => {
                let reasons = cancelled.cancellation_reasons();
                match record_at
                    .and_then(|at| reasons.get(at))
                    .and_then(|r| r.code())
                {
                    Some("ConditionalCheckFailed") => return Ok(Sent::RecordTaken),
                    Some("TransactionConflict") => {
                        count(Metric::DbConflicts, 1);
                        return Ok(Sent::RecordTaken);
                    }
                    _ => {}
                }
                if let Some(index) = reasons
                    .iter()
                    .position(|r| r.code() == Some("ConditionalCheckFailed"))
                {
                    let found = reasons[index].item.clone();
                    return Ok(Sent::ConditionFailed(index, found));
                }
                if reasons.iter().any(|r| is_throttling(r.code())) {
                    count(Metric::DbThrottles, 1);
                    let failure = DbFailure::answered(&tables, &cancelled);
                    return Err(DbError::Unavailable(Box::new(failure)));
                }
                count(Metric::DbConflicts, 1);
                Ok(Sent::Conflict)
            }
            TransactWriteItemsError::TransactionInProgressException(_) => {
                count(Metric::DbConflicts, 1);
                Ok(Sent::Conflict)
            }
            other => Err(unexpected(&tables, other)),
        }
    }
}

/// A service error a write on `table` did not expect: throttling (retry
/// later) or a bug.
fn unexpected<E: ProvideErrorMetadata>(table: &str, error: E) -> DbError {
    let failure = Box::new(DbFailure::answered(table, &error));
    if is_throttling(error.code()) {
        count(Metric::DbThrottles, 1);
        DbError::Unavailable(failure)
    } else {
        DbError::Internal(failure)
    }
}

/// The tables a transaction writes, as its failure names them.
fn tables_of(items: &[TransactWriteItem]) -> String {
    let mut tables: Vec<&str> = items
        .iter()
        .filter_map(|item| {
            let put = item.put().map(|p| p.table_name());
            let update = item.update().map(|u| u.table_name());
            let delete = item.delete().map(|d| d.table_name());
            let check = item.condition_check().map(|c| c.table_name());
            put.or(update).or(delete).or(check)
        })
        .collect();
    tables.sort_unstable();
    tables.dedup();
    tables.join(", ")
}

/// What a sent request came to, by item position.
enum Sent {
    Done,
    /// The condition of the item at this position failed; what it found,
    /// when the item asked for it.
    ConditionFailed(usize, Option<Item>),
    Conflict,
    /// The idempotency record's condition failed, or another transaction
    /// held it.
    RecordTaken,
}

#[cfg(test)]
mod tests;
