//! A ping and a retry put the right message on the deliveries queue; an
//! endpoint's deliveries list newest first, paged.

use super::{register_default, set_delivery_attributes};
use crate::helpers::TestApp;
use crate::webhooks_delivery::{delivery_key, message_to};
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{json, Value};

/// Pings `id`; answers the delivery the ping made.
async fn ping(app: &TestApp, id: u64) -> Value {
    let response = app.post(&format!("/webhooks/{id}/ping"), json!({})).await;
    response.assert_status(202);
    response.json()
}

#[tokio::test]
async fn a_ping_makes_a_pending_delivery_and_sends_its_message() {
    let staff = TestApp::spawn().await;
    let customer = staff.as_customer().await;
    let id = register_default(&customer).await;
    let delivery = ping(&customer, id).await;
    let event_id = delivery["eventId"]
        .as_str()
        .expect("an eventId")
        .to_string();
    // Its time first (11 hex digits of Unix milliseconds), as every event id.
    let (time, ping) = event_id.split_once('-').expect("time-ping");
    assert!(time.len() == 11 && ping.starts_with("ping_"), "{event_id}");
    let millis = i64::from_str_radix(time, 16).expect("hex milliseconds");
    let age = chrono::Utc::now().timestamp_millis() - millis;
    assert!((0..60_000).contains(&age), "{event_id}: {age} ms old");
    assert_eq!(delivery["type"], "webhook.ping");
    assert_eq!(delivery["state"], "pending");
    assert_eq!(delivery["webhookId"], id);
    let sent = customer.hooks.queue.take();
    let expected = message_to(&staff, id, &event_id, false).await;
    assert_eq!(named_alike(sent, &expected), vec![expected]);
    let body = stored_body(&staff, id, &event_id).await;
    let body: Value = serde_json::from_str(&body).expect("the body is JSON");
    assert_eq!(body["type"], "webhook.ping");
    assert_eq!(body["data"]["webhookId"], id);
    assert_eq!(body["data"]["eventId"], event_id.as_str());
    assert_eq!(body["timestamp"], body["data"]["occurredAt"]);
}

/// `sent`, each message given `expected`'s name: a message's name is its
/// own (random), the rest is what a test can expect.
fn named_alike(
    sent: Vec<petstore::webhooks::queue::DeliveryMessage>,
    expected: &petstore::webhooks::queue::DeliveryMessage,
) -> Vec<petstore::webhooks::queue::DeliveryMessage> {
    let named = |m: &petstore::webhooks::queue::DeliveryMessage| m.id.len() == 16;
    assert!(sent.iter().all(named), "each message is named: {sent:?}");
    let same_name = |m| petstore::webhooks::queue::DeliveryMessage {
        id: expected.id.clone(),
        ..m
    };
    sent.into_iter().map(same_name).collect()
}

async fn stored_body(app: &TestApp, id: u64, event_id: &str) -> String {
    let item = app
        .app
        .db
        .client()
        .get_item()
        .table_name(&app.app.config.table_name)
        .set_key(Some(delivery_key(app, id, event_id).await))
        .send()
        .await
        .expect("DynamoDB Local answers")
        .item
        .expect("the delivery is stored");
    match item.get("body") {
        Some(AttributeValue::S(body)) => body.clone(),
        other => panic!("no body: {other:?}"),
    }
}

#[tokio::test]
async fn a_retry_sends_a_manual_message_and_leaves_a_failed_delivery_failed_until_it_succeeds() {
    let staff = TestApp::spawn().await;
    let id = register_default(&staff).await;
    let event_id = ping(&staff, id).await["eventId"]
        .as_str()
        .expect("an eventId")
        .to_string();
    staff.hooks.queue.take();
    staff
        .post(
            &format!("/webhooks/{id}/deliveries/evt_unknown/retry"),
            json!({}),
        )
        .await
        .assert_error(404, "NOT_FOUND");
    assert!(staff.queue_is_empty(), "an unknown delivery sends nothing");
    set_delivery_attributes(
        &staff,
        id,
        &event_id,
        &[
            ("state", AttributeValue::S("failed".into())),
            ("attemptCount", AttributeValue::N("10".into())),
        ],
    )
    .await;
    let retried = staff
        .post(
            &format!("/webhooks/{id}/deliveries/{event_id}/retry"),
            json!({}),
        )
        .await;
    retried.assert_status(202);
    // Not `pending`: no scheduled message would carry it if the retry failed.
    assert_eq!(retried.json()["state"], "failed");
    let sent = staff.hooks.queue.take();
    let expected = message_to(&staff, id, &event_id, true).await;
    assert_eq!(named_alike(sent, &expected), vec![expected]);
}

#[tokio::test]
async fn deliveries_list_newest_first_in_pages() {
    let staff = TestApp::spawn().await;
    let id = register_default(&staff).await;
    let mut events = Vec::new();
    for _ in 0..3 {
        let delivery = ping(&staff, id).await;
        events.push(
            delivery["eventId"]
                .as_str()
                .expect("an eventId")
                .to_string(),
        );
        // Ids are time-ordered to the millisecond: the next ping is later.
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    events.reverse();
    let event_ids = |body: Value| -> Vec<String> {
        body.as_array()
            .expect("an array")
            .iter()
            .map(|d| d["eventId"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let first = staff
        .get(&format!("/webhooks/{id}/deliveries?limit=2"))
        .await;
    first.assert_status(200);
    assert_eq!(event_ids(first.json()), events[..2].to_vec());
    let second = staff.get(&first.next_page().expect("a next page")).await;
    assert_eq!(event_ids(second.json()), events[2..].to_vec());
    assert_eq!(second.next_page(), None);
    let other = register_default(&staff).await;
    assert_eq!(
        staff
            .get(&format!("/webhooks/{other}/deliveries"))
            .await
            .json(),
        json!([])
    );
}

#[tokio::test]
async fn an_endpoint_of_the_highest_order_rate_lists_its_deliveries_newest_first_over_its_128_partitions(
) {
    // Given an endpoint registered on a stack built for 10,000 orders a
    // second (128 delivery partitions: more than a page queries at once)
    let staff =
        TestApp::spawn_with(|name| (name == "WEBHOOK_DELIVERY_SHARDS").then(|| "128".to_string()))
            .await;
    let id = register_default(&staff).await;
    let endpoint = staff
        .app
        .db
        .client()
        .get_item()
        .table_name(staff.app.db.table())
        .key("PK", AttributeValue::S(format!("WEBHOOK#{id}")))
        .key("SK", AttributeValue::S("ENDPOINT".into()))
        .send()
        .await
        .expect("the endpoint's item");
    let shards = endpoint
        .item
        .and_then(|item| item.get("deliveryShards").cloned());
    assert_eq!(shards, Some(AttributeValue::N("128".into())));
    let mut events = Vec::new();
    for _ in 0..12 {
        let delivery = ping(&staff, id).await;
        events.push(delivery["eventId"].as_str().unwrap_or_default().to_string());
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    events.reverse();
    // When its deliveries are read five at a time
    let mut listed = Vec::new();
    let mut page = Some(format!("/webhooks/{id}/deliveries?limit=5"));
    while let Some(path) = page.take() {
        let response = staff.get(&path).await;
        response.assert_status(200);
        let body = response.json();
        let ids = body.as_array().expect("an array").iter();
        listed.extend(ids.map(|d| d["eventId"].as_str().unwrap_or_default().to_string()));
        page = response.next_page();
    }
    // Then every one comes once, newest first
    assert_eq!(listed, events);
}
