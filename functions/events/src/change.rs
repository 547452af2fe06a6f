//! One stream record: a change to one item, with its images before and after.

use aws_lambda_events::event::dynamodb::EventRecord;
use chrono::{DateTime, Utc};
use petstore::db::Item;

/// A change to one item of the data table, as its stream record tells it.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The stream record's `eventID`: the same on every delivery of it.
    pub event_id: String,
    /// The stream record's `SequenceNumber`: a decimal string, larger for a
    /// later change to the same item.
    pub sequence: String,
    /// When the change was made (the record's approximate creation time).
    pub at: DateTime<Utc>,
    /// The item before the change; `None` when it was created.
    pub old: Option<Item>,
    /// The item after the change; `None` when it was removed.
    pub new: Option<Item>,
}

/// An empty image is no image: Lambda's event has `{}` where the item was
/// created or removed.
fn image(item: serde_dynamo::Item) -> Option<Item> {
    let item: Item = item.into();
    (!item.is_empty()).then_some(item)
}

impl From<EventRecord> for Change {
    fn from(record: EventRecord) -> Change {
        let change = record.change;
        Change {
            event_id: record.event_id,
            sequence: change.sequence_number.unwrap_or_default(),
            at: change.approximate_creation_date_time,
            old: image(change.old_image),
            new: image(change.new_image),
        }
    }
}

#[cfg(feature = "local")]
impl Change {
    /// A record read with the Streams API (DynamoDB Local's stream).
    pub fn from_streams(record: aws_sdk_dynamodbstreams::types::Record) -> Change {
        let change = record
            .dynamodb
            .unwrap_or_else(|| aws_sdk_dynamodbstreams::types::StreamRecord::builder().build());
        let at = change
            .approximate_creation_date_time
            .and_then(|t| DateTime::from_timestamp_millis(t.to_millis().ok()?))
            .unwrap_or_default();
        Change {
            event_id: record.event_id.unwrap_or_default(),
            sequence: change.sequence_number.unwrap_or_default(),
            at,
            old: change
                .old_image
                .map(serde_dynamo::Item::from)
                .and_then(image),
            new: change
                .new_image
                .map(serde_dynamo::Item::from)
                .and_then(image),
        }
    }
}
