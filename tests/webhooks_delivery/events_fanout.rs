//! The events function's own fan-out (issue 47): the stream's events are
//! fanned out by the consumer that publishes them (the same consumer code
//! as in Lambda, on DynamoDB Local's stream); a fan-out that fails leaves its
//! record to be read again, and the record read again sends the event's
//! message, whose first receipt makes its delivery.

use super::queue::Kept;
use super::receivers::rust_receiver;
use super::*;
use crate::domain_events::{reader, Collect};
use events::{Retries, WithWebhooks};
use futures::future::BoxFuture;
use petstore::webhooks::queue::{DeliveryMessage, DeliveryQueue, QueueError};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A deliveries queue that refuses its first `refusals` sends (as SQS
/// throttling would), then keeps what it is sent.
#[derive(Default)]
struct Refusing {
    refusals: AtomicUsize,
    kept: Kept,
}

impl DeliveryQueue for Refusing {
    fn send(&self, messages: Vec<DeliveryMessage>) -> BoxFuture<'_, Result<(), QueueError>> {
        let refused = self
            .refusals
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        match refused {
            true => Box::pin(async { Err(QueueError("throttled".into())) }),
            false => self.kept.send(messages),
        }
    }
}

#[tokio::test]
async fn a_fan_out_that_fails_leaves_its_record_to_be_read_again_and_makes_one_delivery() {
    let staff = TestApp::spawn().await;
    let customer = staff.as_customer().await;
    let rex = pet_in_stock(&staff, 3).await;
    let secret = petstore::webhooks::sign::new_secret();
    let receiver = rust_receiver(&[&secret], Vec::new()).await;
    let mut endpoint = NewEndpoint::new(customer.key_id, "customer", &receiver.url, &secret);
    endpoint.events = &["order.placed"];
    let id = register(&staff, &endpoint, &LOCAL, system_resolver().as_ref()).await;
    customer
        .post("/store/orders", json!({"petId": rex}))
        .await
        .assert_status(201);

    // Every call's sends refused, its retry's too: the order's record is
    // left unpublished, and read again.
    let queue = Arc::new(Refusing {
        refusals: AtomicUsize::new(2),
        ..Refusing::default()
    });
    let deliverer = Arc::new(Deliverer {
        client: staff.app.db.client().clone(),
        table: staff.app.config.table_name.clone(),
        attempter: Attempter::new(LOCAL, system_resolver()).expect("TLS"),
        schedule: quick_schedule(),
        queue: queue.clone(),
        keys: key_states(&staff, Duration::ZERO),
    });
    let publisher = WithWebhooks::new(Collect::default(), deliverer.clone());
    let retries = Retries {
        attempts: 2,
        first_pause: Duration::from_millis(10),
    };
    let mut stream = reader(&staff, &staff.endpoint).with_retries(retries);
    assert!(stream
        .drain(&publisher, 50)
        .await
        .expect("the stream reads"));
    assert!(
        stream.totals.redeliveries >= 1,
        "the record whose fan-out failed is read again"
    );

    let placed: Vec<String> = publisher
        .inner()
        .events()
        .iter()
        .filter(|e| e.detail_type == "OrderPlaced")
        .filter_map(|e| e.detail["eventId"].as_str().map(str::to_string))
        .collect();
    let event_id = placed.first().expect("the order's event").clone();
    assert!(
        placed.iter().all(|e| *e == event_id),
        "one event, however often published"
    );
    // The event's message went once the queue took it: the refused sends
    // kept nothing, the record read again sent it. Its first receipt makes
    // the one delivery.
    let sent = queue.kept.0.lock().expect("kept").split_off(0);
    let expected = DeliveryMessage {
        id: sent.first().map(|m| m.id.clone()).unwrap_or_default(),
        event: sent.first().and_then(|m| m.event.clone()),
        ..message(id, &event_id, false)
    };
    assert_eq!(sent, [expected]);
    assert!(sent[0].event.is_some(), "it carries the event");
    assert_eq!(delivery_item(&staff, id, &event_id).await, None);
    let handled = deliverer.deliver(&sent[0], 1).await;
    assert!(handled.is_ok(), "{handled:?}");
    let delivery = delivery_item(&staff, id, &event_id)
        .await
        .expect("its delivery");
    assert_eq!(delivery["attemptCount"], 1, "{delivery}");
}
