//! What abuse costs: DynamoDB calls, units (by DynamoDB's rules) and log bytes per request
//! requests that are refused (a key past its limit asking for an expensive
//! read), that carry random keys, and that ask for the worst list page (a
//! filter matching nothing among many entries, which reads its bounded
//! number of round trips).
//!
//! Each kind is sent one request at a time to a `petstore-local` whose
//! DynamoDB is the counting [`Meter`], as [`calls`](crate::calls) does for
//! the ordinary operations; it measures whatever the code does, fixed or not.

use crate::calls::{Meter, Sent, LAMBDA_LOGGING};
use crate::client::{Conn, Error, Reply};
use crate::processes::PetstoreLocal;
use crate::results::{BenchResults, OperationCalls};
use http::{Method, StatusCode};
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

/// Pets of the category the worst pages read, none of them sold: enough
/// that even a page of 100 runs out of round trips (10 × 101 entries).
const SPARSE_PETS: usize = 1_050;
/// Requests of each refused and random-key kind.
const FLOOD: usize = 200;

/// Measures each abusive kind into `results.abuse`, with DynamoDB Local at
/// `dynamodb` and the `petstore-local` in `release` (the directory of the
/// host's release binaries); a note when it cannot. Run from the repository
/// root, as `make bench` does.
pub async fn measure_into(release: &Path, dynamodb: SocketAddr, results: &mut BenchResults) {
    eprintln!("bench: what abuse costs (refused, random keys, worst pages)");
    match measure(release, dynamodb).await {
        Ok(kinds) => results.abuse = kinds,
        Err(e) => results.notes.push(format!("no abuse figures: {e}")),
    }
}

async fn measure(
    release: &Path,
    dynamodb: SocketAddr,
) -> Result<BTreeMap<String, OperationCalls>, Error> {
    let url = format!("http://{dynamodb}");
    let unlimited = ["--per-minute", "100000000", "--per-day", "1000000000"];
    let staff = [
        ["--plan", "enterprise", "--role", "staff"].as_slice(),
        &unlimited,
    ]
    .concat();
    let staff = new_key(&url, &staff).await?;
    let free = new_key(&url, &["--plan", "free"]).await?;
    let service = release.join("petstore-local");
    let log = release.join("../bench/petstore-local-abuse.log");
    let mut meter = Meter::start(dynamodb, &log).await?;
    meter.proxy.leave_uncounted(crate::proxy::is_webhooks_call);
    let url = format!("http://{}", meter.proxy.addr);
    let env = LAMBDA_LOGGING.map(str::to_string);
    let mut local = PetstoreLocal::start(&service, &url, &log, &env).await?;
    let measured = async {
        meter.attach().await?;
        let meter = &mut meter;
        let (mut kinds, pet_ids) = worst_pages(meter, local.addr, staff).await?;
        let ids: Vec<String> = pet_ids.iter().take(100).map(u64::to_string).collect();
        let read = format!("/pets?ids={}", ids.join(","));
        let name = format!(
            "refused: GET /pets?ids=({}) by a key past its limit",
            ids.len()
        );
        kinds.insert(name, refused(meter, local.addr, free, &read).await?);
        let name = "random key: GET /pets?limit=20, a fresh unknown key each".to_string();
        kinds.insert(name, random_keys(meter, local.addr).await?);
        Ok::<_, Error>(kinds)
    }
    .await;
    local.stop().await;
    measured
}

/// Sends one request and adds it, and the calls counted since the last
/// take, to `sent`.
async fn counted(
    sent: &mut Sent,
    meter: &mut Meter,
    conn: &mut Conn,
    path: &str,
) -> Result<Reply, Error> {
    let started = Instant::now();
    let reply = conn.send(Method::GET, path, None).await?;
    sent.requests += 1;
    sent.total_ms += started.elapsed().as_secs_f64() * 1e3;
    *sent.statuses.entry(reply.status.as_u16()).or_insert(0) += 1;
    meter.add_to(sent).await?;
    Ok(reply)
}

/// The sparse filter's first page, at the smallest and the largest limit.
async fn worst_pages(
    meter: &mut Meter,
    addr: SocketAddr,
    staff_key: String,
) -> Result<(BTreeMap<String, OperationCalls>, Vec<u64>), Error> {
    let (category, pet_ids) = seed_sparse_category(addr, &staff_key).await?;
    let mut conn = Conn::new(addr, Some(staff_key));
    meter.skip().await?;
    let mut kinds = BTreeMap::new();
    for limit in [1, 100] {
        let mut sent = Sent::default();
        let path = format!("/pets?categoryId={category}&status=sold&limit={limit}");
        for _ in 0..5 {
            counted(&mut sent, meter, &mut conn, &path).await?;
        }
        let name = format!(
            "worst page: GET /pets?categoryId=&status=sold&limit={limit} (0 of {SPARSE_PETS} match)"
        );
        kinds.insert(name, sent.per_request());
    }
    Ok((kinds, pet_ids))
}

