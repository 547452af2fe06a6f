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
use petstore::webhooks::queue::DeliveryMessage;

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
/// fanned out to it by `deliverer`: the fan-out's message, kept, not handled.
async fn fanned_out(
    app: &TestApp,
    deliverer: &Deliverer,
    kept: &Kept,
    answers: Vec<Answer>,
    event_id: &str,
) -> (Receiver, u64, DeliveryMessage) {
    let secret = petstore::webhooks::sign::new_secret();
    let receiver = rust_receiver(&[&secret], answers).await;
    let endpoint = NewEndpoint::new(1, "staff", &receiver.url, &secret);
    let id = register(app, &endpoint, &LOCAL, system_resolver().as_ref()).await;
    deliverer
        .fan_out(&stock_event(event_id))
        .await
        .expect("fanned out");
    // A test's earlier staff endpoints take the event too: not this one's.
    let mut sent = kept.0.lock().expect("kept").split_off(0);
    sent.retain(|m| m.webhook_id == id);
    assert_eq!(sent.len(), 1, "one message: {sent:?}");
    let message = sent.remove(0);
    assert!(message.event.is_some(), "it carries the event: {message:?}");
    (receiver, id, message)
}

async fn stored(app: &TestApp, id: u64, event_id: &str) -> Value {
    delivery_item(app, id, event_id)
        .await
        .expect("the delivery")
}

