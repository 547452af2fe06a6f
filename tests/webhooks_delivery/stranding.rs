//! No delivery stranded, none sent unrecorded (section 9, 1.2.0): a retry
//! by hand that fails, a retry by hand beside a scheduled attempt, a
//! `Retry-After` longer than the queue keeps messages, a slot that cannot be
//! given back. The handler is called as the queue calls it, message by
//! message, and what it answers is what the queue would do.

use super::queue::Kept;
use super::receivers::{rust_receiver, Answer, Receiver};
use super::*;
use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use petstore::webhooks::deliver::Disposition;

/// A deliverer on `client` whose queue keeps its messages, handling none:
/// the test hands each to the handler itself.
fn held_deliverer(app: &TestApp, client: aws_sdk_dynamodb::Client) -> (Deliverer, Arc<Kept>) {
    let kept = Arc::new(Kept::default());
    let deliverer = Deliverer {
        client,
        table: app.app.config.table_name.clone(),
        attempter: Attempter::new(LOCAL, system_resolver()).expect("TLS"),
        schedule: quick_schedule(),
        queue: kept.clone(),
        keys: key_states(app, Duration::ZERO),
    };
    (deliverer, kept)
}

/// A staff endpoint on a receiver answering `answers`, and `event_id`
/// fanned out to it by `deliverer` (its message kept, not handled).
async fn fanned_out(
    app: &TestApp,
    deliverer: &Deliverer,
    answers: Vec<Answer>,
    event_id: &str,
) -> (Receiver, u64) {
    let secret = petstore::webhooks::sign::new_secret();
    let receiver = rust_receiver(&[&secret], answers).await;
    let endpoint = NewEndpoint::new(1, "staff", &receiver.url, &secret);
    let id = register(app, &endpoint, &LOCAL, system_resolver().as_ref()).await;
    deliverer
        .fan_out(&stock_event(event_id))
        .await
        .expect("fanned out");
    (receiver, id)
}

async fn stored(app: &TestApp, id: u64, event_id: &str) -> Value {
    delivery_item(app, id, event_id)
        .await
        .expect("the delivery")
}

#[tokio::test]
async fn a_failed_delivery_retried_by_hand_that_fails_again_stays_failed() {
    let app = TestApp::spawn().await;
    let (deliverer, _) = held_deliverer(&app, app.app.db.client().clone());
    let (mut receiver, id) =
        fanned_out(&app, &deliverer, vec![Answer::Status(500)], "evt-failed").await;
    let scheduled = message(id, "evt-failed", false);
    for _ in 0..quick_schedule().max_attempts() {
        deliverer.deliver(&scheduled, 1).await.expect("handled");
    }
    assert_eq!(stored(&app, id, "evt-failed").await["state"], "failed");

    let by_hand = deliverer
        .deliver(&message(id, "evt-failed", true), 1)
        .await
        .expect("handled");

    assert_eq!(by_hand, Disposition::Done);
    let delivery = stored(&app, id, "evt-failed").await;
    assert_eq!(
        (&delivery["state"], &delivery["attemptCount"]),
        (&json!("failed"), &json!(5)),
        "failed, not pending with no message to carry it: {delivery}"
    );
    assert!(delivery.get("nextAttemptAt").is_none(), "{delivery}");
    assert_eq!(delivery["attempts"][4]["manual"], true);
    assert_eq!(receiver.so_far().len(), 5, "every attempt sent is recorded");
}

#[tokio::test]
async fn a_retry_by_hand_beside_a_scheduled_attempt_keeps_the_schedule_and_records_both() {
    let app = TestApp::spawn().await;
    let (deliverer, _) = held_deliverer(&app, app.app.db.client().clone());
    // Rounds, so that either attempt records first in some of them.
    for round in 0..6 {
        let event_id = format!("evt-race-{round}");
        let (mut receiver, id) =
            fanned_out(&app, &deliverer, vec![Answer::Status(500)], &event_id).await;
        let (scheduled, manual) = (message(id, &event_id, false), message(id, &event_id, true));

        let (scheduled, by_hand) = tokio::join!(
            deliverer.deliver(&scheduled, 1),
            deliverer.deliver(&manual, 1)
        );

        assert!(
            matches!(scheduled, Ok(Disposition::Later(_))),
            "the scheduled message carries the next attempt: {scheduled:?}"
        );
        assert_eq!(by_hand.expect("handled"), Disposition::Done);
        let delivery = stored(&app, id, &event_id).await;
        assert_eq!(
            (
                &delivery["state"],
                &delivery["attemptCount"],
                &delivery["scheduleStep"]
            ),
            (&json!("pending"), &json!(2), &json!(1)),
            "both attempts recorded, the schedule moved once: {delivery}"
        );
        let manual: Vec<_> = delivery["attempts"]
            .as_array()
            .expect("attempts")
            .iter()
            .map(|a| a["manual"] == true)
            .collect();
        assert!(
            manual.contains(&true) && manual.contains(&false),
            "{delivery}"
        );
        assert_eq!(receiver.so_far().len(), 2);
    }
}

