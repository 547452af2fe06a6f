//! `petstore-warm-instructions`: the instructions a function's warm request
//! costs, counted by callgrind: a repeatable figure for a change to the warm
//! path, where the CPU time `lab/coldstart` reports moves with the load of
//! a shared machine. Not part of `make bench`.
//!
//! Each row's release `bootstrap` is spawned under `valgrind --tool=callgrind`
//! with Lambda's environment, against the lab's Runtime API and
//! its own DynamoDB Local (plain HTTP: no TLS, which `lab/coldstart` puts
//! in between), and served a cold invocation, `WARM_UP` warm ones, then
//! `WARM_REQUESTS` measured ones: callgrind's counters are zeroed when the
//! process asks for the first measured event and dumped when it asks for the
//! one after the last (`callgrind_control`, which reaches a process blocked
//! in its `next`), so the dump holds exactly those invocations, each from its
//! event's arrival to the process's next `next`. Rows as `lab/coldstart`'s:
//! `pets` `GET /pets?limit=20` and `store` `GET /store/inventory?limit=20`
//! with a staff enterprise key (made with `petstore-admin`), `pets-keyless`
//! the same request without one (counted by its source address, answered 401).
//!
//!   WARM_ROWS=pets,store,pets-keyless  the rows
//!   WARM_EXTRA='pets@before=path,...'  more builds of a row's function
//!   WARM_REQUESTS=40 WARM_UP=5         measured and unmeasured warm requests
//!   WARM_DYNAMODB_URL=http://...       a DynamoDB Local already running (the
//!                                      keys are made there), else one of its own
//!   WARM_ENV='NAME=value,...'          more environment for the functions
//!                                      (AWS_ENDPOINT_URL_DYNAMODB and
//!                                      SSL_CERT_FILE: through a TLS proxy);
//!                                      KEY_CACHE_SECONDS=3600 unless set, so
//!                                      that no key refresh (one GetItem per
//!                                      15 s of a key's traffic) lands in a
//!                                      run slowed by valgrind
//!
//! It writes each dump to `target/bench/callgrind/<label>.<pid>.1` (read it
//! with `callgrind_annotate --inclusive=yes`) and prints instructions per
//! request. It needs `cargo build --release -p pets -p store` (with
//! `CARGO_PROFILE_RELEASE_STRIP=false` for function names in the dumps: the
//! code, and so the count, is the same) and `cargo build -p petstore-admin`.

mod counters;

use bytes::Bytes;
use counters::{Counted, Seen};
use petstore_bench::client::Error;
use petstore_bench::lambda_process::{env_pairs, lambda_environment, LambdaProcess};
use petstore_bench::processes::DynamoDbLocal;
use petstore_bench::{api_key, env_or};
use petstore_lab_runtime_api::RuntimeApi;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::process::Command;
use tokio::sync::Notify;

/// A row: a function and the request it is sent.
struct Row {
    label: String,
    bootstrap: PathBuf,
    path: &'static str,
    query: &'static str,
    keyed: bool,
}

