//! The `events` function: every committed change to the data table, announced
//! once (in effect) as the contract's domain events (`API.md` section 8).
//!
//! The table's stream (new and old images) is the only source: a change that
//! was not committed is not in it, and a committed one is, whatever became of
//! its request's answer. The pieces, in the order a batch goes through them:
//!
//! 1. [`change`]: a stream record, from Lambda's event or from the Streams API;
//! 2. [`domain`]: the pure mapping of one change to its events, with an
//!    `eventId` and a `sequence` derived from the stream record, so a
//!    redelivered record yields the very same events;
//! 3. [`batch`]: publishing a batch's events in order, retrying only the
//!    entries that failed, and naming the first record left unpublished, from
//!    which Lambda (or the local reader) delivers the batch again;
//! 4. [`publish`]: where events go: EventBridge, or locally a file of the
//!    events as EventBridge delivers them to a target;
//! 5. [`webhooks`]: each published event fanned out to its webhook
//!    endpoints (a message each on the deliveries queue), a failed fan-out
//!    leaving its record unpublished as a failed publish does;
//! 6. [`handler`]: the Lambda handler (batch item failures);
//! 7. `local` (feature `local`): DynamoDB Local's stream, read with the
//!    Streams API by the same code, for `make run` and the tests.

pub mod batch;
pub mod change;
pub mod domain;
pub mod handler;
pub mod holds;
#[cfg(feature = "local")]
pub mod local;
pub mod publish;
pub mod webhooks;

pub use batch::{publish_changes, Outcome, Retries};
pub use change::Change;
pub use domain::{events_of, DomainEvent, SOURCE};
pub use publish::{EventBridgePublisher, FilePublisher, Publisher};
pub use webhooks::WithWebhooks;

/// The error of a batch or a publisher.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The caller this function's AWS calls are recorded as, when recording
/// (`petstore::aws_calls`, `make iam-check`).
pub(crate) fn recorded_as_events() -> Option<petstore::aws_calls::Caller> {
    petstore::aws_calls::enabled()
        .then_some(petstore::aws_calls::Caller::Function { name: "events" })
}
