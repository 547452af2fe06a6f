//! Bounded pages (contract section 2): a page of any list makes at most
//! `PAGE_ROUND_TRIPS` round trips to DynamoDB however sparse its filters
//! match, and following the `next` links visits every match exactly once.
//!
//! Each list is read through a counting proxy between the service and
//! DynamoDB Local, over sparse data (a few matches among many entries, or
//! none) and dense data, page by page, counting the `Query` calls of each
//! (the inventory's `Scan` calls).

use crate::helpers::{TestApp, TestResponse};
use crate::idempotency::proxy::{FaultMix, FaultProxy};
use petstore::db::query::PAGE_ROUND_TRIPS;
use petstore::db::Shards;
use serde_json::json;

/// Pets in the category the pet lists read: enough that a sparse page read
/// a page's worth at a time would take many more round trips than allowed.
const PETS: usize = 60;
/// Orders of one pet the order lists read.
const ORDERS: usize = 36;

/// An app reading DynamoDB through a counting proxy, with `app`'s key.
async fn counted(app: &TestApp) -> (TestApp, FaultProxy) {
    let proxy = FaultProxy::start(&app.endpoint, FaultMix::NONE, 0).await;
    (app.instance_reaching(&proxy.endpoint).await, proxy)
}

/// The DynamoDB calls of a list page: its queries (or the inventory's
/// scans), and its batch reads.
fn list_calls(proxy: &FaultProxy) -> (u64, u64) {
    let reads = proxy.calls_to("Query") + proxy.calls_to("Scan");
    (reads, proxy.calls_to("BatchGetItem"))
}

/// What following the links from a first page saw.
struct Walk {
    /// Every record's `field`, in the order served.
    seen: Vec<u64>,
    /// Each page's `Query` (or `Scan`) calls.
    queries: Vec<u64>,
    /// Each page's `BatchGetItem` calls.
    batches: Vec<u64>,
    /// Each page's size.
    sizes: Vec<usize>,
}

/// Follows the next links from `first` through `app`, whose DynamoDB calls
/// `proxy` counts.
async fn walk(app: &TestApp, proxy: &FaultProxy, first: &str, field: &str) -> Walk {
    let mut walk = Walk {
        seen: Vec::new(),
        queries: Vec::new(),
        batches: Vec::new(),
        sizes: Vec::new(),
    };
    let mut next = Some(first.to_string());
    while let Some(url) = next {
        let (queries, batches) = list_calls(proxy);
        let page = app.get(&url).await;
        page.assert_status(200);
        let (queries_after, batches_after) = list_calls(proxy);
        let ids = field_of(&page, field);
        walk.queries.push(queries_after - queries);
        walk.batches.push(batches_after - batches);
        walk.sizes.push(ids.len());
        walk.seen.extend(ids);
        next = page.next_page();
        assert!(walk.sizes.len() <= 400, "paging {first} must end");
    }
    walk
}

fn field_of(page: &TestResponse, field: &str) -> Vec<u64> {
    let body = page.json();
    body.as_array()
        .unwrap_or_else(|| panic!("a list is an array: {body}"))
        .iter()
        .filter_map(|record| record[field].as_u64())
        .collect()
}

/// Paging `first` sees exactly `expected`, each page within `round_trips`
/// round trips of `shards` queries each, and at most `limit` records.
async fn assert_bounded(
    (app, proxy): &(TestApp, FaultProxy),
    first: &str,
    field: &str,
    expected: &[u64],
    (limit, shards, round_trips): (usize, u16, usize),
) -> Walk {
    let walk = walk(app, proxy, first, field).await;
    assert_eq!(walk.seen, expected, "{first}: every match once, in order");
    assert_within(&walk, first, (limit, shards, round_trips));
    walk
}

