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

/// A delivery's stored `createdAt` and `expiresAt`, as the table holds them.
async fn lifetime(app: &TestApp, id: u64, event_id: &str) -> (String, i64) {
    let stored = crate::webhooks_delivery::delivery_item(app, id, event_id)
        .await
        .expect("the delivery is stored");
    let created = stored["createdAt"].as_str().unwrap_or_default().to_string();
    (created, stored["expiresAt"].as_i64().unwrap_or_default())
}

/// Moves the delivery's creation to `days` days ago, its `expiresAt` 30
/// days after that (what the passing of time leaves).
async fn made_days_ago(app: &TestApp, id: u64, event_id: &str, days: i64) -> (String, i64) {
    let created = chrono::Utc::now() - chrono::Duration::days(days);
    let expires = (created + chrono::Duration::days(30)).timestamp();
    let values = [
        (
            "createdAt",
            AttributeValue::S(petstore::webhooks::endpoints::time(created)),
        ),
        ("expiresAt", AttributeValue::N(expires.to_string())),
    ];
    set_delivery_attributes(app, id, event_id, &values).await;
    lifetime(app, id, event_id).await
}

#[tokio::test]
async fn a_delivery_lasts_30_days_from_its_creation_however_often_it_is_attempted_or_retried() {
    use crate::webhooks_delivery::{deliverer, delivery_when, register, system_resolver};
    use crate::webhooks_delivery::{NewEndpoint, LOCAL};
    // Given staff's own endpoint on a port nobody listens on (every attempt
    // fails), and a ping to it made 10 days ago
    let staff = TestApp::spawn().await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = closed.local_addr().expect("its address").port();
    drop(closed);
    let url = format!("http://127.0.0.1:{port}/hooks");
    let secret = petstore::webhooks::sign::new_secret();
    let endpoint = NewEndpoint::new(staff.key_id, "staff", &url, &secret);
    let id = register(&staff, &endpoint, &LOCAL, system_resolver().as_ref()).await;
    let event_id = ping(&staff, id).await["eventId"]
        .as_str()
        .expect("an eventId")
        .to_string();
    let made = made_days_ago(&staff, id, &event_id, 10).await;

    // When its schedule runs out and it is retried by hand
    let deliverer = deliverer(&staff, LOCAL, system_resolver());
    let sent = staff.hooks.queue.take();
    deliverer.queue.send(sent).await.expect("queued");
    let failed = delivery_when(&staff, id, &event_id, |d| d["state"] == "failed").await;
    let attempts = failed["attemptCount"].as_u64().unwrap_or_default();
    assert!(attempts >= 1, "{failed}");
    assert_eq!(
        lifetime(&staff, id, &event_id).await,
        made,
        "after its schedule"
    );
    let retry = format!("/webhooks/{id}/deliveries/{event_id}/retry");
    staff.post(&retry, json!({})).await.assert_status(202);
    let sent = staff.hooks.queue.take();
    deliverer.queue.send(sent).await.expect("queued");
    delivery_when(&staff, id, &event_id, |d| {
        d["attemptCount"].as_u64() == Some(attempts + 1)
    })
    .await;

    // Then it still expires 30 days after it was made
    assert_eq!(lifetime(&staff, id, &event_id).await, made, "after a retry");

    // And once those 30 days are over it is retried no more: 404, nothing sent
    made_days_ago(&staff, id, &event_id, 30).await;
    staff
        .post(&retry, json!({}))
        .await
        .assert_error(404, "NOT_FOUND");
    assert!(staff.queue_is_empty(), "an expired delivery sends nothing");
}
