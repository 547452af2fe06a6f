//! The contract's multi-instance guarantees, with several service processes
//! on one DynamoDB Local, as Lambda runs many instances: each process is this
//! test binary started again in its serving mode ([`serve_instance`]), with
//! its own SDK client and its own memory of keys and windows, reached over
//! HTTP on a port of its own.
//!
//! Starts race too: eight starts, each with a client of its own, create one
//! fresh pair of tables at once (the real binaries race the same way in
//! `scripts/test-local-stacks.sh`).
//!
//! The processes pin their limiter's clock to [`NOW`] (as the rate-limit
//! tests do), so no test straddles a minute; only the revocation test runs
//! on the wall clock, to let `KEY_CACHE_SECONDS` pass.

use crate::helpers::{TestApp, TestResponse};
use crate::idempotency::stocked_pet;
use crate::ratelimit::{pinned, NOW};
use bytes::Bytes;
use futures::future::join_all;
use http::{header, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use petstore::ratelimit::{Clock, ManualClock, Plan, SystemClock};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

/// Set in a process started to serve rather than test.
const SERVE: &str = "PETSTORE_TEST_SERVE";
/// The Unix second a serving process's limiter clock stands at (else the wall clock).
const CLOCK_AT: &str = "PETSTORE_TEST_CLOCK_AT";
/// What a serving process prints once it listens, before its port.
const LISTENING: &str = "petstore-test-instance listening on";
/// How many processes each test runs.
const PROCESSES: usize = 3;

/// Not a test: the body of a serving process, started by [`Instance::start`].
/// It serves the tables its environment names until its stdin closes (the
/// test that started it ended, however it ended).
#[tokio::test]
#[ignore = "a service process for the multi-process tests, which start it"]
async fn serve_instance() {
    if std::env::var_os(SERVE).is_none() {
        return;
    }
    // Its warnings and errors go to stderr, which the test's own output
    // shows (stdout is the pipe the test read the port from, closed after).
    let logs = petstore::telemetry::json_at(std::io::stderr, "WARN");
    let _ = tracing::subscriber::set_global_default(logs);
    let config = petstore::config::Config::from_env().expect("the instance's configuration");
    let endpoint = std::env::var("AWS_ENDPOINT_URL_DYNAMODB").expect("DynamoDB's endpoint");
    let clock: Arc<dyn Clock> = match std::env::var(CLOCK_AT).ok().and_then(|s| s.parse().ok()) {
        Some(at) => Arc::new(ManualClock::new(at)),
        None => Arc::new(SystemClock),
    };
    let client = petstore::local_client(&endpoint).await;
    let app = petstore::App::with_clock(config, client, clock);
    let router = petstore::http::service(pets::routes().merge(store::routes()), app);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let port = listener.local_addr().expect("bound").port();
    println!("{LISTENING} {port}");
    std::thread::spawn(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        std::process::exit(0);
    });
    let service = router.into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, service).await.expect("serving");
}

/// A serving process; stopped when dropped.
struct Instance {
    child: Child,
    port: u16,
}