/// The rows `lab/coldstart` measures warm, by label: function, path, query, keyed.
const ROWS: [(&str, &str, &str, &str, bool); 3] = [
    ("pets", "pets", "/pets", "limit=20", true),
    ("store", "store", "/store/inventory", "limit=20", true),
    ("pets-keyless", "pets", "/pets", "limit=20", false),
];

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("petstore-warm-instructions: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Error> {
    let root = std::env::current_dir()?;
    let target = petstore_bench::target_dir(&root);
    let out = target.join("bench/callgrind");
    std::fs::create_dir_all(&out)?;
    let rows = rows(&target)?;
    let warm_up: usize = env_or("WARM_UP", 5);
    let measured: usize = env_or("WARM_REQUESTS", 40).max(1);
    // A DynamoDB Local of the caller's (WARM_DYNAMODB_URL), or one of our own.
    let (url, mut own) = match std::env::var("WARM_DYNAMODB_URL") {
        Ok(url) => (url, None),
        Err(_) => {
            let dynamodb = DynamoDbLocal::start(&root).await?;
            (dynamodb.url(), Some(dynamodb))
        }
    };
    let outcome = async {
        let mut notes = Vec::new();
        let key = api_key::obtain(&target.join("debug/petstore-admin"), &url, &mut notes).await;
        for note in notes {
            eprintln!("note: {note}");
        }
        println!("row | requests measured | instructions per request | statuses");
        for (index, row) in rows.iter().enumerate() {
            let setup = Setup {
                row,
                dynamodb: url.clone(),
                key: key.as_deref().filter(|_| row.keyed),
                // A keyless row's address is its own: its requests stay under the free plan.
                source_ip: format!("203.0.113.{}", 100 + index),
                out: &out,
            };
            let measure = measure(&setup, warm_up, measured).await?;
            println!(
                "{} | {} | {:.0} | {}",
                row.label,
                measured,
                measure.instructions as f64 / measured as f64,
                measure.statuses
            );
            eprintln!("  dump: {}", measure.dump.display());
        }
        Ok(())
    }
    .await;
    if let Some(dynamodb) = own.as_mut() {
        dynamodb.stop().await;
    }
    outcome
}

fn rows(target: &Path) -> Result<Vec<Row>, Error> {
    let row = |label: &str, bootstrap: PathBuf| -> Result<Row, Error> {
        let name = label.split('@').next().unwrap_or(label);
        let (_, _, path, query, keyed) = ROWS
            .iter()
            .find(|row| row.0 == name)
            .ok_or_else(|| format!("{label}: no such row (pets, store, pets-keyless)"))?;
        Ok(Row {
            label: label.to_string(),
            bootstrap,
            path,
            query,
            keyed: *keyed,
        })
    };
    let wanted = std::env::var("WARM_ROWS").unwrap_or_else(|_| "pets,store,pets-keyless".into());
    let mut rows = Vec::new();
    for label in wanted.split(',').map(str::trim).filter(|l| !l.is_empty()) {
        let function = ROWS
            .iter()
            .find(|row| row.0 == label)
            .map_or(label, |row| row.1);
        rows.push(row(label, target.join("release").join(function))?);
    }
    for extra in std::env::var("WARM_EXTRA").unwrap_or_default().split(',') {
        if let Some((label, path)) = extra.split_once('=') {
            rows.push(row(label.trim(), PathBuf::from(path.trim()))?);
        }
    }
    Ok(rows)
}

struct Setup<'a> {
    row: &'a Row,
    dynamodb: String,
    key: Option<&'a str>,
    source_ip: String,
    out: &'a Path,
}

struct Measure {
    instructions: u64,
    statuses: String,
    dump: PathBuf,
}

