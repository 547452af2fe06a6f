//! The `webhooks` function's queue side, for its `main.rs` to wire: tell an
//! SQS batch from an API Gateway request ([`is_sqs_event`]), and hand the
//! batch to [`QueueSide::handle`].

use super::sqs::{handle_batch, SqsQueue};
use super::Deliverer;
use crate::webhooks::address::{SystemResolver, UrlPolicy};
use crate::webhooks::attempt::Attempter;
use crate::webhooks::receiving::KeyStates;
use crate::webhooks::schedule::RetrySchedule;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use serde_json::Value;
use std::sync::Arc;

/// Whether an invocation's payload is a batch of SQS messages (either
/// queue), rather than an HTTP API request.
pub fn is_sqs_event(payload: &Value) -> bool {
    payload["Records"][0]["eventSource"] == "aws:sqs"
}

/// The deliverer and the deliveries queue, built once per cold start.
pub struct QueueSide {
    pub deliverer: Deliverer,
    pub deliveries: SqsQueue,
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("WEBHOOK_QUEUE_URL is not set: the deliveries queue's URL")]
    NoQueueUrl,
    #[error(transparent)]
    Schedule(#[from] crate::webhooks::schedule::ScheduleError),
    #[error(transparent)]
    Batching(#[from] super::batching::BatchingError),
    #[error("TLS settings: {0}")]
    Tls(#[from] tokio_rustls::rustls::Error),
}

impl QueueSide {
    /// From the environment: `WEBHOOK_QUEUE_URL`, `WEBHOOK_RETRY_SCHEDULE`,
    /// `WEBHOOKS_ALLOW_LOOPBACK`; the tables and the key cache's
    /// time-to-live as `config` says.
    pub fn from_env(
        aws: &aws_config::SdkConfig,
        client: aws_sdk_dynamodb::Client,
        config: &crate::config::Config,
    ) -> Result<QueueSide, SetupError> {
        let url = std::env::var("WEBHOOK_QUEUE_URL").map_err(|_| SetupError::NoQueueUrl)?;
        let deliveries = SqsQueue::from_config(aws, url);
        let attempter = Attempter::new(UrlPolicy::from_env(), Arc::new(SystemResolver))?;
        let deliverer = Deliverer {
            keys: Arc::new(KeyStates::of(client.clone(), config)),
            client,
            table: config.table_name.clone(),
            attempter,
            schedule: RetrySchedule::from_env()?,
            queue: Arc::new(deliveries.clone()),
        };
        Ok(QueueSide {
            deliverer,
            deliveries,
        })
    }

    /// One batch, its AWS calls recorded as the `webhooks` function's.
    pub async fn handle(&self, event: SqsEvent) -> SqsBatchResponse {
        let caller = crate::aws_calls::enabled()
            .then_some(crate::aws_calls::Caller::Function { name: "webhooks" });
        crate::aws_calls::within(
            caller,
            handle_batch(&self.deliverer, &self.deliveries, event),
        )
        .await
    }
}
