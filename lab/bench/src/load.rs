//! Warm latency and throughput: a closed loop of `concurrency` workers, each
//! on its own keep-alive connection, for a fixed duration, after a warm-up.
//!
//! oha measures one URL at a time; the mixes here need several operations and
//! state carried between them (the order of the pet just created), so the
//! driver is our own. oha runs alongside on the read operations as a check.

use crate::client::{Conn, Error, Reply};
use crate::results::{LoadRun, Mix, OperationLoad, StatusCounts};
use crate::stats::summarize;
use http::{Method, StatusCode};
use rand::Rng;
use serde_json::json;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The records the runs are made from, as [`seed`] made them.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub category_ids: Vec<u64>,
    /// Pet `i` is in category `i % category_ids.len()`.
    pub pet_ids: Vec<u64>,
}

/// What [`seed`] makes: `categories` categories, `pets` pets over them in
/// turn, each stocked with `stock` if given.
pub struct Shape {
    pub categories: usize,
    pub pets: usize,
    pub stock: Option<u64>,
}

/// Makes `shape` through the API with `api_key` (a staff key); every
/// request must succeed.
pub async fn seed(
    addr: SocketAddr,
    api_key: Option<String>,
    shape: Shape,
) -> Result<Fixture, Error> {
    let mut conn = Conn::new(addr, api_key);
    let suffix: u32 = rand::random();
    let mut category_ids = Vec::with_capacity(shape.categories);
    for i in 0..shape.categories {
        let body =
            json!({"name": format!("bench-{i}-{suffix}"), "description": "made by make bench"});
        let id = made(&mut conn, Method::POST, "/categories", body).await?;
        category_ids.push(id.ok_or("POST /categories gave no id")?);
    }
    let mut pet_ids = Vec::with_capacity(shape.pets);
    for i in 0..shape.pets {
        let category = category_ids[i % category_ids.len()];
        let body = json!({"name": format!("Bench pet {i}"), "categoryId": category});
        let id = made(&mut conn, Method::POST, "/pets", body).await?;
        let id = id.ok_or("POST /pets gave no id")?;
        if let Some(quantity) = shape.stock {
            let path = format!("/store/inventory/{id}");
            made(
                &mut conn,
                Method::PUT,
                &path,
                json!({ "quantity": quantity }),
            )
            .await?;
        }
        pet_ids.push(id);
    }
    Ok(Fixture {
        category_ids,
        pet_ids,
    })
}

/// Sends one of the seed's requests; the id it created, if any.
async fn made(
    conn: &mut Conn,
    method: Method,
    path: &str,
    body: serde_json::Value,
) -> Result<Option<u64>, Error> {
    let request = format!("{method} {path}");
    let reply = conn.send(method, path, Some(&body)).await?;
    if !reply.status.is_success() {
        let body = String::from_utf8_lossy(&reply.body);
        return Err(format!("{request} answered {}: {body}", reply.status).into());
    }
    Ok(reply.created_id())
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
        let mut worker = Worker {
            conn: Conn::new(addr, api_key.clone()),
            record: Record::default(),
            recording: false,
        };
        workers.push(tokio::spawn(async move {
            while Instant::now() < end {
                worker.recording = Instant::now() >= start;
                let result = match mix {
                    Mix::Read => worker.read_step(&fixture).await,
                    Mix::Write => worker.write_step(&fixture).await,
                };
                if result.is_err() {
                    worker.record.errors += 1;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
            worker.record
        }));
    }
    let mut all = Record::default();
    for worker in workers {
        all.merge(worker.await?);
    }
    Ok(all.into_run(mix, concurrency, duration))
}

/// One worker of a run: its connection, and what it recorded.
struct Worker {
    conn: Conn,
    record: Record,
    /// False during the warm-up.
    recording: bool,
}

impl Worker {
    async fn timed(
        &mut self,
        op: &'static str,
        (method, path): (Method, &str),
        body: Option<serde_json::Value>,
    ) -> Result<Reply, Error> {
        let t = Instant::now();
        let reply = self.conn.send(method, path, body.as_ref()).await?;
        if self.recording {
            self.record.add(op, t.elapsed(), reply.status);
        }
        Ok(reply)
    }

    async fn read_step(&mut self, fixture: &Fixture) -> Result<(), Error> {
        let roll: u32 = rand::rng().random_range(0..10);
        let (op, path) = match roll {
            0..=3 => ("GET /pets?limit=20", "/pets?limit=20".to_string()),
            4..=7 => {
                let pets = &fixture.pet_ids;
                let ids: Vec<String> = (0..5)
                    .map(|_| pets[rand::rng().random_range(0..pets.len())].to_string())
                    .collect();
                ("GET /pets?ids=(5)", format!("/pets?ids={}", ids.join(",")))
            }
            _ => (
                "GET /store/inventory?limit=20",
                "/store/inventory?limit=20".into(),
            ),
        };
        self.timed(op, (Method::GET, &path), None).await?;
        Ok(())
    }

    async fn write_step(&mut self, fixture: &Fixture) -> Result<(), Error> {
        let pet = json!({"name": "Load pet", "categoryId": fixture.category_ids[0]});
        let pet = self.timed("POST /pets", (Method::POST, "/pets"), Some(pet));
        let pet_id = pet.await?.created_id().ok_or("POST /pets gave no id")?;
        let order = Some(json!({"petId": pet_id, "quantity": 1}));
        let request = (Method::POST, "/store/orders");
        let order = self.timed("POST /store/orders", request, order).await?;
        let order_id = order.created_id().ok_or("POST /store/orders gave no id")?;
        let path = format!("/store/orders/{order_id}");
        let request = (Method::DELETE, path.as_str());
        self.timed("DELETE /store/orders/{id}", request, None)
            .await?;
        Ok(())
    }
}
