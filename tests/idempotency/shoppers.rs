//! A shopper: places orders and cancels, completes or keeps them, each change
//! with a key of its own (or none), retried as docs/api.md, "Retrying a
//! change safely" tells a client to.

use super::send_keyed;
use crate::helpers::{TestApp, TestResponse};
use futures::future::join_all;
use http::Method;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// Orders each shopper places.
pub const ORDERS_PER_SHOPPER: usize = 5;
/// Sends of one change before a shopper gives up (the test then fails).
const MAX_SENDS: usize = 40;
/// How often a shopper loses an answer, or sends a change twice at once.
const LOSE_ANSWER: f64 = 0.15;
const SEND_TWICE: f64 = 0.10;

/// What a placed order became.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Open,
    Completed,
    Cancelled,
}

#[derive(Debug)]
pub struct Placed {
    pub id: u64,
    pub pet: u64,
    pub quantity: u64,
    pub fate: Fate,
}

/// What one shopper saw.
#[derive(Debug, Default)]
pub struct Log {
    pub statuses: BTreeMap<u16, usize>,
    pub replays: usize,
    pub lost: usize,
    pub sent_twice: usize,
    pub placed: Vec<Placed>,
    pub refused: usize,
    /// Broken promises, described.
    pub violations: Vec<String>,
}

/// Whether a shopper sends its changes with an `Idempotency-Key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    Sent,
    NotSent,
}

pub struct Shopper {
    customer: TestApp,
    staff: TestApp,
    keys: Keys,
    rng: StdRng,
    name: String,
    log: Log,
}

impl Shopper {
    /// A shopper sending as `customer` (and completing orders as `staff`),
    /// with keys or without, its choices drawn from `seed`.
    pub fn new(customer: TestApp, staff: TestApp, keys: Keys, seed: u64, name: String) -> Shopper {
        Shopper {
            customer,
            staff,
            keys,
            rng: StdRng::seed_from_u64(seed),
            name,
            log: Log::default(),
        }
    }

    /// Sends a change until it is settled (a 2xx, or a 4xx but
    /// `IDEMPOTENCY_KEY_IN_USE`), as a client following docs/api.md would.
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
                (0..copies).map(|_| send(&app, &method, path, body.as_ref(), key, self.keys));
            let answers = join_all(sends).await;
            for answer in &answers {
                self.note(answer, &method, path);
            }
            successes.extend(answers.iter().filter(|a| a.status < 300).cloned());
            if let Some(first) = successes.first() {
                if successes.iter().any(|s| s.body != first.body) && self.keys == Keys::Sent {
                    let bodies: Vec<String> = successes.iter().map(TestResponse::text).collect();
                    self.log
                        .violations
                        .push(format!("{method} {path} ({key}): {bodies:?}"));
                }
            }
            if self.rng.random_bool(LOSE_ANSWER) {
                // The answer never arrived: back off a little, send it again.
                self.log.lost += 1;
                let pause = self.rng.random_range(20..100);
                tokio::time::sleep(Duration::from_millis(pause)).await;
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
    pub async fn shop(mut self, pets: Vec<u64>) -> Log {
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
        if !held && self.keys == Keys::Sent {
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
    keys: Keys,
) -> TestResponse {
    if keys == Keys::Sent {
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
