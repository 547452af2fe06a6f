//! The mix the partition model replays: a store of [`PETS`] pets in
//! [`CATEGORIES`] categories, each stocked, and [`CUSTOMERS`] customers,
//! each order with the reads and writes around it (see [`DESCRIPTION`]).
//! It runs against its own tables through the bench's counting proxy with a
//! [`Capture`] attached, and hands what it saw to [`crate::model`].
//!
//! Before the mix, the staff key and every customer key register a webhook
//! endpoint ([`crate::endpoints`]) at a receiver of the model's own, so the
//! events the mix makes are fanned out and delivered by the service's
//! stream follower and in-process deliveries queue, as the events and
//! webhooks functions do in AWS; the replay waits for every delivery to be
//! attempted before it takes what the capture saw, so their calls are
//! attributed with the mix's. Each delivery's writes are on its own item,
//! one after the other (created at the fan-out, then its attempt
//! recorded), so the capture's before and after images stay each write's.
//!
//! Pets are ordered in turn and customers take turns, so every pet and every
//! customer has the same share: what the model finds uneven is the layout's
//! doing, not the mix's. A single pet's own ceiling is the flash sale's
//! (docs/partitions.md, "Flash sale").

use crate::endpoints;
use crate::model;
use crate::receiver::Receiver;
use crate::records::{MixRun, PartitionModel};
use http::Method;
use petstore_bench::api_key;
use petstore_bench::capacity::Layout;
use petstore_bench::capture::Capture;
use petstore_bench::client::{Conn, Error, Reply};
use petstore_bench::load::{self, Fixture, Shape};
use petstore_bench::processes::PetstoreLocal;
use petstore_bench::proxy::Proxy;
use petstore_bench::results::StatusCounts;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

pub const PETS: usize = 200;
pub const CATEGORIES: usize = 5;
pub const CUSTOMERS: usize = 50;
/// Worker `w` places orders `w, w + WORKERS, ...`, of pets `i % PETS`: with
/// `WORKERS` dividing `PETS`, no two workers write one item at once, so the
/// capture's before and after images are each write's own.
pub const WORKERS: usize = 4;
const STOCK: u64 = 1_000_000;
/// The model's own tables, beside whatever the rest of the bench made.
const TABLE: &str = "petstore-partitions";

pub const DESCRIPTION: &str = "each order: one list page (in turn: pets of a category that are \
available x3, available pets x2, pets of a category, all pets, categories, available inventory, \
open orders (staff)), 5 pets by ids, the pet's stock, the order (1 unit), the order read back, \
the customer's own orders; then 8 in 10 orders completed (staff), 1 cancelled, 1 left open; \
every 10 orders one new pet and one restock (staff); a webhook endpoint for the staff key (every \
type) and for each customer key (its own orders' events), each delivery attempted before the \
model is taken";

/// What the model needs to run.
pub struct Setup<'a> {
    /// `petstore-admin`, to issue the keys.
    pub admin: &'a Path,
    /// The `petstore-local` whose layout is measured.
    pub service: &'a Path,
    pub dynamodb: SocketAddr,
    pub log: &'a Path,
    /// Where the service's stream follower appends the events it read.
    pub events: &'a Path,
    /// `WEBHOOK_RETRY_SCHEDULE` for the service, if any.
    pub retry_schedule: Option<String>,
    /// Whether to register the endpoints (`BENCH_PARTITION_WEBHOOKS=0`: no
    /// endpoint, so no delivery; the fan-out still reads who subscribes).
    pub webhooks: bool,
    /// Orders to replay.
    pub orders: usize,
    /// Added to the service's environment (`NAME=value`).
    pub env: Vec<String>,
}

/// What one worker sent.
#[derive(Default)]
struct Tally {
    orders: usize,
    reads: usize,
    statuses: BTreeMap<String, StatusCounts>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.orders += other.orders;
        self.reads += other.reads;
        for (operation, counts) in other.statuses {
            let mine = self.statuses.entry(operation).or_default();
            for (status, count) in counts {
                *mine.entry(status).or_insert(0) += count;
            }
        }
    }
}

/// Runs the replay against `setup.service` through a counting proxy, and
/// models what it put on each partition.
pub async fn measure(setup: &Setup<'_>) -> Result<PartitionModel, Error> {
    let proxy = Proxy::start(setup.dynamodb).await?;
    // The receiver is on 127.0.0.1 over http, as under `make run`. A
    // retry, should an attempt fail, comes after a second, not minutes, so
    // the wait for every delivery stays short; the attempts are counted
    // the same.
    let mut env = vec![
        format!("TABLE_NAME={TABLE}"),
        format!("RATE_LIMIT_TABLE_NAME={TABLE}-limits"),
        format!("EVENTS_FILE={}", setup.events.display()),
        "WEBHOOKS_ALLOW_LOOPBACK=1".to_string(),
    ];
    env.extend(
        setup
            .retry_schedule
            .iter()
            .map(|schedule| format!("WEBHOOK_RETRY_SCHEDULE={schedule}")),
    );
    env.extend(setup.env.iter().cloned());
    let proxied = format!("http://{}", proxy.addr);
    let mut service = PetstoreLocal::start(setup.service, &proxied, setup.log, &env).await?;
    let outcome = replay_and_model(setup, &proxy, service.addr, &env).await;
    service.stop().await;
    outcome
}

