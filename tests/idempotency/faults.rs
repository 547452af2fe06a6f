//! Shoppers retrying through database faults: with `Idempotency-Key`, every
//! change takes effect once, however often it is sent.
//!
//! The service reaches DynamoDB Local through the seeded fault [`proxy`]
//! (45% of calls: connections reset before forwarding and after DynamoDB
//! answered, throttles, 500s, delays), and its SDK retries as it would in
//! Lambda. Customers place orders, then cancel them, or have staff complete
//! them, each change with a key of its own, retried as the README tells a
//! client to: after `Retry-After` on a 503 or a 409 `IDEMPOTENCY_KEY_IN_USE`,
//! at once when the answer was lost (the shopper drops some answers on
//! purpose), sometimes twice at once. Afterwards the store must hold exactly
//! the orders the shoppers were given, as they left them, with the stock
//! conserved and the pets' statuses following it, and no answer was a 5xx
//! other than 503.
//!
//! `IDEMPOTENCY_FAULT_SEED` changes the seed (the proxy's and the shoppers').
//! The same shoppers without keys, `cargo test -p petstore-tests --test api
//! -- --ignored --nocapture without_keys`, show what the keys prevent.

use super::proxy::{FaultMix, FaultProxy};
use super::{send_keyed, stocked_pet};
use crate::helpers::{TestApp, TestResponse};
use futures::future::join_all;
use http::Method;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
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
const ORDERS_PER_SHOPPER: usize = 5;
const PETS: usize = 3;
const STOCK: u64 = 10;
/// Sends of one change before a shopper gives up (the test then fails).
const MAX_SENDS: usize = 40;
/// How often a shopper loses an answer, or sends a change twice at once.
const LOSE_ANSWER: f64 = 0.15;
const SEND_TWICE: f64 = 0.10;

/// What a placed order became.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Open,
    Completed,
    Cancelled,
}

#[derive(Debug)]
struct Placed {
    id: u64,
    pet: u64,
    quantity: u64,
    fate: Fate,
}

/// What one shopper saw.
#[derive(Debug, Default)]
struct Log {
    statuses: BTreeMap<u16, usize>,
    replays: usize,
    lost: usize,
    sent_twice: usize,
    placed: Vec<Placed>,
    refused: usize,
    /// Broken promises, described.
    violations: Vec<String>,
}

struct Shopper {
    customer: TestApp,
    staff: TestApp,
    with_keys: bool,
    rng: StdRng,
    name: String,
    log: Log,
}

impl Shopper {
    /// Sends a change until it is settled (a 2xx, or a 4xx but
    /// `IDEMPOTENCY_KEY_IN_USE`), as a client following the README would.
    async fn settle(
        &mut self,
        as_staff: bool,
        method: Method,
        path: &str,
        body: Option<Value>,
        key: &str,
    ) -> TestResponse {
        let app = if as_staff {
            &self.staff
        } else {
            &self.customer
        }
        .clone();
        let mut successes: Vec<TestResponse> = Vec::new();
        for _ in 0..MAX_SENDS {
            let copies = if self.rng.random_bool(SEND_TWICE) {
                2
            } else {
                1
            };
            self.log.sent_twice += copies - 1;
            let sends =
                (0..copies).map(|_| send(&app, &method, path, body.as_ref(), key, self.with_keys));
            let answers = join_all(sends).await;
            for answer in &answers {
                self.note(answer, &method, path);
            }
            successes.extend(answers.iter().filter(|a| a.status < 300).cloned());
            if let Some(first) = successes.first() {
                if successes.iter().any(|s| s.body != first.body) && self.with_keys {
                    let bodies: Vec<String> = successes.iter().map(TestResponse::text).collect();
                    self.log
                        .violations
                        .push(format!("{method} {path} ({key}): {bodies:?}"));
                }
            }
            if self.rng.random_bool(LOSE_ANSWER) {
                // The answer never arrived: send it again at once.
                self.log.lost += 1;
                continue;
            }
            let settled = answers.iter().min_by_key(|a| match a.status {
                200..=299 => 0,
                500.. => 2,
                _ if in_use(a) => 2,
                _ => 1,
            });
            match settled {
                Some(answer) if answer.status < 500 && !in_use(answer) => return answer.clone(),
                Some(answer) => tokio::time::sleep(retry_after(answer)).await,
                None => unreachable!("at least one copy is sent"),
            }
        }
        panic!(
            "{}: {method} {path} was not settled in {MAX_SENDS} sends",
            self.name
        );
    }

