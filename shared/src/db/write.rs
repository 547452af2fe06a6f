//! Sending a planned write: one conditional update or one transaction, and
//! what DynamoDB says of it.

use super::error::is_throttling;
use super::{classify, Db, DbError};
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::TransactWriteItem;
use std::time::Duration;

/// How many times an operation plans again after losing a race.
pub(crate) const MAX_ATTEMPTS: u32 = 8;

/// What a cancelled transaction tells us, item by item.
#[derive(Debug)]
pub(crate) enum TransactOutcome {
    Done,
    /// The condition on the item at this index failed.
    ConditionFailed(usize),
    /// Another transaction held an item: try again.
    Conflict,
}

impl Db {
    /// Runs a transaction once and says which condition, if any, failed.
    ///
    /// A lone update is sent as a plain conditional `UpdateItem`: just as
    /// atomic, at half the write units of a one-item transaction.
    pub(crate) async fn transact(
        &self,
        mut items: Vec<TransactWriteItem>,
    ) -> Result<TransactOutcome, DbError> {
        if items.len() == 1 {
            if let Some(update) = items[0].update.take() {
                return self.conditional_update(update).await;
            }
        }
        match self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await
        {
            Ok(_) => Ok(TransactOutcome::Done),
            Err(SdkError::ServiceError(service)) => match service.into_err() {
                TransactWriteItemsError::TransactionCanceledException(cancelled) => {
                    let reasons = cancelled.cancellation_reasons();
                    let throttled = reasons.iter().any(|r| is_throttling(r.code()));
                    if let Some(index) = reasons
                        .iter()
                        .position(|r| r.code() == Some("ConditionalCheckFailed"))
                    {
                        return Ok(TransactOutcome::ConditionFailed(index));
                    }
                    if throttled {
                        crate::metrics::count(crate::metrics::Metric::DbThrottles, 1);
                        return Err(DbError::Unavailable(Box::new(cancelled)));
                    }
                    crate::metrics::count(crate::metrics::Metric::DbConflicts, 1);
                    Ok(TransactOutcome::Conflict)
                }
                TransactWriteItemsError::TransactionInProgressException(_) => {
                    crate::metrics::count(crate::metrics::Metric::DbConflicts, 1);
                    Ok(TransactOutcome::Conflict)
                }
                other if is_throttling(other.code()) => {
                    crate::metrics::count(crate::metrics::Metric::DbThrottles, 1);
                    Err(DbError::Unavailable(Box::new(other)))
                }
                other => Err(DbError::Internal(Box::new(other))),
            },
            Err(other) => Err(classify(other)),
        }
    }
}

impl Db {
    async fn conditional_update(
        &self,
        update: aws_sdk_dynamodb::types::Update,
    ) -> Result<TransactOutcome, DbError> {
        let result = self
            .client
            .update_item()
            .table_name(update.table_name)
            .set_key(Some(update.key))
            .update_expression(update.update_expression)
            .set_condition_expression(update.condition_expression)
            .set_expression_attribute_names(update.expression_attribute_names)
            .set_expression_attribute_values(update.expression_attribute_values)
            .send()
            .await;
        match result {
            Ok(_) => Ok(TransactOutcome::Done),
            Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => {
                Ok(TransactOutcome::ConditionFailed(0))
            }
            Err(other) => Err(classify(other)),
        }
    }
}

/// Waits before another attempt: jittered exponential backoff, 5 ms to ~300 ms.
pub(crate) async fn backoff(attempt: u32) {
    crate::metrics::count(crate::metrics::Metric::DbRetries, 1);
    let ceiling = 5u64 << attempt.min(6);
    let millis = rand::random_range(ceiling / 2..=ceiling);
    tokio::time::sleep(Duration::from_millis(millis)).await;
}

/// The error for an operation that lost its race too many times.
pub(crate) fn too_contended(operation: &'static str) -> DbError {
    DbError::Contended {
        operation,
        attempts: MAX_ATTEMPTS,
    }
}