#[tokio::test]
async fn a_retry_after_longer_than_the_queue_keeps_messages_counts_as_24_hours() {
    let app = TestApp::spawn().await;
    let (deliverer, _) = held_deliverer(&app, app.app.db.client().clone());
    let in_60_days = (chrono::Utc::now() + chrono::Duration::days(60)).to_rfc2822();
    let asks = [
        (
            "evt-30-days",
            Answer::AskingToWait(503, (30 * 86_400).to_string()),
        ),
        ("evt-60-days", Answer::AskingToWait(429, in_60_days)),
    ];
    let day = Duration::from_secs(86_400);
    for (event_id, answer) in asks {
        let (_receiver, id) = fanned_out(&app, &deliverer, vec![answer], event_id).await;
        let before = chrono::Utc::now();

        let handled = deliverer
            .deliver(&message(id, event_id, false), 1)
            .await
            .expect("handled");

        match handled {
            Disposition::Later(wait) => assert!(
                wait <= day && wait > day - Duration::from_secs(60),
                "{event_id}: {wait:?}"
            ),
            other => panic!("{event_id}: {other:?}"),
        }
        let delivery = stored(&app, id, event_id).await;
        let next: chrono::DateTime<chrono::Utc> = delivery["nextAttemptAt"]
            .as_str()
            .expect("pending, its next attempt set")
            .parse()
            .expect("a time");
        let longest = before + chrono::Duration::hours(24) + chrono::Duration::seconds(5);
        assert!(next <= longest, "{event_id}: at most 24 hours on: {next}");
        // Back early (SQS holds a message 12 hours at most): held again, no attempt.
        let again = deliverer
            .deliver(&message(id, event_id, false), 2)
            .await
            .expect("handled");
        assert!(matches!(again, Disposition::Later(_)), "{again:?}");
        assert_eq!(stored(&app, id, event_id).await["attemptCount"], 1);
    }
}

/// Fails the next so many calls of one operation before they are sent
/// (DynamoDB unreachable for them), as the SDK reports a dispatch failure.
#[derive(Debug)]
struct FailsCalls {
    /// `DeleteItem`, `UpdateItem`, ...
    operation: &'static str,
    left: std::sync::atomic::AtomicU32,
}

impl FailsCalls {
    fn client(
        local: &aws_sdk_dynamodb::Client,
        operation: &'static str,
        times: u32,
    ) -> aws_sdk_dynamodb::Client {
        let left = std::sync::atomic::AtomicU32::new(times);
        let failing = FailsCalls { operation, left };
        aws_sdk_dynamodb::Client::from_conf(
            local.config().to_builder().interceptor(failing).build(),
        )
    }
}

impl Intercept for FailsCalls {
    fn name(&self) -> &'static str {
        "FailsCalls"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        use std::sync::atomic::Ordering;
        let target = context.request().headers().get("x-amz-target");
        let suffix = format!(".{}", self.operation);
        let matching = target.is_some_and(|target| target.ends_with(&suffix));
        let fails = matching
            && self
                .left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                    left.checked_sub(1)
                })
                .is_ok();
        match fails {
            true => Err(format!("DynamoDB unreachable for {}", self.operation).into()),
            false => Ok(()),
        }
    }
}

#[tokio::test]
async fn a_slot_that_cannot_be_given_back_leaves_the_attempt_recorded() {
    let app = TestApp::spawn().await;
    let local = petstore::local_client(&app.endpoint).await;
    let failing = FailsCalls::client(&local, "DeleteItem", u32::MAX);
    let (deliverer, _) = held_deliverer(&app, failing);
    let answers = vec![Answer::Status(500), Answer::Status(200)];
    let (mut receiver, id) = fanned_out(&app, &deliverer, answers, "evt-slot").await;

    let first = deliverer.deliver(&message(id, "evt-slot", false), 1).await;
    let second = deliverer.deliver(&message(id, "evt-slot", false), 1).await;

    assert!(matches!(first, Ok(Disposition::Later(_))), "{first:?}");
    assert_eq!(second.expect("handled"), Disposition::Done);
    let delivery = stored(&app, id, "evt-slot").await;
    assert_eq!(
        (&delivery["state"], &delivery["attemptCount"]),
        (&json!("delivered"), &json!(2)),
        "{delivery}"
    );
    assert_eq!(receiver.so_far().len(), 2, "each attempt sent is recorded");
}

#[tokio::test]
async fn an_attempt_whose_record_fails_twice_is_recorded_once_and_not_sent_again() {
    let app = TestApp::spawn().await;
    let local = petstore::local_client(&app.endpoint).await;
    let (deliverer, _) = held_deliverer(&app, FailsCalls::client(&local, "UpdateItem", 2));
    let (mut receiver, id) =
        fanned_out(&app, &deliverer, vec![Answer::Status(200)], "evt-record").await;

    let handled = deliverer
        .deliver(&message(id, "evt-record", false), 1)
        .await;

    assert_eq!(handled.expect("handled"), Disposition::Done);
    let delivery = stored(&app, id, "evt-record").await;
    assert_eq!(
        (&delivery["state"], &delivery["attemptCount"]),
        (&json!("delivered"), &json!(1)),
        "{delivery}"
    );
    assert_eq!(receiver.so_far().len(), 1, "sent once, recorded once");
}

#[test]
fn the_deliveries_queue_keeps_messages_as_long_as_the_schedule_is_checked_against() {
    let template = crate::deploy::read_yaml("template.yaml");
    let queue = &template["Resources"]["WebhookDeliveriesQueue"]["Properties"];
    let retention = queue["MessageRetentionPeriod"].as_i64();
    let checked = petstore::webhooks::schedule::QUEUE_RETENTION.num_seconds();
    assert_eq!(retention, Some(checked), "{queue:?}");
}
