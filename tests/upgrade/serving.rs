//! This code over the last release's table, before any backfill: on layout 1
//! every list answers all it held and the cap counts the old open orders;
//! on layout 2 (the switch deployed without the migration) it fails.

use super::{fixture_items, old_table, on_layout};
use crate::data::check::check;
use crate::helpers::TestApp;
use aws_sdk_dynamodb::types::AttributeValue;
use petstore::db::{Item, Layout};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// Every record of a list, page after page (each page 200).
pub async fn every_record(app: &TestApp, path: &str) -> Vec<Value> {
    let mut records = Vec::new();
    let mut next = Some(path.to_string());
    while let Some(page) = next {
        let answer = app.get(&page).await;
        answer.assert_status(200);
        records.extend(answer.json().as_array().cloned().unwrap_or_default());
        next = answer.next_page();
    }
    records
}

/// The `field` of each record, as a set.
pub fn field_set(records: &[Value], field: &str) -> BTreeSet<u64> {
    records.iter().filter_map(|r| r[field].as_u64()).collect()
}

fn number(item: &Item, name: &str) -> Option<u64> {
    item.get(name)?.as_n().ok()?.parse().ok()
}

/// What the fixture holds: the ids of the items of kind `sk` that `keep` keeps.
pub fn fixture_ids(sk: &str, keep: impl Fn(&Item) -> bool) -> BTreeSet<u64> {
    fixture_items()
        .iter()
        .filter(|item| {
            item.get("SK")
                .and_then(|v| v.as_s().ok())
                .map(String::as_str)
                == Some(sk)
        })
        .filter(|item| keep(item))
        .filter_map(|item| number(item, "id"))
        .collect()
}

pub fn open(item: &Item) -> bool {
    item.get("complete") == Some(&AttributeValue::Bool(false))
}

pub fn owned_by(owner: u64) -> impl Fn(&Item) -> bool {
    move |item| number(item, "ownerId") == Some(owner)
}

/// A pet with orders in the fixture, and its orders.
pub fn pet_with_orders() -> (u64, BTreeSet<u64>) {
    let items = fixture_items();
    let pet = items
        .iter()
        .find(|item| item.contains_key("ownerId"))
        .and_then(|item| number(item, "petId"))
        .expect("an order with a pet");
    let orders = fixture_ids("ORDER", |item| number(item, "petId") == Some(pet));
    (pet, orders)
}

/// Every list of `app` holds exactly what the fixture holds (orders placed
/// since excepted: none here).
pub async fn assert_every_list_complete(app: &TestApp, keys: &super::Keys) {
    let all = every_record(app, "/store/orders?limit=100").await;
    assert_eq!(field_set(&all, "id"), fixture_ids("ORDER", |_| true));
    let open_orders = every_record(app, "/store/orders?complete=false&limit=100").await;
    assert_eq!(field_set(&open_orders, "id"), fixture_ids("ORDER", open));
    let (pet, of_pet) = pet_with_orders();
    let by_pet = every_record(app, &format!("/store/orders?petId={pet}&limit=100")).await;
    assert_eq!(field_set(&by_pet, "id"), of_pet);
    for (secret, id) in [&keys.free, &keys.pro] {
        let customer = app.with_key(secret.clone());
        let own = every_record(&customer, "/store/orders?limit=100").await;
        assert_eq!(field_set(&own, "id"), fixture_ids("ORDER", owned_by(*id)));
    }
    let pets = every_record(app, "/pets?limit=100").await;
    assert_eq!(field_set(&pets, "id"), fixture_ids("PET", |_| true));
    let categories = every_record(app, "/categories?limit=100").await;
    assert_eq!(
        field_set(&categories, "id"),
        fixture_ids("CATEGORY", |_| true)
    );
    let inventory = every_record(app, "/store/inventory?limit=100").await;
    assert_eq!(field_set(&inventory, "petId"), fixture_ids("PET", |_| true));
}

#[tokio::test]
async fn layout_1_serves_every_list_the_old_table_holds() {
    let (staff, keys) = old_table().await;
    assert_every_list_complete(&staff, &keys).await;
    let (pet, _) = pet_with_orders();
    staff.get(&format!("/pets/{pet}")).await.assert_status(200);
}

#[tokio::test]
async fn the_cap_counts_the_old_open_orders_before_any_backfill() {
    let (staff, keys) = old_table().await;
    let free = staff.with_key(keys.free.0.clone());
    let (pet, _) = pet_with_orders();
    let order = json!({ "petId": pet, "quantity": 1 });
    // The free key holds 10 open orders the last release placed: its cap.
    free.post("/store/orders", order.clone())
        .await
        .assert_error(409, "TOO_MANY_OPEN_ORDERS");
    // One cancelled, it has room for exactly one.
    let old_open = fixture_ids("ORDER", |item| open(item) && owned_by(keys.free.1)(item));
    let first = old_open.iter().next().copied().expect("an old open order");
    free.delete(&format!("/store/orders/{first}"))
        .await
        .assert_status(204);
    free.post("/store/orders", order.clone())
        .await
        .assert_status(201);
    free.post("/store/orders", order)
        .await
        .assert_error(409, "TOO_MANY_OPEN_ORDERS");
    // Staff are not capped; the pro key (6 of its 100) is far from it.
    let placed = json!({ "petId": pet, "quantity": 1 });
    staff
        .post("/store/orders", placed.clone())
        .await
        .assert_status(201);
    let pro = staff.with_key(keys.pro.0.clone());
    pro.post("/store/orders", placed).await.assert_status(201);
}

#[tokio::test]
async fn without_the_migration_layout_2_fails_and_data_check_says_why() {
    let (staff, _) = old_table().await;
    let switched = on_layout(&staff, Layout::V2).await;
    // DynamoDB refuses the query: layout 1's table has no GSI4v2.
    let answer = switched.get("/store/orders").await;
    assert_eq!(answer.status, 500, "{}", answer.text());
    let report = check(&staff).await;
    let broken: BTreeSet<&str> = report.findings.iter().map(|f| f.invariant).collect();
    assert!(broken.contains("holds-counted"), "{:#?}", report.findings);
    assert!(
        broken.contains("category-name-claimed"),
        "{:#?}",
        report.findings
    );
}
