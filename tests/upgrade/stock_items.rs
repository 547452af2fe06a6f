//! Migration 0001's `stock-items` backfill: every pet whose item holds its
//! stock (1.0.0's form, and layout 1's for a new pet) moved to a stock item
//! of its own while orders, cancels and stock sets hit the same pets; one
//! holder per pet afterwards, its counts exact; a pet written the old way
//! after the backfill is left over for another pass, which `run` makes,
//! without holding up the switch; the switch serves them all.

use super::serving::{every_record, field_set};
use super::{old_table_with_new_indexes, on_layout, options, run_backfills, snapshot};
use crate::helpers::TestApp;
use crate::idempotency::proxy::{FaultMix, FaultProxy};
use aws_sdk_dynamodb::types::AttributeValue;
use petstore::db::{Item, Layout};
use petstore_admin::migrate::{self, backfills_done, Manifest, State};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

type Snapshot = HashMap<(String, String), Item>;

/// The stock each race pet is given, and set to again and again.
const GIVEN: u64 = 100;

fn number(item: &Item, name: &str) -> Option<u64> {
    item.get(name)?.as_n().ok()?.parse().ok()
}

fn text<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    item.get(name)?.as_s().ok().map(String::as_str)
}

fn of_kind<'a>(snapshot: &'a Snapshot, sk: &'a str) -> impl Iterator<Item = &'a Item> + 'a {
    snapshot.values().filter(move |i| text(i, "SK") == Some(sk))
}

/// Each pet's stock and open orders as its one holder has them, after
/// asserting the stock item's invariants (docs/upgrade.md, "Migration
/// 0001"): every pet has a stock item and its pet item keeps neither
/// stock, open orders nor an inventory entry; a stock item has its pet
/// item, the same status, and the inventory index's key alone.
fn assert_one_holder_each(snapshot: &Snapshot) -> BTreeMap<u64, (u64, u64)> {
    let mut held = BTreeMap::new();
    for pet in of_kind(snapshot, "PET") {
        let (pk, id) = (text(pet, "PK").unwrap_or_default(), number(pet, "id"));
        for moved in ["stock", "openOrders", "GSI5PK"] {
            assert!(!pet.contains_key(moved), "pet {pk} still has {moved}");
        }
        let stock = snapshot
            .get(&(pk.to_string(), "STOCK".to_string()))
            .unwrap_or_else(|| panic!("pet {pk} has no stock item"));
        assert_eq!(number(stock, "id"), id, "{pk}");
        assert_eq!(text(stock, "status"), text(pet, "status"), "{pk}");
        assert_eq!(text(stock, "GSI5PK"), Some(pk), "{pk}");
        for list in ["GSI1PK", "GSI2PK", "GSI3PK", "GSI4PK"] {
            assert!(!stock.contains_key(list), "{pk}'s stock item has {list}");
        }
        let counts = (
            number(stock, "stock").unwrap_or_else(|| panic!("{pk}: no stock")),
            number(stock, "openOrders").unwrap_or_else(|| panic!("{pk}: no openOrders")),
        );
        held.insert(id.unwrap_or_default(), counts);
    }
    for stock in of_kind(snapshot, "STOCK") {
        let pk = text(stock, "PK").unwrap_or_default().to_string();
        assert!(
            snapshot.contains_key(&(pk.clone(), "PET".to_string())),
            "a stock item without its pet: {pk}"
        );
    }
    held
}

/// Each pet's incomplete orders, as stored.
fn incomplete_orders(snapshot: &Snapshot) -> HashMap<u64, u64> {
    let mut open = HashMap::new();
    for order in of_kind(snapshot, "ORDER") {
        if order.get("complete") == Some(&AttributeValue::Bool(false)) {
            *open
                .entry(number(order, "petId").unwrap_or_default())
                .or_default() += 1;
        }
    }
    open
}

/// Units sold of each pet (open or complete orders: a cancel deletes its order).
fn units_in_orders(snapshot: &Snapshot) -> HashMap<u64, u64> {
    let mut units = HashMap::new();
    for order in of_kind(snapshot, "ORDER") {
        let pet = number(order, "petId").unwrap_or_default();
        *units.entry(pet).or_default() += number(order, "quantity").unwrap_or_default();
    }
    units
}