/// Each page of `walk` within `round_trips` round trips of `shards` queries
/// each, no batch read, and at most `limit` records.
fn assert_within(walk: &Walk, first: &str, (limit, shards, round_trips): (usize, u16, usize)) {
    let most = (round_trips * usize::from(shards)) as u64;
    assert!(
        walk.queries.iter().all(|q| *q >= 1 && *q <= most),
        "{first}: each page within {round_trips} round trips of {shards} queries: {:?}",
        walk.queries
    );
    assert!(
        walk.sizes.iter().all(|s| *s <= limit),
        "{first}: {:?}",
        walk.sizes
    );
    assert!(
        walk.batches.iter().all(|b| *b == 0),
        "{first}: no batch read: {:?}",
        walk.batches
    );
}

/// The ids in `ids` where `keep`, newest (highest) first when `newest_first`.
fn ordered(ids: &[u64], newest_first: bool) -> Vec<u64> {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    if newest_first {
        ids.reverse();
    }
    ids
}

/// A category of [`PETS`] pets, three of them sold, the others available:
/// the category's id, its available pets and its sold ones.
async fn sparse_category(app: &TestApp) -> (u64, Vec<u64>, Vec<u64>) {
    let category = app.create_category("Many").await;
    let (mut available, mut sold) = (Vec::new(), Vec::new());
    for i in 0..PETS {
        let status = if i % 20 == 13 { "sold" } else { "available" };
        let id = app.create_pet(&format!("Pet {i}"), category, status).await;
        match status {
            "sold" => sold.push(id),
            _ => available.push(id),
        }
    }
    (category, available, sold)
}

#[tokio::test]
async fn pet_lists_page_within_bounded_round_trips_however_sparse_their_filters() {
    // Given a category of 60 pets: 57 available, 3 sold, none pending
    let app = TestApp::spawn().await;
    let (category, available, sold) = sparse_category(&app).await;
    let customer = counted(&app.as_customer().await).await;
    let pet_shards = Shards::default().pets;
    let one = (1, 1, PAGE_ROUND_TRIPS);

    // When a customer pages through the sold pets of the category, one at a
    // time: 3 matches among 60, each page in at most 10 round trips
    let sparse = format!("/pets?categoryId={category}&status=sold&limit=1");
    let walk = assert_bounded(&customer, &sparse, "id", &sold, one).await;
    // (the first sold pet is the 14th: the first page ends early, empty)
    assert!(walk.sizes.contains(&0), "{:?}", walk.sizes);

    // And through the pending ones: none; pages empty but bounded
    let none = format!("/pets?categoryId={category}&status=pending&limit=1");
    assert_bounded(&customer, &none, "id", &[], one).await;

    // And the available ones, dense: every page but the last full (a sold
    // pet among a page's entries takes a second round trip)
    let dense = format!("/pets?categoryId={category}&status=available&limit=7");
    let walk = assert_bounded(&customer, &dense, "id", &available, (7, 1, 2)).await;
    assert!(
        walk.sizes.iter().rev().skip(1).all(|s| *s == 7),
        "{:?}",
        walk.sizes
    );
    // Unfiltered: one round trip a page.
    let all = ordered(&[available.clone(), sold.clone()].concat(), false);
    let unfiltered = format!("/pets?categoryId={category}&limit=9");
    assert_bounded(&customer, &unfiltered, "id", &all, (9, 1, 1)).await;

    // And the sharded lists: all pets, pets by status (one round of a
    // query per shard when dense)
    assert_bounded(&customer, "/pets?limit=8", "id", &all, (8, pet_shards, 1)).await;
    let by_status = "/pets?status=sold&limit=1";
    assert_bounded(&customer, by_status, "id", &sold, (1, pet_shards, 1)).await;
}

