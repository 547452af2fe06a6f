//! What a delivery costs in DynamoDB calls (issue 47): counted by the
//! proxy between the handlers and DynamoDB Local, call by call, with the
//! key cache's time-to-live as deployed (30 seconds) and a process that has
//! delivered before (its key states and subscription lists held).

use super::queue::Kept;
use super::receivers::{rust_receiver, Answer};
use super::*;
use crate::idempotency::proxy::{FaultMix, FaultProxy};
use petstore::ratelimit::Plan;
use petstore::records::Role;
use petstore::webhooks::deliver::batching::Batching;
use petstore::webhooks::deliver::Disposition;
use std::collections::BTreeMap;

const WRITES: [&str; 4] = ["PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"];

/// The calls `proxy` received since `from`, by operation.
fn by_call(proxy: &FaultProxy, from: usize) -> BTreeMap<String, usize> {
    let mut calls = BTreeMap::new();
    for call in &proxy.calls()[from..] {
        *calls.entry(call.operation.clone()).or_default() += 1;
    }
    calls
}

/// The message the fan-out sent endpoint `id` for `event_id`, taken from
/// `kept` (the rest stay).
fn sent_to(kept: &Kept, id: u64, event_id: &str) -> petstore::webhooks::queue::DeliveryMessage {
    let mut sent = kept.0.lock().expect("kept");
    let at = sent
        .iter()
        .position(|m| m.webhook_id == id && m.event_id == event_id);
    sent.remove(at.expect("the fan-out's message"))
}

#[tokio::test]
async fn a_delivery_at_its_first_attempt_is_three_calls_and_two_writes() {
    let app = TestApp::spawn().await;
    let customer = app.create_key_as(Plan::Pro, None, Role::Customer).await;
    let owner = customer.record.id.get();
    let secret = petstore::webhooks::sign::new_secret();
    let mut receiver = rust_receiver(&[&secret], vec![Answer::Status(200)]).await;
    let mut endpoint = NewEndpoint::new(owner, "customer", &receiver.url, &secret);
    endpoint.events = &["order.placed"];
    let id = register(&app, &endpoint, &LOCAL, system_resolver().as_ref()).await;
    let proxy = FaultProxy::start(&app.endpoint, FaultMix::NONE, 0).await;
    let client = petstore::local_client(&proxy.endpoint).await;
    let kept = Arc::new(Kept::default());
    let deliverer = Deliverer {
        client,
        table: app.app.config.table_name.clone(),
        attempter: Attempter::new(LOCAL, system_resolver()).expect("TLS"),
        schedule: quick_schedule(),
        queue: kept.clone(),
        keys: key_states(&app, Duration::from_secs(30)),
    };
    // The fan-out's message of the event, at its first receipt.
    let deliver = |event_id: &str| {
        let message = sent_to(&kept, id, event_id);
        let deliverer = &deliverer;
        async move { deliverer.deliver(&message, 1).await.expect("handled") }
    };
    // A process that has delivered before.
    deliverer
        .fan_out(&order_event("evt-warm", owner))
        .await
        .expect("fanned out");
    assert_eq!(deliver("evt-warm").await, Disposition::Done);
    receiver.next().await;

    let before = proxy.calls().len();
    deliverer
        .fan_out(&order_event("evt-counted", owner))
        .await
        .expect("fanned out");
    assert_eq!(deliver("evt-counted").await, Disposition::Done);
    receiver.next().await;
    let calls = by_call(&proxy, before);
    let total: usize = calls.values().sum();
    let writes: usize = WRITES.iter().filter_map(|w| calls.get(*w)).sum();
    eprintln!("a delivery at its first attempt: {total} calls, {writes} writes: {calls:?}");
    assert!(total <= 4 && writes <= 2, "{calls:?}");
    // The fan-out's read of the subscriptions' version; the attempt's read
    // of its endpoint; the delivery made with its attempt claimed, before
    // the attempt is sent; the attempt recorded in the claim's place.
    let expected = [("BatchGetItem", 2), ("PutItem", 1), ("UpdateItem", 1)];
    let expected = expected.map(|(call, n)| (call.to_string(), n));
    assert_eq!(calls, BTreeMap::from(expected));

    // An event nobody takes (no staff endpoint; the owner's list held):
    // the subscriptions' version, read once a fan-out.
    let before = proxy.calls().len();
    deliverer
        .fan_out(&stock_event("evt-untaken"))
        .await
        .expect("fanned out");
    let other = app.as_customer().await.key_id;
    deliverer
        .fan_out(&order_event("evt-other", other))
        .await
        .expect("fanned out");
    let calls = by_call(&proxy, before);
    eprintln!("an untaken stock event, then an untaken order of an unseen owner: {calls:?}");
    assert_eq!(
        calls.get("Query"),
        Some(&1),
        "the unseen owner's list: {calls:?}"
    );
    assert_eq!(
        calls.get("BatchGetItem"),
        Some(&2),
        "the versions: {calls:?}"
    );
    assert_eq!(calls.values().sum::<usize>(), 3, "{calls:?}");
}