async fn replay_and_model(
    setup: &Setup<'_>,
    proxy: &Proxy<Capture>,
    addr: SocketAddr,
    env: &[String],
) -> Result<PartitionModel, Error> {
    // The service listens before it has made its tables.
    let layout = Layout::describe_once_made(setup.dynamodb, TABLE).await?;
    let url = format!("http://{}", setup.dynamodb);
    let staff = api_key::issue(setup.admin, &url, env, "staff", 1).await?;
    let staff = staff.into_iter().next().ok_or("no staff key")?;
    let customers = api_key::issue(setup.admin, &url, env, "customer", CUSTOMERS).await?;
    // The endpoints before any event: the fan-out's view of who subscribes
    // is then never one read before they were registered.
    let receiver = Receiver::start().await?;
    let registered = if setup.webhooks {
        endpoints::register(addr, &staff, &customers, &receiver).await?
    } else {
        Vec::new()
    };
    let shape = Shape {
        categories: CATEGORIES,
        pets: PETS,
        stock: Some(STOCK),
    };
    let shop = Arc::new(load::seed(addr, Some(staff.clone()), shape).await?);
    // The seed's events delivered (to the staff endpoint) before the capture
    // is attached: its deliveries are not the mix's.
    let seeded = endpoints::settle(setup.events, &receiver).await?;
    if setup.webhooks && seeded.by_path.get("staff").copied().unwrap_or(0) == 0 {
        return Err("the staff endpoint was sent none of the seed's events".into());
    }
    let capture = Arc::new(Capture::new(
        vec![(TABLE.to_string(), layout.clone())],
        setup.dynamodb,
    ));
    proxy.attach(capture.clone());
    let started = Instant::now();
    let tally = replay(addr, &staff, &customers, &shop, setup.orders).await?;
    let seconds = started.elapsed().as_secs_f64();
    let delivered = endpoints::settle(setup.events, &receiver).await?;
    let captured = capture.take().await?;
    // After the take: the lists' reads are not the mix's.
    let listed = endpoints::listed(addr, &staff, &registered).await?;
    listed.all_delivered(&delivered)?;
    let run = endpoints::run_of(&registered, &seeded, &delivered, &listed);
    let mix = MixRun {
        description: DESCRIPTION.to_string(),
        service: setup.service.display().to_string(),
        service_env: setup.env.clone(),
        pets: PETS,
        categories: CATEGORIES,
        customers: CUSTOMERS,
        workers: WORKERS,
        orders: tally.orders,
        reads: tally.reads,
        statuses: tally.statuses,
        seconds,
    };
    Ok(model::model(&layout, &captured, mix, run))
}

/// Sends one request, counting its status under `operation` (and it as one
/// of the mix's reads when `read`); a 5xx or no answer stops the replay.
async fn send(
    conn: &mut Conn,
    tally: &mut Tally,
    (operation, read): (&str, bool),
    (method, path): (Method, &str),
    body: Option<Value>,
) -> Result<Reply, Error> {
    let reply = conn.send(method, path, body.as_ref()).await?;
    let statuses = tally.statuses.entry(operation.to_string()).or_default();
    *statuses.entry(reply.status.as_u16()).or_insert(0) += 1;
    tally.reads += usize::from(read);
    if reply.status.is_server_error() {
        let body = String::from_utf8_lossy(&reply.body);
        return Err(format!("{operation} answered {}: {body}", reply.status).into());
    }
    Ok(reply)
}

fn created(reply: &Reply, what: &str) -> Result<u64, Error> {
    reply
        .created_id()
        .ok_or_else(|| format!("{what} answered {} without an id", reply.status).into())
}

/// Places `orders` orders with everything around them, over [`WORKERS`].
async fn replay(
    addr: SocketAddr,
    staff: &str,
    customers: &[String],
    shop: &Arc<Fixture>,
    orders: usize,
) -> Result<Tally, Error> {
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..WORKERS {
        let shop = shop.clone();
        let mut worker = Worker {
            staff: Conn::new(addr, Some(staff.to_string())),
            customers: customers
                .iter()
                .map(|key| Conn::new(addr, Some(key.clone())))
                .collect(),
            tally: Tally::default(),
        };
        workers.spawn(async move {
            for i in (w..orders).step_by(WORKERS) {
                worker.round(i, &shop).await?;
            }
            Ok::<_, Error>(worker.tally)
        });
    }
    let mut all = Tally::default();
    while let Some(tally) = workers.join_next().await {
        all.merge(tally??);
    }
    Ok(all)
}

