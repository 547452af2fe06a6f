//! Sharded lists (`shared/src/db/shards.rs`): with several shards each
//! holding more than a page, every list, with every filter, pages through
//! its records in order with no gap and no repeat; raising a shard count
//! over stored records loses none of them; and the template gives the pet
//! lists one shard at every `OrderRate`.

use crate::helpers::TestApp;
use aws_sdk_dynamodb::types::{AttributeValue, Select};
use futures::future::join_all;
use petstore::db::shards::shard_of;
use serde_json::json;
use std::collections::BTreeMap;

/// The page size every list is read with here.
const LIMIT: usize = 3;
const PET_SHARDS: u16 = 5;
const ORDER_SHARDS: u16 = 6;
const CATEGORY_SHARDS: u16 = 3;
const STATUSES: [&str; 3] = ["available", "pending", "sold"];
/// Pets made at once while filling the shards.
const ROUND: usize = 12;

/// Small shard counts, so a modest store fills every shard past a page.
fn small_shards(name: &str) -> Option<String> {
    match name {
        "PET_LIST_SHARDS" => Some(PET_SHARDS.to_string()),
        "ORDER_LIST_SHARDS" => Some(ORDER_SHARDS.to_string()),
        "CATEGORY_LIST_SHARDS" => Some(CATEGORY_SHARDS.to_string()),
        _ => None,
    }
}

/// Follows the next links from `path`: every record's `field`, in the order
/// served.
async fn page_through(app: &TestApp, path: &str, field: &str) -> Vec<u64> {
    let (mut seen, mut next, mut pages) = (Vec::new(), Some(path.to_string()), 0);
    while let Some(url) = next {
        let page = app.get(&url).await;
        page.assert_status(200);
        let ids: Vec<u64> = page
            .json()
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|record| record[field].as_u64())
            .collect();
        next = page.next_page();
        // A page may hold fewer than the limit, even none, with a next link:
        // a sparse filter's page ends when its round trips are spent
        // (API.md section 2; `tests/pages.rs` counts them).
        assert!(ids.len() <= LIMIT, "{url}: {ids:?}");
        seen.extend(ids);
        pages += 1;
        assert!(pages <= 500, "paging {path} must end");
    }
    seen
}

/// How a list orders its records.
#[derive(Clone, Copy)]
enum Order {
    Ascending,
    NewestFirst,
    /// Whatever order its index gives (the inventory's: not by id).
    Any,
}

/// One list to page through and the records it must show, each once.
struct Listed<'a> {
    app: &'a TestApp,
    path: String,
    field: &'static str,
    expected: Vec<u64>,
    order: Order,
}

impl<'a> Listed<'a> {
    /// The inventory's lists (order `Any`) name their records by `petId`.
    fn new(app: &'a TestApp, path: impl Into<String>, expected: Vec<u64>, order: Order) -> Self {
        let field = if matches!(order, Order::Any) {
            "petId"
        } else {
            "id"
        };
        let path = path.into();
        Listed {
            app,
            path,
            field,
            expected,
            order,
        }
    }

    /// Paging the list sees exactly `expected`: no gap, no repeat, and in id
    /// order unless the list's order is `Any`.
    async fn check(&self) {
        let separator = if self.path.contains('?') { '&' } else { '?' };
        let first = format!("{}{separator}limit={LIMIT}", self.path);
        let mut served = page_through(self.app, &first, self.field).await;
        let mut expected = self.expected.clone();
        expected.sort_unstable();
        match self.order {
            Order::Ascending => {}
            Order::NewestFirst => expected.reverse(),
            Order::Any => {
                let count = served.len();
                served.sort_unstable();
                served.dedup();
                assert_eq!(count, served.len(), "{}: no record twice", self.path);
            }
        }
        assert_eq!(served, expected, "{}", self.path);
    }
}

/// Paging `path` sees exactly `expected`, in id order (newest first when
/// `newest_first`): no gap, no repeat.
async fn assert_lists(
    app: &TestApp,
    path: &str,
    field: &'static str,
    expected: &[u64],
    newest_first: bool,
) {
    let order = if newest_first {
        Order::NewestFirst
    } else {
        Order::Ascending
    };
    let mut listed = Listed::new(app, path, expected.to_vec(), order);
    listed.field = field;
    listed.check().await;
}

