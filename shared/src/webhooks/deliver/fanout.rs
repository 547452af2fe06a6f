//! One event to its deliveries: the subscribed endpoints, and a message
//! each carrying the event. The fan-out writes nothing: the message's first
//! receipt makes the delivery with its first attempt claimed in the same
//! write (once, however many times the event is fanned out), so an attempt
//! is written down before it is sent at no more writes than the delivery
//! and its outcome.

use super::items;
use super::{DeliverError, Deliverer};
use crate::webhooks::deliveries::shard_of_event;
use crate::webhooks::queue::{DeliveryMessage, QueuedEvent};
use crate::webhooks::types::EventType;
use chrono::Utc;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// What a fan-out did, for its log line.
#[derive(Debug, Default, PartialEq)]
pub struct FannedOut {
    pub event_type: Option<&'static str>,
    pub endpoints: usize,
    pub enqueued: usize,
}

impl FannedOut {
    /// The fan-out's log line where one event is fanned out alone: the
    /// release before's events queue's handler (`sqs.rs`). The events
    /// function writes one line per stream batch instead
    /// (`functions/events/src/webhooks.rs`).
    pub fn log(&self) {
        tracing::info!(
            event_type = self.event_type.unwrap_or(""),
            endpoints = self.endpoints,
            enqueued = self.enqueued,
            "webhook fan-out"
        );
    }
}

/// The body every attempt of an event sends (section 9), compact, in this order.
#[derive(Serialize)]
struct Payload<'a> {
    #[serde(rename = "type")]
    event_type: &'a str,
    timestamp: &'a str,
    data: &'a Value,
}

/// The payload of an event: its type, `timestamp` = the event's
/// `occurredAt`, `data` = its `detail` (which carries `eventId`, `sequence`
/// and, on a lapse, `lapsed: true`).
pub fn payload(event_type: EventType, detail: &Value) -> Result<String, DeliverError> {
    let timestamp = detail["occurredAt"].as_str().unwrap_or_default();
    let payload = Payload {
        event_type: event_type.as_str(),
        timestamp,
        data: detail,
    };
    Ok(serde_json::to_string(&payload)?)
}

/// Messages per send: SQS's `SendMessageBatch` takes ten, so a batch of
/// events' deliveries costs one request per ten messages, not one per event.
const SEND_BATCH: usize = 10;

impl Deliverer {
    /// One event, as EventBridge delivers it to a target
    /// (`{"detail-type": ..., "detail": {...}}`), fanned out. A type that
    /// webhooks do not carry is done with, nothing sent.
    pub async fn fan_out(&self, event: &Value) -> Result<FannedOut, DeliverError> {
        let detail_type = event["detail-type"].as_str().unwrap_or_default();
        let mut fanned = self.fan_out_all(&[(detail_type, &event["detail"])]).await;
        fanned.pop().unwrap_or_else(|| Ok(FannedOut::default()))
    }

    /// Several events at once, each as its bus `detail-type` and `detail`
    /// (the events function's, from one `PutEvents` call): each event's
    /// subscribers read, then every message sent, ten a call. The answer is
    /// per event, in order: an event whose read or messages failed is an
    /// error, to be fanned out again (a second message of an event makes no
    /// second delivery: its first receipt finds the delivery made).
    pub async fn fan_out_all(
        &self,
        events: &[(&str, &Value)],
    ) -> Vec<Result<FannedOut, DeliverError>> {
        let carried = events
            .iter()
            .any(|(detail_type, _)| EventType::from_detail_type(detail_type).is_some());
        if carried {
            // Once per call: lists held at another version are stale (a
            // registration, a re-enabling, a change of `events` since).
            if let Err(error) = crate::webhooks::subscriptions::version(&self.db())
                .await
                .map(|version| self.keys.subscriptions_at(version))
            {
                let error = Arc::new(DeliverError::Db(error));
                return events
                    .iter()
                    .map(|_| Err(DeliverError::Shared(error.clone())))
                    .collect();
            }
        }
        let prepared = events
            .iter()
            .map(|(detail_type, detail)| self.deliveries_of(detail_type, detail));
        let prepared = futures::future::join_all(prepared).await;
        let mut results = Vec::with_capacity(events.len());
        let mut messages: Vec<(usize, DeliveryMessage)> = Vec::new();
        for (index, event) in prepared.into_iter().enumerate() {
            results.push(event.map(|(fanned, of_event)| {
                messages.extend(of_event.into_iter().map(|m| (index, m)));
                fanned
            }));
        }
        for call in messages.chunks(SEND_BATCH) {
            let sending = call.iter().map(|(_, message)| message.clone()).collect();
            if let Err(error) = self.queue.send(sending).await {
                for (index, _) in call {
                    results[*index] = Err(DeliverError::Queue(error.clone()));
                }
            }
        }
        results
    }

    /// One event's messages, one per endpoint that takes it now.
    async fn deliveries_of(
        &self,
        detail_type: &str,
        detail: &Value,
    ) -> Result<(FannedOut, Vec<DeliveryMessage>), DeliverError> {
        let Some(event_type) = EventType::from_detail_type(detail_type) else {
            return Ok((FannedOut::default(), Vec::new()));
        };
        let event_id = detail["eventId"]
            .as_str()
            .ok_or_else(|| DeliverError::NoEventId(detail_type.to_string()))?;
        let order_owner = detail["order"]["ownerId"].as_u64();
        let endpoints = items::subscribers(&self.db(), &self.keys, event_type, order_owner).await?;
        let mut messages = Vec::new();
        if !endpoints.is_empty() {
            // Made only for an event someone takes.
            let body = payload(event_type, detail)?;
            let event = QueuedEvent {
                event_type: event_type.as_str().to_string(),
                body,
                fanned_out_at: Utc::now(),
            };
            for endpoint in &endpoints {
                let shard = shard_of_event(event_id, endpoint.delivery_shards);
                messages.push(DeliveryMessage {
                    event: Some(event.clone()),
                    ..DeliveryMessage::new(endpoint.id, shard, event_id, false)
                });
            }
        }
        let fanned = FannedOut {
            event_type: Some(event_type.as_str()),
            endpoints: endpoints.len(),
            enqueued: messages.len(),
        };
        Ok((fanned, messages))
    }
}

#[cfg(test)]
mod tests;