/// What the Runtime API has seen of one process.
async fn measure(setup: &Setup<'_>, warm_up: usize, measured: usize) -> Result<Measure, Error> {
    let api = Arc::new(Counted {
        seen: Mutex::new(Seen::default()),
        changed: Notify::new(),
        event: Bytes::from(serde_json::to_vec(&event(setup))?),
        pid: OnceLock::new(),
        // The cold invocation and the warm-up ones come first.
        zero_at: 1 + warm_up + 1,
        dump_at: 1 + warm_up + measured + 1,
    });
    let arn = "arn:aws:lambda:us-east-1:123456789012:function:bench";
    let server = RuntimeApi::start(arn.to_string(), api.clone()).await?;
    let prefix = setup.out.join(&setup.row.label);
    let log = std::fs::File::create(setup.out.join(format!("{}.log", setup.row.label)))?;
    let mut command = lambda_command(setup, server.addr(), &prefix, &log)?;
    let mut child = command.spawn()?;
    let pid = child.id().ok_or("the bootstrap has no pid")?;
    let _ = api.pid.set(pid);
    let finished = tokio::time::timeout(Duration::from_secs(600), async {
        loop {
            let notified = api.changed.notified();
            {
                let seen = api.seen();
                if seen.done || seen.error.is_some() {
                    return;
                }
            }
            tokio::select! {
                _ = notified => {}
                _ = child.wait() => return,
            }
        }
    })
    .await;
    let _ = child.start_kill();
    let _ = child.wait().await;
    drop(server);
    let seen = api.seen();
    if let Some(error) = &seen.error {
        return Err(format!("{}: {error}", setup.row.label).into());
    }
    if finished.is_err() || !seen.done {
        return Err(format!("{}: not done in 600 s (see its log)", setup.row.label).into());
    }
    let dump = PathBuf::from(format!("{}.{pid}.1", prefix.display()));
    let instructions = total_instructions(&std::fs::read_to_string(&dump)?)
        .ok_or_else(|| format!("{}: no totals line", dump.display()))?;
    let mut statuses = seen.statuses.clone();
    statuses.sort_unstable();
    statuses.dedup();
    let statuses = statuses
        .iter()
        .map(|status| {
            let n = seen.statuses.iter().filter(|s| *s == status).count();
            format!("{n}x {status}")
        })
        .collect::<Vec<_>>()
        .join(", ");
    Ok(Measure {
        instructions,
        statuses,
        dump,
    })
}

/// callgrind's `totals:` (or `summary:`) line: the instructions counted.
fn total_instructions(dump: &str) -> Option<u64> {
    dump.lines()
        .find_map(|line| {
            line.strip_prefix("totals:")
                .or_else(|| line.strip_prefix("summary:"))
        })
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
}

/// The bootstrap under callgrind, with Lambda's environment (as
/// `lab/coldstart`'s `lambda_env` sets it).
fn lambda_command(
    setup: &Setup<'_>,
    runtime_api: SocketAddr,
    prefix: &Path,
    log: &std::fs::File,
) -> Result<Command, Error> {
    let name = setup
        .row
        .label
        .split('@')
        .next()
        .unwrap_or(&setup.row.label);
    let function = ROWS
        .iter()
        .find(|row| row.0 == name)
        .map_or(name, |row| row.1);
    let mut command = Command::new("valgrind");
    command
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}.%p", prefix.display()))
        .arg(&setup.row.bootstrap);
    let process = LambdaProcess {
        function,
        memory_mb: 128,
        runtime_api,
        dynamodb_endpoint: &setup.dynamodb,
    };
    lambda_environment(&mut command, &process)
        .env("KEY_CACHE_SECONDS", "3600")
        .envs(env_pairs("WARM_ENV"))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log.try_clone()?)
        .kill_on_drop(true);
    Ok(command)
}

/// An API Gateway HTTP API (payload 2.0) event, as `lab/coldstart` sends it.
fn event(setup: &Setup<'_>) -> Value {
    let (path, query) = (setup.row.path, setup.row.query);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut headers = json!({
        "accept": "application/json",
        "host": "abc123.execute-api.us-east-1.amazonaws.com",
        "user-agent": "petstore-bench",
        "x-forwarded-for": setup.source_ip,
        "x-forwarded-proto": "https",
    });
    if let Some(key) = setup.key {
        headers["x-api-key"] = Value::from(key);
    }
    let params: serde_json::Map<String, Value> = query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_string(), Value::from(v)))
        .collect();
    json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": headers,
        "queryStringParameters": params,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {
                "method": "GET",
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": setup.source_ip,
                "userAgent": "petstore-bench"
            },
            "requestId": "bench-apigw-request",
            "routeKey": "$default",
            "stage": "$default",
            "time": "01/Jan/2025:00:00:00 +0000",
            "timeEpoch": now.as_millis() as u64
        },
        "isBase64Encoded": false
    })
}
