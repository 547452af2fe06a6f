//! Shoppers retrying through database faults: with `Idempotency-Key`, every
//! change takes effect once, however often it is sent.
//!
//! The service reaches DynamoDB Local through the seeded fault [`proxy`]
//! (45% of calls: connections reset before forwarding and after DynamoDB
//! answered, throttles, 500s, delays), and its SDK retries as it would in
//! Lambda. Customers place orders, then cancel them, or have staff complete
//! them, each change with a key of its own, retried as docs/api.md,
//! "Retrying a change safely" tells a client to: after `Retry-After` on a
//! 503 or a 409 `IDEMPOTENCY_KEY_IN_USE`,
//! after a short pause when the answer was lost (the shopper drops some
//! answers on purpose), sometimes twice at once. Afterwards the store must hold exactly
//! the orders the shoppers were given, as they left them, with the stock
//! conserved and the pets' statuses following it, no answer was a 5xx
//! other than 503, and `petstore-admin data check` finds the table sound.
//!
//! `IDEMPOTENCY_FAULT_SEED` changes the seed (the proxy's and the shoppers').
//! The same shoppers without keys, `cargo test -p petstore-tests --test api
//! -- --ignored --nocapture without_keys`, show what the keys prevent.

use super::proxy::{FaultMix, FaultProxy};
use super::shoppers::{Fate, Keys, Log, Placed, Shopper};
use super::stocked_pet;
use crate::helpers::TestApp;
use futures::future::join_all;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

const SEED: u64 = 20_260_701;
const MIX: FaultMix = FaultMix {
    reset_before: 10,
    reset_after: 10,
    throttle: 10,
    server_error: 8,
    delay: 7,
    max_delay: Duration::from_millis(200),
};
const SHOPPERS: usize = 8;
const PETS: usize = 3;
const STOCK: u64 = 10;

/// The store, its pets, and shoppers who reach it through the fault proxy.
pub(crate) async fn run_shoppers(keys: Keys) -> (TestApp, Vec<u64>, Vec<Log>, String) {
    let run = run_shoppers_with(keys, None).await;
    (run.staff, run.pets, run.logs, run.summary)
}

/// What a run left: the store, its pets, what each shopper saw, a summary,
/// and the shoppers' key identities.
pub(crate) struct Run {
    pub staff: TestApp,
    pub pets: Vec<u64>,
    pub logs: Vec<Log>,
    pub summary: String,
    pub customers: Vec<u64>,
}