    fn note(&mut self, answer: &TestResponse, method: &Method, path: &str) {
        *self.log.statuses.entry(answer.status).or_default() += 1;
        if answer.header("idempotent-replayed") == Some("true") {
            self.log.replays += 1;
        }
        if answer.status >= 500 && answer.status != 503 {
            let text = answer.text();
            self.log
                .violations
                .push(format!("{method} {path}: {} {text}", answer.status));
        }
    }

    /// Places orders, and cancels, completes or keeps each one placed.
    async fn shop(mut self, pets: Vec<u64>) -> Log {
        for n in 0..ORDERS_PER_SHOPPER {
            let pet = pets[self.rng.random_range(0..pets.len())];
            let quantity = self.rng.random_range(1..=2u64);
            let key = format!("{}-order-{n}", self.name);
            let body = json!({ "petId": pet, "quantity": quantity });
            let placed = self
                .settle(false, Method::POST, "/store/orders", Some(body), &key)
                .await;
            if placed.status == 409 {
                self.log.refused += 1; // out of stock, or not available: fine
                continue;
            }
            if placed.status != 201 {
                let text = placed.text();
                self.log
                    .violations
                    .push(format!("placing {key}: {} {text}", placed.status));
                continue;
            }
            let id = placed.id();
            let path = format!("/store/orders/{id}");
            let fate = match self.rng.random_range(0..10) {
                0..4 => {
                    let done = self
                        .settle(false, Method::DELETE, &path, None, &format!("{key}-cancel"))
                        .await;
                    self.expect(done.status == 204, "cancel", &key, &done);
                    Fate::Cancelled
                }
                4..8 => {
                    let complete = Some(json!({ "complete": true }));
                    let done = self
                        .settle(
                            true,
                            Method::PATCH,
                            &path,
                            complete,
                            &format!("{key}-complete"),
                        )
                        .await;
                    let completed = done.status == 200 && done.json()["complete"] == true;
                    self.expect(completed, "complete", &key, &done);
                    Fate::Completed
                }
                _ => Fate::Open,
            };
            self.log.placed.push(Placed {
                id,
                pet,
                quantity,
                fate,
            });
        }
        self.log
    }

    fn expect(&mut self, held: bool, change: &str, key: &str, answer: &TestResponse) {
        if !held && self.with_keys {
            let text = answer.text();
            self.log
                .violations
                .push(format!("{change} {key}: {} {text}", answer.status));
        }
    }
}

async fn send(
    app: &TestApp,
    method: &Method,
    path: &str,
    body: Option<&Value>,
    key: &str,
    with_key: bool,
) -> TestResponse {
    if with_key {
        return send_keyed(app, method.clone(), path, body, key).await;
    }
    match body {
        Some(body) => app.send_json(method.clone(), path, body).await,
        None => app.send(method.clone(), path).await,
    }
}

fn in_use(answer: &TestResponse) -> bool {
    answer.status == 409
        && serde_json::from_slice::<Value>(&answer.body)
            .is_ok_and(|b| b["code"] == "IDEMPOTENCY_KEY_IN_USE")
}

/// `Retry-After`, honoured (with a little jitter, so retries spread).
fn retry_after(answer: &TestResponse) -> Duration {
    let seconds = answer
        .header("retry-after")
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(1);
    Duration::from_secs(seconds) + Duration::from_millis(rand::random_range(0..100))
}

/// The store, its pets, and shoppers who reach it through the fault proxy.
async fn run_shoppers(with_keys: bool) -> (TestApp, Vec<u64>, Vec<Log>, String) {
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
    for n in 0..SHOPPERS {
        let customer = staff.as_customer().await;
        let customer_key = customer.api_key.clone().unwrap_or_default();
        shoppers.push(Shopper {
            customer: faulty.with_key(customer_key),
            staff: faulty.clone(),
            with_keys,
            rng: StdRng::seed_from_u64(seed ^ (n as u64 + 1)),
            name: format!("shopper{n}"),
            log: Log::default(),
        });
    }
    let started = Instant::now();
    let runs = shoppers
        .into_iter()
        .map(|shopper| tokio::spawn(shopper.shop(pets.clone())));
    let logs: Vec<Log> = join_all(runs)
        .await
        .into_iter()
        .map(|r| r.expect("shopper ran"))
        .collect();
    let summary = format!(
        "seed {seed}, {SHOPPERS} shoppers, {:.1} s; proxy: {}",
        started.elapsed().as_secs_f64(),
        proxy.counts().summary()
    );
    (staff, pets, logs, summary)
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
    let (staff, pets, logs, summary) = run_shoppers(true).await;
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
}

/// Not a check: the same shoppers without keys, to see what keys prevent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a test: run it with --ignored --nocapture"]
async fn without_keys_retried_orders_are_placed_twice() {
    let (staff, pets, logs, summary) = run_shoppers(false).await;
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
