//! Inventory: a pet's stock, how setting it moves the pet's status, and the
//! inventory operations (beta) and their lists.

use super::{inventory, order, pet, pet_status, set_stock};
use crate::helpers::TestApp;
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;

#[tokio::test]
async fn a_new_pet_has_one_unit_when_available_and_none_otherwise() {
    let app = TestApp::spawn().await;
    for (status, stock) in [("available", 1), ("pending", 0), ("sold", 0)] {
        let id = pet(&app, status).await;
        let item = inventory(&app, id).await;
        assert_eq!(
            item,
            json!({ "petId": id, "quantity": stock, "status": status })
        );
    }
}

#[tokio::test]
async fn setting_stock_moves_the_status() {
    let app = TestApp::spawn().await;

    // Above 0 makes a pending or sold pet available.
    for status in ["pending", "sold"] {
        let id = pet(&app, status).await;
        let response = set_stock(&app, id, 4).await;
        response.assert_status(200);
        assert_eq!(
            response.json(),
            json!({ "petId": id, "quantity": 4, "status": "available" })
        );
    }

    // 0 makes an available pet sold when it has no open orders...
    let id = pet(&app, "available").await;
    assert_eq!(set_stock(&app, id, 0).await.json()["status"], "sold");

    // ...and pending when it has.
    let id = pet(&app, "available").await;
    set_stock(&app, id, 3).await.assert_status(200);
    order(&app, id, 1).await.assert_status(201);
    assert_eq!(set_stock(&app, id, 0).await.json()["status"], "pending");
    assert_eq!(pet_status(&app, id).await, "pending");
}

#[tokio::test]
async fn stock_updates_are_validated_and_need_a_pet() {
    let app = TestApp::spawn().await;
    let id = pet(&app, "available").await;
    for body in [
        json!({}),
        json!({ "quantity": -1 }),
        json!({ "quantity": 1_000_001 }),
        json!({ "quantity": "3" }),
    ] {
        app.put(&format!("/store/inventory/{id}"), body)
            .await
            .assert_error(400, "VALIDATION_FAILED");
    }
    set_stock(&app, 4_242_424_242, 1)
        .await
        .assert_error(404, "NOT_FOUND");
    app.get("/store/inventory/4242424242")
        .await
        .assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn inventory_operations_are_marked_beta() {
    let app = TestApp::spawn().await;
    let id = pet(&app, "available").await;
    for response in [
        app.get("/store/inventory").await,
        app.get(&format!("/store/inventory/{id}")).await,
        set_stock(&app, id, 2).await,
        app.get("/store/inventory/4242424242").await,
        set_stock(&app.as_customer().await, id, 2).await,
    ] {
        assert_eq!(response.header("x-api-stability"), Some("beta"));
    }
    let orders = app.get("/store/orders").await;
    assert_eq!(
        orders.header("x-api-stability"),
        None,
        "orders are not beta"
    );
}

#[tokio::test]
async fn inventory_lists_filter_by_status_and_page() {
    let app = TestApp::spawn().await;
    let category = app.create_category("Fish").await;
    let mut available = Vec::new();
    for i in 0..3 {
        available.push(
            app.create_pet(&format!("A{i}"), category, "available")
                .await,
        );
    }
    let sold = app.create_pet("S", category, "sold").await;

    let all = app.get("/store/inventory").await.json();
    assert_eq!(all.as_array().map(Vec::len), Some(4));

    let first = app.get("/store/inventory?status=available&limit=2").await;
    first.assert_status(200);
    let ids: Vec<u64> = first
        .json()
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["petId"].as_u64())
        .collect();
    // In the inventory index's order, which is not the ids'.
    assert_eq!(ids.len(), 2);
    assert!(ids.iter().all(|id| available.contains(id)), "{ids:?}");
    let rest = available.iter().find(|id| !ids.contains(id)).copied();
    let link = first.header("link").unwrap_or_default().to_string();
    assert!(
        link.ends_with("; rel=\"next\"") && link.contains("status=available"),
        "{link}"
    );
    let next = link
        .trim_start_matches('<')
        .split('>')
        .next()
        .unwrap_or_default()
        .to_string();
    let second = app.get(&next).await;
    assert_eq!(
        second.json(),
        json!([{ "petId": rest, "quantity": 1, "status": "available" }])
    );
    assert!(second.header("link").is_none());
    assert!(!app
        .get("/store/inventory?status=sold")
        .await
        .text()
        .contains(&available[0].to_string()));
    assert_eq!(
        app.get("/store/inventory?status=sold").await.json()[0]["petId"],
        sold
    );
}