impl Instance {
    /// Starts a process serving `app`'s tables and configuration, its clock
    /// at `clock_at` (or the wall clock), `overrides` added to its environment.
    fn start(app: &TestApp, clock_at: Option<i64>, overrides: &[(&str, &str)]) -> Instance {
        let exe = std::env::current_exe().expect("the test binary");
        let mut command = Command::new(exe);
        command
            .args(["abuse::processes::serve_instance", "--exact", "--ignored"])
            .args(["--nocapture", "--test-threads=1"])
            .env(SERVE, "1")
            .env("AWS_ENDPOINT_URL_DYNAMODB", &app.endpoint)
            .env("TABLE_NAME", &app.app.config.table_name)
            .env("RATE_LIMIT_TABLE_NAME", &app.rate_limit_table_name)
            .env_remove(CLOCK_AT)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if let Some(at) = clock_at {
            command.env(CLOCK_AT, at.to_string());
        }
        for (name, value) in overrides {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("a serving process starts");
        let stdout = child.stdout.take().expect("its stdout");
        let port = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            // libtest's "test ... " precedes it on the same line.
            .find_map(|line| line.split(LISTENING).nth(1)?.trim().parse().ok())
            .expect("the serving process says where it listens");
        Instance { child, port }
    }

    /// `PROCESSES` processes serving `app`'s tables.
    async fn start_all(
        app: &TestApp,
        clock_at: Option<i64>,
        overrides: &'static [(&'static str, &'static str)],
    ) -> Vec<Arc<Instance>> {
        let starting = (0..PROCESSES).map(|_| {
            let app = app.clone();
            tokio::task::spawn_blocking(move || {
                Arc::new(Instance::start(&app, clock_at, overrides))
            })
        });
        join_all(starting)
            .await
            .into_iter()
            .map(|started| started.expect("an instance started"))
            .collect()
    }

    /// Sends a request with `key` (and `body` as JSON, `extra` headers).
    async fn send(
        &self,
        method: Method,
        path: &str,
        key: &str,
        body: Option<&Value>,
        extra: &[(&str, &str)],
    ) -> TestResponse {
        let stream = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .expect("the instance accepts connections");
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("an HTTP/1 connection");
        tokio::spawn(connection);
        let mut request = Request::builder()
            .method(method.clone())
            .uri(path)
            .header(header::HOST, "127.0.0.1")
            .header("x-api-key", key);
        for (name, value) in extra {
            request = request.header(*name, *value);
        }
        let body = match body {
            Some(body) => {
                request = request.header(header::CONTENT_TYPE, "application/json");
                Bytes::from(body.to_string())
            }
            None => Bytes::new(),
        };
        let request = request.body(Full::new(body)).expect("a valid request");
        let response = sender.send_request(request).await.expect("an answer");
        let (parts, body) = response.into_parts();
        let body = body.collect().await.expect("the body").to_bytes();
        TestResponse {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
        }
        .conforming(&method, path)
    }

    async fn get(&self, path: &str, key: &str) -> TestResponse {
        self.send(Method::GET, path, key, None, &[]).await
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The API key `app` sends.
fn key_of(app: &TestApp) -> String {
    app.api_key.clone().unwrap_or_default()
}

#[tokio::test]
async fn a_limit_is_exact_across_processes() {
    // Given a key allowing 20 a minute, and three processes
    let (app, _clock) = pinned(|_| None).await;
    let customer = app.with_new_key(Plan::Enterprise, Some((20, 1_000))).await;
    let key = key_of(&customer);
    let instances = Instance::start_all(&app, Some(NOW), &[("BAN_THRESHOLD", "1000")]).await;

    // When 60 requests arrive at once, spread over them
    let requests = (0..60).map(|n| {
        let (instance, key) = (instances[n % PROCESSES].clone(), key.clone());
        tokio::spawn(async move { instance.get("/categories", &key).await.status })
    });
    let statuses: Vec<u16> = join_all(requests)
        .await
        .into_iter()
        .map(|s| s.expect("a request"))
        .collect();

    // Then exactly 20 are served, the rest refused
    let served = statuses.iter().filter(|s| **s == 200).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!((served, refused), (20, 40), "{statuses:?}");
}

#[tokio::test]
async fn the_stock_is_exact_across_processes() {
    // Given a pet with 10 units, and three processes
    let (staff, _clock) = pinned(|_| None).await;
    let pet = stocked_pet(&staff, 10).await;
    let instances = Instance::start_all(&staff, Some(NOW), &[]).await;
    let mut customers = Vec::new();
    for _ in 0..6 {
        customers.push(key_of(&staff.as_customer().await));
    }

    // When 30 orders of one unit arrive at once, spread over them
    let order = json!({ "petId": pet, "quantity": 1 });
    let orders = (0..30).map(|n| {
        let instance = instances[n % PROCESSES].clone();
        let (key, order) = (customers[n % customers.len()].clone(), order.clone());
        tokio::spawn(async move {
            let response = instance.send(Method::POST, "/store/orders", &key, Some(&order), &[]);
            let response = response.await;
            (
                response.status,
                String::from_utf8_lossy(&response.body).into_owned(),
            )
        })
    });
    let answers: Vec<(u16, String)> = join_all(orders)
        .await
        .into_iter()
        .map(|s| s.expect("an order"))
        .collect();
    let statuses: Vec<u16> = answers.iter().map(|(status, _)| *status).collect();

    // Then exactly 10 are placed and none is left
    let placed = statuses.iter().filter(|s| **s == 201).count();
    assert_eq!(placed, 10, "{statuses:?}");
    assert!(
        statuses.iter().all(|s| [201, 409, 422].contains(s)),
        "{answers:?}"
    );
    let stock = staff.get(&format!("/store/inventory/{pet}")).await.json();
    assert_eq!(stock["quantity"], 0, "{stock}");
}

#[tokio::test]
async fn a_free_keys_open_orders_cap_is_exact_across_processes() {
    // Given a pet with plenty of stock, a free key (10 open orders), three processes
    let (staff, _clock) = pinned(|_| None).await;
    let pet = stocked_pet(&staff, 100).await;
    let free = staff.create_key(Plan::Free, None).await.key;
    let instances = Instance::start_all(&staff, Some(NOW), &[]).await;

    // When the key sends 30 orders at once, spread over them
    let order = json!({ "petId": pet, "quantity": 1 });
    let orders = (0..30).map(|n| {
        let instance = instances[n % PROCESSES].clone();
        let (key, order) = (free.clone(), order.clone());
        tokio::spawn(async move {
            let response = instance.send(Method::POST, "/store/orders", &key, Some(&order), &[]);
            response.await
        })
    });
    let responses: Vec<TestResponse> = join_all(orders)
        .await
        .into_iter()
        .map(|r| r.expect("an order"))
        .collect();

    // Then exactly 10 are placed, the others refused as too many open orders
    let placed = responses.iter().filter(|r| r.status == 201).count();
    assert_eq!(placed, 10);
    for refused in responses.iter().filter(|r| r.status != 201) {
        refused.assert_error(409, "TOO_MANY_OPEN_ORDERS");
    }
}

#[tokio::test]
async fn one_idempotency_key_raced_across_processes_takes_effect_once() {
    // Given a pet with 5 units, and three processes
    let (staff, _clock) = pinned(|_| None).await;
    let pet = stocked_pet(&staff, 5).await;
    let customer = key_of(&staff.as_customer().await);
    let instances = Instance::start_all(&staff, Some(NOW), &[]).await;

    // When one order with one Idempotency-Key is sent 9 times at once
    let order = json!({ "petId": pet, "quantity": 1 });
    let sends = (0..9).map(|n| {
        let instance = instances[n % PROCESSES].clone();
        let (key, order) = (customer.clone(), order.clone());
        tokio::spawn(async move {
            let keyed = [("idempotency-key", "raced-across-processes")];
            let response = instance.send(Method::POST, "/store/orders", &key, Some(&order), &keyed);
            response.await
        })
    });
    let responses: Vec<TestResponse> = join_all(sends)
        .await
        .into_iter()
        .map(|r| r.expect("a send"))
        .collect();

    // Then one order exists; each answer is it (first or replayed) or 409 in use
    let mut ids = Vec::new();
    for response in &responses {
        match response.status {
            201 => ids.push(response.id()),
            _ => response.assert_error(409, "IDEMPOTENCY_KEY_IN_USE"),
        }
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "one order, whoever answered: {ids:?}");
    let stock = staff.get(&format!("/store/inventory/{pet}")).await.json();
    assert_eq!(stock["quantity"], 4, "{stock}");
}

#[tokio::test]
async fn a_ban_reaches_every_process_within_its_batches() {
    // Given a key allowing 1 a minute, banned after 6 refusals reported in
    // batches of 3, and three processes
    const THRESHOLD: usize = 6;
    const BATCH: usize = 3;
    let config: &[(&str, &str)] = &[("BAN_THRESHOLD", "6"), ("REFUSAL_FLUSH_EVERY", "3")];
    let (app, _clock) = pinned(|_| None).await;
    let key = key_of(&app.with_new_key(Plan::Enterprise, Some((1, 1_000))).await);
    let instances = Instance::start_all(&app, Some(NOW), config).await;

    // When the key calls on, round the processes, until each answers banned
    let (mut limited, mut banned) = (0, [false; PROCESSES]);
    for n in 0..100 {
        if banned.iter().all(|b| *b) {
            break;
        }
        let response = instances[n % PROCESSES].get("/categories", &key).await;
        match response.status {
            200 => assert_eq!(n, 0, "only the first request fits"),
            _ if response.json()["code"] == "API_KEY_BANNED" => banned[n % PROCESSES] = true,
            _ => {
                response.assert_error(429, "RATE_LIMITED");
                limited += 1;
            }
        }
    }

    // Then every process bans it, after at most a batch per process past the threshold
    assert_eq!(banned, [true; PROCESSES]);
    assert!(
        limited <= THRESHOLD + PROCESSES * BATCH,
        "{limited} refusals before the ban"
    );
}

#[tokio::test]
async fn a_revocation_reaches_every_process_within_the_key_cache_time() {
    // Given a key every process has looked up, cached for 1 s
    let app = TestApp::spawn().await;
    let customer = app.as_customer().await;
    let key = key_of(&customer);
    let instances = Instance::start_all(&app, None, &[("KEY_CACHE_SECONDS", "1")]).await;
    for instance in &instances {
        instance.get("/categories", &key).await.assert_status(200);
    }

    // When it is revoked, and the cache time has passed (whole seconds: 2)
    let id = crate::ratelimit::key_id(&customer);
    let revoked = app.app.limiter.keys().revoke(id).await;
    assert!(revoked.is_ok_and(|r| r.is_some_and(|r| r.revoked)));
    tokio::time::sleep(Duration::from_millis(2_100)).await;

    // Then every process refuses it
    for instance in &instances {
        let response = instance.get("/categories", &key).await;
        response.assert_error(401, "UNAUTHORIZED");
    }
}

#[tokio::test]
async fn eight_starts_at_once_on_fresh_tables_all_come_up_round_after_round() {
    // Given one DynamoDB Local, and each round two table names no one used
    let endpoint = TestApp::spawn().await.endpoint;
    for round in 0..4 {
        let suffix = format!("{:016x}", rand::random::<u64>());
        let (data, limits) = (format!("t-{suffix}"), format!("t-{suffix}-limits"));

        // When eight starts, each with a client of its own as a process has,
        // create the tables at once (as every local stack and test does)
        let starts = (0..8).map(|_| {
            let (endpoint, data, limits) = (endpoint.clone(), data.clone(), limits.clone());
            tokio::spawn(async move {
                let config = petstore::config::Config::from_lookup(|name| match name {
                    "TABLE_NAME" => Some(data.clone()),
                    "RATE_LIMIT_TABLE_NAME" => Some(limits.clone()),
                    _ => None,
                })
                .expect("a valid configuration");
                let app = petstore::App::new(config, petstore::local_client(&endpoint).await);
                app.create_tables().await
            })
        });

        // Then every start comes up, and the tables are whole: TTL on each
        for started in join_all(starts).await {
            let created = started.expect("a start runs to its end");
            if let Err(error) = created {
                panic!("round {round}: {}", petstore::db::cause_chain(&error));
            }
        }
        let client = petstore::local_client(&endpoint).await;
        for table in [&data, &limits] {
            let ttl = client
                .describe_time_to_live()
                .table_name(table)
                .send()
                .await;
            let status = ttl
                .expect("the table's TTL reads")
                .time_to_live_description
                .and_then(|d| d.time_to_live_status);
            assert_eq!(
                status,
                Some(aws_sdk_dynamodb::types::TimeToLiveStatus::Enabled),
                "round {round}: {table}"
            );
        }
    }
}
