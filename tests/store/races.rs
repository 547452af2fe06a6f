//! Orders and cancellations racing each other: the stock is never oversold,
//! and no unit is lost or made up; a pet's two statuses (its record's and its
//! stock item's) stay one.

use super::{inventory, order, pet, pet_status, set_stock};
use crate::helpers::{TestApp, TestResponse};
use futures::future::join_all;
use serde_json::json;
use std::collections::HashSet;

#[tokio::test]
async fn concurrent_orders_never_sell_more_than_the_stock() {
    orders_never_oversell(TestApp::spawn().await).await;
}

/// 50 orders at once for 12 units (also run through `make run-lambda`'s
/// function instances, by tests/lambda.rs).
pub async fn orders_never_oversell(app: TestApp) {
    // Given a pet with 12 units
    let id = pet(&app, "available").await;
    set_stock(&app, id, 12).await.assert_status(200);

    // When 50 orders of one unit arrive at once
    let responses = join_all((0..50).map(|_| {
        let app = app.clone();
        tokio::spawn(async move { order(&app, id, 1).await })
    }))
    .await;
    let responses: Vec<TestResponse> = responses
        .into_iter()
        .map(|r| r.expect("task ran"))
        .collect();

    // Then exactly 12 succeed with distinct ids, and the rest are refused as the state forbids
    let placed: Vec<u64> = responses
        .iter()
        .filter(|r| r.status == 201)
        .map(TestResponse::id)
        .collect();
    assert_eq!(
        placed.len(),
        12,
        "statuses: {:?}",
        responses.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert_eq!(
        placed.iter().collect::<HashSet<_>>().len(),
        12,
        "order ids are distinct"
    );
    for refused in responses.iter().filter(|r| r.status != 201) {
        refused.assert_status(409);
        let code = refused.json()["code"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            code == "INSUFFICIENT_STOCK" || code == "PET_NOT_AVAILABLE",
            "{code}"
        );
    }
    assert_eq!(
        inventory(&app, id).await,
        json!({ "petId": id, "quantity": 0, "status": "pending" })
    );
    let stored = app
        .get(&format!("/store/orders?petId={id}&limit=100"))
        .await
        .json();
    assert_eq!(stored.as_array().map(Vec::len), Some(12));
}

#[tokio::test]
async fn racing_cancellations_and_orders_conserve_the_stock() {
    // Given a pet with 20 units, 10 of them in 10 open orders
    let app = TestApp::spawn().await;
    let id = pet(&app, "available").await;
    set_stock(&app, id, 20).await.assert_status(200);
    let mut open = Vec::new();
    for _ in 0..10 {
        open.push(order(&app, id, 1).await.id());
    }

    // When those 10 are cancelled while 30 new orders race them
    let cancels = open.iter().map(|order_id| {
        let app = app.clone();
        let path = format!("/store/orders/{order_id}");
        tokio::spawn(async move { app.delete(&path).await })
    });
    let orders = (0..30).map(|_| {
        let app = app.clone();
        tokio::spawn(async move { order(&app, id, 1).await })
    });
    let cancelled = join_all(cancels).await;
    let placed = join_all(orders).await;

    // Then every cancellation succeeded, and stock + open units is still 20
    for response in cancelled {
        response.expect("task ran").assert_status(204);
    }
    let placed = placed
        .into_iter()
        .map(|r| r.expect("task ran"))
        .filter(|r| r.status == 201)
        .count() as u64;
    let stock = inventory(&app, id).await["quantity"]
        .as_u64()
        .unwrap_or(u64::MAX);
    let open_orders = app
        .get(&format!(
            "/store/orders?petId={id}&complete=false&limit=100"
        ))
        .await
        .json();
    let open_units: u64 = open_orders
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["quantity"].as_u64())
        .sum();
    assert_eq!(open_units, placed);
    assert_eq!(
        stock + open_units,
        20,
        "stock {stock} + open units {open_units}"
    );
    assert!(
        placed >= 10,
        "at least the first 10 units were available: {placed}"
    );
}

#[tokio::test]
async fn a_pet_s_status_and_its_stock_item_s_never_part_under_racing_changes() {
    // Given pets with a few units each (their stock on stock items, whose
    // copy of the status the stock rules read)
    let app = TestApp::spawn().await;
    let mut pets = Vec::new();
    for _ in 0..3 {
        let id = pet(&app, "available").await;
        set_stock(&app, id, 3).await.assert_status(200);
        pets.push(id);
    }

    // When, on each, orders sell it out (to pending), stock sets bring it
    // back (to available), and status changes by hand (sold, available,
    // pending) race each other
    let mut tasks = Vec::new();
    for &id in &pets {
        for round in 0..8u64 {
            let app = app.clone();
            tasks.push(tokio::spawn(async move {
                match round % 4 {
                    0 | 1 => order(&app, id, 2).await.status,
                    2 => set_stock(&app, id, 1 + round % 3).await.status,
                    _ => {
                        let status = ["sold", "available", "pending"][(round as usize / 4) % 3];
                        app.patch(&format!("/pets/{id}"), json!({ "status": status }))
                            .await
                            .status
                    }
                }
            }));
        }
    }
    for status in join_all(tasks).await {
        let status = status.expect("task ran");
        assert!(
            [200, 201, 409].contains(&status),
            "a change answered {status}"
        );
    }

    // Then each pet's status is the one its inventory entry shows, read by
    // id (the stock item) and in the list (the inventory index)
    for &id in &pets {
        let record = pet_status(&app, id).await;
        assert_eq!(
            inventory(&app, id).await["status"],
            json!(record),
            "pet {id}"
        );
    }
    let listed = app.get("/store/inventory?limit=100").await.json();
    for &id in &pets {
        let entry = listed
            .as_array()
            .into_iter()
            .flatten()
            .find(|entry| entry["petId"] == json!(id));
        let record = pet_status(&app, id).await;
        assert_eq!(
            entry.map(|e| e["status"].clone()),
            Some(json!(record)),
            "pet {id}"
        );
    }
}
