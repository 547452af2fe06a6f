//! `make run`'s deliveries queue: in the process, with SQS's semantics as
//! the handlers see them (a message handed back comes again after its
//! delay; a message whose handling failed comes again later), running the
//! same [`Deliverer`] code as Lambda.

use super::standin::{DeliveryMessage, DeliveryQueue, QueueError};
use super::{Deliverer, Disposition};
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Semaphore};

/// When a message whose handling failed comes again (SQS: the queue's
/// visibility timeout).
pub const FAILED_AGAIN_AFTER: Duration = Duration::from_secs(5);
/// Messages handled at once (Lambda: the event source mapping's concurrency
/// times its batch).
pub const CONCURRENCY: usize = 32;

/// The sending side, given to the [`Deliverer`] as its queue.
#[derive(Clone)]
pub struct LocalQueue {
    sender: mpsc::UnboundedSender<DeliveryMessage>,
}

/// The receiving side, handed to [`run`].
pub struct LocalReceiver(mpsc::UnboundedReceiver<DeliveryMessage>);

impl LocalQueue {
    pub fn new() -> (LocalQueue, LocalReceiver) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (LocalQueue { sender }, LocalReceiver(receiver))
    }

    fn after(&self, delay: Duration, message: DeliveryMessage) {
        let sender = self.sender.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = sender.send(message);
        });
    }
}

impl DeliveryQueue for LocalQueue {
    fn send(&self, messages: Vec<DeliveryMessage>) -> BoxFuture<'_, Result<(), QueueError>> {
        let sent = messages
            .into_iter()
            .try_for_each(|message| self.sender.send(message));
        Box::pin(async move { sent.map_err(|_| QueueError("the local queue has stopped".into())) })
    }
}

/// Handles the queue's messages until every sender is gone.
pub async fn run(deliverer: Arc<Deliverer>, queue: LocalQueue, mut receiver: LocalReceiver) {
    let capacity = Arc::new(Semaphore::new(CONCURRENCY));
    while let Some(message) = receiver.0.recv().await {
        let Ok(permit) = capacity.clone().acquire_owned().await else {
            return;
        };
        let (deliverer, queue) = (deliverer.clone(), queue.clone());
        tokio::spawn(async move {
            let handled = deliverer.deliver(&message).await;
            drop(permit);
            match handled {
                Ok(Disposition::Done) => {}
                Ok(Disposition::Later(delay)) => queue.after(delay, message),
                Err(error) => {
                    tracing::warn!(%error, webhook_id = message.webhook_id, "webhook message handed back");
                    queue.after(FAILED_AGAIN_AFTER, message);
                }
            }
        });
    }
}
