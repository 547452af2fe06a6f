//! What a database operation can fail with, and how SDK errors are sorted.

use crate::records::Id;
use crate::rules::RuleViolation;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::http::Response as HttpResponse;

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
    /// The caller may see the record but this change is its owner's alone
    /// (a webhook endpoint's `url`, `events`, `description`, secret and
    /// ping: section 9).
    #[error("only the {kind}'s own key may {change}")]
    OwnerOnly {
        kind: &'static str,
        change: &'static str,
    },
    /// The record is no longer the one the request's `If-Match` names
    /// (contract 4c): nothing was changed.
    #[error("{kind} {id} has changed since the validator If-Match names was sent")]
    PreconditionFailed { kind: &'static str, id: Id },
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

/// A DynamoDB call that failed, as an operator needs it to act: the
/// operation, the table, and what AWS answered (its error code and
/// message). Never the request's items, keys or values: only AWS's own
/// words, cut to [`MESSAGE_CHARS`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("DynamoDB {operation} on table {table} failed: {}{answer}", code.as_deref().map(|c| format!("{c}: ")).unwrap_or_default())]
pub struct DbFailure {
    /// The API operation, as AWS names it (`GetItem`, `TransactWriteItems`).
    pub operation: &'static str,
    /// The table (or tables, comma-separated, of a transaction).
    pub table: String,
    /// AWS's error code (`ResourceNotFoundException`); none when no answer came.
    pub code: Option<String>,
    /// AWS's message, or what kept the answer from coming (a timeout, a
    /// refused connection).
    pub answer: String,
}

/// The most of AWS's message a failure keeps: its messages are a sentence;
/// a log line's budget is not spent on anything longer.
pub const MESSAGE_CHARS: usize = 300;

impl DbFailure {
    /// The failure of a call of `E`'s operation on `table`.
    pub fn of<E>(table: &str, err: &SdkError<E, HttpResponse>) -> DbFailure
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        match err {
            SdkError::ServiceError(service) => {
                let mut failure = DbFailure::answered(table, service.err());
                // An answer without AWS's error document (a proxy's, a
                // server's own): its HTTP status is all it says.
                if failure.code.is_none() && service.err().message().is_none() {
                    let status = service.raw().status().as_u16();
                    failure.answer = format!("(no message; HTTP {status})");
                }
                failure
            }
            other => DbFailure {
                operation: operation_of::<E>(),
                table: table.to_string(),
                code: None,
                answer: bounded(DisplayErrorContext(other).to_string()),
            },
        }
    }

    /// The failure `error`, which DynamoDB answered to a call on `table`.
    pub fn answered<E: ProvideErrorMetadata>(table: &str, error: &E) -> DbFailure {
        DbFailure {
            operation: operation_of::<E>(),
            table: table.to_string(),
            code: error.code().map(str::to_string),
            answer: bounded(error.message().unwrap_or("(no message)").to_string()),
        }
    }
}

/// The operation an SDK error type belongs to: `GetItem` for
/// `aws_sdk_dynamodb::operation::get_item::GetItemError`.
fn operation_of<E>() -> &'static str {
    let name = std::any::type_name::<E>();
    let last = name.rsplit("::").next().unwrap_or(name);
    last.strip_suffix("Error").unwrap_or(last)
}

fn bounded(mut text: String) -> String {
    if let Some((cut, _)) = text.char_indices().nth(MESSAGE_CHARS) {
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// Sorts an SDK error of a call on `table` into unavailable (retry later) or
/// internal (a bug), named as a [`DbFailure`].
pub fn classify<E>(table: &str, err: SdkError<E, HttpResponse>) -> DbError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let failure = Box::new(DbFailure::of(table, &err));
    match &err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => DbError::Unavailable(failure),
        SdkError::ServiceError(service) if is_throttling(service.err().code()) => {
            crate::metrics::count(crate::metrics::Metric::DbThrottles, 1);
            DbError::Unavailable(failure)
        }
        _ => DbError::Internal(failure),
    }
}

/// An error and its causes, outermost first: what a tool prints and a
/// function logs, so a DynamoDB failure shows as its [`DbFailure`].
pub fn cause_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut chain = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        chain.push_str(": ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    chain
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_the_operation_the_table_and_what_aws_answered() {
        use aws_sdk_dynamodb::operation::get_item::GetItemError;
        use aws_sdk_dynamodb::types::error::ResourceNotFoundException;
        let missing = GetItemError::ResourceNotFoundException(
            ResourceNotFoundException::builder()
                .message("Cannot do operations on a non-existent table")
                .meta(
                    aws_sdk_dynamodb::error::ErrorMetadata::builder()
                        .code("ResourceNotFoundException")
                        .message("Cannot do operations on a non-existent table")
                        .build(),
                )
                .build(),
        );
        let failure = DbFailure::answered("petstore-dev", &missing);
        assert_eq!(
            failure.to_string(),
            "DynamoDB GetItem on table petstore-dev failed: ResourceNotFoundException: \
             Cannot do operations on a non-existent table"
        );
        let long = bounded("x".repeat(MESSAGE_CHARS + 50));
        assert_eq!(long.chars().count(), MESSAGE_CHARS + 1);
    }

    #[test]
    fn an_answer_without_aws_error_document_names_its_http_status() {
        use aws_sdk_dynamodb::operation::get_item::GetItemError;
        use aws_smithy_types::body::SdkBody;
        let bare = GetItemError::generic(aws_sdk_dynamodb::error::ErrorMetadata::builder().build());
        let status = http::StatusCode::BAD_GATEWAY.into();
        let raw = HttpResponse::new(status, SdkBody::empty());
        let failure = DbFailure::of("pets", &SdkError::service_error(bare, raw));
        assert_eq!(
            failure.to_string(),
            "DynamoDB GetItem on table pets failed: (no message; HTTP 502)"
        );
    }

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
