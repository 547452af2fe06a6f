//! The two queue handlers of webhook delivery, the same code in Lambda (SQS
//! event source mappings, [`sqs`]) and under `make run` ([`local`]):
//!
//! - [`Deliverer::fan_out_all`]: the events one `PutEvents` call published
//!   (the `events` function's, from its stream batch) to one message per
//!   subscribed endpoint on the deliveries queue, each carrying its event,
//!   ten a send; [`Deliverer::fan_out`] one event as EventBridge hands it to
//!   a target (the release before's events queue, drained by the `webhooks`
//!   function);
//! - [`Deliverer::deliver`]: one message of the deliveries queue to one
//!   attempt, claimed before it is sent (at the message's first receipt,
//!   by the write that makes the delivery), recorded in the claim's place,
//!   and what the queue does with the message next ([`Disposition`]: done,
//!   or back after a delay).
//!
//! The queue is the engine: retries are the message coming back when its
//! delay is over, never a loop polling the table.

pub mod batching;
mod delivery;
mod fanout;
pub mod items;
pub mod lambda;
pub mod local;
mod observe;
mod read;
mod record;
mod recorded;
pub mod slots;
pub mod sqs;

use crate::webhooks::attempt::Attempter;
use crate::webhooks::queue::{DeliveryQueue, QueueError};
use crate::webhooks::receiving::KeyStates;
use crate::webhooks::schedule::RetrySchedule;
use aws_sdk_dynamodb::Client;
use std::sync::Arc;
use std::time::Duration;

pub use fanout::{payload, FannedOut};

/// The caller this code's AWS calls are recorded as, when recording
/// (`crate::aws_calls`, `make iam-check`): the `webhooks` function.
pub fn recorded_as_webhooks() -> Option<crate::aws_calls::Caller> {
    crate::aws_calls::enabled().then_some(crate::aws_calls::Caller::Function { name: "webhooks" })
}

/// What delivery needs, built once per process.
#[derive(Clone)]
pub struct Deliverer {
    pub client: Client,
    pub table: String,
    pub attempter: Attempter,
    pub schedule: RetrySchedule,
    /// Where the fan-out sends delivery messages.
    pub queue: Arc<dyn DeliveryQueue>,
    /// The endpoints' keys' states, as the fan-out and each attempt decide
    /// by them.
    pub keys: Arc<KeyStates>,
}

/// What the queue does with a delivery message once handled.
#[derive(Debug, Clone, PartialEq)]
pub enum Disposition {
    /// Delivered, failed for good, or nothing left to do: delete it.
    Done,
    /// Hand it back after this delay (the next attempt, or a slot to free).
    Later(Duration),
}

/// Why a message could not be handled: the queue hands it back as it is.
#[derive(Debug, thiserror::Error)]
pub enum DeliverError {
    #[error("database: {0}")]
    Db(String),
    #[error("a stored item does not read: {0}")]
    Item(String),
    #[error(transparent)]
    Queue(#[from] QueueError),
    #[error("a queue message does not read: {0}")]
    Message(String),
}
