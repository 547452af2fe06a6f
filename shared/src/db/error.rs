//! What a database operation can fail with, and how SDK errors are sorted.

use crate::records::Id;
use crate::rules::RuleViolation;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

/// Any error kept as the cause of ours.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a database operation failed.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The record the operation is about does not exist (or is not the caller's).
    #[error("{kind} {id} does not exist")]
    NotFound { kind: &'static str, id: Id },
    /// A field of the request names a record that does not exist.
    #[error("{field} {id} names no record")]
    UnknownReference { field: &'static str, id: Id },
    /// The state forbids the change.
    #[error(transparent)]
    Violation(#[from] RuleViolation),
    /// DynamoDB throttled or was unreachable: try later.
    #[error("the database is unavailable")]
    Unavailable(#[source] BoxError),
    /// The operation lost its race every time it tried: try later.
    #[error("{operation}: still contended after {attempts} attempts")]
    Contended {
        operation: &'static str,
        attempts: u32,
    },
    /// Another request with the same idempotency key has made its change, or
    /// is making it right now: its record held the write's condition, or was
    /// in another transaction.
    #[error("another request with this idempotency key made or is making its change")]
    IdempotencyKeyInUse,
    /// Anything else is a bug or a misconfiguration.
    #[error("database error")]
    Internal(#[source] BoxError),
}

impl DbError {
    pub fn not_found(kind: &'static str, id: Id) -> DbError {
        DbError::NotFound { kind, id }
    }

    pub fn unknown_reference(field: &'static str, id: Id) -> DbError {
        DbError::UnknownReference { field, id }
    }

    pub fn internal(cause: impl Into<BoxError>) -> DbError {
        DbError::Internal(cause.into())
    }
}

/// Error codes that mean "too much load right now", not "bad request".
pub(crate) fn is_throttling(code: Option<&str>) -> bool {
    matches!(
        code,
        Some(
            "ThrottlingException"
                | "ProvisionedThroughputExceededException"
                // A transaction's cancellation reason for a hot partition.
                | "ProvisionedThroughputExceeded"
                | "RequestLimitExceeded"
                | "ThrottlingError"
                | "InternalServerError"
                | "ServiceUnavailable"
        )
    )
}

/// The SDK's error with its whole context in its message, kept as a cause.
fn described<E, R>(err: &SdkError<E, R>) -> BoxError
where
    E: std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    DisplayErrorContext(err).to_string().into()
}

/// Sorts an SDK error into unavailable (retry later) or internal (a bug).
pub(crate) fn classify<E, R>(err: SdkError<E, R>) -> DbError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    match &err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => {
            DbError::Unavailable(described(&err))
        }
        SdkError::ServiceError(service) if is_throttling(service.err().code()) => {
            crate::metrics::count(crate::metrics::Metric::DbThrottles, 1);
            DbError::Unavailable(described(&err))
        }
        _ => DbError::Internal(described(&err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttling_codes_are_told_from_bugs() {
        assert!(is_throttling(Some(
            "ProvisionedThroughputExceededException"
        )));
        assert!(is_throttling(Some("ThrottlingException")));
        assert!(is_throttling(Some("ProvisionedThroughputExceeded")));
        assert!(is_throttling(Some("ThrottlingError")));
        assert!(!is_throttling(Some("ValidationException")));
        assert!(!is_throttling(None));
    }
}