/// Who sends a request: the staff, or customer `i % CUSTOMERS`.
#[derive(Clone, Copy)]
enum Who {
    Staff,
    Customer(usize),
}

/// One worker's connections (the staff's, and each customer's) and tally.
struct Worker {
    staff: Conn,
    customers: Vec<Conn>,
    tally: Tally,
}

/// The list page of order `i`: its operation name, path, and who reads it.
fn list_page(i: usize, shop: &Fixture) -> (&'static str, String, Who) {
    let category = shop.category_ids[(i / 10 + i % 10) % CATEGORIES];
    let customer = Who::Customer(i);
    match i % 10 {
        0..=2 => (
            "GET /pets?categoryId&status=available",
            format!("/pets?categoryId={category}&status=available&limit=20"),
            customer,
        ),
        3 | 4 => (
            "GET /pets?status=available",
            "/pets?status=available&limit=20".into(),
            customer,
        ),
        5 => (
            "GET /pets?categoryId",
            format!("/pets?categoryId={category}&limit=20"),
            customer,
        ),
        6 => ("GET /pets", "/pets?limit=20".into(), customer),
        7 => ("GET /categories", "/categories?limit=20".into(), customer),
        8 => (
            "GET /store/inventory?status=available",
            "/store/inventory?status=available&limit=20".into(),
            customer,
        ),
        _ => (
            "GET /store/orders?complete=false (staff)",
            "/store/orders?complete=false&limit=20".into(),
            Who::Staff,
        ),
    }
}

impl Worker {
    async fn send(
        &mut self,
        who: Who,
        operation: (&str, bool),
        request: (Method, &str),
        body: Option<Value>,
    ) -> Result<Reply, Error> {
        let conn = match who {
            Who::Staff => &mut self.staff,
            Who::Customer(i) => &mut self.customers[i % CUSTOMERS],
        };
        send(conn, &mut self.tally, operation, request, body).await
    }

    /// One of the mix's reads.
    async fn read(&mut self, who: Who, operation: &str, path: &str) -> Result<Reply, Error> {
        self.send(who, (operation, true), (Method::GET, path), None)
            .await
    }

    /// Order `i` and everything around it.
    async fn round(&mut self, i: usize, shop: &Fixture) -> Result<(), Error> {
        let (pet, customer) = (shop.pet_ids[i % PETS], Who::Customer(i));
        // Browsing: a list page, a few pets, this pet's stock.
        let (list, path, reader) = list_page(i, shop);
        self.read(reader, list, &path).await?;
        let ids: Vec<String> = (0..5)
            .map(|k| shop.pet_ids[(i * 7 + k * 41) % PETS].to_string())
            .collect();
        let path = format!("/pets?ids={}", ids.join(","));
        self.read(customer, "GET /pets?ids=(5)", &path).await?;
        let stock = format!("/store/inventory/{pet}");
        self.read(customer, "GET /store/inventory/{id}", &stock)
            .await?;
        // Buying, and looking at it.
        let body = Some(json!({ "petId": pet, "quantity": 1 }));
        let request = (Method::POST, "/store/orders");
        let placed = self
            .send(customer, ("POST /store/orders", false), request, body)
            .await?;
        let order = format!("/store/orders/{}", created(&placed, "POST /store/orders")?);
        self.tally.orders += 1;
        self.read(customer, "GET /store/orders/{id}", &order)
            .await?;
        self.read(
            customer,
            "GET /store/orders (own)",
            "/store/orders?limit=20",
        )
        .await?;
        self.aftermath(i, shop, &order, &stock).await
    }

    /// What becomes of order `i` (at `order`), and the staff's other work.
    async fn aftermath(
        &mut self,
        i: usize,
        shop: &Fixture,
        order: &str,
        stock: &str,
    ) -> Result<(), Error> {
        match i % 10 {
            0..=7 => {
                let complete = Some(json!({ "complete": true }));
                let operation = ("PATCH /store/orders/{id} (complete)", false);
                let request = (Method::PATCH, order);
                self.send(Who::Staff, operation, request, complete).await?;
            }
            8 => {
                let operation = ("DELETE /store/orders/{id}", false);
                let request = (Method::DELETE, order);
                self.send(Who::Customer(i), operation, request, None)
                    .await?;
            }
            _ => {}
        }
        if i % 10 == 3 {
            let category = shop.category_ids[(i / 10) % CATEGORIES];
            let body = json!({ "name": format!("New pet {i}"), "categoryId": category });
            let request = (Method::POST, "/pets");
            self.send(Who::Staff, ("POST /pets", false), request, Some(body))
                .await?;
        }
        if i % 10 == 6 {
            let restock = Some(json!({ "quantity": STOCK }));
            let operation = ("PUT /store/inventory/{id}", false);
            let request = (Method::PUT, stock);
            self.send(Who::Staff, operation, request, restock).await?;
        }
        Ok(())
    }
}