#[tokio::test]
async fn a_batch_of_first_attempts_reads_each_endpoint_once_and_no_delivery() {
    let app = TestApp::spawn().await;
    let staff = app.create_key_as(Plan::Pro, None, Role::Staff).await;
    let secret = petstore::webhooks::sign::new_secret();
    let answers = vec![Answer::Status(200); 8];
    let mut receiver = rust_receiver(&[&secret], answers).await;
    let owner = staff.record.id.get();
    let endpoint = NewEndpoint::new(owner, "staff", &receiver.url, &secret);
    let id = register(&app, &endpoint, &LOCAL, system_resolver().as_ref()).await;
    let proxy = FaultProxy::start(&app.endpoint, FaultMix::NONE, 0).await;
    let kept = Arc::new(Kept::default());
    let deliverer = Deliverer {
        client: petstore::local_client(&proxy.endpoint).await,
        table: app.app.config.table_name.clone(),
        attempter: Attempter::new(LOCAL, system_resolver()).expect("TLS"),
        schedule: quick_schedule(),
        queue: kept.clone(),
        keys: key_states(&app, Duration::from_secs(30)),
    };
    let events: Vec<String> = (0..8).map(|i| format!("evt-batch-{i}")).collect();
    for event in &events {
        let fanned = deliverer.fan_out(&stock_event(event)).await;
        fanned.expect("fanned out");
    }
    let messages: Vec<_> = events.iter().map(|e| sent_to(&kept, id, e)).collect();
    let batch: Vec<_> = messages.iter().map(|m| (m, 1)).collect();
    let before = proxy.calls().len();
    let handled = deliverer.deliver_batch(&batch).await;
    let done: Vec<_> = handled.into_iter().map(|h| h.expect("handled")).collect();
    assert_eq!(done, vec![Disposition::Done; 8]);
    for _ in &events {
        receiver.next().await;
    }
    let calls = by_call(&proxy, before);
    eprintln!("8 attempts of one endpoint in one batch: {calls:?}");
    // One read of their one endpoint (the deliveries are made, not read),
    // each made with its attempt claimed and its attempt recorded.
    assert_eq!(calls.get("BatchGetItem"), Some(&1), "{calls:?}");
    assert_eq!(calls.get("PutItem"), Some(&8), "{calls:?}");
    assert_eq!(calls.get("UpdateItem"), Some(&8), "{calls:?}");
    for event in &events {
        let stored = delivery_item(&app, id, event).await.expect("its delivery");
        assert_eq!(stored["state"], "delivered", "{event}");
    }
}

