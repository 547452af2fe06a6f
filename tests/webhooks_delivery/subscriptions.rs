//! A new endpoint misses nothing (section 9): every event of its types
//! that occurs after its registration, its re-enabling or a change of its
//! `events` was answered reaches it, on a fan-out that held its owner's
//! subscription list (for the key cache's 30 seconds, as deployed) from
//! before. The README's "Webhooks in a minute", done through the API and
//! the events consumer as `make run` runs them; an endpoint deleted gets
//! nothing from then on, though the fan-out's held list still names it;
//! and what the fan-out's check costs, counted through the proxy.

use super::queue::Kept;
use super::receivers::{rust_receiver, Answer, Receiver};
use super::*;
use crate::domain_events::{reader, Collect};
use crate::idempotency::proxy::{FaultMix, FaultProxy};
use crate::webhooks::{resolving, set_attributes, RECEIVER};
use events::local::StreamReader;
use events::WithWebhooks;

/// The order `placed` answered, as its `order.placed` arrives: its id.
async fn arrives(receiver: &mut Receiver, placed: &Value) {
    let seen = receiver.next().await;
    assert_eq!(seen.body["type"], "order.placed", "{:?}", seen.body);
    assert_eq!(
        seen.body["data"]["order"]["id"], placed["id"],
        "this order's event: {:?}",
        seen.body
    );
    assert_eq!(
        seen.verified,
        [true],
        "signed with the registration's secret"
    );
}

/// The events consumer as `make run` runs it (its fan-out holding
/// subscription lists for the deployed 30 s, deliveries on the local
/// queue), and staff, a customer and a pet in stock to order; the staff
/// app kept for as long as the test runs.
async fn as_make_run() -> (TestApp, TestApp, u64, WithWebhooks<Collect>, StreamReader) {
    let staff = TestApp::spawn().await;
    let customer = staff.as_customer().await;
    resolving(&customer);
    let rex = pet_in_stock(&staff, 5).await;
    let deliverer = local::start_with(
        staff.app.db.client().clone(),
        staff.app.config.table_name.clone(),
        Attempter::new(LOCAL, system_resolver()).expect("TLS"),
        quick_schedule(),
        key_states(&staff, Duration::from_secs(30)),
    );
    let consumer = WithWebhooks::new(Collect::default(), deliverer);
    let stream = reader(&staff, &staff.endpoint);
    (staff, customer, rex, consumer, stream)
}

#[tokio::test]
async fn an_order_placed_within_a_second_of_the_registration_is_delivered() {
    // Given the events consumer as `make run` runs it (its fan-out holding
    // subscription lists for the deployed 30 s, deliveries on the local
    // queue), which has fanned out an earlier order of this customer: its
    // list is held, empty
    let (_staff, customer, rex, consumer, mut stream) = as_make_run().await;
    let order = json!({"petId": rex, "quantity": 1});
    customer
        .post("/store/orders", order.clone())
        .await
        .assert_status(201);
    assert!(stream.drain(&consumer, 50).await.expect("the stream reads"));

    // When the customer registers an endpoint (201), starts its receiver
    // with the secret the answer shows, and places an order at once
    let registered = customer
        .post(
            "/webhooks",
            json!({"url": RECEIVER, "events": ["order.placed"]}),
        )
        .await;
    registered.assert_status(201);
    let registered = registered.json();
    let id = registered["id"].as_u64().expect("an id");
    let secret = registered["secret"].as_str().expect("its secret");
    let mut receiver = rust_receiver(&[secret], vec![Answer::Status(200)]).await;
    // The receiver is on this machine: the stored URL is pointed at it.
    let url = AttributeValue::S(receiver.url.clone());
    let pk = format!("WEBHOOK#{id}");
    set_attributes(&customer, pk, "ENDPOINT".into(), &[("url", url)]).await;
    let placed = customer.post("/store/orders", order.clone()).await;
    placed.assert_status(201);
    assert!(stream.drain(&consumer, 50).await.expect("the stream reads"));

    // Then the receiver gets that order's `order.placed`
    arrives(&mut receiver, &placed.json()).await;

    // And when the endpoint is disabled and enabled again, an order placed
    // at once after the answer is delivered too (none meanwhile)
    let path = format!("/webhooks/{id}");
    let off = customer.patch(&path, json!({"enabled": false})).await;
    off.assert_status(200);
    customer
        .post("/store/orders", order.clone())
        .await
        .assert_status(201);
    assert!(stream.drain(&consumer, 50).await.expect("the stream reads"));
    let on = customer.patch(&path, json!({"enabled": true})).await;
    on.assert_status(200);
    let placed = customer.post("/store/orders", order).await;
    placed.assert_status(201);
    assert!(stream.drain(&consumer, 50).await.expect("the stream reads"));
    arrives(&mut receiver, &placed.json()).await;
}

