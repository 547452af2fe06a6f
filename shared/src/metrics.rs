//! The service's own metrics, written as CloudWatch Embedded Metric Format
//! (EMF): one JSON line on stdout per request, which CloudWatch Logs turns
//! into metrics in namespace [`NAMESPACE`]. No `PutMetricData`, no agent, and
//! nothing on a request's path but one `write` to stdout.
//!
//! That line is also the request's log line (at the default level, the only
//! one): EMF takes any top-level member that no directive names as a
//! property, kept in the log and searchable in Logs Insights but no metric.
//! Besides the metrics it carries the request id, the exact status, the
//! caller's key id, the request's DynamoDB calls and the SDK's retries of
//! them, and the X-Ray trace id of a sampled request. Every byte of it is
//! billed as log ingestion on every request, so it carries nothing that
//! another of its members or the key id leads to (the key's role and plan).
//!
//! Every line has the dimension `Function` (`pets` | `store`). `Latency` is
//! also split by `Route` (`GET /pets/{petId}`, ...; `unmatched` for anything
//! the contract does not list) and by `StatusClass` (`2xx` | `4xx` | `5xx`);
//! its `SampleCount` is the number of requests, so no `Requests` metric is
//! written (a second metric of the same three dimension sets would cost a
//! directive's bytes on every line and as many custom metrics again).
//! In Lambda, `Latency` is also split by (`Function`, `Version`,
//! `StatusClass`), `Version` being the function version serving the request
//! (`AWS_LAMBDA_FUNCTION_VERSION`, read once): a release's rollback alarms
//! select the new version's 5xx answers and latency by it (template.yaml,
//! "Releases"). That is 3 custom metrics per function and version (2xx, 4xx,
//! 5xx), a version's billed only in the hours it answers.
//! Every count is by `Function` alone, which keeps the number of custom
//! metrics (what CloudWatch bills) small; a count appears, with its
//! directive, only in the lines of requests that counted it.
//!
//! Code anywhere below the HTTP edge counts with one call,
//! `metrics::count(Metric::DbRetries, 1)`: the count goes into the tally of the
//! request being served (a task-local [`tallied`] opens around each request in
//! [`crate::http::observe`]), so concurrent requests never see each other's
//! counts. A count made outside any request (the admin tool, a test calling
//! the database directly) is kept for the process and goes out with the next
//! request's line.
//!
//! Why not the `metrics` facade with `metrics_cloudwatch_embedded`: it keeps
//! one process-wide registry, so a request's counts cannot be told from a
//! concurrent one's (and tests in one binary see each other's), it emits one
//! document per label set with exactly one dimension set each (three lines a
//! request to get `Latency` by `Function`, `Route` and `StatusClass`), and
//! its flush needs its own service around `lambda_http::run`. What is needed
//! here is a fixed set of counters and one line per request: this module.

mod emf;
mod tally;

pub use emf::{Emitter, RequestMetrics};
pub use tally::{count, first_request, order_placed, tallied, Counts};

/// The CloudWatch namespace of every metric here.
pub const NAMESPACE: &str = "PetStore";

/// A count a request can make besides `Latency`, which every request has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Requests answered 429 (`RATE_LIMITED`, `API_KEY_BANNED` or `SOURCE_REFUSED`).
    RateLimited,
    /// Keys (or source IPs) banned.
    Bans,
    /// DynamoDB calls that failed with throttling, after the SDK's own retries.
    DbThrottles,
    /// Transactions DynamoDB cancelled because another one held an item.
    DbConflicts,
    /// Writes (and batch reads) tried again after a backoff.
    DbRetries,
    OrdersPlaced,
    /// Units ordered, counted when the order is placed.
    UnitsSold,
    /// Changes answered again from their `Idempotency-Key`'s record
    /// (`http::idempotency::replay`).
    IdempotentReplays,
    /// The first request of a process.
    ColdStarts,
}

const COUNTERS: usize = 9;

impl Metric {
    pub const ALL: [Metric; COUNTERS] = [
        Metric::RateLimited,
        Metric::Bans,
        Metric::DbThrottles,
        Metric::DbConflicts,
        Metric::DbRetries,
        Metric::OrdersPlaced,
        Metric::UnitsSold,
        Metric::IdempotentReplays,
        Metric::ColdStarts,
    ];

    /// The metric's name in CloudWatch.
    pub fn name(self) -> &'static str {
        match self {
            Metric::RateLimited => "RateLimited",
            Metric::Bans => "Bans",
            Metric::DbThrottles => "DbThrottles",
            Metric::DbConflicts => "DbConflicts",
            Metric::DbRetries => "DbRetries",
            Metric::OrdersPlaced => "OrdersPlaced",
            Metric::UnitsSold => "UnitsSold",
            Metric::IdempotentReplays => "IdempotentReplays",
            Metric::ColdStarts => "ColdStarts",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}
