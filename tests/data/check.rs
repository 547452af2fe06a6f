//! `data check`: a sound store is reported sound, and each invariant, broken
//! by a direct write, is reported with the broken item's key.

use crate::helpers::TestApp;
use crate::idempotency::send_keyed;
use aws_sdk_dynamodb::types::AttributeValue;
use futures::StreamExt;
use http::Method;
use petstore::ratelimit::keys::ApiKeyHash;
use petstore_admin::check::invariants::INVARIANTS;
use petstore_admin::check::{check_table, Report};
use petstore_admin::scan::{ProgressBar, ScanOptions};
use serde_json::json;
use std::collections::HashMap;

/// Checks `app`'s data table as `petstore-admin data check` does.
pub async fn check(app: &TestApp) -> Report {
    let db = &app.app.db;
    let scan = ScanOptions::default();
    check_table(
        db.client(),
        db.table(),
        app.app.config.shards,
        scan,
        &ProgressBar::hidden(),
    )
    .await
    .expect("the table is read")
}

/// Panics with the findings unless `app`'s table is sound.
pub async fn assert_sound(app: &TestApp) {
    let report = check(app).await;
    assert!(report.sound(), "{:#?}", report.findings);
}

/// A store with one of everything: a category, a pet without orders, a pet
/// with an open and a complete order (both with stock items), a pet in
/// release 1.0.0's form (its stock on its pet item), API keys, an
/// idempotency record.
pub(super) struct Store {
    pub(super) app: TestApp,
    category: u64,
    spare: u64,
    pet: u64,
    /// A pet as release 1.0.0 wrote it: no stock item.
    old: u64,
    open_order: u64,
    complete_order: u64,
}

impl Store {
    pub(super) async fn new() -> Store {
        let app = TestApp::spawn().await;
        let category = app.create_category("Dogs").await;
        let spare = app.create_pet("Spare", category, "available").await;
        let pet = app.create_pet("Rex", category, "available").await;
        let old = app.create_pet("Old", category, "available").await;
        in_release_1_0_form(&app, old).await;
        app.put(&format!("/store/inventory/{pet}"), json!({ "quantity": 5 }))
            .await
            .assert_status(200);
        let customer = app.as_customer().await;
        let order = json!({ "petId": pet, "quantity": 1 });
        let placed = send_keyed(&customer, Method::POST, "/store/orders", Some(&order), "k1").await;
        placed.assert_status(201);
        let open_order = placed.id();
        let complete_order = customer.post("/store/orders", order).await.id();
        app.patch(
            &format!("/store/orders/{complete_order}"),
            json!({ "complete": true }),
        )
        .await
        .assert_status(200);
        Store {
            app,
            category,
            spare,
            pet,
            old,
            open_order,
            complete_order,
        }
    }

    pub(super) fn client(&self) -> &aws_sdk_dynamodb::Client {
        self.app.app.db.client()
    }

    pub(super) fn table(&self) -> &str {
        self.app.app.db.table()
    }

    /// The item with this key, as stored.
    pub(super) async fn item(&self, pk: &str, sk: &str) -> HashMap<String, AttributeValue> {
        let out = self
            .client()
            .get_item()
            .table_name(self.table())
            .key("PK", s(pk))
            .key("SK", s(sk))
            .consistent_read(true)
            .send()
            .await
            .expect("read");
        out.item.expect("the item exists")
    }

    pub(super) async fn put(&self, item: HashMap<String, AttributeValue>) {
        self.client()
            .put_item()
            .table_name(self.table())
            .set_item(Some(item))
            .send()
            .await
            .expect("put");
    }

    /// Sets (or with `None` removes) one attribute of an item, unconditionally.
    pub(super) async fn set(&self, pk: &str, sk: &str, name: &str, value: Option<AttributeValue>) {
        let request = self
            .client()
            .update_item()
            .table_name(self.table())
            .key("PK", s(pk))
            .key("SK", s(sk))
            .expression_attribute_names("#a", name);
        let request = match value {
            Some(value) => request
                .update_expression("SET #a = :v")
                .expression_attribute_values(":v", value),
            None => request.update_expression("REMOVE #a"),
        };
        request.send().await.expect("update");
    }