#[tokio::test]
async fn inventory_lists_show_each_stock_change_and_resume_past_a_deleted_pet() {
    // Given three pets, one of them ordered and one restocked
    let app = TestApp::spawn().await;
    let ids = [
        pet(&app, "available").await,
        pet(&app, "available").await,
        pet(&app, "available").await,
    ];
    set_stock(&app, ids[1], 7).await.assert_status(200);
    order(&app, ids[2], 1).await.assert_status(201);
    let listed = |body: serde_json::Value, id: u64| {
        body.as_array()
            .into_iter()
            .flatten()
            .find(|item| item["petId"] == id)
            .cloned()
    };

    // Then the list holds each pet's stock and status as they are now
    let all = app.get("/store/inventory").await.json();
    assert_eq!(
        listed(all.clone(), ids[1]),
        Some(json!({ "petId": ids[1], "quantity": 7, "status": "available" }))
    );
    assert_eq!(
        listed(all, ids[2]),
        Some(json!({ "petId": ids[2], "quantity": 0, "status": "pending" }))
    );

    // When the pet a page ended on is deleted before the next page is read
    let first = app.get("/store/inventory?limit=1").await;
    let ended_on = first.json()[0]["petId"].as_u64().unwrap_or_default();
    let next = first.next_page().unwrap_or_default();
    if ended_on != ids[2] {
        app.delete(&format!("/pets/{ended_on}"))
            .await
            .assert_status(204);
    }

    // Then the next page goes on from where it was: the others, each once
    let mut seen = vec![ended_on];
    let mut url = Some(next);
    while let Some(page) = url {
        let response = app.get(&page).await;
        response.assert_status(200);
        let body = response.json();
        seen.extend(
            body.as_array()
                .into_iter()
                .flatten()
                .filter_map(|item| item["petId"].as_u64()),
        );
        url = response.next_page();
    }
    seen.sort_unstable();
    let mut expected = ids.to_vec();
    expected.sort_unstable();
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn a_backfill_gives_pets_written_before_the_inventory_index_their_entries() {
    // Given a pet whose item predates the inventory index (no GSI5PK), and
    // so holds its stock (written as layout 1 writes pets, 1.0.0's way)
    let app = TestApp::spawn_with(|name| (name == "DATA_LAYOUT").then(|| "1".into())).await;
    let (old, new) = (pet(&app, "available").await, pet(&app, "sold").await);
    let db = &app.app.db;
    let key = |id: u64| {
        std::collections::HashMap::from([
            ("PK".to_string(), AttributeValue::S(format!("PET#{id}"))),
            ("SK".to_string(), AttributeValue::S("PET".to_string())),
        ])
    };
    let removed = db
        .client()
        .update_item()
        .table_name(db.table())
        .set_key(Some(key(old)))
        .update_expression("REMOVE GSI5PK")
        .send()
        .await;
    assert!(removed.is_ok(), "{removed:?}");
    let listed = |body: serde_json::Value| -> Vec<u64> {
        let mut ids: Vec<u64> = body
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| item["petId"].as_u64())
            .collect();
        ids.sort_unstable();
        ids
    };
    assert_eq!(listed(app.get("/store/inventory").await.json()), [new]);

    // When the backfill runs, twice
    let first = db.backfill_inventory_index().await;
    let again = db.backfill_inventory_index().await;

    // Then the first gives that one pet its entry, the second finds none to give
    assert_eq!((first.ok(), again.ok()), (Some(1), Some(0)));
    let mut both = vec![old, new];
    both.sort_unstable();
    assert_eq!(listed(app.get("/store/inventory").await.json()), both);
}

#[tokio::test]
async fn an_inventory_list_pages_through_pets_of_both_forms_each_once() {
    // Given pets whose stock is on their pet items (written as layout 1
    // writes them, as 1.0.0 did) beside pets with stock items, on one table
    let app = TestApp::spawn().await;
    let old_form = app
        .another_instance_with(|config| config.data_layout = petstore::db::Layout::V1)
        .await;
    let mut ids = Vec::new();
    for round in 0..4 {
        ids.push(pet(&old_form, "available").await);
        ids.push(pet(&app, if round % 2 == 0 { "available" } else { "sold" }).await);
    }
    set_stock(&app, ids[0], 4).await.assert_status(200);
    set_stock(&app, ids[1], 5).await.assert_status(200);

    // When the inventory is read a pet a page, by either instance
    for reader in [&app, &old_form] {
        let mut seen = Vec::new();
        let mut url = Some("/store/inventory?limit=1".to_string());
        while let Some(page) = url {
            let response = reader.get(&page).await;
            response.assert_status(200);
            for entry in response.json().as_array().into_iter().flatten() {
                if let Some(id) = entry["petId"].as_u64().filter(|id| ids.contains(id)) {
                    seen.push((id, entry["quantity"].as_u64()));
                }
            }
            url = response.next_page();
        }

        // Then each pet is listed once, with its stock
        let mut listed: Vec<u64> = seen.iter().map(|(id, _)| *id).collect();
        listed.sort_unstable();
        let mut expected = ids.clone();
        expected.sort_unstable();
        assert_eq!(listed, expected);
        assert!(seen.contains(&(ids[0], Some(4))) && seen.contains(&(ids[1], Some(5))));
    }
}
