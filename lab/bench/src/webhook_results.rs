//! The records of `results.json`'s `webhooks`: what the webhooks step
//! measured per delivery ([`crate::webhooks`]) and what a million
//! deliveries cost ([`crate::webhook_cost`]), and the cases' names both
//! use. A leaf beside [`crate::results`]; the per-request record is
//! [`crate::operation_calls`]'s.

use crate::operation_calls::{OperationCalls, StatusCounts};
use serde::{Deserialize, Serialize};

/// The measured cases, by how the receiver answers, and the fan-out of an
/// event no endpoint takes.
pub const DELIVERED_FIRST: &str = "delivered at the first attempt";
pub const DELIVERED_SECOND: &str = "delivered at the second attempt";
pub const ALL_FAILED: &str = "every attempt failed";
pub const EMPTY_FAN_OUT: &str = "an event no endpoint takes";

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Webhooks {
    /// Each receiver behaviour, measured.
    pub measured: Vec<MeasuredDeliveries>,
    /// What the prices were applied to besides the measured figures.
    pub basis: Option<WebhookBasis>,
    /// The priced cases, dollars per million deliveries.
    pub costs: Vec<DeliveryCost>,
    /// What could not be measured, and why.
    pub notes: Vec<String>,
}

/// Deliveries of one order event each to one endpoint, the receiver
/// answering as `answers` says, measured one at a time.
#[derive(Debug, Serialize, Deserialize)]
pub struct MeasuredDeliveries {
    pub case: String,
    pub answers: String,
    pub deliveries: usize,
    pub attempts_per_delivery: f64,
    /// The attempts' HTTP statuses, as the attempt lines give them.
    pub attempt_statuses: StatusCounts,
    /// Per delivery: the DynamoDB calls and units of the fan-out and every
    /// attempt, the delivery path's log lines, and as `request_ms` its
    /// handling time (the DynamoDB calls as DynamoDB Local answered them,
    /// and the attempts, connection to answer).
    pub per_delivery: OperationCalls,
    /// One attempt, connection to answer (the attempt line's `duration_ms`).
    pub attempt_ms: f64,
    /// From the fan-out's line: endpoints that took the event, and messages
    /// it sent to the deliveries queue.
    pub endpoints_per_event: f64,
    pub enqueued_per_fan_out: f64,
    /// Attempts that left the delivery pending: the message handed back
    /// (`ChangeMessageVisibility` in SQS).
    pub handed_back_per_delivery: f64,
    /// Fan-outs of events no endpoint took (an order's `stock.changed`)
    /// that came with each delivery, taken off its figures.
    pub other_fan_outs_per_delivery: f64,
}

/// The template's settings, the schedule and the lines besides the
/// function's that the cost applies.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WebhookBasis {
    pub memory_mb: u32,
    /// The two event source mappings' `BatchSize`.
    pub events_batch: u32,
    pub deliveries_batch: u32,
    /// The deployed schedule's waits, seconds (`DEFAULT_SCHEDULE`), and the
    /// one the step ran with instead (as many waits, a second each).
    pub schedule_waits_s: Vec<u64>,
    pub schedule_run: String,
    /// Receives of a message whose wait is past SQS's 12 hours, over the
    /// whole schedule (the jitter averaged): each finds its delivery not yet
    /// due and hands it back.
    pub early_receives: f64,
    /// What such a receive reads: the delivery item as the failed run left
    /// it, one consistent `GetItem` (`None`: the item was not found).
    pub early_receive_read_units: Option<f64>,
    /// Lambda's own lines per invocation, and the share of invocations traced.
    pub platform_log_bytes: f64,
    pub traced_share: f64,
}

/// One priced case, per million deliveries.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeliveryCost {
    pub case: String,
    /// Which measured case it prices, and what is derived.
    pub from: String,
    /// Per delivery.
    pub attempts: f64,
    pub sqs_requests: f64,
    pub invocations: f64,
    pub billed_ms: f64,
    pub read_units: f64,
    pub write_units: f64,
    pub log_bytes: f64,
    pub usd_per_million: DeliveryServiceCosts,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DeliveryServiceCosts {
    pub sqs: f64,
    pub lambda: f64,
    pub dynamodb: f64,
    pub logs: f64,
    pub xray: f64,
    pub total: f64,
}
