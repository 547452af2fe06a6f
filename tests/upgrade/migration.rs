//! Migration 0001's backfills on the last release's table: exact under
//! concurrent shoppers, a no-op the second time, resumable when stopped;
//! afterwards every list on layout 2 is complete, with `lapsesAt`.

use super::serving::{assert_every_list_complete, every_record, field_set};
use super::{old_table, old_table_with_new_indexes, on_layout, options, run_backfills, snapshot};
use crate::data::check::{assert_sound, check};
use crate::helpers::TestApp;
use aws_sdk_dynamodb::types::AttributeValue;
use petstore::db::{Item, Layout};
use petstore_admin::migrate::{self, backfills_done, Manifest, State};
use petstore_admin::scan::ProgressBar;
use serde_json::json;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

type Snapshot = HashMap<(String, String), Item>;

fn number(item: &Item, name: &str) -> Option<u64> {
    item.get(name)?.as_n().ok()?.parse().ok()
}

fn orders(snapshot: &Snapshot) -> impl Iterator<Item = &Item> {
    snapshot
        .values()
        .filter(|i| i.get("SK") == Some(&AttributeValue::S("ORDER".into())))
}

fn open(item: &Item) -> bool {
    item.get("complete") == Some(&AttributeValue::Bool(false))
}

/// Stock is exact: each pet's stock (on its stock item once the
/// `stock-items` backfill moved it, else on its pet item) plus the units of
/// its orders still stored (open or complete; a cancel returns them) is
/// what it was given.
fn assert_stock_exact(snapshot: &Snapshot, given: u64) {
    let mut units: HashMap<u64, u64> = HashMap::new();
    for order in orders(snapshot) {
        let pet = number(order, "petId").unwrap_or_default();
        *units.entry(pet).or_default() += number(order, "quantity").unwrap_or_default();
    }
    for pet in snapshot
        .values()
        .filter(|i| i.get("SK") == Some(&AttributeValue::S("PET".into())))
    {
        let id = number(pet, "id").unwrap_or_default();
        let pk = pet.get("PK").and_then(|v| v.as_s().ok()).cloned();
        let stock_item = snapshot.get(&(pk.unwrap_or_default(), "STOCK".to_string()));
        let stock = number(stock_item.unwrap_or(pet), "stock").unwrap_or_default();
        let held = units.get(&id).copied().unwrap_or_default();
        assert_eq!(
            stock + held,
            given,
            "pet {id}: stock {stock}, {held} units in orders"
        );
    }
}

/// The fixture's open orders, owner and all, as stored now.
fn open_orders(snapshot: &Snapshot) -> Vec<(u64, Option<u64>)> {
    orders(snapshot)
        .filter(|o| open(o))
        .map(|o| (number(o, "id").unwrap_or_default(), number(o, "ownerId")))
        .collect()
}

/// Ends the old open orders as customers and staff do while the backfill
/// runs: a third cancelled by their owner, a third completed by staff.
async fn end_old_orders(staff: TestApp, keys: HashMap<u64, String>, old: Vec<(u64, Option<u64>)>) {
    for (i, (id, owner)) in old.into_iter().enumerate() {
        let owner_app = owner
            .and_then(|o| keys.get(&o))
            .map_or(staff.clone(), |key| staff.with_key(key.clone()));
        let answer = match i % 3 {
            0 => owner_app.delete(&format!("/store/orders/{id}")).await,
            1 => {
                staff
                    .patch(&format!("/store/orders/{id}"), json!({ "complete": true }))
                    .await
            }
            _ => continue,
        };
        assert!(
            matches!(answer.status, 200 | 204),
            "{}: {}",
            answer.status,
            answer.text()
        );
    }
}

/// A shopper until `done` (and at least a few rounds): places an order,
/// cancels every other one, has staff complete the rest. Every answer is
/// one the contract gives, never a 5xx; a capped key's 409 is an answer.
async fn shop(shopper: TestApp, staff: TestApp, pets: Vec<u64>, done: Arc<AtomicBool>) -> usize {
    let mut rounds = 0;
    while rounds < 4 || !done.load(Ordering::SeqCst) {
        let pet = pets[rounds % pets.len()];
        let placed = shopper
            .post("/store/orders", json!({ "petId": pet, "quantity": 1 }))
            .await;
        if placed.status == 409 {
            placed.assert_error(409, "TOO_MANY_OPEN_ORDERS");
        } else {
            placed.assert_status(201);
            let id = placed.id();
            if rounds % 2 == 0 {
                shopper
                    .delete(&format!("/store/orders/{id}"))
                    .await
                    .assert_status(204);
            } else {
                let path = format!("/store/orders/{id}");
                staff
                    .patch(&path, json!({ "complete": true }))
                    .await
                    .assert_status(200);
            }
        }
        rounds += 1;
    }
    rounds
}

