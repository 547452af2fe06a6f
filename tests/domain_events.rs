//! Domain events (contract section 8, `functions/events`): the data table's
//! stream on DynamoDB Local, read by the same consumer code `make run` runs,
//! gives exactly the contract's events, once in effect, under failures.

mod asyncapi;
mod failures;

use crate::helpers::TestApp;
use crate::idempotency::send_keyed;
use events::local::{local_streams_client, StreamReader};
use events::{DomainEvent, Publisher};
use http::Method;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// A bus that keeps what it is given.
#[derive(Default)]
pub struct Collect(Mutex<Vec<DomainEvent>>);

impl Collect {
    pub fn events(&self) -> Vec<DomainEvent> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Publisher for Collect {
    /// Every event a test publishes is held to `asyncapi.yaml` here.
    async fn publish(&self, events: &[DomainEvent]) -> Vec<Result<(), String>> {
        asyncapi::assert_conform(events);
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(events);
        vec![Ok(()); events.len()]
    }
}

/// A reader of `app`'s stream through DynamoDB at `endpoint`.
pub fn reader(app: &TestApp, endpoint: &str) -> StreamReader {
    StreamReader::new(local_streams_client(endpoint), &app.app.config.table_name)
}

/// Every event of `app`'s stream so far, read as `make run` reads it.
pub async fn stream_events(app: &TestApp) -> Vec<DomainEvent> {
    let bus = Collect::default();
    let drained = reader(app, &app.endpoint)
        .drain(&bus, 50)
        .await
        .expect("the stream is readable");
    assert!(drained, "the stream is read to its end");
    bus.events()
}

/// The record an event is about, as `kind:id` (a pet's stock is the pet's).
pub fn record_of(event: &DomainEvent) -> String {
    let detail = &event.detail;
    for kind in ["pet", "category", "order"] {
        if let Some(id) = detail[kind]["id"].as_u64() {
            return format!("{kind}:{id}");
        }
    }
    format!("pet:{}", detail["petId"])
}

/// Each record's events in `sequence` order, each as its type and its fields
/// that matter here.
fn by_record(events: &[DomainEvent]) -> BTreeMap<String, Vec<(String, Value)>> {
    let mut records: BTreeMap<String, Vec<&DomainEvent>> = BTreeMap::new();
    for event in events {
        records.entry(record_of(event)).or_default().push(event);
    }
    records
        .into_iter()
        .map(|(record, mut events)| {
            events.sort_by_key(|e| e.sequence().parse::<u128>().expect("a decimal sequence"));
            let summary = events
                .into_iter()
                .map(|e| (e.detail_type.to_string(), summary(e)))
                .collect();
            (record, summary)
        })
        .collect()
}

fn summary(event: &DomainEvent) -> Value {
    let d = &event.detail;
    match event.detail_type {
        "StockChanged" => json!([d["previousQuantity"], d["quantity"]]),
        "PetCreated" | "PetUpdated" | "PetDeleted" => json!(d["pet"]["status"]),
        "CategoryCreated" | "CategoryUpdated" | "CategoryDeleted" => json!(d["category"]["name"]),
        _ => json!(d["order"]["quantity"]),
    }
}

#[tokio::test]
async fn a_day_of_trading_announces_exactly_the_contracts_events() {
    let staff = TestApp::spawn().await;
    let customer = staff.as_customer().await;
    let dogs = staff.create_category("Dogs").await;
    let rex = staff.create_pet("Rex", dogs, "available").await;
    let stock = format!("/store/inventory/{rex}");
    staff
        .put(&stock, json!({"quantity": 3}))
        .await
        .assert_status(200);
    // An order, sent twice with one Idempotency-Key: placed once.
    let two = json!({"petId": rex, "quantity": 2});
    let first = send_keyed(&customer, Method::POST, "/store/orders", Some(&two), "k1").await;
    first.assert_status(201);
    let replay = send_keyed(&customer, Method::POST, "/store/orders", Some(&two), "k1").await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    // Refused: more than in stock.
    let refused = customer
        .post("/store/orders", json!({"petId": rex, "quantity": 5}))
        .await;
    refused.assert_status(409);
    // The last unit: the pet goes pending; cancelled, it is back.
    let last = customer.post("/store/orders", json!({"petId": rex})).await;
    last.assert_status(201);
    let last = last.json()["id"].as_u64().expect("an order id");
    customer
        .delete(&format!("/store/orders/{last}"))
        .await
        .assert_status(204);
    let first = first.json()["id"].as_u64().expect("an order id");
    staff
        .patch(&format!("/store/orders/{first}"), json!({"complete": true}))
        .await
        .assert_status(200);
    staff
        .put(&format!("/categories/{dogs}"), json!({"name": "Hounds"}))
        .await
        .assert_status(200);
    staff
        .put(&stock, json!({"quantity": 0}))
        .await
        .assert_status(200);
    staff
        .delete(&format!("/pets/{rex}"))
        .await
        .assert_status(204);
    staff
        .delete(&format!("/categories/{dogs}"))
        .await
        .assert_status(204);

    let events = stream_events(&staff).await;
    let ids: BTreeSet<&str> = events.iter().map(DomainEvent::event_id).collect();
    assert_eq!(
        ids.len(),
        events.len(),
        "every event has an eventId of its own"
    );
    let e = |t: &str, v: Value| (t.to_string(), v);
    let expected = BTreeMap::from([
        (
            format!("category:{dogs}"),
            vec![
                e("CategoryCreated", json!("Dogs")),
                e("CategoryUpdated", json!("Hounds")),
                e("CategoryDeleted", json!("Hounds")),
            ],
        ),
        (
            format!("pet:{rex}"),
            vec![
                e("PetCreated", json!("available")),
                e("StockChanged", json!([0, 1])),
                e("StockChanged", json!([1, 3])),
                e("StockChanged", json!([3, 1])),
                e("PetUpdated", json!("pending")),
                e("StockChanged", json!([1, 0])),
                e("PetUpdated", json!("available")),
                e("StockChanged", json!([0, 1])),
                e("PetUpdated", json!("sold")),
                e("StockChanged", json!([1, 0])),
                e("PetDeleted", json!("sold")),
            ],
        ),
        (
            format!("order:{first}"),
            vec![e("OrderPlaced", json!(2)), e("OrderCompleted", json!(2))],
        ),
        (
            format!("order:{last}"),
            vec![e("OrderPlaced", json!(1)), e("OrderCancelled", json!(1))],
        ),
    ]);
    assert_eq!(by_record(&events), expected);
    asyncapi::assert_conform(&events);
    // Orders name the key identity that placed them.
    let placed = events.iter().find(|e| e.detail_type == "OrderPlaced");
    let owner = placed.map(|e| e.detail["order"]["ownerId"].clone());
    assert_eq!(owner, Some(json!(customer.key_id)));
}

/// SDK settings whose EventBridge cannot be reached (there is no EventBridge
/// emulator): every call fails at once, after being serialized (and recorded
/// for `make iam-check` when recording).
fn unreachable_bus_settings() -> aws_config::SdkConfig {
    let credentials =
        aws_sdk_dynamodb::config::Credentials::new("local", "local", None, None, "test");
    aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .endpoint_url("http://127.0.0.1:9")
        .credentials_provider(aws_sdk_dynamodb::config::SharedCredentialsProvider::new(
            credentials,
        ))
        .retry_config(aws_config::retry::RetryConfig::disabled())
        .http_client(petstore::http_client())
        .build()
}

/// The events function's own publisher, as its `main` builds it: when the
/// bus cannot be reached, every entry fails with the call and the records
/// stay to be delivered again, so a working bus later gets every event.
#[tokio::test]
async fn a_bus_out_of_reach_publishes_nothing_and_loses_nothing() {
    let app = TestApp::spawn().await;
    app.create_category("Dogs").await;
    let unreachable =
        events::EventBridgePublisher::from_config(&unreachable_bus_settings(), "petstore-bus");
    let mut reader = reader(&app, &app.endpoint);

    let (read, unpublished) = reader
        .poll(&unreachable)
        .await
        .expect("the stream is readable");

    assert!(
        read > 0 && unpublished,
        "the category's record was read and left unpublished"
    );
    assert_eq!(reader.totals.published, 0);
    let bus = Collect::default();
    assert!(reader
        .drain(&bus, 50)
        .await
        .expect("the stream is readable"));
    let types: Vec<&str> = bus.events().iter().map(|e| e.detail_type).collect();
    assert_eq!(types, ["CategoryCreated"]);
}

#[test]
fn the_stream_filter_lets_through_every_item_an_event_is_read_from() {
    // The events function is invoked only for the sort keys its event
    // source's filter names: a record kind missing there would announce
    // nothing once deployed, though every local test passed.
    let template = crate::deploy::read_yaml("template.yaml");
    let events = &template["Resources"]["EventsFunction"]["Properties"]["Events"];
    let patterns: Vec<&str> = events
        .as_mapping()
        .into_iter()
        .flat_map(|events| events.values())
        .filter_map(|event| event["Properties"]["FilterCriteria"]["Filters"][0]["Pattern"].as_str())
        .collect();
    assert_eq!(
        patterns.len(),
        1,
        "one filtered stream source: {patterns:?}"
    );
    let pattern: Value = serde_json::from_str(patterns[0]).unwrap_or_default();
    let mut filtered: Vec<&str> = pattern["dynamodb"]["Keys"]["SK"]["S"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    filtered.sort_unstable();
    let mut read = petstore::db::stored::RECORD_SORT_KEYS.to_vec();
    read.sort_unstable();
    assert_eq!(filtered, read);
}
