//! `data export` then `data import`: a stage's catalogue and orders arrive
//! in another stage's table as they were, sound under its shard counts,
//! served by its API; its keys, idempotency records and webhooks stay behind.

use super::check::{assert_sound, check, in_release_1_0_form};
use super::webhooks::Webhooks;
use crate::helpers::TestApp;
use crate::idempotency::send_keyed;
use aws_sdk_dynamodb::types::AttributeValue;
use http::Method;
use petstore::db::Item;
use petstore_admin::check::item::{text, Kind};
use petstore_admin::copy::{copied, export, import, Copied};
use petstore_admin::scan::{BoxError, ScanOptions};
use serde_json::json;
use std::collections::BTreeMap;

/// A source stage with a category, a pet (with its stock item) with open,
/// complete and keyed orders, and a pet in release 1.0.0's form (its stock
/// on its pet item) with 2 in stock; returns it and the first pet.
async fn source() -> (TestApp, u64) {
    let (app, pet, _) = source_with_old_pet().await;
    (app, pet)
}

/// [`source`], and the pet in release 1.0.0's form.
async fn source_with_old_pet() -> (TestApp, u64, u64) {
    let app = TestApp::spawn().await;
    let category = app.create_category("Dogs").await;
    let pet = app.create_pet("Rex", category, "available").await;
    let old = app.create_pet("Old", category, "available").await;
    app.put(&format!("/store/inventory/{old}"), json!({ "quantity": 2 }))
        .await
        .assert_status(200);
    in_release_1_0_form(&app, old).await;
    app.put(
        &format!("/store/inventory/{pet}"),
        json!({ "quantity": 50 }),
    )
    .await
    .assert_status(200);
    let customer = app.as_customer().await;
    let order = json!({ "petId": pet, "quantity": 2 });
    for n in 0..12 {
        let placed = send_keyed(
            &customer,
            Method::POST,
            "/store/orders",
            Some(&order),
            &format!("k{n}"),
        )
        .await;
        placed.assert_status(201);
        if n % 3 == 0 {
            let path = format!("/store/orders/{}", placed.id());
            app.patch(&path, json!({ "complete": true }))
                .await
                .assert_status(200);
        }
    }
    (app, pet, old)
}

/// Every item of `app`'s table, by key.
async fn items(app: &TestApp) -> BTreeMap<(String, String), Item> {
    let db = &app.app.db;
    let out = db
        .client()
        .scan()
        .table_name(db.table())
        .consistent_read(true)
        .send()
        .await
        .expect("scan");
    assert!(out.last_evaluated_key.is_none(), "one page");
    out.items
        .unwrap_or_default()
        .into_iter()
        .map(|item| {
            let key = (
                text(&item, "PK").unwrap_or_default().to_string(),
                text(&item, "SK").unwrap_or_default().to_string(),
            );
            (key, item)
        })
        .collect()
}

fn copied_only(items: BTreeMap<(String, String), Item>) -> BTreeMap<(String, String), Item> {
    items
        .into_iter()
        .filter(|((_, sk), _)| copied(Kind::of_sk(sk)))
        .collect()
}

/// `lines` imported into `dev`'s table as `data import` does.
async fn import_into(dev: &TestApp, lines: &[u8]) -> Result<Copied, BoxError> {
    let db = &dev.app.db;
    import(db.client(), db.table(), dev.app.config.shards, lines, 4).await
}

async fn exported(app: &TestApp) -> Vec<u8> {
    exported_with_summary(app).await.0
}

async fn exported_with_summary(app: &TestApp) -> (Vec<u8>, Copied) {
    let mut lines = Vec::new();
    let db = &app.app.db;
    let copy = export(db.client(), db.table(), ScanOptions::default(), &mut lines)
        .await
        .expect("exported");
    (lines, copy)
}

