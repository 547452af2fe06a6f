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
//!
//! # The protocol
//!
//! What it keeps (section 9): **every attempt a receiver gets is in its
//! delivery's record, and a schedule step is attempted at most once**,
//! though SQS hands a message over at least once (two receipts of one
//! message may run side by side) and an event may be fanned out twice (two
//! messages of one delivery).
//!
//! How: an attempt is written down (claimed) before it is sent, under a
//! name no other attempt takes, by a write conditional on that name being
//! free (`attribute_not_exists`): a scheduled attempt as its step's
//! (`s<step>`, also `scheduleClaim`), a retry by hand as its message's
//! (`m<id>`). The claim says which message made it and when. Its outcome
//! then replaces it, conditional on the claim still being there. A receipt
//! that finds the attempt it would make claimed does not make it:
//!
//! - the claim is live (younger than `items::CLAIM_LEASE`, the function's
//!   timeout) and its message's: another receipt of this message is making
//!   it; this one comes back when the claim would have ended;
//! - live and another message's: that message carries the schedule; this
//!   one is done;
//! - older: the receipt that made it ended before recording it (a timeout,
//!   a crash); it is recorded as `interrupted`, a failure that moves the
//!   schedule, and this message carries the schedule on.
//!
//! A delivery's life (one item, `deliveries.rs`; `[claim]` is an attempt
//! claimed and not yet recorded, listed as `in_progress`):
//!
//! ```text
//!  fan-out's message, 1st receipt          ping / retry by hand
//!        | put if absent, s0 claimed             | (ping: put, due now)
//!        v                                       v
//!   pending [claim s<n>] --2xx--------------> delivered
//!     |  ^      |                                  ^
//!     |  |      +--failure, steps left--+          |
//!     |  |      |  (or claim found old: |   any 2xx (a retry by hand too)
//!     |  |      |   interrupted)        |          |
//!     |  |      v                       |          |
//!     |  +-- pending, nextAttemptAt ----+      failed --retry by hand-->
//!     |      (message back then)               ^    [claim m<id>], then
//!     +--last step failed, 410, too large, ----+    failed again or
//!        endpoint disabled or key refused           delivered
//! ```
//!
//! A ban that ends within the schedule holds a pending delivery
//! (`nextAttemptAt` = the ban's end) instead of failing it. Only the
//! scheduled attempt at the step it read moves the schedule; a retry by
//! hand changes the delivery only on success.
//!
//! # Writes
//!
//! Every write here goes the one way the service writes (`crate::db::write`):
//! a [`crate::db::Write`] whose condition is named by a `Check`
//! (`DeliveryCheck`, the endpoint's `EndpointAsRead`, the slots'
//! `SlotCheck`), sent by `Db::write_decided` as one conditional
//! `PutItem`, `UpdateItem` or `DeleteItem`; its failed condition is the
//! answer (someone else wrote first), read again where the code must know
//! what. A failure keeps its cause ([`DeliverError`]).

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

use crate::db::{Db, DbError};
use crate::webhooks::attempt::Attempter;
use crate::webhooks::queue::{DeliveryQueue, QueueError};
use crate::webhooks::receiving::KeyStates;
use crate::webhooks::schedule::RetrySchedule;
use crate::webhooks::secrets::SecretsError;
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

impl Deliverer {
    /// The table, as the one write path (`crate::db::write`) sends to it.
    fn db(&self) -> Db {
        Db::new(self.client.clone(), &self.table)
    }
}

/// Why a message could not be handled: the queue hands it back as it is.
/// Each keeps its cause (`std::error::Error::source`): a log line prints
/// the chain ([`crate::db::cause_chain`]), down to DynamoDB's own words.
#[derive(Debug, thiserror::Error)]
pub enum DeliverError {
    /// A read or write of the table failed (or an item in it does not
    /// read as delivery reads it).
    #[error("webhook delivery's table access failed")]
    Db(#[from] DbError),
    /// A secret that signs the attempt could not be opened.
    #[error("webhook delivery's signing secrets")]
    Secrets(#[from] SecretsError),
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// A queue message, or the event it carries, is not JSON of its form.
    #[error("a queue message does not read")]
    Unreadable(#[from] serde_json::Error),
    /// An event without its `detail.eventId`.
    #[error("a {0} event without detail.eventId")]
    NoEventId(String),
    /// A delivery of a type webhooks do not carry.
    #[error("a delivery of an event of type {0}")]
    UnknownEvent(String),
    /// The delivery's put found it made, and the read after found none.
    #[error("the delivery {webhook_id}/{event_id} exists and cannot be read")]
    Vanished { webhook_id: u64, event_id: String },
    /// One failure that fails several messages (a batch's read, a
    /// fan-out's read of the subscriptions' version): each is handed back
    /// with it.
    #[error(transparent)]
    Shared(Arc<DeliverError>),
}
