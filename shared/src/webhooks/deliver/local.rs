//! `make run`'s deliveries queue: in the process, with SQS's semantics as
//! the handlers see them (a message handed back comes again after its
//! delay; a message whose handling failed comes again later), running the
//! same [`Deliverer`] code as Lambda.

use super::batching::Batching;
use super::{Deliverer, Disposition};
use crate::webhooks::queue::{DeliveryMessage, DeliveryQueue, QueueError};
use crate::webhooks::receiving::KeyStates;
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Semaphore};

/// When a message whose handling failed comes again (SQS: the queue's
/// visibility timeout).
pub const FAILED_AGAIN_AFTER: Duration = Duration::from_secs(5);
/// Messages handled at once (Lambda: the event source mapping's concurrency
/// times its batch), or one batch if a batch is more.
pub const CONCURRENCY: usize = 32;

/// The sending side, given to the [`Deliverer`] as its queue.
#[derive(Clone)]
pub struct LocalQueue {
    /// Each message with the number of times it has been handed over.
    sender: mpsc::UnboundedSender<(DeliveryMessage, u32)>,
}

/// The receiving side, handed to [`run`].
pub struct LocalReceiver(mpsc::UnboundedReceiver<(DeliveryMessage, u32)>);

impl LocalQueue {
    pub fn new() -> (LocalQueue, LocalReceiver) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (LocalQueue { sender }, LocalReceiver(receiver))
    }

    fn after(&self, delay: Duration, message: DeliveryMessage, receives: u32) {
        let sender = self.sender.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = sender.send((message, receives + 1));
        });
    }
}

impl DeliveryQueue for LocalQueue {
    fn send(&self, messages: Vec<DeliveryMessage>) -> BoxFuture<'_, Result<(), QueueError>> {
        let sent = messages
            .into_iter()
            .try_for_each(|message| self.sender.send((message, 1)).map_err(|_| ()));
        Box::pin(async move { sent.map_err(|_| QueueError("the local queue has stopped".into())) })
    }
}

/// A deliverer on `config`'s tables whose queue is a new local one, its
/// messages handled in the background from now on; settings from the
/// environment as in Lambda (`WEBHOOK_RETRY_SCHEDULE`,
/// `WEBHOOKS_ALLOW_LOOPBACK`) and as the deliveries mapping batches
/// ([`Batching::from_env`]), the address checks on `resolver`.
pub fn start(
    client: aws_sdk_dynamodb::Client,
    config: &crate::config::Config,
    resolver: Arc<dyn crate::webhooks::address::Resolve>,
) -> Result<Arc<Deliverer>, super::lambda::SetupError> {
    let policy = crate::webhooks::address::UrlPolicy::from_env();
    let attempter = crate::webhooks::attempt::Attempter::new(policy, resolver)?;
    let schedule = crate::webhooks::schedule::RetrySchedule::from_env()?;
    let keys = Arc::new(KeyStates::of(client.clone(), config));
    let batching = Batching::from_env()?;
    let table = &config.table_name;
    Ok(start_batched(
        client, table, attempter, schedule, keys, batching,
    ))
}

/// The same with the attempter and schedule given (the tests'), batched as
/// at the template's default capacity ([`Batching::default`](super::batching::Batching::default)).
pub fn start_with(
    client: aws_sdk_dynamodb::Client,
    table: impl Into<String>,
    attempter: crate::webhooks::attempt::Attempter,
    schedule: crate::webhooks::schedule::RetrySchedule,
    keys: Arc<KeyStates>,
) -> Arc<Deliverer> {
    let batching = Batching::default();
    start_batched(client, table, attempter, schedule, keys, batching)
}

/// The same, batched as `batching` says.
pub fn start_batched(
    client: aws_sdk_dynamodb::Client,
    table: impl Into<String>,
    attempter: crate::webhooks::attempt::Attempter,
    schedule: crate::webhooks::schedule::RetrySchedule,
    keys: Arc<KeyStates>,
    batching: Batching,
) -> Arc<Deliverer> {
    let (queue, receiver) = LocalQueue::new();
    let deliverer = Arc::new(Deliverer {
        client,
        table: table.into(),
        attempter,
        schedule,
        queue: Arc::new(queue.clone()),
        keys,
    });
    tokio::spawn(run(deliverer.clone(), queue, receiver, batching));
    deliverer
}

/// Handles the queue's messages until every sender is gone, in batches as
/// `batching` says.
async fn run(
    deliverer: Arc<Deliverer>,
    queue: LocalQueue,
    mut receiver: LocalReceiver,
    batching: Batching,
) {
    let capacity = Arc::new(Semaphore::new(CONCURRENCY.max(batching.size)));
    while let Some(first) = receiver.0.recv().await {
        let batch = batching.take(first, &mut receiver.0).await;
        let Ok(permits) = capacity
            .clone()
            .acquire_many_owned(batch.len() as u32)
            .await
        else {
            return;
        };
        let (deliverer, queue) = (deliverer.clone(), queue.clone());
        tokio::spawn(async move {
            let messages: Vec<(&DeliveryMessage, u32)> =
                batch.iter().map(|(m, r)| (m, *r)).collect();
            let delivered = deliverer.deliver_batch(&messages);
            let handled = crate::aws_calls::within(super::recorded_as_webhooks(), delivered).await;
            drop(permits);
            for ((message, receives), handled) in batch.into_iter().zip(handled) {
                match handled {
                    Ok(Disposition::Done) => {}
                    Ok(Disposition::Later(delay)) => queue.after(delay, message, receives),
                    Err(error) => {
                        let error = crate::db::cause_chain(&error);
                        tracing::warn!(%error, webhook_id = message.webhook_id, "webhook message handed back");
                        queue.after(FAILED_AGAIN_AFTER, message, receives);
                    }
                }
            }
        });
    }
}