#[tokio::test]
async fn a_stage_copied_into_another_is_the_same_data_without_its_keys() {
    let (prod, pet, old) = source_with_old_pet().await;
    assert_sound(&prod).await;
    let (lines, exported) = exported_with_summary(&prod).await;
    assert_eq!(exported.left_out.get("APIKEY"), Some(&2), "{exported:?}");
    assert_eq!(
        exported.left_out.get("IDEMPOTENCY"),
        Some(&12),
        "{exported:?}"
    );
    let dev = TestApp::spawn().await;
    let copy = import_into(&dev, &lines).await.expect("imported");
    assert_eq!(copy.items, exported.items);
    let source_items = copied_only(items(&prod).await);
    assert_eq!(copy.items, source_items.len() as u64);
    assert_eq!(
        copied_only(items(&dev).await),
        source_items,
        "the same items, attribute for attribute"
    );
    let dev_items = items(&dev).await;
    assert!(dev_items
        .keys()
        .all(|(pk, _)| !pk.starts_with("IDEMPOTENCY#")));
    assert_eq!(
        dev_items.keys().filter(|(_, sk)| sk == "APIKEY").count(),
        1,
        "only dev's own key"
    );
    assert_sound(&dev).await;
    // Dev's API serves the copy, and its writes go on from it.
    dev.get(&format!("/pets/{pet}")).await.assert_status(200);
    let orders = dev
        .get(&format!("/store/orders?petId={pet}&limit=100"))
        .await;
    assert_eq!(orders.ids().len(), 12);
    let fresh = dev
        .as_customer()
        .await
        .post("/store/orders", json!({ "petId": pet }))
        .await;
    fresh.assert_status(201);
    // Both forms of a pet arrived as they were, and are served as they are:
    // an order of the pet holding its own stock writes that pet item.
    let has = |items: &BTreeMap<(String, String), Item>, id: u64, sk: &str| {
        items.contains_key(&(format!("PET#{id}"), sk.to_string()))
    };
    let dev_items = items(&dev).await;
    assert!(has(&dev_items, pet, "STOCK") && !has(&dev_items, old, "STOCK"));
    let of_old = dev
        .as_customer()
        .await
        .post("/store/orders", json!({ "petId": old }))
        .await;
    of_old.assert_status(201);
    let old_item = &items(&dev).await[&(format!("PET#{old}"), "PET".to_string())];
    assert_eq!(old_item.get("stock"), Some(&AttributeValue::N("1".into())));
    assert_eq!(
        old_item.get("openOrders"),
        Some(&AttributeValue::N("1".into()))
    );
    assert_sound(&dev).await;
}

#[tokio::test]
async fn a_stage_sharded_otherwise_gets_its_own_shards_and_lists_everything() {
    let (prod, _) = source().await;
    let lines = exported(&prod).await;
    let dev =
        TestApp::spawn_with(|name| (name == "ORDER_LIST_SHARDS").then(|| "3".to_string())).await;
    import_into(&dev, &lines).await.expect("imported");
    let report = check(&dev).await;
    assert!(report.sound(), "{:#?}", report.findings);
    let all = dev.get("/store/orders?limit=100").await;
    assert_eq!(all.ids().len(), 12, "every order in dev's 3 shards");
    let shards: Vec<String> = items(&dev)
        .await
        .values()
        .filter_map(|item| match item.get("GSI1PK") {
            Some(AttributeValue::S(k)) if k.starts_with("ORDER#") => Some(k.clone()),
            _ => None,
        })
        .collect();
    assert!(
        shards
            .iter()
            .all(|k| ["ORDER#0", "ORDER#1", "ORDER#2"].contains(&k.as_str())),
        "{shards:?}"
    );
}

#[tokio::test]
async fn an_import_into_a_table_holding_data_is_refused_before_any_write() {
    let (prod, _) = source().await;
    let lines = exported(&prod).await;
    let dev = TestApp::spawn().await;
    dev.create_category("Cats").await;
    let before = items(&dev).await;
    let refused = import_into(&dev, &lines).await;
    let error = refused.expect_err("refused").to_string();
    assert!(error.contains("holds data already"), "{error}");
    assert_eq!(items(&dev).await, before);
}

#[tokio::test]
async fn an_export_leaves_the_webhooks_and_their_secrets_behind() {
    let hooks = Webhooks::new().await;
    let (lines, exported) = exported_with_summary(&hooks.store.app).await;
    let left_out = |kind: &str| exported.left_out.get(kind).copied();
    assert_eq!(left_out("ENDPOINT"), Some(2), "{exported:?}");
    assert_eq!(left_out("WEBHOOKS"), Some(2), "the owners' counts");
    assert_eq!(left_out("DELIVERY"), Some(3), "one line for every delivery");
    assert_eq!(left_out("SLOT"), Some(1), "{exported:?}");
    let text = String::from_utf8_lossy(&lines);
    assert!(!text.contains("WEBHOOK"), "no webhook item is exported");
    let secret_prefix = petstore::webhooks::sign::SECRET_PREFIX;
    assert!(!text.contains(secret_prefix), "no signing secret leaves");
    let dev = TestApp::spawn().await;
    let copy = import_into(&dev, &lines).await.expect("imported");
    assert_eq!(copy.items, exported.items);
    assert!(items(&dev)
        .await
        .keys()
        .all(|(pk, _)| !pk.starts_with("WEBHOOK")));
    assert_sound(&dev).await;
}