/// Pets whose pet item holds their stock.
fn old_form(snapshot: &Snapshot) -> BTreeSet<u64> {
    of_kind(snapshot, "PET")
        .filter(|pet| pet.contains_key("stock"))
        .filter_map(|pet| number(pet, "id"))
        .collect()
}

/// A shopper until `done` (and a few rounds at least): orders one unit of
/// each pet in turn and cancels it, so each shopper holds at most one unit
/// at a time and none at the end.
async fn order_and_cancel(
    shopper: TestApp,
    pets: Vec<u64>,
    done: Arc<AtomicBool>,
    ops: Arc<AtomicU64>,
) {
    let mut round = 0;
    while round < 2 * pets.len() || !done.load(Ordering::SeqCst) {
        let pet = pets[round % pets.len()];
        let placed = shopper
            .post("/store/orders", json!({ "petId": pet, "quantity": 1 }))
            .await;
        placed.assert_status(201);
        shopper
            .delete(&format!("/store/orders/{}", placed.id()))
            .await
            .assert_status(204);
        ops.fetch_add(2, Ordering::SeqCst);
        round += 1;
    }
}

/// Sets `pet`'s stock to [`GIVEN`].
async fn give_stock(staff: &TestApp, pet: u64) {
    staff
        .put(
            &format!("/store/inventory/{pet}"),
            json!({ "quantity": GIVEN }),
        )
        .await
        .assert_status(200);
}

/// Staff setting each pet's stock to [`GIVEN`] in turn until `done`.
async fn set_stock(staff: TestApp, pets: Vec<u64>, done: Arc<AtomicBool>, ops: Arc<AtomicU64>) {
    let mut round = 0;
    while round < 2 * pets.len() || !done.load(Ordering::SeqCst) {
        let pet = pets[round % pets.len()];
        give_stock(&staff, pet).await;
        ops.fetch_add(1, Ordering::SeqCst);
        round += 1;
    }
}

