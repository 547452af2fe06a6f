//! The per-request record of the counts (`calls.rs`), the abuse runs and
//! the webhook deliveries: a leaf that both `results.rs` and
//! `webhook_results.rs` use (re-exported from `results`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How many responses answered each status code.
pub type StatusCounts = BTreeMap<u16, usize>;

/// One operation's DynamoDB calls, units and log output, averaged over its
/// repeats (`calls.rs`). Units are DynamoDB's rules applied to the items
/// written and read (`capacity.rs`), not DynamoDB Local's accounting.
#[derive(Debug, Serialize, Deserialize)]
pub struct OperationCalls {
    pub repeats: usize,
    pub statuses: StatusCounts,
    pub calls_per_request: f64,
    /// By call and table, e.g. `GetItem petstore`.
    pub by_call: BTreeMap<String, f64>,
    pub read_units_per_request: f64,
    /// Every table and index, refused writes included.
    pub write_units_per_request: f64,
    /// Of which index entries.
    pub index_write_units_per_request: f64,
    /// Of which writes refused (a failed condition, a cancelled transaction).
    pub refused_write_units_per_request: f64,
    /// By table (the rate limiter's counter table is one).
    pub write_units_by_table: BTreeMap<String, f64>,
    pub dynamodb_bytes_per_request: f64,
    /// What the service wrote to stdout, logging as in Lambda.
    pub log_bytes_per_request: f64,
    pub log_lines_per_request: f64,
    /// Mean time of one request, sent alone (through the proxy).
    pub request_ms: f64,
    /// Of which DynamoDB Local answering, summed over the calls.
    pub dynamodb_ms: f64,
}