#[tokio::test]
async fn a_failed_delivery_retried_by_hand_that_fails_again_stays_failed() {
    let app = TestApp::spawn().await;
    let (deliverer, kept) = held_deliverer(&app, app.app.db.client().clone());
    let answers = vec![Answer::Status(500)];
    let (mut receiver, id, scheduled) =
        fanned_out(&app, &deliverer, &kept, answers, "evt-failed").await;
    for receipt in 1..=quick_schedule().max_attempts() {
        deliverer
            .deliver(&scheduled, receipt)
            .await
            .expect("handled");
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
    let (deliverer, kept) = held_deliverer(&app, app.app.db.client().clone());
    // Rounds, so that either attempt claims and records first in some of them.
    for round in 0..6 {
        let event_id = format!("evt-race-{round}");
        let answers = vec![Answer::Status(500)];
        let (mut receiver, id, scheduled) =
            fanned_out(&app, &deliverer, &kept, answers, &event_id).await;
        // The first attempt made (a retry by hand needs a delivery to retry).
        let first = deliverer.deliver(&scheduled, 1).await;
        assert!(matches!(first, Ok(Disposition::Later(_))), "{first:?}");
        let manual = message(id, &event_id, true);

        let (scheduled, by_hand) = tokio::join!(
            deliverer.deliver(&scheduled, 2),
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
            (&json!("pending"), &json!(3), &json!(2)),
            "every attempt recorded, the schedule moved by the scheduled ones: {delivery}"
        );
        assert_eq!(delivery["claims"], json!({}), "no claim left: {delivery}");
        let manual: Vec<_> = delivery["attempts"]
            .as_array()
            .expect("attempts")
            .iter()
            .map(|a| a["manual"] == true)
            .collect();
        assert_eq!(manual.iter().filter(|m| **m).count(), 1, "{delivery}");
        assert_eq!(receiver.so_far().len(), 3);
    }
}

#[tokio::test]
async fn a_retry_after_longer_than_the_queue_keeps_messages_counts_as_24_hours() {
    let app = TestApp::spawn().await;
    let (deliverer, kept) = held_deliverer(&app, app.app.db.client().clone());
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
        let (_receiver, id, scheduled) =
            fanned_out(&app, &deliverer, &kept, vec![answer], event_id).await;
        let before = chrono::Utc::now();

        let handled = deliverer.deliver(&scheduled, 1).await.expect("handled");

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
        let again = deliverer.deliver(&scheduled, 2).await.expect("handled");
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
    let (deliverer, kept) = held_deliverer(&app, failing);
    let answers = vec![Answer::Status(500), Answer::Status(200)];
    let (mut receiver, id, scheduled) =
        fanned_out(&app, &deliverer, &kept, answers, "evt-slot").await;

    let first = deliverer.deliver(&scheduled, 1).await;
    let second = deliverer.deliver(&scheduled, 2).await;

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
    let failing = FailsCalls::client(&local, "UpdateItem", 2);
    let (deliverer, kept) = held_deliverer(&app, failing);
    let answers = vec![Answer::Status(200)];
    let (mut receiver, id, scheduled) =
        fanned_out(&app, &deliverer, &kept, answers, "evt-record").await;

    let handled = deliverer.deliver(&scheduled, 1).await;

    assert_eq!(handled.expect("handled"), Disposition::Done);
    let delivery = stored(&app, id, "evt-record").await;
    assert_eq!(
        (&delivery["state"], &delivery["attemptCount"]),
        (&json!("delivered"), &json!(1)),
        "{delivery}"
    );
    assert_eq!(receiver.so_far().len(), 1, "sent once, recorded once");
}

/// The attempts a stored delivery shows: each one's status, or its error.
fn shown(delivery: &Value) -> Vec<String> {
    let attempts = delivery["attempts"].as_array().expect("attempts");
    let outcome = |a: &Value| match (&a["statusCode"], &a["error"]) {
        (Value::Number(status), _) => status.to_string(),
        (_, error) => error.as_str().unwrap_or_default().to_string(),
    };
    attempts.iter().map(outcome).collect()
}

#[tokio::test]
async fn an_attempt_whose_process_ends_before_recording_it_is_shown_interrupted_and_the_schedule_goes_on(
) {
    let app = TestApp::spawn().await;
    let (deliverer, kept) = held_deliverer(&app, app.app.db.client().clone());
    // The first attempt is never answered; the process making it ends (as
    // Lambda ends an invocation at its timeout) while it waits.
    let answers = vec![Answer::Hang, Answer::Status(200)];
    let (mut receiver, id, scheduled) =
        fanned_out(&app, &deliverer, &kept, answers, "evt-ended").await;
    let ended = tokio::time::timeout(
        Duration::from_millis(1500),
        deliverer.deliver(&scheduled, 1),
    );
    assert!(ended.await.is_err(), "the handler was still waiting");
    assert_eq!(receiver.next().await.webhook_id, "evt-ended", "it was sent");
    let claimed = stored(&app, id, "evt-ended").await;
    assert_eq!(claimed["state"], "pending");
    assert!(
        claimed["claims"]["s0"]["at"].is_string(),
        "the attempt was written down before it was sent: {claimed}"
    );
    assert_eq!(
        claimed["claims"]["s0"]["by"],
        json!(scheduled.id),
        "{claimed}"
    );
    let listed = app.get(&format!("/webhooks/{id}/deliveries")).await;
    listed.assert_status(200);
    let listed = listed.json();
    assert_eq!(listed[0]["attemptCount"], 1, "{listed}");
    assert_eq!(listed[0]["attempts"][0]["error"], "in_progress", "{listed}");

    // A receipt of the message while the claim may still be under way
    // leaves it alone, and comes back when it would have ended.
    let early = deliverer.deliver(&scheduled, 2).await.expect("handled");
    assert!(matches!(early, Disposition::Later(_)), "{early:?}");
    assert_eq!(stored(&app, id, "evt-ended").await["attemptCount"], 0);
    // SQS hands the message over again after its visibility timeout.
    age_claims(&app, id, "evt-ended").await;
    let again = deliverer.deliver(&scheduled, 2).await.expect("handled");

    assert!(matches!(again, Disposition::Later(_)), "{again:?}");
    let recorded = stored(&app, id, "evt-ended").await;
    assert_eq!(shown(&recorded), ["interrupted"], "{recorded}");
    assert_eq!(
        (&recorded["attemptCount"], &recorded["scheduleStep"]),
        (&json!(1), &json!(1)),
        "an attempt that may have been made counts, and moves the schedule: {recorded}"
    );
    assert_eq!(recorded["claims"], json!({}), "{recorded}");
    assert!(recorded.get("scheduleClaim").is_none(), "{recorded}");
    assert!(receiver.so_far().is_empty(), "not sent again unrecorded");
    // The schedule's next attempt, carried by the same message.
    let last = deliverer.deliver(&scheduled, 3).await.expect("handled");
    assert_eq!(last, Disposition::Done);
    let delivered = stored(&app, id, "evt-ended").await;
    assert_eq!(delivered["state"], "delivered", "{delivered}");
    assert_eq!(shown(&delivered), ["interrupted", "200"], "{delivered}");
    assert_eq!(
        receiver.so_far().len(),
        1,
        "every request sent is in the record"
    );
    let listed = app.get(&format!("/webhooks/{id}/deliveries")).await.json();
    let errors: Vec<_> = listed[0]["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a.get("error").cloned())
        .collect();
    assert_eq!(errors, [Some(json!("interrupted")), None], "{listed}");
}

#[tokio::test]
async fn an_attempt_that_cannot_be_recorded_is_handed_back_and_shown_interrupted_at_the_next_receipt(
) {
    let app = TestApp::spawn().await;
    let local = petstore::local_client(&app.endpoint).await;
    let (down, kept) = held_deliverer(&app, FailsCalls::client(&local, "UpdateItem", u32::MAX));
    let (mut receiver, id, scheduled) = fanned_out(
        &app,
        &down,
        &kept,
        vec![Answer::Status(200)],
        "evt-unrecorded",
    )
    .await;

    let handled = down.deliver(&scheduled, 1).await;

    assert!(handled.is_err(), "handed back: {handled:?}");
    assert_eq!(receiver.so_far().len(), 1);
    let (deliverer, _) = held_deliverer(&app, app.app.db.client().clone());
    // Handed back, the message returns after its visibility timeout.
    age_claims(&app, id, "evt-unrecorded").await;
    let again = deliverer.deliver(&scheduled, 2).await.expect("handled");
    assert!(matches!(again, Disposition::Later(_)), "{again:?}");
    let delivery = stored(&app, id, "evt-unrecorded").await;
    assert_eq!(shown(&delivery), ["interrupted"], "{delivery}");
    assert!(receiver.so_far().is_empty(), "not sent again unrecorded");
}

#[tokio::test]
async fn an_event_fanned_out_twice_makes_one_delivery_and_one_attempt() {
    let app = TestApp::spawn().await;
    let (deliverer, kept) = held_deliverer(&app, app.app.db.client().clone());
    let answers = vec![Answer::Status(200)];
    let (mut receiver, id, first) = fanned_out(&app, &deliverer, &kept, answers, "evt-twice").await;
    // The stream's batch handed over again: a second message of the event.
    deliverer
        .fan_out(&stock_event("evt-twice"))
        .await
        .expect("fanned out again");
    let second = kept.0.lock().expect("kept").split_off(0);
    assert_eq!(second.len(), 1);
    assert_ne!(second[0].id, first.id, "each message has its own name");

    let (a, b) = tokio::join!(
        deliverer.deliver(&first, 1),
        deliverer.deliver(&second[0], 1)
    );

    assert_eq!(
        (a.expect("handled"), b.expect("handled")),
        (Disposition::Done, Disposition::Done)
    );
    let delivery = stored(&app, id, "evt-twice").await;
    assert_eq!(shown(&delivery), ["200"], "{delivery}");
    assert_eq!(receiver.so_far().len(), 1, "sent once");
}

#[tokio::test]
async fn a_delivery_stored_before_claims_and_a_message_without_a_name_are_claimed_and_recorded() {
    let app = TestApp::spawn().await;
    let (deliverer, kept) = held_deliverer(&app, app.app.db.client().clone());
    let answers = vec![Answer::Status(500), Answer::Status(200)];
    let (mut receiver, id, first) =
        fanned_out(&app, &deliverer, &kept, answers, "evt-before").await;
    let failed = deliverer.deliver(&first, 1).await;
    assert!(matches!(failed, Ok(Disposition::Later(_))), "{failed:?}");
    // As an item of a build before claims: no `claims` map.
    app.app
        .db
        .client()
        .update_item()
        .table_name(&app.app.config.table_name)
        .set_key(Some(delivery_key(&app, id, "evt-before").await))
        .update_expression("REMOVE claims")
        .send()
        .await
        .expect("the claims are removed");
    // A message of that build: no name of its own (SQS's is used), no event.
    let mut unnamed = message(id, "evt-before", false);
    unnamed.id = "sqs-message-id-1".into();

    let handled = deliverer.deliver(&unnamed, 1).await.expect("handled");

    assert_eq!(handled, Disposition::Done);
    let delivery = stored(&app, id, "evt-before").await;
    assert_eq!(shown(&delivery), ["500", "200"], "{delivery}");
    assert_eq!(delivery["claims"], json!({}), "{delivery}");
    assert_eq!(receiver.so_far().len(), 2);
}

#[test]
fn the_deliveries_queue_keeps_messages_as_long_as_the_schedule_is_checked_against() {
    let template = crate::deploy::read_yaml("template.yaml");
    let queue = &template["Resources"]["WebhookDeliveriesQueue"]["Properties"];
    let retention = queue["MessageRetentionPeriod"].as_i64();
    let checked = petstore::webhooks::schedule::QUEUE_RETENTION.num_seconds();
    assert_eq!(retention, Some(checked), "{queue:?}");
}
