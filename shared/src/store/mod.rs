//! DynamoDB single-table access: items, keys and expressions, nothing else.
//!
//! # Layout
//!
//! One table, keys `PK` and `SK` (strings), three overloaded GSIs whose sort
//! key is the record's numeric `id`, so every list is in id order and a
//! cursor is just the last id returned:
//!
//! | record | PK | SK | GSI1PK | GSI2PK | GSI3PK |
//! |---|---|---|---|---|---|
//! | pet (+ its stock) | `PET#<id>` | `PET` | `PET` | `PET#STATUS#<status>` | `PET#CATEGORY#<categoryId>` |
//! | category | `CATEGORY#<id>` | `CATEGORY` | `CATEGORY` | | |
//! | category name guard | `CATEGORYNAME#<lowercased name>` | `CATEGORYNAME` | | | |
//! | order | `ORDER#<id>` | `ORDER` | `ORDER` | `ORDER#COMPLETE#<bool>` | `ORDER#PET#<petId>` |
//! | API key | `APIKEY#<sha256 hex of the key>` | `APIKEY` | `APIKEY` | | |
//!
//! Access patterns: get/put/delete by id on the table; list all of a kind on
//! GSI1; pets by status and orders by completion on GSI2; pets by category and
//! orders by pet on GSI3 (with the other filter, when both are given, as a
//! filter expression on that query); an API key by the hash of the key sent
//! (see [`crate::ratelimit::keys`]). Nothing on a request path scans. Rate-limit
//! counters live in a table of their own ([`crate::ratelimit::counter`]).
//!
//! A pet's inventory entry is not a separate item: `stock` and `openOrders`
//! live on the pet item, so every stock rule is a condition on one item, and
//! deleting the pet removes its inventory entry. A category keeps `petCount`,
//! so "in use" is a condition, not a query.
//!
//! # Concurrency
//!
//! Every change is a conditional write or a transaction whose conditions pin
//! the state the change was planned from (see [`crate::domain`]). When a
//! condition fails the operation re-reads and plans again, a bounded number of
//! times; transaction conflicts are retried with jittered backoff and, if they
//! persist, answered as [`StoreError::Unavailable`].

pub mod categories;
mod ids;
pub mod inventory;
pub mod orders;
pub mod page;
pub mod pets;
pub mod tables;

use crate::domain::Refusal;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use aws_sdk_dynamodb::Client;
use std::collections::HashMap;
use std::time::Duration;

pub use ids::new_id;
pub use page::{Cursor, Page};

/// A DynamoDB item.
pub type Item = HashMap<String, AttributeValue>;

/// How many times an operation plans again after losing a race.
const MAX_ATTEMPTS: u32 = 8;

/// The data table.
#[derive(Clone, Debug)]
pub struct Store {
    client: Client,
    table: String,
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The state forbids the change.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// DynamoDB throttled, was unreachable, or kept conflicting: try later.
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
    /// Anything else is a bug or a misconfiguration.
    #[error("database error: {0}")]
    Internal(String),
}

impl From<StoreError> for crate::error::ApiError {
    fn from(err: StoreError) -> Self {
        use crate::error::ApiError;
        match err {
            StoreError::Refused(Refusal::NotFound(what)) => {
                ApiError::NotFound(format!("{what} does not exist"))
            }
            StoreError::Refused(refusal) => ApiError::Refused(refusal),
            StoreError::Unavailable(detail) => {
                tracing::warn!(%detail, "database unavailable");
                ApiError::Unavailable { retry_after: 1 }
            }
            StoreError::Internal(detail) => ApiError::Internal(detail),
        }
    }
}

/// Error codes that mean "too much load right now", not "bad request".
fn is_throttling(code: Option<&str>) -> bool {
    matches!(
        code,
        Some(
            "ThrottlingException"
                | "ProvisionedThroughputExceededException"
                | "RequestLimitExceeded"
                | "ThrottlingError"
                | "InternalServerError"
                | "ServiceUnavailable"
        )
    )
}

/// Sorts an SDK error into unavailable (retry later) or internal (a bug).
pub(crate) fn classify<E, R>(err: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    match &err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => {
            StoreError::Unavailable(format!("{err:?}"))
        }
        SdkError::ServiceError(service) if is_throttling(service.err().code()) => {
            StoreError::Unavailable(format!(
                "{}",
                aws_sdk_dynamodb::error::DisplayErrorContext(&err)
            ))
        }
        _ => StoreError::Internal(format!(
            "{}",
            aws_sdk_dynamodb::error::DisplayErrorContext(&err)
        )),
    }
}