#[tokio::test]
async fn while_the_lists_are_held_a_fan_out_reads_only_the_subscriptions_version() {
    // Given a fan-out through the counting proxy that has read the staff
    // list and a customer's (both empty), held for the deployed 30 s
    let app = TestApp::spawn().await;
    let owner = app.as_customer().await.key_id;
    let proxy = FaultProxy::start(&app.endpoint, FaultMix::NONE, 0).await;
    let deliverer = Deliverer {
        client: petstore::local_client(&proxy.endpoint).await,
        table: app.app.config.table_name.clone(),
        attempter: Attempter::new(LOCAL, system_resolver()).expect("TLS"),
        schedule: quick_schedule(),
        queue: Arc::new(Kept::default()),
        keys: key_states(&app, Duration::from_secs(30)),
    };
    let fan_out = |event: Value| {
        let deliverer = &deliverer;
        async move { deliverer.fan_out(&event).await.expect("fanned out") }
    };
    fan_out(order_event("evt-warm", owner)).await;

    // When an order event and a stock event nobody takes are fanned out
    let before = proxy.calls().len();
    fan_out(order_event("evt-untaken-order", owner)).await;
    fan_out(stock_event("evt-untaken-stock")).await;

    // Then each read the subscriptions' version, one item by key, and nothing else
    let calls: Vec<String> = proxy.calls()[before..]
        .iter()
        .map(|call| call.operation.clone())
        .collect();
    assert_eq!(calls, ["BatchGetItem", "BatchGetItem"], "{calls:?}");
}

#[tokio::test]
async fn an_order_placed_at_once_after_an_endpoint_s_deletion_is_not_sent_to_it() {
    // Given two endpoints of one customer on one receiver (each with its
    // own secret, which tells them apart), and a fan-out that has sent an
    // order to both: their owner's list is held, with both in it
    let (_staff, customer, rex, consumer, mut stream) = as_make_run().await;
    let mut endpoints = Vec::new();
    for _ in 0..2 {
        let body = json!({"url": RECEIVER, "events": ["order.placed"]});
        let registered = customer.post("/webhooks", body).await;
        registered.assert_status(201);
        let registered = registered.json();
        let id = registered["id"].as_u64().expect("an id");
        let secret = registered["secret"].as_str().expect("its secret");
        endpoints.push((id, secret.to_string()));
    }
    let secrets: Vec<&str> = endpoints.iter().map(|(_, s)| s.as_str()).collect();
    let mut receiver = rust_receiver(&secrets, vec![Answer::Status(200)]).await;
    for (id, _) in &endpoints {
        let url = AttributeValue::S(receiver.url.clone());
        let pk = format!("WEBHOOK#{id}");
        set_attributes(&customer, pk, "ENDPOINT".into(), &[("url", url)]).await;
    }
    let order = json!({"petId": rex, "quantity": 1});
    let place = || async {
        let placed = customer.post("/store/orders", order.clone()).await;
        placed.assert_status(201);
        placed.json()
    };
    let first = place().await;
    assert!(stream.drain(&consumer, 50).await.expect("the stream reads"));
    let mut both: Vec<Vec<bool>> = vec![receiver.next().await, receiver.next().await]
        .into_iter()
        .inspect(|seen| assert_eq!(seen.body["data"]["order"]["id"], first["id"]))
        .map(|seen| seen.verified)
        .collect();
    both.sort();
    assert_eq!(both, [[false, true], [true, false]], "each endpoint got it");

    // When the first endpoint is deleted and an order is placed at once
    let (deleted, _) = endpoints[0];
    let gone = customer.delete(&format!("/webhooks/{deleted}")).await;
    gone.assert_status(204);
    let second = place().await;
    assert!(stream.drain(&consumer, 50).await.expect("the stream reads"));

    // Then the one left gets it, and the deleted one nothing: not that
    // order, nor the next (by whose arrival an attempt of the first order
    // to the deleted endpoint would have been made)
    let seen = receiver.next().await;
    assert_eq!(seen.body["data"]["order"]["id"], second["id"]);
    assert_eq!(seen.verified, [false, true], "only the endpoint left");
    let third = place().await;
    assert!(stream.drain(&consumer, 50).await.expect("the stream reads"));
    let seen = receiver.next().await;
    assert_eq!(seen.body["data"]["order"]["id"], third["id"]);
    assert_eq!(seen.verified, [false, true], "only the endpoint left");
    let more: Vec<Vec<bool>> = receiver.so_far().into_iter().map(|s| s.verified).collect();
    assert!(more.is_empty(), "nothing more arrived: {more:?}");
}
