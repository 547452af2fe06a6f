//! SQS, as deployed: the deliveries queue (`SendMessageBatch`, and
//! `ChangeMessageVisibility` to hand a message back after its delay), and
//! the handler of both event source mappings' batches, answering with the
//! messages to hand back (`ReportBatchItemFailures`).
//!
//! A delay longer than SQS allows a message to stay invisible (12 hours)
//! brings the message back early; [`Deliverer::deliver`] then finds its
//! `nextAttemptAt` still ahead and defers it again for the rest.

use super::{DeliverError, Deliverer, Disposition};
use crate::webhooks::queue::{DeliveryMessage, DeliveryQueue, QueueError};
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use futures::future::BoxFuture;
use std::time::Duration;

/// The longest a received message can be kept invisible (SQS: 12 hours),
/// less a margin.
pub const MAX_VISIBILITY: Duration = Duration::from_secs(12 * 3600 - 60);
/// Entries per `SendMessageBatch` (SQS's limit).
const BATCH: usize = 10;
/// The bodies of one `SendMessageBatch` together, at most: SQS's first
/// limit (256 KiB; raised since, kept so that a queue of either limit takes
/// them). A fan-out's message carries its event's body (at most 20 KB sent,
/// more escaped), so ten of them can come near it.
const BATCH_BYTES: usize = 256 * 1024;

/// `bodies` grouped as `SendMessageBatch` calls take them: at most
/// [`BATCH`] a call and [`BATCH_BYTES`] together, in order.
fn batches(bodies: Vec<String>) -> Vec<Vec<String>> {
    let mut calls: Vec<Vec<String>> = Vec::new();
    let mut bytes = 0;
    for body in bodies {
        let full = calls
            .last()
            .is_none_or(|call| call.len() == BATCH || bytes + body.len() > BATCH_BYTES);
        if full {
            calls.push(Vec::new());
            bytes = 0;
        }
        bytes += body.len();
        if let Some(call) = calls.last_mut() {
            call.push(body);
        }
    }
    calls
}

/// The deliveries queue (`WEBHOOK_QUEUE_URL`).
#[derive(Clone, Debug)]
pub struct SqsQueue {
    client: aws_sdk_sqs::Client,
    url: String,
}

impl SqsQueue {
    pub fn new(client: aws_sdk_sqs::Client, url: impl Into<String>) -> SqsQueue {
        SqsQueue {
            client,
            url: url.into(),
        }
    }

    /// A client with `aws`'s settings (rustls on ring: `petstore::http_client`),
    /// its calls recorded when `petstore::aws_calls` records.
    pub fn from_config(aws: &aws_config::SdkConfig, url: impl Into<String>) -> SqsQueue {
        let url = url.into();
        crate::aws_calls::name_resources(&[("WEBHOOK_QUEUE_URL", &url)]);
        let mut config = aws_sdk_sqs::config::Builder::from(aws);
        if let Some(recorder) = crate::aws_calls::interceptor() {
            config.push_interceptor(recorder);
        }
        SqsQueue::new(aws_sdk_sqs::Client::from_conf(config.build()), url)
    }

    /// Whether a record's `eventSourceARN` is this queue's (the URL's last
    /// segment is the queue's name, the ARN's last field too).
    pub fn is_source_of(&self, record: &SqsMessage) -> bool {
        let name = self.url.rsplit('/').next().unwrap_or_default();
        let arn = record.event_source_arn.as_deref().unwrap_or_default();
        !name.is_empty() && arn.rsplit(':').next() == Some(name)
    }

    /// Keeps a received message invisible for `delay` (at most 12 hours).
    async fn hand_back_after(
        &self,
        receipt_handle: &str,
        delay: Duration,
    ) -> Result<(), QueueError> {
        let seconds = delay.min(MAX_VISIBILITY).as_secs().max(1);
        self.client
            .change_message_visibility()
            .queue_url(&self.url)
            .receipt_handle(receipt_handle)
            .visibility_timeout(i32::try_from(seconds).unwrap_or(i32::MAX))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| QueueError(aws_sdk_sqs::error::DisplayErrorContext(e).to_string()))
    }

    async fn send_batch(&self, bodies: Vec<String>) -> Result<(), QueueError> {
        let sending = bodies.len();
        let mut entries = Vec::new();
        for (i, body) in bodies.into_iter().enumerate() {
            let entry = SendMessageBatchRequestEntry::builder()
                .id(i.to_string())
                .message_body(body)
                .build();
            entries.push(entry.map_err(|e| QueueError(e.to_string()))?);
        }
        let sent = self
            .client
            .send_message_batch()
            .queue_url(&self.url)
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(|e| QueueError(aws_sdk_sqs::error::DisplayErrorContext(e).to_string()))?;
        match sent.failed.first() {
            None => Ok(()),
            Some(failed) => Err(QueueError(format!(
                "{} of {}: {}",
                sent.failed.len(),
                sending,
                failed.code
            ))),
        }
    }
}