/// 30 attempts of one endpoint queued one after another on `batching`'s
/// local queue, each fanned out while the last is handled: the deliveries
/// and endpoint reads (`BatchGetItem`) the queue made for them.
async fn endpoint_reads_for_thirty_queued_attempts(batching: Batching) -> usize {
    let app = TestApp::spawn().await;
    let staff = app.create_key_as(Plan::Pro, None, Role::Staff).await;
    let secret = petstore::webhooks::sign::new_secret();
    let mut receiver = rust_receiver(&[&secret], vec![Answer::Status(200); 30]).await;
    let owner = staff.record.id.get();
    let endpoint = NewEndpoint::new(owner, "staff", &receiver.url, &secret);
    register(&app, &endpoint, &LOCAL, system_resolver().as_ref()).await;
    let proxy = FaultProxy::start(&app.endpoint, FaultMix::NONE, 0).await;
    let deliverer = local::start_batched(
        petstore::local_client(&proxy.endpoint).await,
        app.app.config.table_name.clone(),
        Attempter::new(LOCAL, system_resolver()).expect("TLS"),
        quick_schedule(),
        key_states(&app, Duration::from_secs(30)),
        batching,
    );
    for i in 0..30 {
        let fanned = deliverer
            .fan_out(&stock_event(&format!("evt-windowed-{i}")))
            .await;
        fanned.expect("fanned out");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for _ in 0..30 {
        tokio::time::timeout(WITHIN, receiver.next())
            .await
            .expect("every attempt arrives");
    }
    // Each fan-out's read of the subscriptions' version is one too: not
    // the queue's.
    let reads = by_call(&proxy, 0).get("BatchGetItem").copied().unwrap_or(0);
    reads.saturating_sub(30)
}

#[tokio::test]
async fn above_ten_messages_a_batch_waits_its_window_and_reads_the_endpoint_once_for_all() {
    // Given the batching of a stack built for more than 1,000 orders a
    // second (a window; the window long here so that a loaded machine's
    // fan-outs all fall within it) and that of the default (none)
    let windowed = Batching {
        size: 100,
        window: Duration::from_secs(5),
    };
    // When 30 attempts of one endpoint are queued one after another
    let reads_windowed = endpoint_reads_for_thirty_queued_attempts(windowed).await;
    let reads_default = endpoint_reads_for_thirty_queued_attempts(Batching::default()).await;
    // Then the windowed queue reads them in one batch (two if the machine
    // was slower than the window), beside the key's state read once, where
    // taking what is waiting reads them about once each (31 here)
    eprintln!("30 queued attempts: {reads_windowed} reads windowed, {reads_default} without");
    assert!(reads_windowed <= 3, "{reads_windowed}");
    assert!(reads_default > 2 * reads_windowed, "{reads_default}");
}

#[test]
fn the_deliveries_mapping_batches_as_the_local_queue_takes_them_at_every_order_rate() {
    let template = crate::deploy::read_yaml("template.yaml");
    let resources = &template["Resources"];
    let events = &resources["WebhooksFunction"]["Properties"]["Events"];
    let mapping = &events["WebhookDeliveries"]["Properties"];
    let sizes = crate::shield::capacity_values(&template, &mapping["BatchSize"], "BatchSize");
    let window = &mapping["MaximumBatchingWindowInSeconds"];
    let windows = crate::shield::capacity_values(&template, window, "the batching window");
    let timeout = resources["WebhooksFunction"]["Properties"]["Timeout"]
        .as_u64()
        .expect("the webhooks function's timeout");
    let visibility = resources["WebhookDeliveriesQueue"]["Properties"]["VisibilityTimeout"]
        .as_u64()
        .expect("the deliveries queue's visibility timeout");
    for ((rate, size), (_, window)) in sizes.iter().zip(&windows) {
        let vars = [
            ("WEBHOOK_DELIVERY_BATCH_SIZE", size.to_string()),
            ("WEBHOOK_DELIVERY_BATCH_WINDOW", window.to_string()),
        ];
        let batching = Batching::from_lookup(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
        });
        let batching = batching.unwrap_or_else(|e| panic!("OrderRate {rate}: {e}"));
        if rate == &sizes[0].0 {
            assert_eq!(batching, Batching::default(), "the default OrderRate");
        }
        // Lambda's SQS guide: six times the function's timeout plus the window.
        assert!(
            visibility >= 6 * timeout + window,
            "OrderRate {rate}: {visibility} s"
        );
    }
}
