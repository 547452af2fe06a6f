//! `petstore-bench`: the runner behind `make bench`. See `bench/README.md`.
//!
//! It expects the release binaries to be built (the Makefile does that), starts
//! its own DynamoDB Local and `petstore-local` on free ports, measures, writes
//! `target/bench/results.json` and prints a table. It reports; it never fails
//! on a figure, only when it cannot measure at all.

use http::Method;
use petstore_bench::client::{Conn, Error};
use petstore_bench::cold::{self, ColdSetup};
use petstore_bench::cost;
use petstore_bench::load::{self, Fixture, Mix};
use petstore_bench::proxy::{OpTally, Proxy, Tally};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Knobs, from the environment so the Makefile can pass them through.
struct Settings {
    root: PathBuf,
    target: PathBuf,
    out: PathBuf,
    concurrency: usize,
    seconds: u64,
    warmup_seconds: u64,
    cold_spawns: usize,
    count_repeats: usize,
    memory_mb: u32,
    oha: Option<PathBuf>,
    oha_seconds: u64,
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

impl Settings {
    fn from_env() -> Settings {
        let root = std::env::current_dir().expect("current directory");
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target"));
        let oha = std::env::var_os("BENCH_OHA")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join(".local/bin/oha"));
        Settings {
            out: target.join("bench"),
            concurrency: env_or("BENCH_CONCURRENCY", 16),
            seconds: env_or("BENCH_SECONDS", 10),
            warmup_seconds: env_or("BENCH_WARMUP_SECONDS", 2),
            cold_spawns: env_or("BENCH_COLD_SPAWNS", 30),
            count_repeats: env_or("BENCH_COUNT_REPEATS", 20),
            memory_mb: env_or("BENCH_MEMORY_MB", 128),
            oha: oha.is_file().then_some(oha),
            oha_seconds: env_or("BENCH_OHA_SECONDS", 5),
            root,
            target,
        }
    }
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("bench: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Error> {
    let settings = Settings::from_env();
    std::fs::create_dir_all(&settings.out)?;
    let started = Instant::now();
    let machine = machine();
    eprintln!("bench: {}", machine["cpu"].as_str().unwrap_or("?"));

    let release = settings.target.join("release");
    for binary in ["pets", "store", "petstore-local"] {
        if !release.join(binary).is_file() {
            return Err(format!(
                "{} is missing: run `make bench` (it builds it)",
                release.join(binary).display()
            )
            .into());
        }
    }

    let mut dynamodb = DynamoDbLocal::start(&settings.root).await?;
    let ddb_addr = dynamodb.addr;
    let ddb_url = format!("http://{ddb_addr}");
    let result = measure_all(&settings, &release, ddb_addr, &ddb_url, machine, started).await;
    dynamodb.stop().await;
    result
}

async fn measure_all(
    settings: &Settings,
    release: &Path,
    ddb_addr: SocketAddr,
    ddb_url: &str,
    machine: Value,
    started: Instant,
) -> Result<(), Error> {
    let mut notes: Vec<String> = Vec::new();
    let mut local = Service::start(
        &release.join("petstore-local"),
        ddb_url,
        &settings.out.join("petstore-local.log"),
    )
    .await?;
    let api_key = api_key(settings, ddb_url, &mut notes).await;
    let fixture = match load::seed(local.addr, api_key.clone(), 100).await {
        Ok(fixture) => fixture,
        Err(e) => {
            local.stop().await;
            return Err(format!(
                "could not seed the store: {e} (see {})",
                settings.out.join("petstore-local.log").display()
            )
            .into());
        }
    };
    eprintln!(
        "bench: seeded 1 category and {} pets",
        fixture.pet_ids.len()
    );

    // Cold start first, while the machine is otherwise idle.
    let mut cold_results = Vec::new();
    for (function, method, path, query) in [
        ("pets", "GET", "/pets", "limit=20"),
        ("store", "GET", "/store/inventory", "limit=20"),
    ] {
        eprintln!(
            "bench: cold start of {function}, {} spawns",
            settings.cold_spawns
        );
        let setup = ColdSetup {
            function,
            bootstrap: &release.join(function),
            dynamodb_endpoint: ddb_url,
            api_key: api_key.as_deref(),
            method,
            path,
            query,
            memory_mb: settings.memory_mb,
            log: &settings.out.join(format!("cold-{function}.log")),
        };
        cold_results.push(cold::measure(&setup, settings.cold_spawns).await?);
    }

    let mut loads = Vec::new();
    for mix in [Mix::Read, Mix::Write] {
        eprintln!(
            "bench: {mix:?} mix, c={} for {} s",
            settings.concurrency, settings.seconds
        );
        loads.push(
            load::run(
                local.addr,
                api_key.clone(),
                &fixture,
                mix,
                settings.concurrency,
                Duration::from_secs(settings.warmup_seconds),
                Duration::from_secs(settings.seconds),
            )
            .await?,
        );
    }
    let oha = match &settings.oha {
        Some(oha) => run_oha(oha, settings, local.addr, api_key.as_deref(), &fixture).await,
        None => {
            notes.push(
                "oha not installed: its cross-check of the read operations was skipped".into(),
            );
            Value::Null
        }
    };
    local.stop().await;

    eprintln!("bench: counting DynamoDB calls per operation");
    let proxy = Proxy::start(ddb_addr).await?;
    let mut counted = Service::start(
        &release.join("petstore-local"),
        &format!("http://{}", proxy.addr),
        &settings.out.join("petstore-local-counted.log"),
    )
    .await?;
    let calls = count_calls(
        &proxy,
        counted.addr,
        api_key.clone(),
        &fixture,
        settings.count_repeats,
    )
    .await;
    counted.stop().await;
    let calls = calls?;

    let sizes = zip_sizes(&settings.target);
    let overhead = std::fs::read(settings.out.join("overhead.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .unwrap_or(Value::Null);
    if overhead.is_null() {
        notes.push(
            "no in-process overhead figures: run `cargo bench -p petstore-bench` (make bench does)"
                .into(),
        );
    }

    let cold_json = serde_json::to_value(&cold_results)?;
    let loads_json = serde_json::to_value(&loads)?;
    let costs = costs(&calls, &cold_results, settings.memory_mb);
    let targets = targets(&cold_results, &overhead, &sizes, &loads);
    let results = json!({
        "machine": machine,
        "settings": {
            "concurrency": settings.concurrency,
            "seconds": settings.seconds,
            "warmup_seconds": settings.warmup_seconds,
            "cold_spawns": settings.cold_spawns,
            "count_repeats": settings.count_repeats,
            "lambda_memory_mb": settings.memory_mb,
            "cold_env": std::env::var("BENCH_COLD_ENV").ok(),
            "api_key": api_key.is_some(),
        },
        "cold_start": cold_json,
        "warm": loads_json,
        "oha": oha,
        "dynamodb_calls": calls,
        "cost": costs,
        "in_process_overhead": overhead,
        "size": sizes,
        "targets": targets,
        "notes": notes,
        "elapsed_seconds": started.elapsed().as_secs_f64(),
    });
    let path = settings.out.join("results.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&results)?)?;
    print_table(&results);
    println!(
        "\nFull results: {}",
        path.strip_prefix(&settings.root).unwrap_or(&path).display()
    );
    Ok(())
}

/// CPU, cores, memory, kernel: the figures mean nothing without them.
fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kib: u64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let command = |program: &str, args: &[&str]| {
        std::process::Command::new(program)
            .args(args)
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    json!({
        "cpu": field("model name").unwrap_or_else(|| "unknown".into()),
        "cpu_mhz": field("cpu MHz"),
        "logical_cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "memory_gib": (mem_kib as f64 / 1024.0 / 1024.0 * 10.0).round() / 10.0,
        "kernel": command("uname", &["-sr"]),
        "rustc": command("rustc", &["--version"]),
        "java": std::process::Command::new("java").arg("-version").output().ok()
            .and_then(|o| String::from_utf8_lossy(&o.stderr).lines().next().map(str::to_string)),
    })
}

fn free_port() -> Result<u16, Error> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// DynamoDB Local in the foreground (`dynamodb-local.sh serve`), on a free
/// port, so `make run` or another bench is never disturbed, and watching our
/// pid so it goes away with us however we exit.
struct DynamoDbLocal {
    child: Child,
    addr: SocketAddr,
}

impl DynamoDbLocal {
    async fn start(root: &Path) -> Result<DynamoDbLocal, Error> {
        let port = free_port()?;
        let mut child = Command::new("bash")
            .arg(root.join("scripts/dynamodb-local.sh"))
            .args(["serve", &port.to_string(), &std::process::id().to_string()])
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()?;
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(Duration::from_secs(90), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.starts_with("ready") {
                    return true;
                }
            }
            false
        })
        .await;
        if ready != Ok(true) {
            let _ = child.start_kill();
            return Err("DynamoDB Local did not start (scripts/dynamodb-local.sh serve)".into());
        }
        eprintln!("bench: DynamoDB Local on 127.0.0.1:{port}");
        Ok(DynamoDbLocal {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        })
    }

    async fn stop(&mut self) {
        terminate(&mut self.child).await;
    }
}

/// SIGTERM (so the child can clean up), then SIGKILL after 10 s.
async fn terminate(child: &mut Child) {
    if let Some(pid) = child.id() {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status()
            .await;
        if tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .is_ok()
        {
            return;
        }
    }
    let _ = child.kill().await;
}

/// `petstore-local` on a free port.
struct Service {
    child: Child,
    addr: SocketAddr,
}

impl Service {
    async fn start(binary: &Path, dynamodb: &str, log: &Path) -> Result<Service, Error> {
        let port = free_port()?;
        let log = std::fs::File::create(log)?;
        let child = Command::new(binary)
            .env("PORT", port.to_string())
            .env("AWS_ENDPOINT_URL_DYNAMODB", dynamodb)
            .env("AWS_ACCESS_KEY_ID", "local")
            .env("AWS_SECRET_ACCESS_KEY", "local")
            .env("AWS_REGION", "us-east-1")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            if Instant::now() > deadline {
                return Err("petstore-local did not listen within 30 s".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(Service { child, addr })
    }

    async fn stop(&mut self) {
        terminate(&mut self.child).await;
    }
}

/// An enterprise key with limits the bench cannot reach, from
/// `petstore-admin`; none (with a note) while that tool or rate limiting is
/// not there yet. `BENCH_API_KEY` overrides.
async fn api_key(settings: &Settings, ddb_url: &str, notes: &mut Vec<String>) -> Option<String> {
    if let Ok(key) = std::env::var("BENCH_API_KEY") {
        return Some(key);
    }
    let output = Command::new("cargo")
        .args(["run", "-q", "-p", "petstore-admin", "--"])
        .args([
            "keys",
            "create",
            "--plan",
            "enterprise",
            "--per-minute",
            "100000000",
            "--per-day",
            "1000000000",
        ])
        .current_dir(&settings.root)
        .env("AWS_ENDPOINT_URL_DYNAMODB", ddb_url)
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("AWS_REGION", "us-east-1")
        .stdin(Stdio::null())
        .output()
        .await;
    let key = match output {
        Ok(o) if o.status.success() => parse_key(&String::from_utf8_lossy(&o.stdout)),
        Ok(o) => {
            notes.push(format!(
                "no API key: petstore-admin failed ({}); requests go without X-API-Key",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
                    .trim()
            ));
            return None;
        }
        Err(e) => {
            notes.push(format!("no API key: could not run petstore-admin ({e})"));
            return None;
        }
    };
    if key.is_none() {
        notes.push("no API key: petstore-admin printed nothing that looks like one".into());
    }
    key
}

/// The key from `keys create`'s output: a JSON `key`/`apiKey` field, or the
/// longest token of key-like characters.
fn parse_key(stdout: &str) -> Option<String> {
    for line in stdout.lines() {
        if let Ok(value) = serde_json::from_str::<Value>(line.trim()) {
            for field in ["key", "apiKey", "api_key"] {
                if let Some(key) = value.get(field).and_then(Value::as_str) {
                    return Some(key.to_string());
                }
            }
        }
    }
    stdout
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'))
        .filter(|token| token.len() >= 20)
        .max_by_key(|token| token.len())
        .map(str::to_string)
}

/// oha on each read operation of the mix, as a check of our own driver.
async fn run_oha(
    oha: &Path,
    settings: &Settings,
    addr: SocketAddr,
    api_key: Option<&str>,
    fixture: &Fixture,
) -> Value {
    let ids: Vec<String> = fixture.pet_ids.iter().take(5).map(u64::to_string).collect();
    let mut runs = serde_json::Map::new();
    for path in [
        "/pets?limit=20".to_string(),
        format!("/pets?ids={}", ids.join(",")),
        "/store/inventory?limit=20".to_string(),
    ] {
        eprintln!("bench: oha GET {path}");
        let mut command = Command::new(oha);
        command
            .args([
                "--no-tui",
                "--output-format",
                "json",
                "-c",
                &settings.concurrency.to_string(),
            ])
            .args(["-z", &format!("{}s", settings.oha_seconds)]);
        if let Some(key) = api_key {
            command.args(["-H", &format!("X-API-Key: {key}")]);
        }
        command
            .arg(format!("http://{addr}{path}"))
            .stdin(Stdio::null())
            .stderr(Stdio::null());
        let value = match command.output().await {
            Ok(o) => match serde_json::from_slice::<Value>(&o.stdout) {
                Ok(report) => json!({
                    "requests_per_second": report["summary"]["requestsPerSec"],
                    "p50_ms": report["latencyPercentiles"]["p50"].as_f64().map(|s| s * 1e3),
                    "p99_ms": report["latencyPercentiles"]["p99"].as_f64().map(|s| s * 1e3),
                    "success_rate": report["summary"]["successRate"],
                    "status_codes": report["statusCodeDistribution"],
                }),
                Err(_) => json!({"error": String::from_utf8_lossy(&o.stderr).to_string()}),
            },
            Err(e) => json!({"error": e.to_string()}),
        };
        runs.insert(format!("GET {path}"), value);
    }
    json!({"concurrency": settings.concurrency, "seconds": settings.oha_seconds, "runs": runs})
}

/// One operation's DynamoDB calls, averaged over its repeats.
#[derive(Debug, Default, serde::Serialize)]
struct OperationCalls {
    repeats: usize,
    statuses: BTreeMap<u16, usize>,
    calls_per_request: f64,
    by_call: BTreeMap<String, f64>,
    read_units_per_request: f64,
    write_units_per_request: f64,
    index_units_per_request: f64,
    dynamodb_bytes_per_request: f64,
    /// Mean time of one request, sent alone (through the proxy).
    request_ms: f64,
    /// Of which DynamoDB Local answering, summed over the calls.
    dynamodb_ms: f64,
    dynamodb_usd_per_million: f64,
}

/// Requests sent, their statuses, the DynamoDB calls they made,
/// and the total time the requests took (ms).
type Counted = (usize, BTreeMap<u16, usize>, BTreeMap<String, OpTally>, f64);

const READ_CALLS: &[&str] = &[
    "GetItem",
    "Query",
    "Scan",
    "BatchGetItem",
    "TransactGetItems",
];

fn add(into: &mut BTreeMap<String, OpTally>, tally: Tally) {
    for (op, t) in tally {
        let e = into.entry(op).or_default();
        e.calls += t.calls;
        e.capacity_units += t.capacity_units;
        e.read_units += t.read_units;
        e.write_units += t.write_units;
        e.index_units += t.index_units;
        e.request_bytes += t.request_bytes;
        e.response_bytes += t.response_bytes;
        e.upstream_ms += t.upstream_ms;
    }
}

/// Sends each operation `repeats` times, one at a time, through the counting
/// proxy, and attributes the calls in between to it.
async fn count_calls(
    proxy: &Proxy,
    addr: SocketAddr,
    api_key: Option<String>,
    fixture: &Fixture,
    repeats: usize,
) -> Result<BTreeMap<String, OperationCalls>, Error> {
    let mut conn = Conn::new(addr, api_key);
    let mut raw: BTreeMap<&'static str, Counted> = BTreeMap::new();
    // Let the key cache and connection pool settle, as in a warm function.
    conn.send(Method::GET, "/pets?limit=1", None).await?;
    proxy.take();
    let ids: Vec<String> = fixture.pet_ids.iter().take(5).map(u64::to_string).collect();
    let ids = ids.join(",");
    let mut one = async |conn: &mut Conn,
                         op: &'static str,
                         method: Method,
                         path: &str,
                         body: Option<Value>|
           -> Result<Value, Error> {
        let started = Instant::now();
        let reply = conn.send(method, path, body.as_ref()).await?;
        let took = started.elapsed().as_secs_f64() * 1e3;
        let entry = raw.entry(op).or_default();
        entry.0 += 1;
        entry.3 += took;
        *entry.1.entry(reply.status.as_u16()).or_insert(0) += 1;
        add(&mut entry.2, proxy.take());
        Ok(reply.json())
    };
    for i in 0..repeats {
        let pet_id = fixture.pet_ids[i % fixture.pet_ids.len()];
        one(
            &mut conn,
            "GET /pets?limit=20",
            Method::GET,
            "/pets?limit=20",
            None,
        )
        .await?;
        one(
            &mut conn,
            "GET /pets?ids=(5)",
            Method::GET,
            &format!("/pets?ids={ids}"),
            None,
        )
        .await?;
        one(
            &mut conn,
            "GET /pets/{id} (deprecated)",
            Method::GET,
            &format!("/pets/{pet_id}"),
            None,
        )
        .await?;
        one(
            &mut conn,
            "GET /store/inventory?limit=20",
            Method::GET,
            "/store/inventory?limit=20",
            None,
        )
        .await?;
        one(
            &mut conn,
            "GET /store/inventory/{id}",
            Method::GET,
            &format!("/store/inventory/{pet_id}"),
            None,
        )
        .await?;
        let pet = one(
            &mut conn,
            "POST /pets",
            Method::POST,
            "/pets",
            Some(json!({"name": "Counted pet", "categoryId": fixture.category_id})),
        )
        .await?;
        let new_pet = pet["id"].as_u64().ok_or("POST /pets gave no id")?;
        one(
            &mut conn,
            "PUT /store/inventory/{id}",
            Method::PUT,
            &format!("/store/inventory/{new_pet}"),
            Some(json!({"quantity": 10})),
        )
        .await?;
        let order = one(
            &mut conn,
            "POST /store/orders",
            Method::POST,
            "/store/orders",
            Some(json!({"petId": new_pet, "quantity": 1})),
        )
        .await?;
        let order_id = order["id"]
            .as_u64()
            .ok_or("POST /store/orders gave no id")?;
        one(
            &mut conn,
            "GET /store/orders/{id}",
            Method::GET,
            &format!("/store/orders/{order_id}"),
            None,
        )
        .await?;
        one(
            &mut conn,
            "DELETE /store/orders/{id}",
            Method::DELETE,
            &format!("/store/orders/{order_id}"),
            None,
        )
        .await?;
        let order = one(
            &mut conn,
            "POST /store/orders",
            Method::POST,
            "/store/orders",
            Some(json!({"petId": new_pet, "quantity": 1})),
        )
        .await?;
        let order_id = order["id"]
            .as_u64()
            .ok_or("POST /store/orders gave no id")?;
        one(
            &mut conn,
            "PATCH /store/orders/{id} (complete)",
            Method::PATCH,
            &format!("/store/orders/{order_id}"),
            Some(json!({"complete": true})),
        )
        .await?;
    }
    Ok(raw
        .into_iter()
        .map(|(op, (requests, statuses, tally, total_ms))| {
            let per = |x: f64| x / requests as f64;
            let (mut reads, mut writes, mut index, mut bytes, mut calls, mut upstream) =
                (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
            let mut by_call = BTreeMap::new();
            for (call, t) in &tally {
                // DynamoDB Local reports CapacityUnits; which kind follows from the call.
                let kind = call.split(' ').next().unwrap_or(call);
                if READ_CALLS.contains(&kind) {
                    reads += t.capacity_units;
                } else {
                    writes += t.capacity_units;
                }
                index += t.index_units;
                bytes += (t.request_bytes + t.response_bytes) as f64;
                calls += t.calls as f64;
                upstream += t.upstream_ms;
                by_call.insert(call.clone(), per(t.calls as f64));
            }
            let calls = OperationCalls {
                repeats: requests,
                statuses,
                calls_per_request: per(calls),
                by_call,
                read_units_per_request: per(reads),
                write_units_per_request: per(writes),
                index_units_per_request: per(index),
                dynamodb_bytes_per_request: per(bytes),
                request_ms: per(total_ms),
                dynamodb_ms: per(upstream),
                dynamodb_usd_per_million: cost::dynamodb_per_million(per(reads), per(writes)),
            };
            (op.to_string(), calls)
        })
        .collect())
}

fn zip_sizes(target: &Path) -> Value {
    let mut sizes = serde_json::Map::new();
    for function in ["pets", "store"] {
        let zip = target.join("lambda").join(function).join("bootstrap.zip");
        let binary = target
            .join("aarch64-unknown-linux-gnu/release")
            .join(function);
        let x86 = target.join("release").join(function);
        let len = |p: &Path| std::fs::metadata(p).ok().map(|m| m.len());
        let modified = |p: &Path| {
            std::fs::metadata(p)
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_secs())
        };
        sizes.insert(
            function.to_string(),
            json!({
                "arm64_zip_bytes": len(&zip),
                "arm64_zip_built_unix": modified(&zip),
                "arm64_binary_bytes": len(&binary),
                "x86_64_binary_bytes": len(&x86),
            }),
        );
    }
    Value::Object(sizes)
}

fn costs(
    calls: &BTreeMap<String, OperationCalls>,
    cold: &[cold::ColdResult],
    memory_mb: u32,
) -> Value {
    let mut lambda = serde_json::Map::new();
    for c in cold {
        // Lambda bills the handler's time: the warm invocation, measured
        // between the runtime API's `next` and the posted response.
        lambda.insert(
            c.function.clone(),
            json!({
                "warm_invocation_p50_ms": c.warm_invocation.p50_ms,
                "usd_per_million_at_p50": cost::lambda_per_million(c.warm_invocation.p50_ms, memory_mb),
                "first_invocation_p50_ms": c.first_invocation.p50_ms,
            }),
        );
    }
    let mut per_operation = serde_json::Map::new();
    for (op, c) in calls {
        // Lambda runs one request per instance at a time, so the basis is the
        // request sent alone (the counting pass), not the loaded latency.
        let basis_ms = c.request_ms;
        let lambda_usd = cost::lambda_per_million(basis_ms, memory_mb);
        per_operation.insert(
            op.clone(),
            json!({
                "dynamodb_usd_per_million": c.dynamodb_usd_per_million,
                "lambda_usd_per_million": lambda_usd,
                "lambda_duration_basis_ms": basis_ms,
                "total_usd_per_million": c.dynamodb_usd_per_million + lambda_usd + cost::HTTP_API_PER_MILLION_REQUESTS,
                "http_api_usd_per_million": cost::HTTP_API_PER_MILLION_REQUESTS,
            }),
        );
    }
    json!({
        "prices": cost::prices(),
        "lambda_memory_mb": memory_mb,
        "lambda": lambda,
        "per_operation": per_operation,
    })
}

fn targets(
    cold: &[cold::ColdResult],
    overhead: &Value,
    sizes: &Value,
    loads: &[load::LoadResult],
) -> Value {
    let mut list = Vec::new();
    for c in cold {
        list.push(json!({
            "target": format!("cold start to ready ({}) median <= 15 ms", c.function),
            "measured": c.ready.p50_ms, "limit": 15.0, "met": c.ready.p50_ms <= 15.0,
        }));
    }
    if let Some(benches) = overhead.get("benches").and_then(Value::as_object) {
        for (name, b) in benches
            .iter()
            .filter(|(name, _)| !name.contains("(reference)"))
        {
            if let Some(p99) = b.get("p99_us").and_then(Value::as_f64) {
                list.push(json!({
                    "target": format!("router + wrapper p99 <= 50 us ({name})"),
                    "measured": p99, "limit": 50.0, "met": p99 <= 50.0,
                }));
            }
        }
    }
    for function in ["pets", "store"] {
        if let Some(bytes) = sizes[function]["arm64_zip_bytes"].as_u64() {
            let mb = bytes as f64 / 1e6;
            list.push(json!({
                "target": format!("{function} arm64 zip <= 3.0 MB"),
                "measured": mb, "limit": 3.0, "met": mb <= 3.0,
            }));
        }
    }
    // "A read is one DynamoDB round trip": compared in the calls table
    // (calls per request) rather than here, as latency locally is DynamoDB Local's.
    let _ = loads;
    Value::Array(list)
}

fn print_table(r: &Value) {
    let f = |v: &Value| {
        v.as_f64()
            .map(|x| format!("{x:.2}"))
            .unwrap_or_else(|| "-".into())
    };
    let m = &r["machine"];
    println!(
        "\nMachine: {} ({} logical CPUs, {} GiB), {}",
        m["cpu"].as_str().unwrap_or("?"),
        m["logical_cpus"],
        m["memory_gib"],
        m["kernel"].as_str().unwrap_or("?")
    );

    println!("\nCold start (x86_64 release bootstrap, local Runtime API; ms)");
    println!(
        "  {:<8} {:>6} {:>9} {:>9} {:>11} {:>11} {:>10} {:>10}",
        "function",
        "spawns",
        "ready p50",
        "ready p95",
        "1st resp p50",
        "1st resp p95",
        "warm p50",
        "status"
    );
    for c in r["cold_start"].as_array().into_iter().flatten() {
        println!(
            "  {:<8} {:>6} {:>9} {:>9} {:>11} {:>11} {:>10} {:>10}",
            c["function"].as_str().unwrap_or("?"),
            c["spawns"],
            f(&c["ready"]["p50_ms"]),
            f(&c["ready"]["p95_ms"]),
            f(&c["first_response"]["p50_ms"]),
            f(&c["first_response"]["p95_ms"]),
            f(&c["warm_invocation"]["p50_ms"]),
            c["statuses"].to_string(),
        );
    }

    println!("\nWarm, petstore-local on DynamoDB Local (closed loop; ms)");
    for l in r["warm"].as_array().into_iter().flatten() {
        println!(
            "  {} mix, c={}, {} s: {:.0} req/s, p50 {} p99 {}, errors {}",
            l["mix"].as_str().unwrap_or("?"),
            l["concurrency"],
            l["seconds"],
            l["requests_per_second"].as_f64().unwrap_or(0.0),
            f(&l["latency"]["p50_ms"]),
            f(&l["latency"]["p99_ms"]),
            l["errors"]
        );
        for (op, o) in l["operations"].as_object().into_iter().flatten() {
            println!(
                "    {:<34} {:>6} req  p50 {:>7}  p99 {:>7}  non-2xx {}",
                op,
                o["requests"],
                f(&o["latency"]["p50_ms"]),
                f(&o["latency"]["p99_ms"]),
                o["unexpected"]
            );
        }
    }
    if let Some(runs) = r["oha"]["runs"].as_object() {
        println!(
            "  oha cross-check (one URL each, c={}, {} s):",
            r["oha"]["concurrency"], r["oha"]["seconds"]
        );
        for (path, o) in runs {
            println!(
                "    {:<34} {:>7} req/s  p50 {:>7}  p99 {:>7}  {}",
                path.chars().take(34).collect::<String>(),
                o["requests_per_second"]
                    .as_f64()
                    .map(|x| format!("{x:.0}"))
                    .unwrap_or("-".into()),
                f(&o["p50_ms"]),
                f(&o["p99_ms"]),
                o["status_codes"]
            );
        }
    }

    println!(
        "\nDynamoDB per request (counted through a proxy; capacity as DynamoDB Local reports it)"
    );
    println!(
        "  {:<34} {:>5} {:>6} {:>6} {:>7} {:>7} {:>7} {:>8} {:>10}  calls",
        "operation", "calls", "RRU", "WRU", "of GSIs", "req ms", "DDB ms", "DDB $/M", "Lambda $/M"
    );
    let per_op = &r["cost"]["per_operation"];
    for (op, c) in r["dynamodb_calls"].as_object().into_iter().flatten() {
        let calls: Vec<String> = c["by_call"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| {
                format!(
                    "{k}×{}",
                    v.as_f64()
                        .map(|x| format!("{x:.2}"))
                        .unwrap_or_default()
                        .trim_end_matches('0')
                        .trim_end_matches('.')
                )
            })
            .collect();
        println!(
            "  {:<34} {:>5} {:>6} {:>6} {:>7} {:>7} {:>7} {:>8} {:>10}  {}",
            op,
            f(&c["calls_per_request"]),
            f(&c["read_units_per_request"]),
            f(&c["write_units_per_request"]),
            f(&c["index_units_per_request"]),
            f(&c["request_ms"]),
            f(&c["dynamodb_ms"]),
            c["dynamodb_usd_per_million"]
                .as_f64()
                .map(|x| format!("{x:.3}"))
                .unwrap_or("-".into()),
            per_op[op]["lambda_usd_per_million"]
                .as_f64()
                .map(|x| format!("{x:.3}"))
                .unwrap_or("-".into()),
            calls.join(" ")
        );
    }
    println!(
        "  prices: DynamoDB on-demand ${}/M WRU, ${}/M RRU; Lambda arm64 ${}/GB-s + ${}/M requests at {} MB ({})",
        r["cost"]["prices"]["dynamodb_wru_per_million"],
        r["cost"]["prices"]["dynamodb_rru_per_million"],
        r["cost"]["prices"]["lambda_arm64_per_gb_second"],
        r["cost"]["prices"]["lambda_per_million_requests"],
        r["cost"]["lambda_memory_mb"],
        r["cost"]["prices"]["checked"].as_str().unwrap_or("")
    );
    for (function, l) in r["cost"]["lambda"].as_object().into_iter().flatten() {
        println!(
            "  Lambda {function}: warm invocation p50 {} ms -> ${:.3} per million (duration + requests)",
            f(&l["warm_invocation_p50_ms"]),
            l["usd_per_million_at_p50"].as_f64().unwrap_or(0.0)
        );
    }

    if let Some(benches) = r["in_process_overhead"]["benches"].as_object() {
        println!("\nIn-process router + wrapper (DynamoDB answered in-process; µs)");
        for (name, b) in benches {
            println!(
                "  {:<34} p50 {:>7}  p99 {:>7}  mean {:>7}  criterion median {}",
                name,
                f(&b["p50_us"]),
                f(&b["p99_us"]),
                f(&b["mean_us"]),
                f(&b["criterion_median_us"])
            );
        }
    }

    println!("\nSize (arm64, cargo lambda build --release --arm64 --output-format zip)");
    for (function, s) in r["size"].as_object().into_iter().flatten() {
        let mb = |v: &Value| {
            v.as_u64()
                .map(|b| format!("{:.2} MB", b as f64 / 1e6))
                .unwrap_or_else(|| "-".into())
        };
        println!(
            "  {:<8} zip {:>9}  binary {:>9}  (x86_64 binary {})",
            function,
            mb(&s["arm64_zip_bytes"]),
            mb(&s["arm64_binary_bytes"]),
            mb(&s["x86_64_binary_bytes"])
        );
    }

    println!("\nTargets (reported, never enforced)");
    for t in r["targets"].as_array().into_iter().flatten() {
        println!(
            "  [{}] {:<50} measured {}",
            if t["met"].as_bool() == Some(true) {
                "met"
            } else {
                "MISSED"
            },
            t["target"].as_str().unwrap_or("?"),
            f(&t["measured"])
        );
    }
    for note in r["notes"].as_array().into_iter().flatten() {
        println!("  note: {}", note.as_str().unwrap_or(""));
    }
}
