//! Round trips one after another (contract section 4: the count and the
//! first read a handler makes run side by side, no write before the count
//! admits): each measured by the proxy's times between the service and
//! DynamoDB Local, as the longest chain of calls each sent after the one
//! before it was answered.

use super::counted;
use crate::helpers::TestApp;
use crate::idempotency::proxy::{sequential_round_trips, Call, FaultProxy};
use serde_json::json;

/// The calls `proxy` received after the first `since`.
fn since(proxy: &FaultProxy, since: usize) -> Vec<Call> {
    proxy.calls().into_iter().skip(since).collect()
}

/// A pet in stock, made through `app`.
async fn stocked_pet(app: &TestApp) -> u64 {
    let category = app
        .create_category(&format!("Category {}", rand::random::<u32>()))
        .await;
    let pet = app.create_pet("Rex", category, "available").await;
    app.put(
        &format!("/store/inventory/{pet}"),
        json!({ "quantity": 10 }),
    )
    .await
    .assert_status(200);
    pet
}

#[tokio::test]
async fn a_warm_order_is_two_round_trips_the_count_beside_the_pet_s_read() {
    // Given a customer known to a warm instance, and a pet in stock
    let app = TestApp::spawn().await;
    let pet = stocked_pet(&app).await;
    let (through, proxy) = counted(&app).await;
    let customer = through.as_customer().await;
    customer
        .get("/store/inventory?limit=1")
        .await
        .assert_status(200);

    // When it places an order
    let before = proxy.calls().len();
    let placed = customer
        .post("/store/orders", json!({ "petId": pet }))
        .await;

    // Then the count and the pet's read went out together, then the write
    placed.assert_status(201);
    let calls = since(&proxy, before);
    let operations: Vec<&str> = calls.iter().map(|c| c.operation.as_str()).collect();
    assert_eq!(sequential_round_trips(&calls), 2, "{operations:?}");
    assert_eq!(
        operations.last(),
        Some(&"TransactWriteItems"),
        "{operations:?}"
    );
}

/// Tries a measurement of round trips at most this often, keeping the
/// fewest: a chain the code makes shows in every try, while a loaded
/// machine can only add to it (a call sent beside another that reaches the
/// proxy after the other's answer), as it did under the whole suite.
const TRIES: usize = 3;

#[tokio::test]
async fn a_cold_keyed_read_is_two_round_trips_the_look_up_then_the_count_beside_the_read() {
    // Given a key another instance counted
    let app = TestApp::spawn().await;
    app.get("/pets?limit=20").await.assert_status(200);
    let shards = app.app.config.shards.pets as usize;
    let mut fewest = None;
    for _ in 0..TRIES {
        // And an instance that never saw it
        let (cold, proxy) = counted(&app).await;

        // When its first request comes
        cold.get("/pets?limit=20").await.assert_status(200);

        // Then the key's look-up, then the count beside the list's queries
        // (one a shard, side by side)
        let calls = proxy.calls();
        let operations: Vec<String> = calls.iter().map(|c| c.operation.clone()).collect();
        assert_eq!(
            operations.first().map(String::as_str),
            Some("GetItem"),
            "{operations:?}"
        );
        let count = |op: &str| operations.iter().filter(|o| *o == op).count();
        assert_eq!(
            (count("GetItem"), count("UpdateItem"), count("Query")),
            (1, 1, shards),
            "{operations:?}"
        );
        let rounds = (sequential_round_trips(&calls), operations);
        if fewest.as_ref().is_none_or(|(fewest, _)| rounds.0 < *fewest) {
            fewest = Some(rounds);
        }
        if fewest.as_ref().is_some_and(|(fewest, _)| *fewest <= 2) {
            break;
        }
    }
    let (rounds, operations) = fewest.expect("tried");
    assert_eq!(rounds, 2, "{operations:?}");
}

#[tokio::test]
async fn a_refused_write_served_beside_its_count_writes_nothing() {
    // Given a customer whose only request this minute was spent on another
    // instance, while this warm one still thinks it has room
    let app = TestApp::spawn().await;
    let pet = stocked_pet(&app).await;
    let (through, proxy) = counted(&app).await;
    let customer = through
        .with_new_key(petstore::ratelimit::Plan::Enterprise, Some((2, 1_000)))
        .await;
    customer
        .get("/store/inventory?limit=1")
        .await
        .assert_status(200);
    let elsewhere = app.with_key(customer.api_key.clone().unwrap_or_default());
    elsewhere
        .get("/store/inventory?limit=1")
        .await
        .assert_status(200);

    // When it places an order here
    let before = proxy.calls().len();
    let refused = customer
        .post("/store/orders", json!({ "petId": pet }))
        .await;

    // Then it is refused, and nothing but the counter was written
    refused.assert_status(429);
    let calls = since(&proxy, before);
    let writes: Vec<&Call> = calls
        .iter()
        .filter(|c| !matches!(c.operation.as_str(), "GetItem" | "Query" | "BatchGetItem"))
        .filter(|c| !c.reaches(&app.rate_limit_table_name))
        .collect();
    assert!(writes.is_empty(), "{writes:?}");
    let stock = app.get(&format!("/store/inventory/{pet}")).await;
    assert_eq!(stock.json()["quantity"], 10, "{stock:?}");
}