/// How many index entries each shard of `list` holds, read from the index.
async fn shard_sizes(app: &TestApp, index: &'static str, list: &str, shards: u16) -> Vec<i32> {
    let db = &app.app.db;
    // `index` names the list's keys (`GSI1PK`); the current layout says which
    // index holds them (GSI1v2 for GSI1: docs/upgrade.md).
    let stored = petstore::db::layout::Layout::default().index_of(index);
    let mut sizes = Vec::new();
    for shard in 0..shards {
        let out = db
            .client()
            .query()
            .table_name(db.table())
            .index_name(stored)
            .key_condition_expression("#pk = :pk")
            .expression_attribute_names("#pk", format!("{index}PK"))
            .expression_attribute_values(":pk", AttributeValue::S(format!("{list}#{shard}")))
            .select(Select::Count)
            .send()
            .await
            .expect("the index answers");
        sizes.push(out.count);
    }
    sizes
}

/// Whether every one of `shards` shards holds more than a page of `ids`.
fn every_shard_past_a_page<'a>(ids: impl Iterator<Item = &'a u64>, shards: u16) -> bool {
    let mut sizes = vec![0usize; usize::from(shards)];
    for id in ids {
        sizes[usize::from(shard_of(*id, shards))] += 1;
    }
    sizes.iter().all(|size| *size > LIMIT)
}

/// What the test store holds, to say what each list must show.
#[derive(Default)]
struct Store {
    categories: Vec<u64>,
    /// Pet id → (status, category).
    pets: BTreeMap<u64, (&'static str, u64)>,
    /// Order id → (pet, complete, customer).
    orders: BTreeMap<u64, (u64, bool, usize)>,
}

impl Store {
    fn pets_where(&self, keep: impl Fn(&str, u64) -> bool) -> Vec<u64> {
        let pets = self.pets.iter();
        pets.filter(|(_, (s, c))| keep(s, *c))
            .map(|(id, _)| *id)
            .collect()
    }