    pub(super) async fn delete(&self, pk: &str, sk: &str) {
        self.client()
            .delete_item()
            .table_name(self.table())
            .key("PK", s(pk))
            .key("SK", s(sk))
            .send()
            .await
            .expect("delete");
    }

    /// Sets one attribute (`pk`, `sk`, name, value) and asserts that a
    /// check then reports `invariant` broken on `on`.
    pub(super) async fn reported_after_setting(
        &self,
        (pk, sk, name, value): (&str, &str, &str, Option<AttributeValue>),
        (invariant, on): (&str, &str),
    ) {
        self.set(pk, sk, name, value).await;
        self.assert_reported(invariant, on).await;
    }

    /// Asserts that a check reports `invariant` broken on the item `pk`.
    pub(super) async fn assert_reported(&self, invariant: &str, pk: &str) {
        let report = check(&self.app).await;
        assert!(
            report
                .findings
                .iter()
                .any(|f| f.invariant == invariant && f.pk == pk),
            "{invariant} on {pk} is not reported: {:#?}",
            report.findings
        );
    }
}

/// Puts pet `id`, written with a stock item, in the form release 1.0.0
/// wrote pets (and this code writes them under `DATA_LAYOUT=1`): its stock,
/// open orders and inventory entry on its pet item, and no stock item.
pub(super) async fn in_release_1_0_form(app: &TestApp, id: u64) {
    let db = &app.app.db;
    let key = |sk: &str| HashMap::from([("PK".to_string(), s(pet(id))), ("SK".to_string(), s(sk))]);
    let stock = db
        .client()
        .delete_item()
        .table_name(db.table())
        .set_key(Some(key("STOCK")))
        .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
        .send()
        .await
        .expect("delete")
        .attributes
        .expect("the pet had a stock item");
    db.client()
        .update_item()
        .table_name(db.table())
        .set_key(Some(key("PET")))
        .update_expression("SET stock = :stock, openOrders = :open, GSI5PK = :pk")
        .expression_attribute_values(":stock", stock["stock"].clone())
        .expression_attribute_values(":open", stock["openOrders"].clone())
        .expression_attribute_values(":pk", s(pet(id)))
        .send()
        .await
        .expect("update");
}

pub(super) fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

