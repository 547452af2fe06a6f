//! Orders and inventory (contract sections 2 and 3, tag Store), rule by rule,
//! against DynamoDB Local.

mod flash_sale;
mod holds;
mod inventory;
pub mod races;

use crate::helpers::{TestApp, TestResponse};
use futures::future::join_all;
use petstore::db::orders::{OrderCheck, OrderFilter};
use petstore::db::Written;
use petstore::records::{Id, OrderPatch, OwnerScope};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A category and one pet in it with the given status; returns the pet id.
async fn pet(app: &TestApp, status: &str) -> u64 {
    let category = app
        .create_category(&format!("Category {}", rand::random::<u32>()))
        .await;
    app.create_pet("Rex", category, status).await
}

async fn set_stock(app: &TestApp, pet: u64, quantity: u64) -> TestResponse {
    app.put(
        &format!("/store/inventory/{pet}"),
        json!({ "quantity": quantity }),
    )
    .await
}

async fn inventory(app: &TestApp, pet: u64) -> Value {
    let response = app.get(&format!("/store/inventory/{pet}")).await;
    response.assert_status(200);
    response.json()
}

async fn pet_status(app: &TestApp, pet: u64) -> String {
    let response = app.get(&format!("/pets?ids={pet}")).await;
    response.assert_status(200);
    response.json()[0]["status"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn order(app: &TestApp, pet: u64, quantity: u64) -> TestResponse {
    app.post(
        "/store/orders",
        json!({ "petId": pet, "quantity": quantity }),
    )
    .await
}

#[tokio::test]
async fn placing_an_order_stores_it_and_lowers_the_stock() {
    let app = TestApp::spawn().await;
    let id = pet(&app, "available").await;
    set_stock(&app, id, 5).await.assert_status(200);

    let response = order(&app, id, 2).await;

    response.assert_status(201);
    let placed = response.json();
    assert_eq!(placed["petId"], id);
    assert_eq!(placed["quantity"], 2);
    assert_eq!(placed["complete"], false);
    assert!(
        placed.get("shipDate").is_none(),
        "absent shipDate is omitted: {placed}"
    );
    let location = response.header("location").unwrap_or_default().to_string();
    assert_eq!(location, format!("/store/orders/{}", placed["id"]));
    assert_eq!(app.get(&location).await.json(), placed);
    assert_eq!(inventory(&app, id).await["quantity"], 3);
    assert_eq!(pet_status(&app, id).await, "available");
}

#[tokio::test]
async fn an_order_defaults_to_one_unit() {
    let app = TestApp::spawn().await;
    let id = pet(&app, "available").await;
    let response = app.post("/store/orders", json!({ "petId": id })).await;
    response.assert_status(201);
    assert_eq!(response.json()["quantity"], 1);
}

#[tokio::test]
async fn an_order_needs_an_available_pet() {
    let app = TestApp::spawn().await;
    for status in ["pending", "sold"] {
        let id = pet(&app, status).await;
        order(&app, id, 1)
            .await
            .assert_error(409, "PET_NOT_AVAILABLE");
    }
}

#[tokio::test]
async fn an_order_needs_enough_stock() {
    let app = TestApp::spawn().await;
    let id = pet(&app, "available").await;
    order(&app, id, 2)
        .await
        .assert_error(409, "INSUFFICIENT_STOCK");
    assert_eq!(
        inventory(&app, id).await["quantity"],
        1,
        "a refused order changes nothing"
    );
}

#[tokio::test]
async fn an_order_for_an_unknown_pet_is_an_unknown_reference() {
    let app = TestApp::spawn().await;
    order(&app, 4_242_424_242, 1)
        .await
        .assert_error(422, "UNKNOWN_REFERENCE");
}

#[tokio::test]
async fn bad_orders_are_refused_with_the_field_named() {
    let app = TestApp::spawn().await;
    let id = pet(&app, "available").await;
    for (body, field) in [
        (json!({}), "petId"),
        (json!({ "petId": "one" }), "petId"),
        (json!({ "petId": id, "quantity": 0 }), "quantity"),
        (json!({ "petId": id, "quantity": 1001 }), "quantity"),
        (json!({ "petId": id, "complete": true }), "complete"),
        (json!({ "petId": id, "shipDate": "next week" }), "shipDate"),
    ] {
        let response = app.post("/store/orders", body.clone()).await;
        response.assert_error(400, "VALIDATION_FAILED");
        let message = response.json()["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(message.contains(field), "{body} → {message}");
    }
}

#[tokio::test]
async fn an_order_that_takes_the_last_units_makes_the_pet_pending() {
    let app = TestApp::spawn().await;
    let id = pet(&app, "available").await;
    set_stock(&app, id, 3).await.assert_status(200);
    order(&app, id, 3).await.assert_status(201);
    assert_eq!(
        inventory(&app, id).await,
        json!({ "petId": id, "quantity": 0, "status": "pending" })
    );
}

#[tokio::test]
async fn completing_sets_the_ship_date_and_sells_the_pet_only_after_its_last_open_order() {
    let app = TestApp::spawn().await;
    let id = pet(&app, "available").await;
    set_stock(&app, id, 2).await.assert_status(200);
    let first = order(&app, id, 1).await.id();
    let second = order(&app, id, 1).await.id();
    assert_eq!(pet_status(&app, id).await, "pending");

    let completed = app
        .patch(
            &format!("/store/orders/{first}"),
            json!({ "complete": true }),
        )
        .await;
    completed.assert_status(200);
    assert_eq!(completed.json()["complete"], true);
    let ship_date = completed.json()["shipDate"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        chrono::DateTime::parse_from_rfc3339(&ship_date).is_ok(),
        "shipDate set to now: {ship_date}"
    );
    assert_eq!(
        pet_status(&app, id).await,
        "pending",
        "another order is still open"
    );

    app.patch(
        &format!("/store/orders/{second}"),
        json!({ "complete": true }),
    )
    .await
    .assert_status(200);
    assert_eq!(pet_status(&app, id).await, "sold");
}

#[tokio::test]
async fn completing_keeps_a_given_ship_date() {
    let app = TestApp::spawn().await;
    let id = pet(&app, "available").await;
    let placed = app
        .post(
            "/store/orders",
            json!({ "petId": id, "shipDate": "2030-01-02T03:04:05Z" }),
        )
        .await;
    placed.assert_status(201);
    let completed = app
        .patch(
            &format!("/store/orders/{}", placed.id()),
            json!({ "complete": true }),
        )
        .await;
    completed.assert_status(200);
    assert_eq!(completed.json()["shipDate"], "2030-01-02T03:04:05.000Z");
}

#[tokio::test]
async fn a_complete_order_cannot_be_reopened_changed_or_cancelled() {
    let app = TestApp::spawn().await;
    let id = pet(&app, "available").await;
    let order_id = order(&app, id, 1).await.id();
    let path = format!("/store/orders/{order_id}");
    app.patch(&path, json!({ "complete": true }))
        .await
        .assert_status(200);

    app.patch(&path, json!({ "complete": false }))
        .await
        .assert_error(409, "ORDER_COMPLETE");
    app.patch(&path, json!({ "shipDate": "2031-01-01T00:00:00Z" }))
        .await
        .assert_error(409, "ORDER_COMPLETE");
    app.delete(&path).await.assert_error(409, "ORDER_COMPLETE");
    assert_eq!(app.get(&path).await.json()["complete"], true);
}

#[tokio::test]
async fn cancelling_returns_the_units_and_frees_a_pending_pet() {
    let app = TestApp::spawn().await;
    let id = pet(&app, "available").await;
    set_stock(&app, id, 2).await.assert_status(200);
    let order_id = order(&app, id, 2).await.id();
    assert_eq!(pet_status(&app, id).await, "pending");

    let response = app.delete(&format!("/store/orders/{order_id}")).await;

    response.assert_status(204);
    assert!(response.body.is_empty());
    assert_eq!(
        inventory(&app, id).await,
        json!({ "petId": id, "quantity": 2, "status": "available" })
    );
    app.get(&format!("/store/orders/{order_id}"))
        .await
        .assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn a_cancel_never_takes_the_stock_past_the_most_a_pet_holds() {
    // Given an order of 1,000 units, and the stock set to the most since
    let app = TestApp::spawn().await;
    let id = pet(&app, "available").await;
    set_stock(&app, id, 1_000_000).await.assert_status(200);
    let order_id = order(&app, id, 1_000).await.id();
    set_stock(&app, id, 1_000_000).await.assert_status(200);

    // When the order is cancelled
    let response = app.delete(&format!("/store/orders/{order_id}")).await;

    // Then the stock stays at the most, readable alone and in the list
    response.assert_status(204);
    assert_eq!(
        inventory(&app, id).await,
        json!({ "petId": id, "quantity": 1_000_000, "status": "available" })
    );
    let listed = app.get("/store/inventory?limit=100").await;
    listed.assert_status(200);
}

#[tokio::test]
async fn a_pet_with_open_orders_cannot_be_deleted() {
    let app = TestApp::spawn().await;
    let id = pet(&app, "available").await;
    let order_id = order(&app, id, 1).await.id();
    app.delete(&format!("/pets/{id}"))
        .await
        .assert_error(409, "PET_HAS_OPEN_ORDERS");

    app.patch(
        &format!("/store/orders/{order_id}"),
        json!({ "complete": true }),
    )
    .await
    .assert_status(200);
    app.delete(&format!("/pets/{id}")).await.assert_status(204);
    app.get(&format!("/store/inventory/{id}"))
        .await
        .assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn orders_list_newest_first_with_filters_and_paging() {
    let app = TestApp::spawn().await;
    let a = pet(&app, "available").await;
    let b = pet(&app, "available").await;
    set_stock(&app, a, 10).await.assert_status(200);
    set_stock(&app, b, 10).await.assert_status(200);
    let mut placed = Vec::new();
    for pet in [a, b, a, b, a] {
        placed.push(order(&app, pet, 1).await.id());
    }
    app.patch(
        &format!("/store/orders/{}", placed[4]),
        json!({ "complete": true }),
    )
    .await
    .assert_status(200);

    let ids = |response: &TestResponse| -> Vec<u64> {
        response
            .json()
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| o["id"].as_u64())
            .collect()
    };
    let newest_first: Vec<u64> = placed.iter().rev().copied().collect();
    assert_eq!(ids(&app.get("/store/orders").await), newest_first);
    assert_eq!(
        ids(&app.get(&format!("/store/orders?petId={a}")).await),
        vec![placed[4], placed[2], placed[0]]
    );
    assert_eq!(
        ids(&app.get("/store/orders?complete=true").await),
        vec![placed[4]]
    );
    assert_eq!(
        ids(&app
            .get(&format!("/store/orders?petId={a}&complete=false"))
            .await),
        vec![placed[2], placed[0]]
    );

    let page = app.get(&format!("/store/orders?petId={a}&limit=1")).await;
    assert_eq!(ids(&page), vec![placed[4]]);
    let link = page.header("link").unwrap_or_default().to_string();
    let next = link
        .trim_start_matches('<')
        .split('>')
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(next.contains(&format!("petId={a}")), "{next}");
    assert_eq!(ids(&app.get(&next).await), vec![placed[2]]);

    app.get("/store/orders?complete=maybe")
        .await
        .assert_error(400, "VALIDATION_FAILED");
    app.get("/store/orders?cursor=bogus")
        .await
        .assert_error(400, "VALIDATION_FAILED");
}

#[tokio::test]
async fn an_unreachable_database_answers_503_with_retry_after_never_500() {
    // Given a store whose DynamoDB endpoint refuses connections (and a limiter
    // set to serve uncounted, so the data path itself meets the outage)
    let config = petstore::config::Config::from_lookup(|name| {
        (name == "RATE_LIMIT_FAILURE_MODE").then(|| "open".to_string())
    })
    .expect("test configuration is valid");
    // (warmed up as a Lambda function's init does: its failed reads are not fatal)
    let dead = petstore::local_client("http://127.0.0.1:9").await;
    let app = petstore::App::new(config, dead);
    let router = petstore::http::service(pets::routes().merge(store::routes()), app.clone());
    let warm_up = petstore::warm_up::warm_up(&app, &router, "/store/inventory").await;
    assert!(!warm_up.connected, "no connection could be opened");

    for (method, path, body) in [
        ("GET", "/store/orders", None),
        ("POST", "/store/orders", Some(r#"{"petId": 1}"#)),
        ("PUT", "/store/inventory/1", Some(r#"{"quantity": 1}"#)),
    ] {
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            // Well-formed, so it is looked up (a malformed one is 401 unread).
            .header("x-api-key", format!("psk_{}", "a".repeat(43)))
            .body(axum::body::Body::from(body.unwrap_or_default()))
            .expect("request is valid");
        // When a request arrives
        let response = tower::ServiceExt::oneshot(router.clone(), request)
            .await
            .unwrap_or_else(|never| match never {});

        // Then it is told to come back later, as an Error record
        assert_eq!(response.status(), 503, "{method} {path}");
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok());
        assert!(retry_after
            .and_then(|s| s.parse::<u64>().ok())
            .is_some_and(|s| s >= 1));
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        let record: Value = serde_json::from_slice(&body).expect("an Error record");
        assert_eq!(record["code"], "SERVICE_UNAVAILABLE");
        assert_eq!(record["status"], 503);
    }
}

#[tokio::test]
async fn the_warm_up_of_a_cold_start_writes_nothing_and_counts_nothing() {
    // Given a store with a key, its tables as they are
    let app = TestApp::spawn().await;
    let before = (
        items(&app, app.app.db.table()).await,
        items(&app, &app.rate_limit_table_name).await,
    );

    // When each Lambda function's init warms it up, its warm-up request included
    let held = std::sync::Arc::new(petstore::webhooks::queue::HeldQueue::default());
    for (routes, read) in [
        (pets::routes(), "/pets?limit=20"),
        (store::routes(), "/store/inventory?limit=20"),
        (
            webhooks::routes(webhooks::Webhooks::from_env(held)),
            "/webhooks?limit=20",
        ),
    ] {
        let service = petstore::http::service(routes, app.app.clone());
        let warmed = petstore::warm_up::warm_up(&app.app, &service, read).await;
        assert_eq!(warmed.request, Some(http::StatusCode::OK), "{read}");
        assert!(
            warmed.connected,
            "{read}: the first request's connection is open"
        );
    }

    // Then neither table changed: the warm-up's update found no item to
    // update, and no key or address was counted
    let after = (
        items(&app, app.app.db.table()).await,
        items(&app, &app.rate_limit_table_name).await,
    );
    assert_eq!(before, after);
    assert!(!before.0.is_empty(), "the key's item is there");
}

/// Every item of `table`, as text, sorted.
async fn items(app: &TestApp, table: &str) -> Vec<String> {
    let scan = app
        .app
        .db
        .client()
        .scan()
        .table_name(table)
        .send()
        .await
        .expect("the test table scans");
    let mut items: Vec<String> = scan
        .items()
        .iter()
        // In key order: a HashMap's own order differs from scan to scan.
        .map(|item| format!("{:?}", item.iter().collect::<BTreeMap<_, _>>()))
        .collect();
    items.sort();
    items
}

/// Every id of a list and how many pages it took, following its next links.
async fn all_pages(app: &TestApp, path: &str) -> (Vec<u64>, usize) {
    let (mut ids, mut pages) = (Vec::new(), 0);
    let mut next = Some(path.to_string());
    while let Some(path) = next {
        let page = app.get(&path).await;
        page.assert_status(200);
        ids.extend(page.ids());
        pages += 1;
        next = page.next_page();
    }
    (ids, pages)
}

fn id(raw: u64) -> Id {
    Id::new(raw).unwrap_or_else(|| panic!("{raw} is a valid id"))
}

#[tokio::test]
async fn another_customers_order_answers_404_exactly_like_a_missing_one() {
    // Given an order of one customer's
    let owner = TestApp::spawn().await;
    let pet_id = pet(&owner, "available").await;
    set_stock(&owner, pet_id, 5).await.assert_status(200);
    let order_id = order(&owner, pet_id, 1).await.id();
    let path = format!("/store/orders/{order_id}");
    let stranger = owner.as_customer().await;

    // When another customer reads it, and lists orders
    let foreign = stranger.get(&path).await;
    let listed = stranger.get("/store/orders").await;
    let by_pet = stranger.get(&format!("/store/orders?petId={pet_id}")).await;

    // Then it is not there for them, and its 404 is a missing order's, byte for byte
    foreign.assert_error(404, "NOT_FOUND");
    assert_eq!(listed.ids(), Vec::<u64>::new());
    assert_eq!(by_pet.ids(), Vec::<u64>::new());
    owner.get(&path).await.assert_status(200);
    owner.delete(&path).await.assert_status(204);
    let missing = stranger.get(&path).await;
    assert_eq!(
        (
            foreign.status,
            &foreign.body,
            foreign.header("content-type")
        ),
        (
            missing.status,
            &missing.body,
            missing.header("content-type")
        ),
        "nothing tells another customer's order from a missing one"
    );
}

#[tokio::test]
async fn a_customers_list_is_its_own_orders_with_filters_and_paging() {
    // Given two customers whose orders of two pets interleave, one of mine complete
    let staff = TestApp::spawn().await;
    let me = staff.as_customer().await;
    let other = me.as_customer().await;
    let (a, b) = (
        pet(&staff, "available").await,
        pet(&staff, "available").await,
    );
    set_stock(&staff, a, 20).await.assert_status(200);
    set_stock(&staff, b, 20).await.assert_status(200);
    let mut mine = Vec::new();
    for pet in [a, b, a, b, a] {
        mine.push(order(&me, pet, 1).await.id());
        order(&other, pet, 1).await.assert_status(201);
    }
    let complete = OrderPatch {
        complete: Some(true),
        ..OrderPatch::default()
    };
    let db = me.app.db.unrecorded();
    db.update_order(id(mine[4]), complete, OwnerScope::All, chrono::Utc::now())
        .await
        .expect("staff may complete any order");

    // When I list my orders, page by page, with and without filters
    let every = all_pages(&me, "/store/orders?limit=2").await;
    let of_a = all_pages(&me, &format!("/store/orders?petId={a}&limit=1")).await;
    let open = all_pages(&me, "/store/orders?complete=false&limit=2").await;
    let done = all_pages(&me, "/store/orders?complete=true").await;
    let open_of_a = all_pages(
        &me,
        &format!("/store/orders?petId={a}&complete=false&limit=1"),
    )
    .await;

    // Then I see only mine, newest first, every filter kept across pages
    let newest_first: Vec<u64> = mine.iter().rev().copied().collect();
    assert_eq!(every, (newest_first, 3));
    assert_eq!(of_a, (vec![mine[4], mine[2], mine[0]], 3));
    assert_eq!(open.0, vec![mine[3], mine[2], mine[1], mine[0]]);
    assert_eq!(done.0, vec![mine[4]]);
    assert_eq!(open_of_a, (vec![mine[2], mine[0]], 2));
    let (theirs, _) = all_pages(&other, "/store/orders?limit=100").await;
    assert_eq!(theirs.len(), 5);
    assert!(theirs.iter().all(|order| !mine.contains(order)));

    // And staff see every order
    let all = db
        .list_orders(OrderFilter::default(), OwnerScope::All, 100, None)
        .await
        .expect("staff list every order");
    assert_eq!(all.items.len(), 10);
}

#[tokio::test]
async fn another_customers_cancel_is_404_and_changes_nothing() {
    // Given an order that took a pet's last units
    let owner = TestApp::spawn().await;
    let pet_id = pet(&owner, "available").await;
    set_stock(&owner, pet_id, 2).await.assert_status(200);
    let placed = order(&owner, pet_id, 2).await;
    placed.assert_status(201);
    let path = format!("/store/orders/{}", placed.id());
    let stranger = owner.as_customer().await;
    let stock_before = inventory(&owner, pet_id).await;

    // When another customer cancels it
    let response = stranger.delete(&path).await;

    // Then it is not found, and the order and the stock are as they were
    response.assert_error(404, "NOT_FOUND");
    assert_eq!(owner.get(&path).await.json(), placed.json());
    assert_eq!(inventory(&owner, pet_id).await, stock_before);
    assert_eq!(
        stock_before,
        json!({ "petId": pet_id, "quantity": 0, "status": "pending" })
    );
}

#[tokio::test]
async fn racing_customers_cancel_only_their_own_orders() {
    // Given four customers with three open orders each, on one pet
    let app = TestApp::spawn().await;
    let pet_id = pet(&app, "available").await;
    set_stock(&app, pet_id, 12).await.assert_status(200);
    let mut customers = vec![app.as_customer().await];
    for _ in 0..3 {
        customers.push(app.as_customer().await);
    }
    let mut orders = Vec::new();
    for (owner, customer) in customers.iter().enumerate() {
        for _ in 0..3 {
            orders.push((owner, order(customer, pet_id, 1).await.id()));
        }
    }

    // When every customer cancels every order, all at once
    let attempts = customers.iter().enumerate().flat_map(|(caller, customer)| {
        orders.iter().map(move |&(owner, order_id)| {
            let customer = customer.clone();
            tokio::spawn(async move {
                let response = customer.delete(&format!("/store/orders/{order_id}")).await;
                (caller == owner, response)
            })
        })
    });
    let results = join_all(attempts.collect::<Vec<_>>()).await;

    // Then every owner's cancel succeeded and no one else's did
    assert_eq!(results.len(), 48);
    for result in results {
        let (own, response) = result.expect("task ran");
        if own {
            response.assert_status(204);
        } else {
            response.assert_error(404, "NOT_FOUND");
        }
    }
    assert_eq!(
        inventory(&app, pet_id).await,
        json!({ "petId": pet_id, "quantity": 12, "status": "available" })
    );
    for customer in &customers {
        assert_eq!(customer.get("/store/orders").await.ids(), Vec::<u64>::new());
    }
}

#[tokio::test]
async fn a_foreign_write_fails_in_dynamodb_even_if_the_read_check_were_skipped(
) -> Result<(), Box<dyn std::error::Error>> {
    // Given a customer's order, and its cancel decided from a read that
    // (wrongly) let another customer through
    let app = TestApp::spawn().await;
    let pet_id = pet(&app, "available").await;
    let order_id = id(order(&app, pet_id, 1).await.id());
    let db = &app.app.db;
    let stored = db.stored_order(order_id).await?.ok_or("the order exists")?;
    let order = stored.order.clone();
    let pet = db.get_pet(order.pet_id).await?.ok_or("the pet exists")?;
    let stranger = OwnerScope::OwnedBy(id(app.as_customer().await.key_id));
    let stale = db.cancel_write(&stored, &pet, stranger)?;

    // When that write is sent
    let written = db.write(stale).await?;

    // Then DynamoDB refuses it on the order's own condition, and nothing changed
    assert_eq!(written, Written::Failed(OrderCheck::OrderAsRead));
    assert_eq!(
        db.get_order(order_id, OwnerScope::All).await?,
        Some(order.clone())
    );
    assert_eq!(inventory(&app, pet_id).await["quantity"], 0);
    let patch = OrderPatch {
        complete: Some(true),
        ..OrderPatch::default()
    };
    assert!(matches!(
        db.unrecorded()
            .update_order(order_id, patch, stranger, chrono::Utc::now())
            .await,
        Err(petstore::db::DbError::NotFound { .. })
    ));

    // And the same write made for its owner goes through
    let owner = OwnerScope::OwnedBy(id(app.key_id));
    let written = db.write(db.cancel_write(&stored, &pet, owner)?).await?;
    assert_eq!(written, Written::Done);
    assert_eq!(db.get_order(order_id, OwnerScope::All).await?, None);
    assert_eq!(inventory(&app, pet_id).await["quantity"], 1);
    Ok(())
}