    fn orders_where(&self, keep: impl Fn(u64, bool, usize) -> bool) -> Vec<u64> {
        let orders = self.orders.iter();
        orders
            .filter(|(_, (p, c, o))| keep(*p, *c, *o))
            .map(|(id, _)| *id)
            .collect()
    }
}

/// Categories until each of their shards holds more than a page.
async fn fill_categories(app: &TestApp, store: &mut Store) {
    while !every_shard_past_a_page(store.categories.iter(), CATEGORY_SHARDS) {
        let name = format!("Kind {}", store.categories.len());
        store.categories.push(app.create_category(&name).await);
        assert!(store.categories.len() < 200, "categories fill their shards");
    }
}

/// Pets of every status in two categories, until each status's every shard
/// holds more than a page; and three stocked pets to order.
async fn fill_pets(app: &TestApp, store: &mut Store) -> Vec<u64> {
    let (a, b) = (store.categories[0], store.categories[1]);
    let mut made = 0;
    // A round of pets made at once: the ids are a counter's, taken by
    // conditional writes, so concurrent creates each get their own.
    while !STATUSES.iter().all(|status| {
        let ids = store.pets_where(|s, _| s == *status);
        every_shard_past_a_page(ids.iter(), PET_SHARDS)
    }) {
        let round = (made..made + ROUND).map(|n| {
            let (status, category) = (STATUSES[n % 3], [a, b][n / 3 % 2]);
            async move {
                let id = app.create_pet(&format!("Pet {n}"), category, status).await;
                (id, (status, category))
            }
        });
        store.pets.extend(join_all(round).await);
        made += ROUND;
        assert!(made < 600, "pets fill their shards");
    }
    let mut stocked = Vec::new();
    for i in 0..3 {
        let id = app
            .create_pet(&format!("Stocked {i}"), a, "available")
            .await;
        let stock = json!({ "quantity": 1000 });
        let path = format!("/store/inventory/{id}");
        app.put(&path, stock).await.assert_status(200);
        store.pets.insert(id, ("available", a));
        stocked.push(id);
    }
    stocked
}

/// Orders of `stocked` pets by `customers`, every other one completed, until
/// each shard of the open and of the complete orders holds more than a page.
async fn fill_orders(app: &TestApp, customers: &[TestApp], stocked: &[u64], store: &mut Store) {
    let filled = |store: &Store, complete: bool| {
        let ids = store.orders_where(|_, c, _| c == complete);
        every_shard_past_a_page(ids.iter(), ORDER_SHARDS)
    };
    let mut made = 0;
    // A round of orders at once, one per stocked pet: orders of one pet
    // would only contend for its stock item.
    while !(filled(store, false) && filled(store, true)) {
        let round = (made..made + stocked.len()).map(|n| {
            let (pet, customer) = (stocked[n % stocked.len()], n % customers.len());
            async move {
                let body = json!({ "petId": pet, "quantity": 1 });
                let placed = customers[customer].post("/store/orders", body).await;
                placed.assert_status(201);
                let complete = n % 2 == 1;
                if complete {
                    let path = format!("/store/orders/{}", placed.id());
                    let done = app.patch(&path, json!({ "complete": true })).await;
                    done.assert_status(200);
                }
                (placed.id(), (pet, complete, customer))
            }
        });
        store.orders.extend(join_all(round).await);
        made += stocked.len();
        assert!(made < 800, "orders fill their shards");
    }
}

#[tokio::test]
async fn every_list_pages_through_many_full_shards_with_no_gap_and_no_repeat() {
    // Given shards that each hold more than a page of every sharded list
    let app = TestApp::spawn_with(small_shards).await;
    let customers = [app.as_customer().await, app.as_customer().await];
    let mut store = Store::default();
    fill_categories(&app, &mut store).await;
    let stocked = fill_pets(&app, &mut store).await;
    fill_orders(&app, &customers, &stocked, &mut store).await;
    for (index, list, shards) in [
        ("GSI1", "CATEGORY", CATEGORY_SHARDS),
        ("GSI1", "PET", PET_SHARDS),
        ("GSI2", "PET#STATUS#pending", PET_SHARDS),
        ("GSI1", "ORDER", ORDER_SHARDS),
        ("GSI2", "ORDER#COMPLETE#false", ORDER_SHARDS),
        ("GSI2", "ORDER#COMPLETE#true", ORDER_SHARDS),
    ] {
        let sizes = shard_sizes(&app, index, list, shards).await;
        assert!(sizes.iter().all(|s| *s > LIMIT as i32), "{list}: {sizes:?}");
    }

    // When each list is paged through, with each filter, Then it shows exactly its records
    // (the lists paged at once: each is read alone, one page after another)
    use Order::{Any, Ascending, NewestFirst};
    let all_pets = store.pets_where(|_, _| true);
    let a = store.categories[0];
    let pet = stocked[1];
    let mut lists = vec![
        Listed::new(&app, "/categories", store.categories.clone(), Ascending),
        Listed::new(&app, "/pets", all_pets.clone(), Ascending),
        Listed::new(&app, "/store/inventory", all_pets, Any),
        Listed::new(
            &app,
            format!("/pets?categoryId={a}"),
            store.pets_where(|_, c| c == a),
            Ascending,
        ),
    ];
    for status in STATUSES {
        let pets = store.pets_where(|s, _| s == status);
        lists.push(Listed::new(
            &app,
            format!("/pets?status={status}"),
            pets.clone(),
            Ascending,
        ));
        lists.push(Listed::new(
            &app,
            format!("/store/inventory?status={status}"),
            pets,
            Any,
        ));
        let in_a = store.pets_where(|s, c| s == status && c == a);
        let path = format!("/pets?categoryId={a}&status={status}");
        lists.push(Listed::new(&app, path, in_a, Ascending));
    }
    let all_orders = store.orders_where(|_, _, _| true);
    lists.push(Listed::new(&app, "/store/orders", all_orders, NewestFirst));
    let of_pet = store.orders_where(|p, _, _| p == pet);
    lists.push(Listed::new(
        &app,
        format!("/store/orders?petId={pet}"),
        of_pet,
        NewestFirst,
    ));
    for complete in [false, true] {
        let orders = store.orders_where(|_, c, _| c == complete);
        let path = format!("/store/orders?complete={complete}");
        lists.push(Listed::new(&app, path, orders, NewestFirst));
        let of_pet = store.orders_where(|p, c, _| p == pet && c == complete);
        let path = format!("/store/orders?petId={pet}&complete={complete}");
        lists.push(Listed::new(&app, path, of_pet, NewestFirst));
    }
    for (who, customer) in customers.iter().enumerate() {
        let mine = store.orders_where(|_, _, o| o == who);
        lists.push(Listed::new(customer, "/store/orders", mine, NewestFirst));
        let open = store.orders_where(|_, c, o| o == who && !c);
        let path = "/store/orders?complete=false";
        lists.push(Listed::new(customer, path, open, NewestFirst));
        let of_pet = store.orders_where(|p, _, o| o == who && p == pet);
        let path = format!("/store/orders?petId={pet}");
        lists.push(Listed::new(customer, path, of_pet, NewestFirst));
    }
    join_all(lists.iter().map(Listed::check)).await;
}

#[tokio::test]
async fn raising_the_shard_counts_keeps_every_stored_record_in_its_lists() {
    // Given pets and orders stored with two shards per list
    let narrow = TestApp::spawn_with(|name| match name {
        "PET_LIST_SHARDS" | "ORDER_LIST_SHARDS" => Some("2".into()),
        _ => None,
    })
    .await;
    let category = narrow.create_category("Dogs").await;
    let mut pets = Vec::new();
    let mut orders = Vec::new();
    for i in 0..8 {
        pets.push(
            narrow
                .create_pet(&format!("Old {i}"), category, "available")
                .await,
        );
        orders.push(
            narrow
                .post("/store/orders", json!({ "petId": pets[i] }))
                .await
                .id(),
        );
    }

    // When the counts are raised, and more are stored and an old order completes
    let wide = narrow
        .another_instance_with(|config| {
            config.shards.pets = 7;
            config.shards.orders = 9;
        })
        .await;
    for i in 0..8 {
        pets.push(
            wide.create_pet(&format!("New {i}"), category, "available")
                .await,
        );
    }
    let path = format!("/store/orders/{}", orders[0]);
    wide.patch(&path, json!({ "complete": true }))
        .await
        .assert_status(200);

    // Then the wider lists hold every record, old and new, once
    assert_lists(&wide, "/pets", "id", &pets, false).await;
    // Each old pet's one unit is ordered (pending); the completed order sold
    // the first, moving it to a status list's shard of the wider count.
    assert_lists(&wide, "/pets?status=pending", "id", &pets[1..8], false).await;
    assert_lists(&wide, "/pets?status=sold", "id", &pets[..1], false).await;
    assert_lists(&wide, "/pets?status=available", "id", &pets[8..], false).await;
    assert_lists(&wide, "/store/orders", "id", &orders, true).await;
    assert_lists(
        &wide,
        "/store/orders?complete=false",
        "id",
        &orders[1..],
        true,
    )
    .await;
    assert_lists(
        &wide,
        "/store/orders?complete=true",
        "id",
        &orders[..1],
        true,
    )
    .await;
}

/// Every order's `GSI1PK` and `GSI2PK` shard, as stored.
async fn order_shards(app: &TestApp) -> Vec<u16> {
    let db = &app.app.db;
    let scanned = db
        .client()
        .scan()
        .table_name(db.table())
        .filter_expression("SK = :order")
        .expression_attribute_values(":order", AttributeValue::S("ORDER".into()))
        .send()
        .await
        .expect("scan the orders");
    scanned
        .items
        .unwrap_or_default()
        .iter()
        .flat_map(|item| ["GSI1PK", "GSI2PK"].map(|name| item.get(name).cloned()))
        .filter_map(|key| match key {
            Some(AttributeValue::S(key)) => key.rsplit_once('#')?.1.parse().ok(),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn lowering_the_order_shard_count_hides_no_order_before_during_or_after_the_reshard() {
    // Given orders stored over 32 shards (the order lists of 1.1.0), two complete
    let before = TestApp::spawn_with(|name| match name {
        "ORDER_LIST_SHARDS" => Some("32".into()),
        _ => None,
    })
    .await;
    let category = before.create_category("Cats").await;
    let mut orders = Vec::new();
    for i in 0..16 {
        let pet = before
            .create_pet(&format!("Old {i}"), category, "available")
            .await;
        let order = before.post("/store/orders", json!({ "petId": pet })).await;
        orders.push(order.id());
    }
    for order in &orders[..2] {
        let path = format!("/store/orders/{order}");
        before
            .patch(&path, json!({ "complete": true }))
            .await
            .assert_status(200);
    }
    // (32 shards: some of them are in shards 4 to 31)
    assert!(order_shards(&before).await.iter().any(|s| *s >= 4));

    // When OrderRate is lowered to 4 shards, 32 draining
    let draining = before
        .another_instance_with(|config| {
            config.shards.orders = 4;
            config.shards.orders_draining = 32;
        })
        .await;
    // Then before the reshard every order is listed; without the draining
    // count some would be hidden
    let (open, complete) = (orders[2..].to_vec(), orders[..2].to_vec());
    let lists = [
        ("/store/orders?limit=3", orders.clone()),
        ("/store/orders?complete=false&limit=3", open.clone()),
        ("/store/orders?complete=true&limit=3", complete.clone()),
    ];
    for (path, expected) in &lists {
        assert_lists(&draining, path, "id", expected, true).await;
    }
    let undrained = before
        .another_instance_with(|config| config.shards.orders = 4)
        .await;
    let listed = page_through(&undrained, "/store/orders?limit=3", "id").await;
    assert!(listed.len() < orders.len(), "4 shards alone hide some");

    // And while the reshard runs, orders are placed and completed under the
    // new count, and every list read meanwhile misses none of what it held
    let writer = draining.clone();
    let category_of_new = category;
    let writes = async move {
        let mut placed = Vec::new();
        for i in 0..6 {
            let pet = writer
                .create_pet(&format!("New {i}"), category_of_new, "available")
                .await;
            placed.push(
                writer
                    .post("/store/orders", json!({ "petId": pet }))
                    .await
                    .id(),
            );
        }
        let path = format!("/store/orders/{}", orders[2]);
        writer
            .patch(&path, json!({ "complete": true }))
            .await
            .assert_status(200);
        placed
    };
    let reader = draining.clone();
    let expected_all = lists[0].1.clone();
    let reads = async move {
        for _ in 0..3 {
            let listed = page_through(&reader, "/store/orders?limit=3", "id").await;
            let missing: Vec<u64> = expected_all
                .iter()
                .copied()
                .filter(|id| !listed.contains(id))
                .collect();
            assert!(missing.is_empty(), "hidden during the reshard: {missing:?}");
        }
    };
    let (moved, placed, ()) = tokio::join!(draining.app.db.reshard_lists(), writes, reads);
    assert!(moved.expect("reshard") > 0);
    let mut all = lists[0].1.clone();
    all.extend(&placed);
    let complete_now: Vec<u64> = lists[2].1.iter().copied().chain([lists[1].1[0]]).collect();
    let open_now: Vec<u64> = all
        .iter()
        .copied()
        .filter(|id| !complete_now.contains(id))
        .collect();

    // Then after it (a second run moves nothing), every entry is under 4
    // shards, and the lists without the draining count hold every order once
    assert_eq!(draining.app.db.reshard_lists().await.ok(), Some(0));
    assert!(order_shards(&draining).await.iter().all(|s| *s < 4));
    let settled = before
        .another_instance_with(|config| config.shards.orders = 4)
        .await;
    assert_lists(&settled, "/store/orders?limit=3", "id", &all, true).await;
    assert_lists(
        &settled,
        "/store/orders?complete=false&limit=3",
        "id",
        &open_now,
        true,
    )
    .await;
    assert_lists(
        &settled,
        "/store/orders?complete=true&limit=3",
        "id",
        &complete_now,
        true,
    )
    .await;
}

/// The shard counts the template gives the functions at `OrderRate`'s (or,
/// for `..._DRAINING`, `DrainingOrderRate`'s) every allowed value: `name`'s
/// value in Globals, the default's first.
fn template_counts(template: &serde_yaml_ng::Value, name: &str) -> Vec<(String, u64)> {
    let variables = &template["Globals"]["Function"]["Environment"]["Variables"];
    crate::shield::capacity_values(template, &variables[name], name)
}

/// A pet's stock is on its stock item, in no list, so orders do not write
/// the pet lists unless a pet's status moves: 1 pet shard at every rate,
/// and the counts at the default `OrderRate` are the code's own defaults
/// (what `make run` and the tests use). A draining rate reads 1 pet shard
/// too (or none): no release keyed its pets over more (docs/partitions.md,
/// "Why a pet's stock is on an item of its own").
#[test]
fn the_pet_lists_have_one_shard_at_every_order_rate_and_the_default_is_the_codes() {
    let template = crate::deploy::read_yaml("template.yaml");
    let pets = template_counts(&template, "PET_LIST_SHARDS");
    assert!(pets.len() > 1, "{pets:?}");
    assert!(pets.iter().all(|(_, shards)| *shards == 1), "{pets:?}");
    let defaults = petstore::db::shards::Shards::default();
    assert_eq!(pets[0].1, u64::from(defaults.pets), "{pets:?}");
    let orders = template_counts(&template, "ORDER_LIST_SHARDS");
    assert_eq!(orders[0].1, u64::from(defaults.orders), "{orders:?}");
    let draining = template_counts(&template, "PET_LIST_SHARDS_DRAINING");
    assert!(
        draining.iter().all(|(_, shards)| *shards <= 1),
        "{draining:?}"
    );
}
