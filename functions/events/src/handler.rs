//! The Lambda handler: a batch of the data table's stream records in, the
//! first record left unpublished out (`ReportBatchItemFailures`), so Lambda
//! delivers only that record and the ones after it again.

use crate::batch::{publish_changes, Retries};
use crate::change::Change;
use crate::publish::Publisher;
use aws_lambda_events::event::dynamodb::Event;
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use lambda_runtime::LambdaEvent;

/// Publishes the batch's events through `publisher`.
pub async fn handle<P: Publisher>(
    event: LambdaEvent<Event>,
    publisher: &P,
) -> Result<DynamoDbEventResponse, lambda_runtime::Error> {
    let changes: Vec<Change> = event
        .payload
        .records
        .into_iter()
        .map(Change::from)
        .collect();
    let outcome = publish_changes(&changes, publisher, Retries::default()).await;
    tracing::info!(
        records = changes.len(),
        published = outcome.published,
        calls = outcome.calls,
        retried = outcome.retried,
        unpublished_from = outcome.first_unpublished.as_deref().unwrap_or(""),
        "batch"
    );
    let mut response = DynamoDbEventResponse::default();
    if let Some(sequence) = outcome.first_unpublished {
        let mut failure = DynamoDbBatchItemFailure::default();
        failure.item_identifier = Some(sequence);
        response.batch_item_failures.push(failure);
    }
    Ok(response)
}