#[tokio::test]
async fn the_backfills_under_concurrent_shoppers_leave_every_count_exact() {
    let (staff, keys) = old_table_with_new_indexes().await;
    let before = snapshot(&staff).await;
    let pets: Vec<u64> = field_set(&every_record(&staff, "/pets?limit=100").await, "id")
        .into_iter()
        .collect();
    let owners = HashMap::from([
        (keys.free.1, keys.free.0.clone()),
        (keys.pro.1, keys.pro.0.clone()),
        (keys.staff.1, keys.staff.0.clone()),
    ]);
    let done = Arc::new(AtomicBool::new(false));
    let mut shoppers = vec![tokio::spawn(end_old_orders(
        staff.clone(),
        owners,
        open_orders(&before),
    ))];
    let customers = [
        staff.with_key(keys.free.0.clone()),
        staff.with_key(keys.pro.0.clone()),
        staff.as_customer().await,
        staff.as_customer().await,
    ];
    for customer in customers {
        let (staff, pets, done) = (staff.clone(), pets.clone(), done.clone());
        shoppers.push(tokio::spawn(async move {
            shop(customer, staff, pets, done).await;
        }));
    }
    // Throttled, so the backfill spans the shoppers' work.
    let started = Instant::now();
    let outcomes = run_backfills(&staff, &options(40, 2, Some(8))).await;
    let backfill_seconds = started.elapsed().as_secs_f64();
    done.store(true, Ordering::SeqCst);
    for shopper in shoppers {
        shopper.await.expect("a shopper ends");
    }
    assert!(outcomes.iter().all(|o| !o.stopped), "{outcomes:?}");
    eprintln!("upgrade timings: backfills {backfill_seconds:.2} s: {outcomes:?}");

    assert_sound(&staff).await;
    let after = snapshot(&staff).await;
    assert_stock_exact(&after, 50);
    let free_open = orders(&after)
        .filter(|o| open(o) && number(o, "ownerId") == Some(keys.free.1))
        .count();
    assert!(
        free_open <= 10,
        "the free key holds {free_open} open orders"
    );

    // The old code's lists (a canary's old version) still answer.
    every_record(&staff, "/store/orders?limit=100").await;
    // The switch: layout 2 lists every order there is, each open one with its lapse.
    let switched = on_layout(&staff, Layout::V2).await;
    let listed = every_record(&switched, "/store/orders?complete=false&limit=100").await;
    let stored: BTreeSet<u64> = orders(&after)
        .filter(|o| open(o))
        .filter_map(|o| number(o, "id"))
        .collect();
    assert_eq!(field_set(&listed, "id"), stored);
    let now = chrono::Utc::now().to_rfc3339();
    for order in &listed {
        let lapses = order["lapsesAt"]
            .as_str()
            .unwrap_or_else(|| panic!("no lapsesAt: {order}"));
        assert!(
            lapses > now.as_str(),
            "an old order lapses at once: {order}"
        );
    }
    let all = every_record(&switched, "/store/orders?limit=100").await;
    assert_eq!(field_set(&all, "id").len(), orders(&after).count());
}

#[tokio::test]
async fn a_second_run_changes_nothing() {
    let (staff, _) = old_table_with_new_indexes().await;
    let first = run_backfills(&staff, &options(10_000, 4, None)).await;
    assert_eq!(first.len(), 3);
    let migrated = snapshot(&staff).await;
    // Done is done: nothing is pending.
    assert!(run_backfills(&staff, &options(10_000, 4, None))
        .await
        .is_empty());
    // Run from scratch (progress items deleted): every item is skipped.
    for name in ["holds", "name-claims", "stock-items"] {
        staff
            .app
            .db
            .client()
            .delete_item()
            .table_name(staff.app.db.table())
            .key("PK", AttributeValue::S("MIGRATION#0001".into()))
            .key("SK", AttributeValue::S(format!("BACKFILL#{name}")))
            .send()
            .await
            .expect("the progress item is deleted");
    }
    let again = run_backfills(&staff, &options(10_000, 4, None)).await;
    assert!(again.iter().all(|o| o.changed == 0), "{again:?}");
    assert_eq!(snapshot(&staff).await, migrated);
    assert_sound(&staff).await;
}

#[tokio::test]
async fn a_run_refused_before_its_indexes_and_stopped_midway_resumes() {
    let manifest = Manifest::migration_0001().expect("the manifest");
    let bar = ProgressBar::hidden();
    let (before_step_1, _) = old_table().await;
    let changes = before_step_1.app.db.unrecorded();
    let refused = migrate::run(&changes, &manifest, None, &options(1_000, 1, None), &bar).await;
    let refused = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(refused.contains("DataLayoutStep=1"), "{refused}");

    let (staff, keys) = old_table_with_new_indexes().await;
    let changes = staff.app.db.unrecorded();
    let stopping = super::backfill_options_stopping(1, 5, 2);
    let stopped = run_backfills(&staff, &stopping).await;
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert!(stopped[0].stopped && stopped[0].changed < 18, "{stopped:?}");
    let (client, table) = (changes.client(), changes.table());
    let plan = migrate::plan(client, table, &manifest)
        .await
        .expect("a plan");
    assert!(!backfills_done(&plan));
    assert!(plan
        .iter()
        .any(|s| s.step == "holds" && s.state == State::InProgress));

    let resumed = run_backfills(&staff, &options(1_000, 4, None)).await;
    let holds = &resumed[0];
    // The free key's 10, the pro key's 6, staff's 2: each counted once
    // over both runs (the counts are the progress item's, kept across them).
    assert_eq!(holds.changed, 18, "{stopped:?} {resumed:?}");
    assert_eq!(
        resumed[1].changed, 2,
        "Ｄｏｇｓ and Große Katzen: {resumed:?}"
    );
    assert_eq!(resumed[2].changed, 15, "the fixture's pets: {resumed:?}");
    let plan = migrate::plan(client, table, &manifest)
        .await
        .expect("a plan");
    assert!(backfills_done(&plan), "{plan:?}");
    assert_sound(&staff).await;
    let report = check(&staff).await;
    assert!(report.sound());
    assert_every_list_complete(&on_layout(&staff, Layout::V2).await, &keys).await;
}
