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
    publisher.end_batch();
    let mut response = DynamoDbEventResponse::default();
    if let Some(sequence) = outcome.first_unpublished {
        let mut failure = DynamoDbBatchItemFailure::default();
        failure.item_identifier = Some(sequence);
        response.batch_item_failures.push(failure);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::DomainEvent;
    use serde_json::json;

    /// A bus that fails every entry of an order's events.
    struct NoOrders;

    impl Publisher for NoOrders {
        async fn publish(&self, events: &[DomainEvent]) -> Vec<Result<(), String>> {
            events
                .iter()
                .map(|e| match e.detail_type.starts_with("Order") {
                    true => Err("InternalFailure".to_string()),
                    false => Ok(()),
                })
                .collect()
        }
    }

    fn record(
        sequence: &str,
        keys: serde_json::Value,
        new: serde_json::Value,
    ) -> serde_json::Value {
        json!({
            "awsRegion": "us-east-1", "eventID": format!("id{sequence}"), "eventName": "INSERT",
            "eventSource": "aws:dynamodb", "eventVersion": "1.1",
            "dynamodb": {
                "ApproximateCreationDateTime": 1782907200.0, "Keys": keys, "NewImage": new,
                "SequenceNumber": sequence, "SizeBytes": 100, "StreamViewType": "NEW_AND_OLD_IMAGES"
            }
        })
    }

    #[tokio::test]
    async fn lambda_is_told_the_first_record_left_unpublished() -> Result<(), lambda_runtime::Error>
    {
        let category = json!({
            "PK": {"S": "CATEGORY#2"}, "SK": {"S": "CATEGORY"}, "id": {"N": "2"},
            "name": {"S": "Dogs"}, "petCount": {"N": "0"}
        });
        let order = json!({
            "PK": {"S": "ORDER#9"}, "SK": {"S": "ORDER"}, "id": {"N": "9"}, "petId": {"N": "5"},
            "quantity": {"N": "1"}, "complete": {"BOOL": false}, "ownerId": {"N": "7"}
        });
        let keys = |pk: &str, sk: &str| json!({"PK": {"S": pk}, "SK": {"S": sk}});
        let event = json!({"Records": [
            record("100", keys("CATEGORY#2", "CATEGORY"), category),
            record("200", keys("ORDER#9", "ORDER"), order),
            record("300", keys("CATEGORY#2", "CATEGORY"), json!({})),
        ]});
        let event = LambdaEvent::new(serde_json::from_value(event)?, Default::default());
        let response = handle(event, &NoOrders).await?;
        assert_eq!(
            serde_json::to_value(response)?,
            json!({"batchItemFailures": [{"itemIdentifier": "200"}]})
        );
        Ok(())
    }
}
