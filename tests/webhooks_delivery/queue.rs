//! The queue side as Lambda runs it (an SQS batch in, the messages to hand
//! back out), and the per-endpoint bound on attempts in flight.

use super::*;
use aws_lambda_events::event::sqs::SqsEvent;
use futures::future::BoxFuture;
use petstore::webhooks::deliver::lambda::is_sqs_event;
use petstore::webhooks::deliver::slots::{self, SLOTS_PER_ENDPOINT};
use petstore::webhooks::deliver::sqs::{handle_batch, SqsQueue};
use petstore::webhooks::queue::{DeliveryMessage, DeliveryQueue, QueueError};

const DELIVERIES_URL: &str =
    "https://sqs.us-east-1.amazonaws.com/000000000000/petstore-webhook-deliveries";

/// The deliveries queue, its SQS out of reach: a test that reached it fails.
fn unreachable_queue() -> SqsQueue {
    let credentials = aws_sdk_sqs::config::Credentials::new("test", "test", None, None, "test");
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
        .region(aws_sdk_sqs::config::Region::new("us-east-1"))
        .endpoint_url("http://127.0.0.1:9")
        .credentials_provider(credentials)
        .http_client(petstore::http_client())
        .build();
    SqsQueue::new(aws_sdk_sqs::Client::from_conf(config), DELIVERIES_URL)
}

fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_string())
}

/// Changes a stored delivery as `expression` says (`#state` names `state`).
async fn set_delivery(
    app: &TestApp,
    id: u64,
    event_id: &str,
    expression: &str,
    values: &[(&str, AttributeValue)],
) {
    let mut update = app
        .app
        .db
        .client()
        .update_item()
        .table_name(&app.app.config.table_name)
        .set_key(Some(delivery_key(app, id, event_id).await))
        .update_expression(expression);
    if expression.contains("#state") {
        update = update.expression_attribute_names("#state", "state");
    }
    for (name, value) in values {
        update = update.expression_attribute_values(*name, value.clone());
    }
    update.send().await.expect("the delivery is changed");
}

fn record(id: &str, queue: &str, body: &str) -> Value {
    json!({
        "messageId": id, "receiptHandle": format!("rh-{id}"), "body": body,
        "attributes": {}, "messageAttributes": {}, "md5OfBody": "",
        "eventSource": "aws:sqs", "eventSourceARN": format!("arn:aws:sqs:us-east-1:000000000000:{queue}"),
        "awsRegion": "us-east-1",
    })
}

#[tokio::test]
async fn a_batch_is_told_apart_by_queue_and_only_what_failed_is_handed_back() {
    let app = TestApp::spawn().await;
    let super::OneEndpoint {
        mut receiver,
        id,
        deliverer,
    } = one_endpoint(
        &app,
        vec![receivers::Answer::Status(200)],
        None,
        "evt-first",
    )
    .await;
    receiver.next().await;
    delivery_when(&app, id, "evt-first", |d| d["state"] == "delivered").await;
    // Made pending again, its next attempt an hour away.
    let in_an_hour = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let values = [(":pending", s("pending")), (":at", s(&in_an_hour))];
    set_delivery(
        &app,
        id,
        "evt-first",
        "SET #state = :pending, nextAttemptAt = :at",
        &values,
    )
    .await;
    let deliveries = "petstore-webhook-deliveries";
    let event = json!({"Records": [
        record("fan", "petstore-webhook-events", &stock_event("evt-batch").to_string()),
        record("bad", "petstore-webhook-events", "{not json"),
        record("gone", deliveries, &json!({"webhookId": id, "eventId": "evt-none"}).to_string()),
        record("later", deliveries, &json!(message(id, "evt-first", false)).to_string()),
    ]});
    assert!(is_sqs_event(&event));
    assert!(!is_sqs_event(
        &json!({"version": "2.0", "routeKey": "GET /webhooks"})
    ));
    let event: SqsEvent = serde_json::from_value(event).expect("an SQS event");

    let response = handle_batch(&deliverer, &unreachable_queue(), event).await;
    let failed: Vec<_> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    // `later` went to the delivery handler (a fan-out of it would be done
    // with): deferred by ChangeMessageVisibility, which fails on the queue
    // out of reach, so it is handed back as it is.
    assert_eq!(failed, ["bad", "later"]);
    // The events record was fanned out to the endpoint, through the deliverer's queue.
    assert_eq!(receiver.next().await.webhook_id, "evt-batch");
}

#[tokio::test]
async fn an_endpoint_has_a_bounded_number_of_attempts_in_flight() {
    let app = TestApp::spawn().await;
    let (client, table) = (app.app.db.client(), app.app.config.table_name.as_str());
    let now = chrono::Utc::now();
    let mut leases = Vec::new();
    for _ in 0..SLOTS_PER_ENDPOINT {
        leases.push(
            slots::take(client, table, 7, now)
                .await
                .expect("a slot")
                .expect("free"),
        );
    }
    assert!(
        slots::take(client, table, 7, now)
            .await
            .expect("asked")
            .is_none(),
        "all taken"
    );
    assert!(
        slots::take(client, table, 8, now)
            .await
            .expect("asked")
            .is_some(),
        "another endpoint's are its own"
    );
    slots::release(client, table, leases.pop().expect("a lease"))
        .await
        .expect("released");
    assert!(
        slots::take(client, table, 7, now)
            .await
            .expect("asked")
            .is_some(),
        "a released slot is free"
    );
    // A holder that died: its lease runs out.
    let later = now + slots::LEASE + chrono::Duration::seconds(1);
    assert!(
        slots::take(client, table, 7, later)
            .await
            .expect("asked")
            .is_some(),
        "an expired lease is free"
    );
}

/// A message handed back says why down to DynamoDB's own answer: the
/// error keeps its cause, the `DbFailure` of the call that failed.
#[tokio::test]
async fn a_message_handed_back_keeps_dynamodb_s_answer_as_its_cause() {
    let app = TestApp::spawn().await;
    let deliverer = Deliverer {
        client: app.app.db.client().clone(),
        table: "petstore-no-such-table".to_string(),
        attempter: Attempter::new(LOCAL, system_resolver()).expect("TLS"),
        schedule: quick_schedule(),
        queue: Arc::new(Kept::default()),
        keys: key_states(&app, Duration::ZERO),
    };
    let retry = DeliveryMessage::new(7, 0, "0000000000a-evt", true);

    let error = deliverer
        .deliver(&retry, 1)
        .await
        .expect_err("no table to read");

    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    let failure = std::iter::from_fn(|| {
        let this = cause?;
        cause = this.source();
        Some(this)
    })
    .find_map(|e| e.downcast_ref::<petstore::db::DbFailure>());
    let failure = failure.unwrap_or_else(|| panic!("no DbFailure among the causes: {error:?}"));
    assert_eq!(failure.table, "petstore-no-such-table");
    assert_eq!(failure.code.as_deref(), Some("ResourceNotFoundException"));
    let logged = petstore::db::cause_chain(&error);
    assert!(logged.contains("ResourceNotFoundException"), "{logged}");
}

/// A deliveries queue that keeps what it is sent, handling nothing.
#[derive(Default)]
pub struct Kept(pub std::sync::Mutex<Vec<DeliveryMessage>>);

impl DeliveryQueue for Kept {
    fn send(&self, messages: Vec<DeliveryMessage>) -> BoxFuture<'_, Result<(), QueueError>> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(messages);
        Box::pin(async { Ok(()) })
    }
}
