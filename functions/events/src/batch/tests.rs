use super::*;
use chrono::{TimeZone, Utc};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Mutex;

/// A pet created: two events.
fn created_pet(n: u64) -> Change {
    let item: serde_dynamo::Item = serde_dynamo::to_item(json!({
        "PK": format!("PET#{n}"), "SK": "PET", "id": n, "name": "Rex",
        "categoryId": 2, "status": "available", "stock": 1, "openOrders": 0
    }))
    .expect("an item");
    Change {
        event_id: format!("e{n}"),
        sequence: format!("{}", 100 + n),
        at: Utc.with_ymd_and_hms(2026, 7, 1, 12, 0, 0).unwrap(),
        old: None,
        new: Some(item.into()),
    }
}

/// Fails the entries whose `eventId` it is told to, `times` times each, and
/// records every call.
#[derive(Default)]
struct Flaky {
    failing: Mutex<Vec<(String, u32)>>,
    calls: Mutex<Vec<Vec<String>>>,
}

impl Flaky {
    fn failing(event_id: &str, times: u32) -> Flaky {
        Flaky {
            failing: Mutex::new(vec![(event_id.to_string(), times)]),
            ..Flaky::default()
        }
    }

    fn sent(&self) -> Vec<Vec<String>> {
        self.calls.lock().unwrap().clone()
    }
}

impl Publisher for Flaky {
    async fn publish(&self, events: &[DomainEvent]) -> Vec<Result<(), String>> {
        let ids: Vec<String> = events.iter().map(|e| e.event_id().to_string()).collect();
        self.calls.lock().unwrap().push(ids.clone());
        let mut failing = self.failing.lock().unwrap();
        ids.iter()
            .map(
                |id| match failing.iter_mut().find(|(f, left)| f == id && *left > 0) {
                    Some((_, left)) => {
                        *left -= 1;
                        Err("ThrottlingException".to_string())
                    }
                    None => Ok(()),
                },
            )
            .collect()
    }
}

const QUICK: Retries = Retries {
    attempts: 3,
    first_pause: Duration::from_millis(1),
};

#[tokio::test]
async fn calls_hold_at_most_ten_entries_in_stream_order() {
    let changes: Vec<Change> = (1..=6).map(created_pet).collect();
    let publisher = Flaky::default();
    let outcome = publish_changes(&changes, &publisher, QUICK).await;
    assert_eq!(outcome.published, 12);
    assert_eq!(outcome.first_unpublished, None);
    let sent = publisher.sent();
    assert_eq!(sent.iter().map(Vec::len).collect::<Vec<_>>(), [10, 2]);
    assert_eq!(sent[0][0], "19f1d8ce200-e1-0");
    assert_eq!(sent[1], ["19f1d8ce200-e6-0", "19f1d8ce200-e6-1"]);
}

#[tokio::test]
async fn only_the_failed_entries_are_sent_again() {
    let changes: Vec<Change> = (1..=3).map(created_pet).collect();
    let publisher = Flaky::failing("19f1d8ce200-e2-1", 2);
    let outcome = publish_changes(&changes, &publisher, QUICK).await;
    assert_eq!(outcome.first_unpublished, None);
    assert_eq!(outcome.published, 6);
    assert_eq!((outcome.calls, outcome.retried), (3, 2));
    let sent = publisher.sent();
    assert_eq!(sent[1], ["19f1d8ce200-e2-1"]);
    assert_eq!(sent[2], ["19f1d8ce200-e2-1"]);
}

#[tokio::test]
async fn what_keeps_failing_leaves_its_record_and_the_later_ones_for_redelivery() {
    let changes: Vec<Change> = (1..=8).map(created_pet).collect();
    let publisher = Flaky::failing("19f1d8ce200-e3-1", 10);
    let outcome = publish_changes(&changes, &publisher, QUICK).await;
    assert_eq!(outcome.first_unpublished.as_deref(), Some("103"));
    assert!(outcome.failure.unwrap_or_default().contains("Throttling"));
    // The calls after the failing one were not made: records 6..8 wait.
    let sent: HashSet<String> = publisher.sent().into_iter().flatten().collect();
    assert!(!sent.contains("19f1d8ce200-e6-0"), "{sent:?}");
    // Delivered again from record 3, the same events go out, with the same ids.
    let again = Flaky::default();
    let outcome = publish_changes(&changes[2..], &again, QUICK).await;
    assert_eq!(outcome.first_unpublished, None);
    assert_eq!(
        again.sent()[0][..2],
        ["19f1d8ce200-e3-0", "19f1d8ce200-e3-1"]
    );
}

#[tokio::test]
async fn a_record_whose_images_cannot_be_read_is_not_skipped() {
    let mut changes: Vec<Change> = (1..=3).map(created_pet).collect();
    let broken: serde_dynamo::Item =
        serde_dynamo::to_item(json!({"PK": "PET#2", "SK": "PET", "id": "two"})).expect("an item");
    changes[1].new = Some(broken.into());
    let publisher = Flaky::default();
    let outcome = publish_changes(&changes, &publisher, QUICK).await;
    assert_eq!(outcome.published, 2);
    assert_eq!(outcome.first_unpublished.as_deref(), Some("102"));
}
