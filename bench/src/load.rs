//! Warm latency and throughput: a closed loop of `concurrency` workers, each
//! on its own keep-alive connection, for a fixed duration, after a warm-up.
//!
//! oha measures one URL at a time; the mixes here need several operations and
//! state carried between them (the order of the pet just created), so the
//! driver is our own. oha runs alongside on the read operations as a check.

use crate::client::{Conn, Error};
use crate::results::{LoadRun, OperationLoad, StatusCounts};
use crate::stats::summarize;
use http::{Method, StatusCode};
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Records the warm-up and the measured runs are made from.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub category_id: u64,
    pub pet_ids: Vec<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mix {
    /// 40% `GET /pets`, 40% `GET /pets?ids=` (5 ids), 20% `GET /store/inventory`.
    Read,
    /// create pet, place an order for it, cancel that order; repeated.
    Write,
}

impl std::fmt::Display for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mix::Read => "read",
            Mix::Write => "write",
        })
    }
}

/// Creates a category and `pets` pets through the API.
pub async fn seed(
    addr: SocketAddr,
    api_key: Option<String>,
    pets: usize,
) -> Result<Fixture, Error> {
    let mut conn = Conn::new(addr, api_key);
    let suffix: u32 = rand::random();
    let reply = conn
        .send(
            Method::POST,
            "/categories",
            Some(&json!({"name": format!("bench-{suffix}"), "description": "made by make bench"})),
        )
        .await?;
    if reply.status != StatusCode::CREATED {
        return Err(format!(
            "POST /categories answered {}: {}",
            reply.status,
            String::from_utf8_lossy(&reply.body)
        )
        .into());
    }
    let category_id = reply.created_id().ok_or("category without id")?;
    let mut pet_ids = Vec::with_capacity(pets);
    for i in 0..pets {
        let reply = conn
            .send(
                Method::POST,
                "/pets",
                Some(&json!({"name": format!("Bench pet {i}"), "categoryId": category_id})),
            )
            .await?;
        if reply.status != StatusCode::CREATED {
            return Err(format!("POST /pets answered {}", reply.status).into());
        }
        pet_ids.push(reply.created_id().ok_or("pet without id")?);
    }
    Ok(Fixture {
        category_id,
        pet_ids,
    })
}

/// One worker's requests, or all workers' once merged.
#[derive(Default)]
struct Record {
    by_op: BTreeMap<&'static str, (Vec<Duration>, StatusCounts)>,
    errors: usize,
}

impl Record {
    fn add(&mut self, op: &'static str, took: Duration, status: StatusCode) {
        let (sample, unexpected) = self.by_op.entry(op).or_default();
        sample.push(took);
        if !status.is_success() {
            *unexpected.entry(status.as_u16()).or_insert(0) += 1;
        }
    }

    fn merge(&mut self, other: Record) {
        self.errors += other.errors;
        for (op, (sample, unexpected)) in other.by_op {
            let (all_sample, all_unexpected) = self.by_op.entry(op).or_default();
            all_sample.extend(sample);
            for (status, count) in unexpected {
                *all_unexpected.entry(status).or_insert(0) += count;
            }
        }
    }

    fn into_run(self, mix: Mix, concurrency: usize, duration: Duration) -> LoadRun {
        let seconds = duration.as_secs_f64();
        let every: Vec<Duration> = self
            .by_op
            .values()
            .flat_map(|(sample, _)| sample.iter().copied())
            .collect();
        let operations = self
            .by_op
            .into_iter()
            .map(|(op, (sample, unexpected))| {
                let load = OperationLoad {
                    requests: sample.len(),
                    unexpected,
                    latency: summarize(&sample),
                };
                (op.to_string(), load)
            })
            .collect();
        LoadRun {
            mix,
            concurrency,
            seconds,
            requests: every.len(),
            requests_per_second: every.len() as f64 / seconds,
            errors: self.errors,
            latency: summarize(&every),
            operations,
        }
    }
}

/// Runs `mix` for `warmup` unrecorded, then for `duration` recorded.
pub async fn run(
    addr: SocketAddr,
    api_key: Option<String>,
    fixture: &Fixture,
    mix: Mix,
    concurrency: usize,
    warmup: Duration,
    duration: Duration,
) -> Result<LoadRun, Error> {
    let fixture = Arc::new(fixture.clone());
    let start = Instant::now() + warmup;
    let end = start + duration;
    let mut workers = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let fixture = fixture.clone();
        let mut conn = Conn::new(addr, api_key.clone());
        workers.push(tokio::spawn(async move {
            let mut record = Record::default();
            while Instant::now() < end {
                let recording = Instant::now() >= start;
                let result = match mix {
                    Mix::Read => read_step(&mut conn, &fixture, &mut record, recording).await,
                    Mix::Write => write_step(&mut conn, &fixture, &mut record, recording).await,
                };
                if result.is_err() {
                    record.errors += 1;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
            record
        }));
    }
    let mut all = Record::default();
    for worker in workers {
        all.merge(worker.await?);
    }
    Ok(all.into_run(mix, concurrency, duration))
}

async fn timed(
    conn: &mut Conn,
    record: &mut Record,
    recording: bool,
    op: &'static str,
    method: Method,
    path: &str,
    body: Option<serde_json::Value>,
) -> Result<crate::client::Reply, Error> {
    let t = Instant::now();
    let reply = conn.send(method, path, body.as_ref()).await?;
    if recording {
        record.add(op, t.elapsed(), reply.status);
    }
    Ok(reply)
}

async fn read_step(
    conn: &mut Conn,
    fixture: &Fixture,
    record: &mut Record,
    recording: bool,
) -> Result<(), Error> {
    let roll: u32 = rand::rng().random_range(0..10);
    if roll < 4 {
        timed(
            conn,
            record,
            recording,
            "GET /pets?limit=20",
            Method::GET,
            "/pets?limit=20",
            None,
        )
        .await?;
    } else if roll < 8 {
        let ids: Vec<String> = (0..5)
            .map(|_| {
                fixture.pet_ids[rand::rng().random_range(0..fixture.pet_ids.len())].to_string()
            })
            .collect();
        let path = format!("/pets?ids={}", ids.join(","));
        timed(
            conn,
            record,
            recording,
            "GET /pets?ids=(5)",
            Method::GET,
            &path,
            None,
        )
        .await?;
    } else {
        timed(
            conn,
            record,
            recording,
            "GET /store/inventory?limit=20",
            Method::GET,
            "/store/inventory?limit=20",
            None,
        )
        .await?;
    }
    Ok(())
}

async fn write_step(
    conn: &mut Conn,
    fixture: &Fixture,
    record: &mut Record,
    recording: bool,
) -> Result<(), Error> {
    let pet = timed(
        conn,
        record,
        recording,
        "POST /pets",
        Method::POST,
        "/pets",
        Some(json!({"name": "Load pet", "categoryId": fixture.category_id})),
    )
    .await?;
    let pet_id = pet.created_id().ok_or("POST /pets gave no id")?;
    let order = timed(
        conn,
        record,
        recording,
        "POST /store/orders",
        Method::POST,
        "/store/orders",
        Some(json!({"petId": pet_id, "quantity": 1})),
    )
    .await?;
    let order_id = order.created_id().ok_or("POST /store/orders gave no id")?;
    timed(
        conn,
        record,
        recording,
        "DELETE /store/orders/{id}",
        Method::DELETE,
        &format!("/store/orders/{order_id}"),
        None,
    )
    .await?;
    Ok(())
}