#[tokio::test]
async fn inventory_by_status_pages_within_bounded_round_trips() {
    // Given 60 pets, 3 of them sold
    let app = TestApp::spawn().await;
    let (_, available, sold) = sparse_category(&app).await;
    let (customer, proxy) = &counted(&app.as_customer().await).await;

    // Then each status's inventory pages through every entry once (in the
    // inventory index's order, not by id), each page within its round trips
    // of one scan and no batch read of the stock
    let bounds = |limit| (limit, 1, PAGE_ROUND_TRIPS);
    for (status, pets, limit) in [("sold", &sold, 1), ("available", &available, 10)] {
        let first = format!("/store/inventory?status={status}&limit={limit}");
        let mut walk = walk(customer, proxy, &first, "petId").await;
        assert_within(&walk, &first, bounds(limit));
        let served = walk.seen.len();
        walk.seen.sort_unstable();
        walk.seen.dedup();
        assert_eq!(served, walk.seen.len(), "{first}: no entry twice");
        assert_eq!(walk.seen, ordered(pets, false), "{first}: every entry");
    }
    let first = "/store/inventory?status=pending&limit=5";
    let walk = walk(customer, proxy, first, "petId").await;
    assert_within(&walk, first, bounds(5));
    assert!(walk.seen.is_empty(), "{first}: {:?}", walk.seen);
}

/// Orders of a customer: [`ORDERS`] of one pet, two of them completed by
/// staff, and two of another pet among them. The pet, the other pet, the
/// orders of each, and the completed ones.
struct Orders {
    pet: u64,
    other_pet: u64,
    of_pet: Vec<u64>,
    of_other: Vec<u64>,
    completed: Vec<u64>,
}

async fn place_orders(app: &TestApp, customer: &TestApp) -> Orders {
    let category = app.create_category("Stocked").await;
    let pet = app.create_pet("Popular", category, "available").await;
    let other_pet = app.create_pet("Rare", category, "available").await;
    for id in [pet, other_pet] {
        let path = format!("/store/inventory/{id}");
        app.put(&path, json!({ "quantity": 1000 }))
            .await
            .assert_status(200);
    }
    let mut orders = Orders {
        pet,
        other_pet,
        of_pet: Vec::new(),
        of_other: Vec::new(),
        completed: Vec::new(),
    };
    for i in 0..ORDERS {
        let for_other = i % 16 == 5;
        let body = json!({ "petId": if for_other { other_pet } else { pet } });
        let placed = customer.post("/store/orders", body).await;
        placed.assert_status(201);
        let id = placed.id();
        match for_other {
            true => orders.of_other.push(id),
            false => orders.of_pet.push(id),
        }
        if i % 16 == 9 {
            let path = format!("/store/orders/{id}");
            app.patch(&path, json!({ "complete": true }))
                .await
                .assert_status(200);
            orders.completed.push(id);
        }
    }
    orders
}

#[tokio::test]
async fn order_lists_page_within_bounded_round_trips_however_sparse_their_filters() {
    // Given a customer's 36 orders: 34 of one pet (2 of them complete), 2 of another
    let app = TestApp::spawn().await;
    let customer = app.as_customer().await;
    let orders = place_orders(&app, &customer).await;
    let staff = counted(&app).await;
    let customer = counted(&customer).await;
    let (pet, other) = (orders.pet, orders.other_pet);
    let order_shards = Shards::default().orders;
    let open: Vec<u64> = orders
        .of_pet
        .iter()
        .copied()
        .filter(|id| !orders.completed.contains(id))
        .collect();
    let one = (1, 1, PAGE_ROUND_TRIPS);

    // Then staff's lists of the pet's orders, by completion: sparse and dense
    let sparse = format!("/store/orders?petId={pet}&complete=true&limit=1");
    let completed = ordered(&orders.completed, true);
    assert_bounded(&staff, &sparse, "id", &completed, one).await;
    let dense = format!("/store/orders?petId={pet}&complete=false&limit=6");
    assert_bounded(&staff, &dense, "id", &ordered(&open, true), (6, 1, 2)).await;

    // And the customer's own orders, filtered: sparse, none, dense
    let mine = format!("/store/orders?petId={other}&limit=1");
    assert_bounded(
        &customer,
        &mine,
        "id",
        &ordered(&orders.of_other, true),
        one,
    )
    .await;
    let done = "/store/orders?complete=true&limit=1";
    assert_bounded(&customer, done, "id", &completed, one).await;
    let none = format!("/store/orders?petId={other}&complete=true&limit=1");
    assert_bounded(&customer, &none, "id", &[], one).await;
    let dense = format!("/store/orders?petId={pet}&complete=false&limit=5");
    assert_bounded(&customer, &dense, "id", &ordered(&open, true), (5, 1, 2)).await;

    // And staff's sharded lists: every order, the complete ones
    let all = ordered(&[orders.of_pet.clone(), orders.of_other].concat(), true);
    assert_bounded(
        &staff,
        "/store/orders?limit=10",
        "id",
        &all,
        (10, order_shards, 1),
    )
    .await;
    let sharded = "/store/orders?complete=true&limit=1";
    assert_bounded(&staff, sharded, "id", &completed, (1, order_shards, 1)).await;
}

