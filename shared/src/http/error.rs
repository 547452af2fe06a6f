//! The one place an error becomes the contract's Error record.
//!
//! Lower layers have their own error types ([`ValidationError`],
//! [`RuleViolation`], [`DbError`]); they are converted into [`ApiError`] here,
//! at the HTTP boundary, and only [`ApiError::into_response`] writes the body. Internal
//! details are logged with the request id and never shown to the caller.

use crate::db::{cause_chain, BoxError, DbError};
use crate::ratelimit::Refusal;
use crate::records::ValidationError;
use crate::rules::RuleViolation;
use axum::response::{IntoResponse, Response};
use http::{header, HeaderValue, StatusCode};
use serde::Serialize;

/// Everything a request can fail with, as the caller sees it.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    MalformedJson(String),
    #[error(transparent)]
    Validation(#[from] ValidationError),
    #[error("a valid API key is required in the X-API-Key header")]
    Unauthorized,
    #[error("this API key's role may not call this operation")]
    Forbidden,
    /// The record is the caller's to see, not to change this way.
    #[error("{0}")]
    OwnerOnly(String),
    /// Sent straight to API Gateway while the stack has a front (CloudFront
    /// and WAF): the role has nothing to do with it.
    #[error("this API is served through its front only; call its public address")]
    NotThroughFront,
    #[error("{0}")]
    NotFound(String),
    #[error("this method is not allowed on this path; the Allow header lists those that are")]
    MethodNotAllowed { allow: String },
    #[error(transparent)]
    Conflict(#[from] RuleViolation),
    /// `If-Match` names a validator the record no longer has (contract 4c).
    #[error("{0}; read it again and decide anew")]
    PreconditionFailed(String),
    #[error("this operation passed its sunset date")]
    Sunset,
    #[error("the request body is larger than 64 KiB")]
    PayloadTooLarge,
    #[error("the request body must be sent as application/json")]
    UnsupportedMediaType,
    #[error("{0}")]
    UnknownReference(String),
    #[error("rate limit exceeded; retry after {retry_after} seconds")]
    RateLimited { retry_after: u64 },
    #[error("this API key is banned for repeated calls over its limit; retry after {retry_after} seconds")]
    Banned { retry_after: u64 },
    /// A key not read at all: its source address is refused (contract
    /// section 4), and the key's owner must look there, not at the key.
    #[error("requests from this address are refused for too many calls without a valid key, whatever key they carry (this one was not checked); the refusal ends in {retry_after} seconds")]
    SourceRefused { retry_after: u64 },
    #[error("the service is temporarily unavailable; retry after {retry_after} seconds")]
    Unavailable { retry_after: u64 },
    #[error(
        "this Idempotency-Key was sent with a different request; a new request needs a new key"
    )]
    IdempotencyKeyReused,
    #[error("a request with this Idempotency-Key is still in progress; retry after {retry_after} seconds")]
    IdempotencyKeyInUse { retry_after: u64 },
    /// A bug. The cause is logged, never sent.
    #[error("internal error")]
    Internal(#[source] BoxError),
}

/// The contract's Error record.
#[derive(Debug, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct ErrorRecord {
    pub code: String,
    pub message: String,
    pub status: u16,
}

impl ApiError {
    /// A 404 for a record kind and id, e.g. `not_found("pet", 7)`.
    pub fn not_found(kind: &str, id: impl std::fmt::Display) -> Self {
        ApiError::NotFound(format!("{kind} {id} does not exist"))
    }

    /// A bug, with its cause kept for the log.
    pub fn internal(cause: impl Into<BoxError>) -> Self {
        ApiError::Internal(cause.into())
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::MalformedJson(_) | ApiError::Validation(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden | ApiError::OwnerOnly(_) | ApiError::NotThroughFront => {
                StatusCode::FORBIDDEN
            }
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) | ApiError::IdempotencyKeyInUse { .. } => StatusCode::CONFLICT,
            ApiError::UnknownReference(_) | ApiError::IdempotencyKeyReused => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            ApiError::Sunset => StatusCode::GONE,
            ApiError::PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::RateLimited { .. }
            | ApiError::Banned { .. }
            | ApiError::SourceRefused { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::MalformedJson(_) => "MALFORMED_JSON",
            ApiError::Validation(_) => "VALIDATION_FAILED",
            ApiError::Unauthorized => "UNAUTHORIZED",
            ApiError::Forbidden | ApiError::OwnerOnly(_) | ApiError::NotThroughFront => "FORBIDDEN",
            ApiError::NotFound(_) => "NOT_FOUND",
            ApiError::MethodNotAllowed { .. } => "METHOD_NOT_ALLOWED",
            ApiError::Conflict(violation) => conflict_code(violation),
            ApiError::UnknownReference(_) => "UNKNOWN_REFERENCE",
            ApiError::Sunset => "SUNSET",
            ApiError::PreconditionFailed(_) => "PRECONDITION_FAILED",
            ApiError::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ApiError::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            ApiError::RateLimited { .. } => "RATE_LIMITED",
            ApiError::Banned { .. } => "API_KEY_BANNED",
            ApiError::SourceRefused { .. } => "SOURCE_REFUSED",
            ApiError::Unavailable { .. } => "SERVICE_UNAVAILABLE",
            ApiError::IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
            ApiError::IdempotencyKeyInUse { .. } => "IDEMPOTENCY_KEY_IN_USE",
            ApiError::Internal(_) => "INTERNAL_ERROR",
        }
    }