impl DeliveryQueue for SqsQueue {
    fn send(&self, messages: Vec<DeliveryMessage>) -> BoxFuture<'_, Result<(), QueueError>> {
        Box::pin(async move {
            let bodies = messages.iter().map(serde_json::to_string);
            let bodies = bodies
                .collect::<Result<Vec<String>, _>>()
                .map_err(|e| QueueError(e.to_string()))?;
            for call in batches(bodies) {
                self.send_batch(call).await?;
            }
            Ok(())
        })
    }
}

/// One batch from either queue: the records handled concurrently (a slow
/// endpoint's attempt does not hold the others'), the ones to hand back
/// named in the answer. The deliveries queue's records are read together
/// ([`Deliverer::deliver_batch`]: one `BatchGetItem` for the batch, each
/// endpoint once), the release before's events queue's fanned out each.
pub async fn handle_batch(
    deliverer: &Deliverer,
    deliveries: &SqsQueue,
    event: SqsEvent,
) -> SqsBatchResponse {
    let records = &event.records;
    let mut messages: Vec<(usize, DeliveryMessage, u32)> = Vec::new();
    let mut handled: Vec<Option<Result<bool, DeliverError>>> =
        records.iter().map(|_| None).collect();
    let mut fan_outs = Vec::new();
    for (index, record) in records.iter().enumerate() {
        let body = record.body.as_deref().unwrap_or_default();
        if !deliveries.is_source_of(record) {
            fan_outs.push((index, body));
            continue;
        }
        match serde_json::from_str::<DeliveryMessage>(body) {
            Ok(mut message) => {
                if message.id.is_empty() {
                    // Sent before messages named themselves: SQS's name
                    // for it is as stable across its receipts.
                    message.id = record.message_id.clone().unwrap_or_default();
                }
                messages.push((index, message, receives(record)))
            }
            Err(e) => handled[index] = Some(Err(DeliverError::Unreadable(e))),
        }
    }
    let batch: Vec<(&DeliveryMessage, u32)> = messages.iter().map(|(_, m, r)| (m, *r)).collect();
    let fanned = fan_outs
        .iter()
        .map(|(index, body)| async move { (*index, fan_out_record(deliverer, body).await) });
    let (attempted, fanned) = futures::future::join(
        deliverer.deliver_batch(&batch),
        futures::future::join_all(fanned),
    )
    .await;
    let disposed = messages
        .iter()
        .zip(attempted)
        .map(|((index, _, _), attempted)| {
            let record = &records[*index];
            async move { (*index, dispose(deliveries, record, attempted).await) }
        });
    for (index, result) in futures::future::join_all(disposed)
        .await
        .into_iter()
        .chain(fanned)
    {
        handled[index] = Some(result);
    }
    let mut response = SqsBatchResponse::default();
    for (record, handled) in records.iter().zip(handled) {
        let hand_back = match handled {
            Some(Ok(hand_back)) => hand_back,
            Some(Err(error)) => {
                let error = crate::db::cause_chain(&error);
                tracing::warn!(message_id = record.message_id.as_deref().unwrap_or(""), %error, "webhook message handed back");
                true
            }
            None => true,
        };
        if hand_back {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = record.message_id.clone().unwrap_or_default();
            response.batch_item_failures.push(failure);
        }
    }
    response
}

/// How many times SQS has handed `record` over (at least 1).
fn receives(record: &SqsMessage) -> u32 {
    record
        .attributes
        .get("ApproximateReceiveCount")
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}

async fn fan_out_record(deliverer: &Deliverer, body: &str) -> Result<bool, DeliverError> {
    let event = serde_json::from_str(body)?;
    deliverer.fan_out(&event).await?.log();
    Ok(false)
}

/// What the queue does with a delivery record after its attempt: deleted
/// when done; else hidden for the delay and handed back (`true`).
async fn dispose(
    queue: &SqsQueue,
    record: &SqsMessage,
    attempted: Result<Disposition, DeliverError>,
) -> Result<bool, DeliverError> {
    match attempted? {
        Disposition::Done => Ok(false),
        Disposition::Later(delay) => {
            let receipt = record.receipt_handle.as_deref().unwrap_or_default();
            queue.hand_back_after(receipt, delay).await?;
            Ok(true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_takes_ten_messages_or_256_kib_of_bodies_whichever_comes_first() {
        let sizes =
            |calls: Vec<Vec<String>>| -> Vec<usize> { calls.iter().map(Vec::len).collect() };
        let small = vec!["x".repeat(500); 25];
        assert_eq!(sizes(batches(small)), [10, 10, 5]);
        // Ten events near the 20 KB an attempt sends, escaped in the message.
        let large = vec!["x".repeat(30_000); 10];
        let calls = batches(large);
        assert_eq!(sizes(calls.clone()), [8, 2]);
        for call in calls {
            assert!(call.iter().map(String::len).sum::<usize>() <= BATCH_BYTES);
        }
        assert!(batches(Vec::new()).is_empty());
    }
}