/// As [`run_shoppers`]; with `sweep_at`, the events function's hold sweep
/// also runs through the fault proxy all along, as if at that instant (so
/// every hold is due as soon as it is placed, and lapses race the shoppers'
/// cancels and completions).
pub(crate) async fn run_shoppers_with(
    keys: Keys,
    sweep_at: Option<chrono::DateTime<chrono::Utc>>,
) -> Run {
    let seed = std::env::var("IDEMPOTENCY_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    let staff = TestApp::spawn().await;
    let mut pets = Vec::new();
    for _ in 0..PETS {
        pets.push(stocked_pet(&staff, STOCK).await);
    }
    let proxy = FaultProxy::start(&staff.endpoint, MIX, seed).await;
    let faulty = staff.instance_reaching(&proxy.endpoint).await;
    let mut shoppers = Vec::new();
    let mut customers = Vec::new();
    for n in 0..SHOPPERS {
        let customer = staff.as_customer().await;
        customers.push(customer.key_id);
        let customer_key = customer.api_key.clone().unwrap_or_default();
        shoppers.push(Shopper::new(
            faulty.with_key(customer_key),
            faulty.clone(),
            keys,
            seed ^ (n as u64 + 1),
            format!("shopper{n}"),
        ));
    }
    let started = Instant::now();
    let shopping = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sweeper =
        sweep_at.map(|at| tokio::spawn(sweep_while(faulty.clone(), at, shopping.clone())));
    let runs = shoppers
        .into_iter()
        .map(|shopper| tokio::spawn(shopper.shop(pets.clone())));
    let logs: Vec<Log> = join_all(runs)
        .await
        .into_iter()
        .map(|r| r.expect("shopper ran"))
        .collect();
    shopping.store(false, std::sync::atomic::Ordering::Relaxed);
    let sweeps = match sweeper {
        Some(sweeper) => sweeper.await.expect("the sweeper ran"),
        None => String::new(),
    };
    let summary = format!(
        "seed {seed}, {SHOPPERS} shoppers, {:.1} s; proxy: {}{sweeps}",
        started.elapsed().as_secs_f64(),
        proxy.counts().summary()
    );
    Run {
        staff,
        pets,
        logs,
        summary,
        customers,
    }
}

/// Sweeps holds through `faulty` as if `at`, again and again while the
/// shoppers shop (a failed sweep is simply run again, as the next scheduled
/// one would), then once more until one completes; says what it did.
async fn sweep_while(
    faulty: TestApp,
    at: chrono::DateTime<chrono::Utc>,
    shopping: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> String {
    let (mut lapsed, mut failed) = (0, 0);
    loop {
        let still_shopping = shopping.load(std::sync::atomic::Ordering::Relaxed);
        match events::holds::sweep(&faulty.app.db, at).await {
            Ok(swept) => {
                lapsed += swept.lapsed;
                if !still_shopping {
                    break;
                }
            }
            Err(_) => failed += 1,
        }
        // A quarter second apart: often enough that lapses race the shoppers,
        // seldom enough that the sweeps do not crowd them out of the proxy.
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    format!("; sweeps: {lapsed} holds lapsed, {failed} sweeps cut short by a fault")
}

/// Each pet's stored orders, as (id → (quantity, complete)).
async fn stored_orders(staff: &TestApp, pet: u64) -> BTreeMap<u64, (u64, bool)> {
    let orders = staff
        .get(&format!("/store/orders?petId={pet}&limit=100"))
        .await;
    orders.assert_status(200);
    assert!(orders.next_page().is_none(), "one page holds them all");
    let orders = orders.json();
    orders
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            let id = o["id"].as_u64().unwrap_or_default();
            let quantity = o["quantity"].as_u64().unwrap_or_default();
            (id, (quantity, o["complete"] == true))
        })
        .collect()
}

fn describe(logs: &[Log], summary: &str) -> String {
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    for log in logs {
        for (status, count) in &log.statuses {
            *statuses.entry(*status).or_default() += count;
        }
    }
    let sum = |f: fn(&Log) -> usize| logs.iter().map(f).sum::<usize>();
    format!(
        "{summary}\nanswers by status {statuses:?}; {} replays, {} answers lost on purpose, \
         {} changes sent twice at once; {} orders placed, {} refused for stock",
        sum(|l| l.replays),
        sum(|l| l.lost),
        sum(|l| l.sent_twice),
        sum(|l| l.placed.len()),
        sum(|l| l.refused)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_database_faults_every_retried_change_takes_effect_once() {
    let (staff, pets, logs, summary) = run_shoppers(Keys::Sent).await;
    let report = describe(&logs, &summary);
    println!("{report}");
    let violations: Vec<&String> = logs.iter().flat_map(|l| &l.violations).collect();
    assert!(violations.is_empty(), "{violations:#?}\n{report}");

    for pet in pets {
        let placed: Vec<&Placed> = logs
            .iter()
            .flat_map(|l| &l.placed)
            .filter(|p| p.pet == pet)
            .collect();
        let stored = stored_orders(&staff, pet).await;
        // Exactly the orders the shoppers were given and kept: none twice, none lost
        let given: BTreeSet<u64> = placed
            .iter()
            .filter(|p| p.fate != Fate::Cancelled)
            .map(|p| p.id)
            .collect();
        let held: BTreeSet<u64> = stored.keys().copied().collect();
        assert_eq!(
            held, given,
            "pet {pet}: stored orders are the ones given\n{report}"
        );
        for order in placed.iter().filter(|p| p.fate != Fate::Cancelled) {
            let (quantity, complete) = stored[&order.id];
            assert_eq!(quantity, order.quantity, "order {}", order.id);
            assert_eq!(
                complete,
                order.fate == Fate::Completed,
                "order {}",
                order.id
            );
        }
        // The stock is conserved, and the pet's status follows it
        let inventory = staff.get(&format!("/store/inventory/{pet}")).await.json();
        let in_stock = inventory["quantity"].as_u64().unwrap_or(u64::MAX);
        let ordered: u64 = stored.values().map(|(quantity, _)| quantity).sum();
        assert_eq!(
            in_stock + ordered,
            STOCK,
            "pet {pet}: stock {in_stock} + ordered {ordered}\n{report}"
        );
        let open = stored.values().any(|(_, complete)| !complete);
        let status = match (in_stock, open) {
            (1.., _) => "available",
            (0, true) => "pending",
            (0, false) => "sold",
        };
        assert_eq!(
            inventory["status"], status,
            "pet {pet}: {inventory}\n{report}"
        );
    }
    // And every invariant of the table holds (`petstore-admin data check`)
    crate::data::check::assert_sound(&staff).await;
}

/// Not a check: the same shoppers without keys, to see what keys prevent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a test: run it with --ignored --nocapture"]
async fn without_keys_retried_orders_are_placed_twice() {
    let (staff, pets, logs, summary) = run_shoppers(Keys::NotSent).await;
    let given: BTreeSet<u64> = logs.iter().flat_map(|l| &l.placed).map(|p| p.id).collect();
    let mut stored = 0;
    let mut never_given = 0;
    for pet in pets {
        let orders = stored_orders(&staff, pet).await;
        stored += orders.len();
        never_given += orders.keys().filter(|id| !given.contains(id)).count();
    }
    println!(
        "{}\nwithout keys: {stored} orders stored, {never_given} of them never given to a shopper",
        describe(&logs, &summary)
    );
}