pub(super) fn n(value: i64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn pet(id: u64) -> String {
    format!("PET#{id}")
}

fn order(id: u64) -> String {
    format!("ORDER#{id}")
}

#[tokio::test]
async fn a_store_the_service_wrote_is_sound() {
    let store = Store::new().await;
    let report = check(&store.app).await;
    assert!(report.sound(), "{:#?}", report.findings);
    // Category, its claim, 3 pets, 2 stock items, 2 orders, 2 keys, 1
    // idempotency record, the customer's hold count.
    assert_eq!(report.items, 13, "every item is read");
}

#[tokio::test]
async fn the_pre_traffic_checks_key_is_sound_in_no_list_and_a_listed_key_out_of_its_list_is_not() {
    let store = Store::new().await;
    let db = &store.app.app.db;
    // The key the pre-traffic hook makes for a run, by its own code.
    petstore_pretraffic::key::mint(db.client().clone(), db.table())
        .await
        .expect("the check's key is made in DynamoDB Local");
    let report = check(&store.app).await;
    assert!(report.sound(), "{:#?}", report.findings);
    assert_eq!(report.items, 14, "the short-lived key is read");
    // A key without an expiresAt belongs in the key list.
    let hash = ApiKeyHash::of(store.app.api_key.as_deref().unwrap_or_default());
    let pk = format!("APIKEY#{}", hash.as_str());
    store
        .reported_after_setting((&pk, "APIKEY", "GSI1PK", None), ("unlisted-kinds", &pk))
        .await;
}

#[tokio::test]
async fn an_item_of_no_known_kind() {
    let store = Store::new().await;
    store
        .put(HashMap::from([
            ("PK".into(), s("WIDGET#1")),
            ("SK".into(), s("WIDGET")),
        ]))
        .await;
    store.assert_reported("known-kind", "WIDGET#1").await;
}

#[tokio::test]
async fn a_key_that_does_not_name_its_id() {
    let store = Store::new().await;
    store
        .reported_after_setting(
            (
                &pet(store.spare),
                "PET",
                "id",
                Some(n(store.spare as i64 + 1)),
            ),
            ("key-names-id", &pet(store.spare)),
        )
        .await;
    let store = Store::new().await;
    store
        .reported_after_setting(
            (&pet(store.pet), "STOCK", "id", Some(n(0))),
            ("key-names-id", &pet(store.pet)),
        )
        .await;
}

#[tokio::test]
async fn an_item_the_service_cannot_read() {
    let store = Store::new().await;
    store
        .reported_after_setting(
            (&pet(store.spare), "PET", "status", Some(s("lost"))),
            ("reads-as-record", &pet(store.spare)),
        )
        .await;
    let store = Store::new().await;
    store
        .reported_after_setting(
            (&pet(store.spare), "STOCK", "status", Some(s("lost"))),
            ("reads-as-record", &pet(store.spare)),
        )
        .await;
}

#[tokio::test]
async fn a_negative_stock_on_either_holder() {
    let store = Store::new().await;
    store
        .reported_after_setting(
            (&pet(store.pet), "STOCK", "stock", Some(n(-1))),
            ("stock-not-negative", &pet(store.pet)),
        )
        .await;
    store
        .reported_after_setting(
            (&pet(store.old), "PET", "stock", Some(n(-1))),
            ("stock-not-negative", &pet(store.old)),
        )
        .await;
}

#[tokio::test]
async fn a_negative_open_order_count_on_either_holder() {
    let store = Store::new().await;
    store
        .reported_after_setting(
            (&pet(store.spare), "STOCK", "openOrders", Some(n(-1))),
            ("open-orders-not-negative", &pet(store.spare)),
        )
        .await;
    store
        .reported_after_setting(
            (&pet(store.old), "PET", "openOrders", Some(n(-1))),
            ("open-orders-not-negative", &pet(store.old)),
        )
        .await;
}

#[tokio::test]
async fn a_pet_holding_its_stock_without_its_open_order_count() {
    let store = Store::new().await;
    store
        .reported_after_setting(
            (&pet(store.old), "PET", "openOrders", None),
            ("open-orders-not-negative", &pet(store.old)),
        )
        .await;
}

#[tokio::test]
async fn a_pet_missing_from_an_index_or_in_the_wrong_list() {
    // A pet holding its stock is its own inventory entry.
    let store = Store::new().await;
    store
        .reported_after_setting(
            (&pet(store.old), "PET", "GSI5PK", None),
            ("pet-index-keys", &pet(store.old)),
        )
        .await;
    // A pet with a stock item is not: that item is.
    let store = Store::new().await;
    store
        .reported_after_setting(
            (
                &pet(store.spare),
                "PET",
                "GSI5PK",
                Some(s(pet(store.spare))),
            ),
            ("pet-index-keys", &pet(store.spare)),
        )
        .await;
    let store = Store::new().await;
    store
        .reported_after_setting(
            (
                &pet(store.pet),
                "PET",
                "GSI2PK",
                Some(s("PET#STATUS#sold#0")),
            ),
            ("pet-index-keys", &pet(store.pet)),
        )
        .await;
}

#[tokio::test]
async fn a_stock_item_out_of_the_inventory_or_in_a_list() {
    let store = Store::new().await;
    store
        .reported_after_setting(
            (&pet(store.spare), "STOCK", "GSI5PK", None),
            ("stock-item-keys", &pet(store.spare)),
        )
        .await;
    let store = Store::new().await;
    store
        .reported_after_setting(
            (&pet(store.pet), "STOCK", "GSI1PK", Some(s("PET#0"))),
            ("stock-item-keys", &pet(store.pet)),
        )
        .await;
}

#[tokio::test]
async fn a_pet_whose_stock_is_on_both_items_or_on_neither() {
    let store = Store::new().await;
    store
        .reported_after_setting(
            (&pet(store.spare), "PET", "stock", Some(n(0))),
            ("stock-held-once", &pet(store.spare)),
        )
        .await;
    let store = Store::new().await;
    store.delete(&pet(store.spare), "STOCK").await;
    store
        .assert_reported("stock-held-once", &pet(store.spare))
        .await;
}

#[tokio::test]
async fn a_stock_item_whose_pet_is_gone() {
    let store = Store::new().await;
    store.delete(&pet(store.spare), "PET").await;
    store
        .assert_reported("stock-item-pet-known", &pet(store.spare))
        .await;
}

#[tokio::test]
async fn a_stock_item_whose_status_is_not_its_pets() {
    let store = Store::new().await;
    store
        .reported_after_setting(
            (&pet(store.spare), "STOCK", "status", Some(s("sold"))),
            ("stock-item-status", &pet(store.spare)),
        )
        .await;
}

#[tokio::test]
async fn an_order_in_the_wrong_lists() {
    let store = Store::new().await;
    store
        .reported_after_setting(
            (&order(store.open_order), "ORDER", "GSI4PK", None),
            ("order-index-keys", &order(store.open_order)),
        )
        .await;
    let store = Store::new().await;
    let wrong = s("ORDER#COMPLETE#false#0");
    store
        .reported_after_setting(
            (&order(store.complete_order), "ORDER", "GSI2PK", Some(wrong)),
            ("order-index-keys", &order(store.complete_order)),
        )
        .await;
}

#[tokio::test]
async fn a_category_in_another_index() {
    let store = Store::new().await;
    let pk = format!("CATEGORY#{}", store.category);
    store
        .reported_after_setting(
            (&pk, "CATEGORY", "GSI3PK", Some(s("PET#CATEGORY#1"))),
            ("category-index-keys", &pk),
        )
        .await;
}

#[tokio::test]
async fn a_name_claim_in_an_index() {
    let store = Store::new().await;
    store
        .reported_after_setting(
            (
                "CATEGORYNAME#dogs",
                "CATEGORYNAME",
                "GSI1PK",
                Some(s("CATEGORY#0")),
            ),
            ("unlisted-kinds", "CATEGORYNAME#dogs"),
        )
        .await;
}

#[tokio::test]
async fn a_complete_order_without_its_ship_date() {
    let store = Store::new().await;
    store
        .reported_after_setting(
            (&order(store.complete_order), "ORDER", "shipDate", None),
            ("complete-order-shipped", &order(store.complete_order)),
        )
        .await;
}

#[tokio::test]
async fn an_idempotency_record_that_never_expires() {
    let store = Store::new().await;
    let out = store
        .client()
        .scan()
        .table_name(store.table())
        .filter_expression("SK = :sk")
        .expression_attribute_values(":sk", s("IDEMPOTENCY"))
        .send()
        .await
        .expect("scan");
    let record = out
        .items
        .unwrap_or_default()
        .pop()
        .expect("the keyed order's record");
    let pk = match record.get("PK") {
        Some(AttributeValue::S(pk)) => pk.clone(),
        _ => String::new(),
    };
    store
        .reported_after_setting(
            (&pk, "IDEMPOTENCY", "expiresAt", None),
            ("idempotency-record-expires", &pk),
        )
        .await;
}

#[tokio::test]
async fn an_open_order_count_that_misses_an_order_or_counts_one_too_many() {
    let store = Store::new().await;
    store
        .reported_after_setting(
            (&pet(store.pet), "STOCK", "openOrders", Some(n(0))),
            ("open-orders-counted", &pet(store.pet)),
        )
        .await;
    let store = Store::new().await;
    store
        .reported_after_setting(
            (&pet(store.old), "PET", "openOrders", Some(n(1))),
            ("open-orders-counted", &pet(store.old)),
        )
        .await;
}

#[tokio::test]
async fn a_hold_count_that_misses_an_order() {
    let store = Store::new().await;
    let order = store.item(&order(store.open_order), "ORDER").await;
    let Some(AttributeValue::N(owner)) = order.get("ownerId") else {
        panic!("the customer's order names its owner: {order:?}");
    };
    let holds = format!("HOLDS#{owner}");
    store
        .reported_after_setting(
            (&holds, "HOLDS", "openOrders", Some(n(5))),
            ("holds-counted", &holds),
        )
        .await;
}

#[tokio::test]
async fn an_open_order_whose_pet_is_gone() {
    let store = Store::new().await;
    store.delete(&pet(store.pet), "PET").await;
    store
        .assert_reported("open-order-pet-known", &order(store.open_order))
        .await;
}

#[tokio::test]
async fn a_pet_whose_category_is_gone() {
    let store = Store::new().await;
    store
        .delete(&format!("CATEGORY#{}", store.category), "CATEGORY")
        .await;
    store
        .assert_reported("pet-category-known", &pet(store.spare))
        .await;
}

#[tokio::test]
async fn a_category_that_miscounts_its_pets() {
    let store = Store::new().await;
    let pk = format!("CATEGORY#{}", store.category);
    store
        .reported_after_setting(
            // It holds 3.
            (&pk, "CATEGORY", "petCount", Some(n(2))),
            ("category-pet-count", &pk),
        )
        .await;
}

#[tokio::test]
async fn two_categories_of_one_name() {
    let store = Store::new().await;
    let mut twin = store
        .item(&format!("CATEGORY#{}", store.category), "CATEGORY")
        .await;
    let id = store.category + 1;
    twin.insert("PK".into(), s(format!("CATEGORY#{id}")));
    twin.insert("id".into(), n(id as i64));
    twin.insert("name".into(), s("DOGS"));
    twin.insert("petCount".into(), n(0));
    store.put(twin).await;
    store
        .assert_reported("category-name-claimed", &format!("CATEGORY#{id}"))
        .await;
}

#[tokio::test]
async fn a_name_claim_of_no_category() {
    let store = Store::new().await;
    let claim = HashMap::from([
        ("PK".into(), s("CATEGORYNAME#cats")),
        ("SK".into(), s("CATEGORYNAME")),
        ("categoryId".into(), n(42)),
    ]);
    store.put(claim).await;
    store
        .assert_reported("name-claim-current", "CATEGORYNAME#cats")
        .await;
}

#[tokio::test]
async fn two_items_of_one_api_key() {
    let store = Store::new().await;
    let out = store
        .client()
        .scan()
        .table_name(store.table())
        .filter_expression("SK = :sk")
        .expression_attribute_values(":sk", s("APIKEY"))
        .send()
        .await
        .expect("scan");
    let mut copy = out.items.unwrap_or_default().pop().expect("a key item");
    copy.insert("PK".into(), s(format!("APIKEY#{}", "0".repeat(64))));
    store.put(copy).await;
    store
        .assert_reported("api-key-id-unique", &format!("APIKEY#{}", "0".repeat(64)))
        .await;
}

/// Every invariant has its test here or in `webhooks.rs`: adding one
/// without breaking it in a test fails this.
#[test]
fn every_invariant_is_broken_by_a_test() {
    let tests = [include_str!("check.rs"), include_str!("webhooks.rs")].concat();
    for invariant in INVARIANTS {
        // `assert_reported("name", ...)` or `reported_after_setting(.., ("name", ...))`.
        let call = format!("(\"{}\"", invariant.name);
        assert!(
            tests.contains(&call),
            "no test breaks {}: add one to tests/data/check.rs (webhooks.rs for a webhook item's)",
            invariant.name
        );
    }
}

/// docs/data.md's table of invariants, the page an operator reads when a
/// check fails, lists exactly the invariants `INVARIANTS` holds.
#[test]
fn every_invariant_is_in_the_docs() {
    let docs = include_str!("../../docs/data.md");
    let table = docs
        .split("| Invariant | What it says |")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_default();
    let documented: std::collections::BTreeSet<&str> = table
        .lines()
        .filter_map(|row| row.strip_prefix("| `")?.split('`').next())
        .collect();
    let held: std::collections::BTreeSet<&str> = INVARIANTS.iter().map(|i| i.name).collect();
    assert_eq!(
        documented, held,
        "docs/data.md's table of invariants (left) against INVARIANTS (right)"
    );
}

/// Not a check: how fast `data check` reads, on this DynamoDB Local.
/// `CHECK_RATE_ITEMS` pets (20,000 by default) in one category, then a check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a test: run it with --ignored --nocapture"]
async fn measure_the_check_rate() {
    use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
    let count: u64 = std::env::var("CHECK_RATE_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let store = Store::new().await;
    let category = store.category;
    let pk = format!("CATEGORY#{category}");
    store
        .set(&pk, "CATEGORY", "petCount", Some(n(count as i64 + 2)))
        .await;
    let base = 1u64 << 40;
    let batches: Vec<Vec<WriteRequest>> = (0..count)
        .collect::<Vec<_>>()
        .chunks(25)
        .map(|ids| {
            ids.iter()
                .map(|i| {
                    let id = base + i;
                    let item = HashMap::from([
                        ("PK".into(), s(pet(id))),
                        ("SK".into(), s("PET")),
                        ("id".into(), n(id as i64)),
                        ("name".into(), s(format!("Pet {i}"))),
                        ("categoryId".into(), n(category as i64)),
                        ("status".into(), s("available")),
                        ("stock".into(), n(3)),
                        ("openOrders".into(), n(0)),
                        ("GSI1PK".into(), s("PET#0")),
                        ("GSI2PK".into(), s("PET#STATUS#available#0")),
                        ("GSI3PK".into(), s(format!("PET#CATEGORY#{category}"))),
                        ("GSI5PK".into(), s(pet(id))),
                    ]);
                    WriteRequest::builder()
                        .put_request(
                            PutRequest::builder()
                                .set_item(Some(item))
                                .build()
                                .expect("put"),
                        )
                        .build()
                })
                .collect()
        })
        .collect();
    let seeded = std::time::Instant::now();
    futures::stream::iter(batches.into_iter().map(|batch| {
        let (client, table) = (store.client().clone(), store.table().to_string());
        async move {
            let mut pending = Some(HashMap::from([(table, batch)]));
            while let Some(requests) = pending.take().filter(|r| !r.is_empty()) {
                let out = client
                    .batch_write_item()
                    .set_request_items(Some(requests))
                    .send()
                    .await
                    .expect("batch");
                pending = out.unprocessed_items;
            }
        }
    }))
    .buffer_unordered(8)
    .collect::<Vec<()>>()
    .await;
    println!(
        "seeded {count} pets in {:.1} s",
        seeded.elapsed().as_secs_f64()
    );
    for segments in [1, 4, 8] {
        let db = &store.app.app.db;
        let scan = ScanOptions {
            segments,
            consistent: true,
        };
        let report = check_table(
            db.client(),
            db.table(),
            store.app.app.config.shards,
            scan,
            &ProgressBar::hidden(),
        )
        .await
        .expect("checked");
        assert!(
            report.sound(),
            "{:#?}",
            &report.findings[..report.findings.len().min(5)]
        );
        println!(
            "{segments} segments: {} items in {:.2} s, {:.0} items/s; 10 million would take {:.0} min",
            report.items,
            report.elapsed.as_secs_f64(),
            report.items_per_second(),
            1e7 / report.items_per_second() / 60.0
        );
    }
}