    /// The record sent to the caller; internal detail stays in the log.
    pub fn record(&self) -> ErrorRecord {
        let message = match self {
            ApiError::Internal(_) => "an internal error occurred; it has been logged".to_string(),
            other => other.to_string(),
        };
        ErrorRecord {
            code: self.code().to_string(),
            message,
            status: self.status().as_u16(),
        }
    }
}

/// The contract's code for each 409.
fn conflict_code(violation: &RuleViolation) -> &'static str {
    match violation {
        RuleViolation::PetNotAvailable => "PET_NOT_AVAILABLE",
        RuleViolation::InsufficientStock { .. } => "INSUFFICIENT_STOCK",
        RuleViolation::OrderComplete => "ORDER_COMPLETE",
        RuleViolation::PetHasOpenOrders => "PET_HAS_OPEN_ORDERS",
        RuleViolation::CategoryInUse => "CATEGORY_IN_USE",
        RuleViolation::CategoryExists => "CATEGORY_EXISTS",
        RuleViolation::InvalidStatusTransition { .. } => "INVALID_STATUS_TRANSITION",
        RuleViolation::TooManyOpenOrders { .. } => "TOO_MANY_OPEN_ORDERS",
        RuleViolation::TooManyWebhooks { .. } => "TOO_MANY_WEBHOOKS",
    }
}

impl From<DbError> for ApiError {
    fn from(err: DbError) -> Self {
        match err {
            DbError::NotFound { .. } => ApiError::NotFound(err.to_string()),
            DbError::UnknownReference { .. } => ApiError::UnknownReference(err.to_string()),
            DbError::PreconditionFailed { .. } => ApiError::PreconditionFailed(err.to_string()),
            DbError::OwnerOnly { .. } => ApiError::OwnerOnly(err.to_string()),
            DbError::Violation(violation) => ApiError::Conflict(violation),
            DbError::Unavailable(_) | DbError::Contended { .. } => {
                tracing::warn!(cause = %cause_chain(&err), "database unavailable");
                ApiError::Unavailable { retry_after: 1 }
            }
            // When the other request's record is in by now, the idempotency
            // layer answers with it instead (`http::idempotency`).
            DbError::IdempotencyKeyInUse => ApiError::IdempotencyKeyInUse { retry_after: 1 },
            DbError::Internal(_) => ApiError::Internal(Box::new(err)),
        }
    }
}

impl From<Refusal> for ApiError {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::RateLimited { retry_after } => ApiError::RateLimited { retry_after },
            Refusal::Banned { retry_after } => ApiError::Banned { retry_after },
            Refusal::SourceRefused { retry_after } => ApiError::SourceRefused { retry_after },
            Refusal::Unavailable => ApiError::Unavailable { retry_after: 1 },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(_) = &self {
            tracing::error!(cause = %cause_chain(&self), "internal error");
        }
        let status = self.status();
        // An ErrorRecord is two strings and a number: it always serializes.
        let body = serde_json::to_vec(&self.record()).unwrap_or_default();
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let retry_after = match &self {
            ApiError::RateLimited { retry_after }
            | ApiError::Banned { retry_after }
            | ApiError::SourceRefused { retry_after }
            | ApiError::Unavailable { retry_after }
            | ApiError::IdempotencyKeyInUse { retry_after } => Some(*retry_after),
            _ => None,
        };
        if let Some(seconds) = retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
        }
        if let ApiError::MethodNotAllowed { allow } = &self {
            // Empty when axum has yet to add it: its route future sets `Allow`
            // on the way out, unless one is present already.
            if !allow.is_empty() {
                if let Ok(value) = HeaderValue::from_str(allow) {
                    headers.insert(header::ALLOW, value);
                }
            }
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_detail_is_never_sent() {
        let record = ApiError::internal("connection string secret").record();
        assert_eq!(record.code, "INTERNAL_ERROR");
        assert_eq!(record.status, 500);
        assert!(!record.message.contains("secret"));
    }

    #[test]
    fn a_lost_race_is_503_and_a_rule_violation_its_own_409() {
        let contended = ApiError::from(DbError::Contended {
            operation: "place order",
            attempts: 8,
        });
        assert_eq!(contended.status(), 503);
        assert!(matches!(
            contended,
            ApiError::Unavailable { retry_after: 1 }
        ));
        let refused = ApiError::from(DbError::from(RuleViolation::InsufficientStock {
            in_stock: 0,
            requested: 1,
        }));
        assert_eq!(
            (refused.status().as_u16(), refused.code()),
            (409, "INSUFFICIENT_STOCK")
        );
        let id = crate::records::Id::new(7).map(|id| DbError::not_found("pet", id));
        let missing = ApiError::from(id.unwrap_or_else(|| DbError::internal("no id")));
        assert_eq!(
            (
                missing.status().as_u16(),
                missing.code(),
                missing.to_string()
            ),
            (404, "NOT_FOUND", "pet 7 does not exist".to_string())
        );
    }

    #[test]
    fn retry_after_is_at_least_one_second() {
        let response = ApiError::RateLimited { retry_after: 0 }.into_response();
        assert_eq!(response.status(), 429);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    }

    #[test]
    fn method_not_allowed_names_the_allowed_methods() {
        let response = ApiError::MethodNotAllowed {
            allow: "GET,POST".into(),
        }
        .into_response();
        assert_eq!(response.status(), 405);
        assert_eq!(response.headers()[header::ALLOW], "GET,POST");
    }
}
