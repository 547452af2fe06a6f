//! `make run`'s deliveries queue: in the process, with SQS's semantics as
//! the handlers see them (a message handed back comes again after its
//! delay; a message whose handling failed comes again later), running the
//! same [`Deliverer`] code as Lambda.

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
            .try_for_each(|message| self.sender.send((message, 1)));
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
/// at the template's default capacity ([`Batching::default`]).
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

/// How messages are handed over in batches: as the template's deliveries
/// mapping does (`BatchSize`, `MaximumBatchingWindowInSeconds`, from its
/// `Capacity` mapping), so that a batch's attempts share their reads as in
/// Lambda ([`Deliverer::deliver_batch`]) and the partition model
/// (`make bench`) sees the reads a stack of that capacity makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batching {
    /// The most messages in one batch (`WEBHOOK_DELIVERY_BATCH_SIZE`).
    pub size: usize,
    /// How long a batch waits to fill once its first message is there
    /// (`WEBHOOK_DELIVERY_BATCH_WINDOW`, seconds); none: the messages
    /// already waiting.
    pub window: Duration,
}

/// A batching that SQS's event source mapping would refuse.
#[derive(Debug, thiserror::Error)]
#[error("webhook delivery batches: {0}")]
pub struct BatchingError(String);

impl Default for Batching {
    /// The template's at its default OrderRate (1,000): what Lambda takes
    /// without a window.
    fn default() -> Batching {
        Batching {
            size: 10,
            window: Duration::ZERO,
        }
    }
}

impl Batching {
    /// The most SQS's event source mapping takes from a standard queue.
    const MOST: usize = 10_000;
    /// The longest window it allows, seconds.
    const LONGEST_WINDOW: u64 = 300;

    pub fn from_env() -> Result<Batching, BatchingError> {
        Batching::from_lookup(|name| std::env::var(name).ok())
    }

    /// With SQS's rules: 1 to 10,000 messages, a window of 0 to 300
    /// seconds, and a window of at least a second above 10 messages.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Batching, BatchingError> {
        let default = Batching::default();
        let number = |name: &str, default: u64| match lookup(name) {
            None => Ok(default),
            Some(text) => text
                .trim()
                .parse::<u64>()
                .map_err(|_| BatchingError(format!("{name} `{text}` is not a whole number"))),
        };
        let size = number("WEBHOOK_DELIVERY_BATCH_SIZE", default.size as u64)?;
        let window = number("WEBHOOK_DELIVERY_BATCH_WINDOW", 0)?;
        if !(1..=Batching::MOST as u64).contains(&size) {
            let most = Batching::MOST;
            return Err(BatchingError(format!("{size} messages: 1 to {most}")));
        }
        if window > Batching::LONGEST_WINDOW {
            let longest = Batching::LONGEST_WINDOW;
            return Err(BatchingError(format!(
                "a {window} s window: 0 to {longest}"
            )));
        }
        if size > 10 && window == 0 {
            return Err(BatchingError(format!(
                "{size} messages need a window of at least 1 s, as SQS's mapping does"
            )));
        }
        Ok(Batching {
            size: size as usize,
            window: Duration::from_secs(window),
        })
    }

    /// The batch that begins with `first`: the messages already waiting,
    /// and those that arrive within the window, up to the size.
    async fn take(
        &self,
        first: (DeliveryMessage, u32),
        receiver: &mut LocalReceiver,
    ) -> Vec<(DeliveryMessage, u32)> {
        let mut batch = vec![first];
        let closes = tokio::time::Instant::now() + self.window;
        while batch.len() < self.size {
            match receiver.0.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) if self.window.is_zero() => break,
                Err(_) => match tokio::time::timeout_at(closes, receiver.0.recv()).await {
                    Ok(Some(next)) => batch.push(next),
                    Ok(None) | Err(_) => break,
                },
            }
        }
        batch
    }
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
        let batch = batching.take(first, &mut receiver).await;
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
                        tracing::warn!(%error, webhook_id = message.webhook_id, "webhook message handed back");
                        queue.after(FAILED_AGAIN_AFTER, message, receives);
                    }
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batching(vars: &[(&str, &str)]) -> Result<Batching, BatchingError> {
        Batching::from_lookup(|name| {
            let value = vars.iter().find(|(n, _)| *n == name);
            value.map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn batches_follow_the_deliveries_mappings_rules() {
        assert_eq!(batching(&[]).ok(), Some(Batching::default()));
        let large = [
            ("WEBHOOK_DELIVERY_BATCH_SIZE", "100"),
            ("WEBHOOK_DELIVERY_BATCH_WINDOW", "1"),
        ];
        let expected = Batching {
            size: 100,
            window: Duration::from_secs(1),
        };
        assert_eq!(batching(&large).ok(), Some(expected));
        // Refused as SQS's mapping refuses them: above 10 without a window,
        // none or over 10,000 messages, a window over 5 minutes, not numbers.
        for refused in [
            &[("WEBHOOK_DELIVERY_BATCH_SIZE", "11")][..],
            &[("WEBHOOK_DELIVERY_BATCH_SIZE", "0")],
            &[
                ("WEBHOOK_DELIVERY_BATCH_SIZE", "10001"),
                ("WEBHOOK_DELIVERY_BATCH_WINDOW", "1"),
            ],
            &[("WEBHOOK_DELIVERY_BATCH_WINDOW", "301")],
            &[("WEBHOOK_DELIVERY_BATCH_SIZE", "ten")],
        ] {
            assert!(batching(refused).is_err(), "{refused:?}");
        }
    }
}