#[tokio::test]
async fn stock_items_moved_under_orders_cancels_and_stock_sets_leave_one_exact_holder_each() {
    let (staff, _) = old_table_with_new_indexes().await;
    let category = staff.create_category("Racing stock").await;
    // Created on layout 1: they hold their stock, as the fixture's 1.0.0 pets do.
    let mut race = Vec::new();
    for i in 0..16 {
        let pet = staff
            .create_pet(&format!("Racer {i}"), category, "available")
            .await;
        give_stock(&staff, pet).await;
        race.push(pet);
    }
    // The pet whose move is held until an order of it lands: no shopper
    // or stock setter touches it, so nothing can put back what the order
    // changed (its stock and open orders as read, the move's condition)
    // before the held move is sent.
    let forced = staff
        .create_pet("Forced racer", category, "available")
        .await;
    give_stock(&staff, forced).await;
    let before = snapshot(&staff).await;
    let pets = field_set(&every_record(&staff, "/pets?limit=100").await, "id");
    assert_eq!(old_form(&before), pets, "every pet holds its stock before");
    let shoppers = 6;
    let (done, ops) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
    );
    let mut tasks = Vec::new();
    for s in 0..shoppers {
        // Each starts at another pet, so the pets see orders all along.
        let mut pets = race.clone();
        pets.rotate_left(s * race.len() / shoppers);
        let (customer, done, ops) = (staff.as_customer().await, done.clone(), ops.clone());
        tasks.push(tokio::spawn(order_and_cancel(customer, pets, done, ops)));
    }
    for s in 0..2 {
        let mut pets = race.clone();
        pets.rotate_left(s * race.len() / 2 + 1);
        let (staff, done, ops) = (staff.clone(), done.clone(), ops.clone());
        tasks.push(tokio::spawn(set_stock(staff, pets, done, ops)));
    }
    // The backfill's every DynamoDB call held back up to 150 ms, so that
    // its moves span the writers' changes. That a move meets a write is
    // not left to those delays: the forced pet's move is held at the proxy
    // until an order of it has landed (stock and open orders changed under
    // it, and nobody else writes it), so its condition must fail and the
    // move be decided again from a fresh read.
    let delays = FaultMix {
        delay: 100,
        max_delay: Duration::from_millis(150),
        ..FaultMix::NONE
    };
    let proxy = FaultProxy::start(&staff.endpoint, delays, 47).await;
    let forced_key = format!(r#"{{"S":"PET#{forced}"}}"#);
    let mut held = proxy.hold_first(move |operation, body| {
        operation == "TransactWriteItems"
            && body.contains(r#"{"S":"STOCK"}"#)
            && body.contains(forced_key.as_str())
    });
    let racer = staff.as_customer().await;
    let met = tokio::spawn(async move {
        held.arrived(Duration::from_secs(120)).await;
        let pet = forced;
        let placed = racer
            .post("/store/orders", json!({ "petId": pet, "quantity": 1 }))
            .await;
        placed.assert_status(201);
        held.release();
        // Cancelled once the move has been decided again: one more
        // shopper's unit at most in the race pets' bounds below.
        (racer, pet, placed.id())
    });
    let migrator = staff.instance_reaching(&proxy.endpoint).await;
    let outcomes = run_backfills(&migrator, &options(40, 2, Some(4))).await;
    let (racer, met_pet, met_order) = met.await.expect("the forced writer ran");
    racer
        .delete(&format!("/store/orders/{met_order}"))
        .await
        .assert_status(204);
    done.store(true, Ordering::SeqCst);
    for task in tasks {
        task.await.expect("a writer ends");
    }
    let moved = outcomes
        .iter()
        .find(|o| o.backfill == "stock-items")
        .unwrap_or_else(|| panic!("no stock-items run: {outcomes:?}"));
    assert!(!moved.stopped, "{outcomes:?}");
    eprintln!(
        "stock-items under {} concurrent writes: {moved:?}",
        ops.load(Ordering::SeqCst)
    );
    assert_eq!(moved.changed, pets.len() as u64, "{moved:?}");
    // One transaction a pet moved, and one more for each move whose pet a
    // writer changed first (its condition failed: read again, decided
    // again); the held one at least, for the pet its forced order met.
    let moves: Vec<String> = proxy
        .calls()
        .into_iter()
        .filter(|c| c.operation == "TransactWriteItems" && c.body.contains(r#"{"S":"STOCK"}"#))
        .map(|c| c.body)
        .collect();
    let raced = (moves.len() as u64).saturating_sub(moved.changed);
    eprintln!(
        "stock-items: {} transactions for {} pets: {raced} races lost",
        moves.len(),
        moved.changed
    );
    let met_key = format!(r#"{{"S":"PET#{met_pet}"}}"#);
    let tries = moves.iter().filter(|b| b.contains(&met_key)).count();
    assert!(
        tries >= 2,
        "pet {met_pet}'s move met its order and was tried {tries} time(s)"
    );

    let after = snapshot(&staff).await;
    let held = assert_one_holder_each(&after);
    assert_eq!(held.keys().copied().collect::<BTreeSet<_>>(), pets);
    let open = incomplete_orders(&after);
    for (pet, (_, open_orders)) in &held {
        let stored = open.get(pet).copied().unwrap_or_default();
        assert_eq!(
            *open_orders, stored,
            "pet {pet}: openOrders against its orders"
        );
    }
    // The fixture's pets were given 50 each: what its orders hold is gone.
    let units = units_in_orders(&after);
    let fixture = |pet: &u64| !race.contains(pet) && *pet != forced;
    for (pet, (stock, _)) in held.iter().filter(|(pet, _)| fixture(pet)) {
        let sold = units.get(pet).copied().unwrap_or_default();
        assert_eq!(
            stock + sold,
            50,
            "pet {pet}: stock {stock}, {sold} in orders"
        );
    }
    // A race pet ends at its last set, plus the units of orders placed
    // before that set and cancelled after it: one a shopper at most.
    for pet in &race {
        let (stock, _) = held[pet];
        let most = GIVEN + shoppers as u64;
        assert!(
            (GIVEN..=most).contains(&stock),
            "pet {pet}: stock {stock}, not within {GIVEN}..={most}"
        );
    }
    // The forced pet's one order was cancelled: its stock is as given.
    assert_eq!(held[&forced].0, GIVEN, "the forced pet's stock");

    // The switch serves every pet from its stock item.
    let switched = on_layout(&staff, Layout::V2).await;
    let inventory = every_record(&switched, "/store/inventory?limit=100").await;
    let listed: BTreeMap<u64, u64> = inventory
        .iter()
        .filter_map(|e| Some((e["petId"].as_u64()?, e["quantity"].as_u64()?)))
        .collect();
    let stored: BTreeMap<u64, u64> = held.iter().map(|(id, (stock, _))| (*id, *stock)).collect();
    assert_eq!(listed, stored);
    let customer = switched.as_customer().await;
    let pet = race[0];
    let placed = customer
        .post("/store/orders", json!({ "petId": pet, "quantity": 1 }))
        .await;
    placed.assert_status(201);
    let entry = switched.get(&format!("/store/inventory/{pet}")).await;
    entry.assert_status(200);
    assert_eq!(entry.json()["quantity"].as_u64(), Some(held[&pet].0 - 1));
    customer
        .delete(&format!("/store/orders/{}", placed.id()))
        .await
        .assert_status(204);
    switched
        .put(&format!("/store/inventory/{pet}"), json!({ "quantity": 0 }))
        .await
        .assert_status(200);
    let sold = switched.get(&format!("/pets/{pet}")).await;
    assert_eq!(sold.json()["status"], "sold", "{}", sold.text());
    switched
        .delete(&format!("/pets/{}", race[1]))
        .await
        .assert_status(204);
    let created = switched
        .create_pet("After the switch", category, "available")
        .await;
    let last = snapshot(&switched).await;
    let held = assert_one_holder_each(&last);
    assert_eq!(held[&pet].0, 0);
    assert!(
        !held.contains_key(&race[1]),
        "a deleted pet's stock item is gone"
    );
    assert_eq!(held[&created], (1, 0), "a new pet's stock item");
}

#[tokio::test]
async fn a_pet_written_the_old_way_after_the_backfill_is_left_over_for_another_pass() {
    let manifest = Manifest::migration_0001().expect("the manifest");
    let (staff, _) = old_table_with_new_indexes().await;
    let changes = staff.app.db.unrecorded();
    let (client, table) = (changes.client(), changes.table());
    let stock_items = |plan: &[migrate::StepStatus]| {
        plan.iter()
            .find(|s| s.step == "stock-items")
            .map(|s| (s.state, s.left_over))
    };
    let plan = migrate::plan(client, table, &manifest)
        .await
        .expect("a plan");
    assert_eq!(stock_items(&plan), Some((State::Pending, false)));
    run_backfills(&staff, &options(10_000, 2, None)).await;
    let plan = migrate::plan(client, table, &manifest)
        .await
        .expect("a plan");
    assert!(backfills_done(&plan), "{plan:?}");

    // Layout 1 (until the switch) creates a pet that holds its stock.
    let category = staff.create_category("Late").await;
    let late = staff.create_pet("Late", category, "available").await;
    assert_eq!(old_form(&snapshot(&staff).await), BTreeSet::from([late]));
    let plan = migrate::plan(client, table, &manifest)
        .await
        .expect("a plan");
    // Left over for another pass; done as far as the switch is concerned
    // (layout 1 goes on writing such pets until it, and both layouts serve
    // them), so a store that keeps adding pets can still be switched.
    assert_eq!(stock_items(&plan), Some((State::Done, true)), "{plan:?}");
    assert!(backfills_done(&plan));
    assert_eq!(
        migrate::runnable(&plan),
        Ok(vec!["stock-items".to_string()])
    );

    // A new pass moves it, and only it.
    let again = run_backfills(&staff, &options(10_000, 2, None)).await;
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!((again[0].backfill, again[0].changed), ("stock-items", 1));
    let plan = migrate::plan(client, table, &manifest)
        .await
        .expect("a plan");
    assert_eq!(stock_items(&plan), Some((State::Done, false)), "{plan:?}");
    assert_eq!(migrate::runnable(&plan), Ok(vec![]));
    assert!(old_form(&snapshot(&staff).await).is_empty());
    assert_one_holder_each(&snapshot(&staff).await);
}