/// What a cancelled transaction tells us, item by item.
#[derive(Debug)]
pub(crate) enum TransactOutcome {
    Done,
    /// The condition on the item at this index failed.
    ConditionFailed(usize),
    /// Another transaction held an item: try again.
    Conflict,
}

impl Store {
    pub fn new(client: Client, table: impl Into<String>) -> Store {
        Store {
            client,
            table: table.into(),
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// Reads one item with a consistent read, since every plan is made from it.
    pub(crate) async fn get_item(&self, pk: String, sk: &str) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("PK", AttributeValue::S(pk))
            .key("SK", AttributeValue::S(sk.to_string()))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        Ok(out.item)
    }

    /// Runs a transaction once and says which condition, if any, failed.
    ///
    /// A lone update is sent as a plain conditional `UpdateItem`: just as
    /// atomic, at half the write units of a one-item transaction.
    pub(crate) async fn transact(
        &self,
        mut items: Vec<TransactWriteItem>,
    ) -> Result<TransactOutcome, StoreError> {
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
            Err(SdkError::ServiceError(service)) => match service.err() {
                TransactWriteItemsError::TransactionCanceledException(cancelled) => {
                    let reasons = cancelled.cancellation_reasons();
                    if let Some(index) = reasons
                        .iter()
                        .position(|r| r.code() == Some("ConditionalCheckFailed"))
                    {
                        return Ok(TransactOutcome::ConditionFailed(index));
                    }
                    if reasons.iter().any(|r| is_throttling(r.code())) {
                        return Err(StoreError::Unavailable(format!("{cancelled:?}")));
                    }
                    Ok(TransactOutcome::Conflict)
                }
                TransactWriteItemsError::TransactionInProgressException(_) => {
                    Ok(TransactOutcome::Conflict)
                }
                other if is_throttling(other.code()) => {
                    Err(StoreError::Unavailable(format!("{other:?}")))
                }
                other => Err(StoreError::Internal(format!("{other:?}"))),
            },
            Err(other) => Err(classify(other)),
        }
    }
}

impl Store {
    async fn conditional_update(
        &self,
        update: aws_sdk_dynamodb::types::Update,
    ) -> Result<TransactOutcome, StoreError> {
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
    let ceiling = 5u64 << attempt.min(6);
    let millis = rand::random_range(ceiling / 2..=ceiling);
    tokio::time::sleep(Duration::from_millis(millis)).await;
}

/// The error for an operation that lost its race too many times.
pub(crate) fn too_contended(what: &str) -> StoreError {
    StoreError::Unavailable(format!(
        "{what}: still contended after {MAX_ATTEMPTS} attempts"
    ))
}

pub(crate) fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

pub(crate) fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// Converts a stored item into a record type.
pub(crate) fn from_item<T: serde::de::DeserializeOwned>(item: Item) -> Result<T, StoreError> {
    serde_dynamo::from_item(item)
        .map_err(|e| StoreError::Internal(format!("stored item does not parse: {e}")))
}

/// Converts a record type into an item.
pub(crate) fn to_item<T: serde::Serialize>(value: &T) -> Result<Item, StoreError> {
    serde_dynamo::to_item(value)
        .map_err(|e| StoreError::Internal(format!("item does not serialize: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ApiError;

    #[test]
    fn a_lost_race_is_503_with_retry_after_and_a_refusal_its_own_code() {
        let contended = ApiError::from(too_contended("place order"));
        assert_eq!(contended.status(), 503);
        assert_eq!(contended.code(), "SERVICE_UNAVAILABLE");
        assert!(matches!(
            contended,
            ApiError::Unavailable { retry_after: 1 }
        ));

        let refused = ApiError::from(StoreError::from(Refusal::InsufficientStock {
            in_stock: 0,
            requested: 1,
        }));
        assert_eq!(
            (refused.status().as_u16(), refused.code()),
            (409, "INSUFFICIENT_STOCK")
        );
        let missing = ApiError::from(StoreError::from(Refusal::NotFound("pet 7".into())));
        assert_eq!(
            (missing.status().as_u16(), missing.code()),
            (404, "NOT_FOUND")
        );
    }

    #[test]
    fn throttling_codes_are_told_from_bugs() {
        assert!(is_throttling(Some(
            "ProvisionedThroughputExceededException"
        )));
        assert!(is_throttling(Some("ThrottlingException")));
        assert!(!is_throttling(Some("ValidationException")));
        assert!(!is_throttling(None));
    }
}
