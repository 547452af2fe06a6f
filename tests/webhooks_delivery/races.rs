//! Two receipts of one delivery message at once (SQS delivers at least
//! once, and a message may be handed to two tasks side by side): each
//! attempt is claimed under a name no other receipt can take, so the
//! receiver gets one request and the record shows its real outcome, never
//! an `interrupted` in its place and never a request unrecorded (section 9:
//! every attempt a receiver gets is in the delivery's record). The
//! interleaving is forced: the first receipt's request is held at the
//! receiver until the second receipt has been handled (or has sent a
//! request of its own).

use super::queue::Kept;
use super::receivers::{rust_receiver, Answer, Receiver};
use super::*;
use petstore::webhooks::deliver::Disposition;
use petstore::webhooks::queue::DeliveryMessage;
use tokio::sync::Semaphore;

/// A deliverer whose queue keeps what it is sent, handling none.
fn held_deliverer(app: &TestApp) -> (Deliverer, Arc<Kept>) {
    let kept = Arc::new(Kept::default());
    let deliverer = Deliverer {
        client: app.app.db.client().clone(),
        table: app.app.config.table_name.clone(),
        attempter: Attempter::new(LOCAL, system_resolver()).expect("TLS"),
        schedule: quick_schedule(),
        queue: kept.clone(),
        keys: key_states(app, Duration::ZERO),
    };
    (deliverer, kept)
}

/// A staff endpoint on a receiver whose every answer waits for `gate`, and
/// `event_id` fanned out to it: the fan-out's message, not yet handled.
async fn gated_endpoint(
    app: &TestApp,
    deliverer: &Deliverer,
    kept: &Kept,
    gate: &Arc<Semaphore>,
    event_id: &str,
) -> (Receiver, u64, DeliveryMessage) {
    let secret = petstore::webhooks::sign::new_secret();
    let receiver = rust_receiver(&[&secret], vec![Answer::Gated(gate.clone())]).await;
    let endpoint = NewEndpoint::new(1, "staff", &receiver.url, &secret);
    let id = register(app, &endpoint, &LOCAL, system_resolver().as_ref()).await;
    deliverer
        .fan_out(&stock_event(event_id))
        .await
        .expect("fanned out");
    let mut sent = kept.0.lock().expect("kept").split_off(0);
    sent.retain(|m| m.webhook_id == id);
    assert_eq!(sent.len(), 1, "one message: {sent:?}");
    (receiver, id, sent.remove(0))
}

/// Handles `message` twice at once: the first receipt until its request is
/// at the receiver (held there by `gate`), then the second, to its end or
/// to a request of its own; then the gate opens for every request made.
/// Answers both dispositions and how many requests the receiver got.
async fn two_receipts(
    deliverer: &Deliverer,
    receiver: &mut Receiver,
    gate: &Semaphore,
    message: &DeliveryMessage,
) -> (Disposition, Disposition, usize) {
    let first = deliverer.deliver(message, 1);
    let second = async {
        receiver.next().await; // the first receipt's request, held
        let second = deliverer.deliver(message, 1);
        tokio::pin!(second);
        let (handled, requests) = tokio::select! {
            handled = &mut second => (handled, 1),
            _ = receiver.next() => {
                gate.add_permits(1); // let the second receipt's request end
                (second.await, 2)
            }
        };
        gate.add_permits(1);
        (handled, requests)
    };
    let both = async { tokio::join!(first, second) };
    let (first, (second, requests)) = tokio::time::timeout(WITHIN, both)
        .await
        .expect("both receipts end once the gate opens");
    (
        first.expect("the first receipt is handled"),
        second.expect("the second receipt is handled"),
        requests,
    )
}

fn shown(delivery: &Value) -> Vec<String> {
    let attempts = delivery["attempts"].as_array().cloned().unwrap_or_default();
    attempts
        .iter()
        .map(|a| match (&a["statusCode"], &a["error"]) {
            (Value::Number(code), _) => code.to_string(),
            (_, Value::String(error)) => error.clone(),
            _ => "?".to_string(),
        })
        .collect()
}

#[tokio::test]
async fn two_first_receipts_of_one_message_send_once_and_record_the_real_outcome() {
    // Given a fan-out's message, not yet received
    let app = TestApp::spawn().await;
    let (deliverer, kept) = held_deliverer(&app);
    let gate = Arc::new(Semaphore::new(0));
    let (mut receiver, id, message) =
        gated_endpoint(&app, &deliverer, &kept, &gate, "evt-two-first").await;

    // When two receipts of it are handled at once, the second while the
    // first's request is under way
    let (first, second, requests) = two_receipts(&deliverer, &mut receiver, &gate, &message).await;

    // Then the receiver got one request, and the record shows its answer
    // (the second receipt left the attempt to the first, and comes back
    // when the first's claim would have ended)
    let delivery = delivery_item(&app, id, "evt-two-first")
        .await
        .expect("made");
    assert_eq!(shown(&delivery), ["200"], "{delivery}");
    assert_eq!(delivery["state"], "delivered", "{delivery}");
    assert_eq!(delivery["claims"], json!({}), "{delivery}");
    assert_eq!(requests, 1, "sent once");
    assert_eq!(first, Disposition::Done);
    assert!(matches!(second, Disposition::Later(_)), "{second:?}");
    // Its return finds the delivery delivered: nothing more.
    let again = deliverer.deliver(&message, 2).await.expect("handled");
    assert_eq!(again, Disposition::Done);
    assert!(receiver.so_far().is_empty());
}

#[tokio::test]
async fn two_receipts_of_one_retry_by_hand_send_once_or_record_every_request() {
    // Given a delivered delivery and a retry by hand of it
    let app = TestApp::spawn().await;
    let (deliverer, kept) = held_deliverer(&app);
    let gate = Arc::new(Semaphore::new(1));
    let (mut receiver, id, first) =
        gated_endpoint(&app, &deliverer, &kept, &gate, "evt-two-manual").await;
    let delivered = deliverer.deliver(&first, 1).await.expect("handled");
    assert_eq!(delivered, Disposition::Done);
    receiver.next().await;
    let retry = message_to(&app, id, "evt-two-manual", true).await;

    // When two receipts of the retry's message are handled at once, the
    // second while the first's request is under way
    let (one, other, requests) = two_receipts(&deliverer, &mut receiver, &gate, &retry).await;

    // Then every request the receiver got for the retry is in the record
    let delivery = delivery_item(&app, id, "evt-two-manual")
        .await
        .expect("made");
    let manual: Vec<Value> = delivery["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .filter(|a| a["manual"] == true)
        .cloned()
        .collect();
    let outcomes = shown(&json!({ "attempts": manual }));
    // Each request the receiver answered 200, as recorded: none unrecorded,
    // none recorded as interrupted in its answer's place.
    assert_eq!(outcomes, vec!["200"; requests], "{delivery}");
    assert_eq!(requests, 1, "sent once");
    assert_eq!(one, Disposition::Done);
    assert!(matches!(other, Disposition::Later(_)), "{other:?}");
    assert_eq!(delivery["claims"], json!({}), "{delivery}");
}