/// A category of [`SPARSE_PETS`] available pets, created 8 at a time: its
/// id, and the pets' ids.
async fn seed_sparse_category(addr: SocketAddr, staff_key: &str) -> Result<(u64, Vec<u64>), Error> {
    let api_key = Some(staff_key.to_string());
    let mut conn = Conn::new(addr, api_key.clone());
    let name = format!("bench-sparse-{}", rand::random::<u32>());
    let reply = conn
        .send(Method::POST, "/categories", Some(&json!({ "name": name })))
        .await?;
    let category = reply.created_id().ok_or("POST /categories gave no id")?;
    let workers: Vec<_> = (0..8)
        .map(|worker| {
            let mut conn = Conn::new(addr, api_key.clone());
            tokio::spawn(async move {
                let mut ids = Vec::new();
                for i in (worker..SPARSE_PETS).step_by(8) {
                    let pet = json!({ "name": format!("Sparse {i}"), "categoryId": category });
                    let reply = conn.send(Method::POST, "/pets", Some(&pet)).await?;
                    ids.push(reply.created_id().ok_or_else(|| {
                        Error::from(format!("POST /pets answered {}", reply.status))
                    })?);
                }
                Ok::<_, Error>(ids)
            })
        })
        .collect();
    let mut pet_ids = Vec::with_capacity(SPARSE_PETS);
    for worker in workers {
        pet_ids.extend(worker.await??);
    }
    Ok((category, pet_ids))
}

/// A free key (60 a minute) past its limit asking for `path` [`FLOOD`] times; only the
/// requests answered 429 are counted (a minute boundary admits a few again).
async fn refused(
    meter: &mut Meter,
    addr: SocketAddr,
    key: String,
    path: &str,
) -> Result<OperationCalls, Error> {
    let mut conn = Conn::new(addr, Some(key));
    // Spend the minute's requests.
    for _ in 0..100 {
        let reply = conn.send(Method::GET, "/pets?limit=1", None).await?;
        if reply.status == StatusCode::TOO_MANY_REQUESTS {
            break;
        }
    }
    meter.skip().await?;
    let mut sent = Sent::default();
    for _ in 0..FLOOD {
        let mut one = Sent::default();
        let reply = counted(&mut one, meter, &mut conn, path).await?;
        if reply.status == StatusCode::TOO_MANY_REQUESTS {
            sent.merge(one);
        }
    }
    Ok(sent.per_request())
}

/// [`FLOOD`] requests from one address, each with a fresh random key.
async fn random_keys(meter: &mut Meter, addr: SocketAddr) -> Result<OperationCalls, Error> {
    meter.skip().await?;
    let mut sent = Sent::default();
    for _ in 0..FLOOD {
        // The issued form (`psk_` + 43 base64url characters): any other
        // string is refused unread, which would measure less than a flood costs.
        let (high, low) = (rand::random::<u128>(), rand::random::<u64>() >> 20);
        let key = format!("psk_{high:032x}{low:011x}");
        let mut conn = Conn::new(addr, Some(key));
        counted(&mut sent, meter, &mut conn, "/pets?limit=20").await?;
    }
    Ok(sent.per_request())
}

/// What `petstore-admin keys create` prints, the key among it.
#[derive(Deserialize)]
struct IssuedKey {
    #[serde(alias = "apiKey", alias = "api_key")]
    key: String,
}

/// A key made with `petstore-admin keys create` and `args`.
async fn new_key(dynamodb_url: &str, args: &[&str]) -> Result<String, Error> {
    let output = tokio::process::Command::new("cargo")
        .args(["run", "-q", "-p", "petstore-admin", "--", "keys", "create"])
        .args(args)
        .env("AWS_ENDPOINT_URL_DYNAMODB", dynamodb_url)
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("AWS_REGION", "us-east-1")
        .stdin(Stdio::null())
        .output()
        .await?;
    let issued: IssuedKey = serde_json::from_slice(&output.stdout).map_err(|e| {
        let stderr = String::from_utf8_lossy(&output.stderr);
        format!("petstore-admin keys create gave no key ({e}): {stderr}")
    })?;
    Ok(issued.key)
}

/// The abuse table: calls, units and dollars per million of each kind.
pub fn print(kinds: &BTreeMap<String, OperationCalls>) {
    if kinds.is_empty() {
        return;
    }
    println!("\nWhat abuse costs (per request by DynamoDB's rules, and DynamoDB $ per million):");
    for (kind, calls) in kinds {
        let statuses: Vec<String> = calls
            .statuses
            .iter()
            .map(|(status, n)| format!("{n}×{status}"))
            .collect();
        println!(
            "  {kind}\n    {:.2} calls ({:?}), {:.2} read / {:.2} write units, ${:.3} per million, {:.0} log bytes, {:.1} ms; {}",
            calls.calls_per_request,
            calls.by_call,
            calls.read_units_per_request,
            calls.write_units_per_request,
            crate::cost::dynamodb_per_million(calls),
            calls.log_bytes_per_request,
            calls.request_ms,
            statuses.join(", ")
        );
    }
}
