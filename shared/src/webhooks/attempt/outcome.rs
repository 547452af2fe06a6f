//! What an attempt came to, as the delivery records it.

use chrono::{DateTime, Utc};
use std::time::Duration;

/// One attempt, as a delivery's `attempts` list stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    pub at: DateTime<Utc>,
    pub duration_ms: u64,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A 2xx within the time.
    Delivered {
        status: u16,
    },
    Failed(Failure),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub kind: FailureKind,
    /// The answer's status, when there was an answer.
    pub status: Option<u16>,
    /// What a 429 or 503 asked for: the next attempt comes no sooner.
    pub retry_after: Option<RetryAfter>,
}

/// When a receiver asked to be tried again (`Retry-After`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RetryAfter {
    Delay(Duration),
    At(DateTime<Utc>),
}

impl RetryAfter {
    /// The header's value: delay-seconds or an HTTP date; `None` for anything else.
    pub fn parse(value: &str) -> Option<RetryAfter> {
        let value = value.trim();
        if let Ok(seconds) = value.parse::<u64>() {
            return Some(RetryAfter::Delay(Duration::from_secs(seconds)));
        }
        DateTime::parse_from_rfc2822(value)
            .ok()
            .map(|at| RetryAfter::At(at.with_timezone(&Utc)))
    }

    /// The earliest next attempt this allows, for an attempt made at `now`.
    pub fn not_before(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        match self {
            RetryAfter::Delay(delay) => chrono::Duration::from_std(*delay)
                .ok()
                .and_then(|delay| now.checked_add_signed(delay))
                .unwrap_or(DateTime::<Utc>::MAX_UTC),
            RetryAfter::At(at) => *at,
        }
    }
}

/// Why an attempt failed: the `error` a delivery's attempt records, and the
/// metric's dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// No answer within the attempt's budget.
    Timeout,
    /// No address accepted the connection, or it broke before an answer.
    Connect,
    /// The TLS handshake failed (certificate, name, protocol).
    Tls,
    /// The host now resolves to a refused address (checked at every attempt).
    BlockedAddress,
    /// A 3xx: redirects are not followed.
    Redirect,
    /// The payload is over 20 KB.
    TooLarge,
    /// The host no longer resolves.
    Dns,
    /// The host's look-up took over 5 seconds (`address::LOOKUP_TIMEOUT`).
    DnsTimeout,
    /// An answer other than 2xx or 3xx.
    Status,
    /// The endpoint's stored secret cannot sign (a damaged item).
    Secret,
    /// Claimed and perhaps sent, its outcome never written down: the
    /// process that made it ended first (a timeout, a crash). Its message's
    /// next receipt records it so; the receiver may or may not have had it.
    Interrupted,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Timeout => "timeout",
            FailureKind::Connect => "connect",
            FailureKind::Tls => "tls",
            FailureKind::BlockedAddress => "blocked_address",
            FailureKind::Redirect => "redirect",
            FailureKind::TooLarge => "too_large",
            FailureKind::Dns => "dns",
            FailureKind::DnsTimeout => "dns_timeout",
            FailureKind::Status => "status",
            FailureKind::Secret => "secret",
            FailureKind::Interrupted => "interrupted",
        }
    }
}

impl Outcome {
    pub fn failed(kind: FailureKind) -> Outcome {
        Outcome::Failed(Failure {
            kind,
            status: None,
            retry_after: None,
        })
    }

    /// An answer judged: 2xx delivered, 3xx a redirect not followed, the
    /// rest failed; 429 and 503 with the `Retry-After` they carry.
    pub(super) fn judge(status: http::StatusCode, headers: &http::HeaderMap) -> Outcome {
        let code = status.as_u16();
        if status.is_success() {
            return Outcome::Delivered { status: code };
        }
        let kind = if status.is_redirection() {
            FailureKind::Redirect
        } else {
            FailureKind::Status
        };
        let asks_to_wait = matches!(code, 429 | 503);
        let retry_after = headers
            .get(http::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .filter(|_| asks_to_wait)
            .and_then(RetryAfter::parse);
        Outcome::Failed(Failure {
            kind,
            status: Some(code),
            retry_after,
        })
    }

    /// The answer's status code, when there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Outcome::Delivered { status } => Some(*status),
            Outcome::Failed(failure) => failure.status,
        }
    }

    /// 410 Gone: the receiver says the endpoint is no more.
    pub fn is_gone(&self) -> bool {
        self.status() == Some(410)
    }
}