/// What DynamoDB bills the queries of a staff order page at the defaults:
/// each shard's first query, as the page sends it, asked again with
/// `ReturnConsumedCapacity`.
async fn read_units_of_a_staff_order_page(app: &TestApp, limit: usize) -> f64 {
    let db = &app.app.db;
    let shards = Shards::default().orders;
    let entries = petstore::db::shards::first_round_entries(limit, usize::from(shards));
    let mut units = 0.0;
    for shard in 0..shards {
        let out = db
            .client()
            .query()
            .table_name(db.table())
            .index_name("GSI1v2")
            .key_condition_expression("GSI1PK = :pk")
            .expression_attribute_values(
                ":pk",
                aws_sdk_dynamodb::types::AttributeValue::S(format!("ORDER#{shard}")),
            )
            .scan_index_forward(false)
            .limit(i32::try_from(entries).unwrap_or(i32::MAX))
            .return_consumed_capacity(aws_sdk_dynamodb::types::ReturnConsumedCapacity::Total)
            .send()
            .await
            .expect("query a shard");
        units += out
            .consumed_capacity
            .and_then(|c| c.capacity_units)
            .unwrap_or(0.0);
    }
    units
}

#[tokio::test]
async fn a_staff_order_page_at_the_default_order_rate_is_five_calls_and_at_most_two_and_a_half_read_units(
) {
    // Given a store at the template's default OrderRate (4 order shards)
    // with many more orders than a page
    let app = TestApp::spawn().await;
    let category = app.create_category("Busy").await;
    let pet = app.create_pet("Popular", category, "available").await;
    app.put(
        &format!("/store/inventory/{pet}"),
        json!({ "quantity": 1000 }),
    )
    .await
    .assert_status(200);
    for _ in 0..80 {
        // Staff's orders: counted, never capped by a plan's holds.
        app.post("/store/orders", json!({ "petId": pet }))
            .await
            .assert_status(201);
    }
    let (staff, proxy) = counted(&app).await;
    staff.get("/store/orders?limit=1").await.assert_status(200); // the key, cached

    // When staff reads a page of 20
    let before = proxy.calls().len();
    let page = staff.get("/store/orders?limit=20").await;
    page.assert_status(200);
    let calls: Vec<String> = proxy.calls()[before..]
        .iter()
        .map(|call| call.operation.clone())
        .collect();

    // Then it is 20 orders for 4 queries and the counter's write: 5 calls,
    // and DynamoDB bills the queries at most 2.5 read units
    assert_eq!(field_of(&page, "id").len(), 20);
    assert_eq!(calls.len(), 5, "{calls:?}");
    let units = read_units_of_a_staff_order_page(&app, 20).await;
    assert!(units <= 2.5, "{units} read units");
}
