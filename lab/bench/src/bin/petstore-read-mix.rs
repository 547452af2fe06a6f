//! `petstore-read-mix`: the bench's read mix alone, on `petstore-local`
//! (release) and its own DynamoDB Local, alternating two settings of the
//! service, with the CPU each process spent during each run. It answers
//! "why did the read mix's requests/s move?" without a whole `make bench`.
//!
//!   READ_MIX_B_ENV='NAME=value,...'  the service's environment in B runs
//!                                    (A runs: as `make bench` starts it)
//!   READ_MIX_ROUNDS=3                A then B, this many times
//!   BENCH_CONCURRENCY, BENCH_SECONDS, BENCH_WARMUP_SECONDS  as make bench's
//!
//! CPU is read from /proc (utime + stime) for the service and for DynamoDB
//! Local's Java process (found by its port), before and after each timed run.

use petstore_bench::client::Error;
use petstore_bench::load::{self, Shape};
use petstore_bench::processes::{DynamoDbLocal, PetstoreLocal};
use petstore_bench::results::Mix;
use petstore_bench::{api_key, env_or};
use std::path::Path;
use std::time::Duration;

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("petstore-read-mix: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Error> {
    let root = std::env::current_dir()?;
    let target = petstore_bench::target_dir(&root);
    let service = target.join("release/petstore-local");
    let admin = target.join("debug/petstore-admin");
    let out = target.join("bench");
    std::fs::create_dir_all(&out)?;
    let b_env = b_environment();
    let rounds: usize = env_or("READ_MIX_ROUNDS", 3);
    let concurrency: usize = env_or("BENCH_CONCURRENCY", 16);
    let seconds: u64 = env_or("BENCH_SECONDS", 10);
    let warmup: u64 = env_or("BENCH_WARMUP_SECONDS", 2);

    let mut dynamodb = DynamoDbLocal::start(&root).await?;
    let java = java_pid(dynamodb.addr.port()).ok_or("DynamoDB Local's java process not found")?;
    let mut notes = Vec::new();
    let key = api_key::obtain(&admin, &dynamodb.url(), &mut notes).await;
    let mut fixture = None;
    println!("run | env | requests/s | p50 ms | p99 ms | errors | service CPU s | DynamoDB Local CPU s | CPU ms per request (service + DynamoDB Local)");
    for round in 0..rounds {
        for (name, env) in [("A", &Vec::new()), ("B", &b_env)] {
            let log = out.join(format!("read-mix-{name}.log"));
            let mut local = PetstoreLocal::start(&service, &dynamodb.url(), &log, env).await?;
            let seeded = match fixture.take() {
                Some(seeded) => seeded,
                None => load::seed(local.addr, key.clone(), SHAPE).await?,
            };
            let pid = local.pid().ok_or("petstore-local has no pid")?;
            let warm = Duration::from_secs(warmup);
            // The warm-up outside the CPU window, as make bench's own run
            // records nothing during it.
            load::run(
                local.addr,
                key.clone(),
                &seeded,
                Mix::Read,
                concurrency,
                warm,
                Duration::ZERO,
            )
            .await?;
            let (service_before, java_before) = (cpu_seconds(pid), cpu_seconds(java));
            let timed = Duration::from_secs(seconds);
            let mix = load::run(
                local.addr,
                key.clone(),
                &seeded,
                Mix::Read,
                concurrency,
                Duration::ZERO,
                timed,
            )
            .await?;
            let service_cpu = cpu_seconds(pid) - service_before;
            let java_cpu = cpu_seconds(java) - java_before;
            local.stop().await;
            let per_request = |cpu: f64| 1000.0 * cpu / mix.requests.max(1) as f64;
            println!(
                "{} | {name} {} | {:.0} | {:.1} | {:.1} | {} | {service_cpu:.2} | {java_cpu:.2} | {:.2} + {:.2}",
                round + 1,
                if name == "A" { String::new() } else { b_env.join(",") },
                mix.requests_per_second,
                mix.latency.p50_ms,
                mix.latency.p99_ms,
                mix.errors,
                per_request(service_cpu),
                per_request(java_cpu),
            );
            fixture = Some(seeded);
        }
    }
    dynamodb.stop().await;
    Ok(())
}

/// The store the read mix reads: make bench's (one category, 100 pets).
const SHAPE: Shape = Shape {
    categories: 1,
    pets: 100,
    stock: None,
};

/// Run B's service environment: `READ_MIX_B_ENV`, `NAME=value` pairs
/// separated by commas (run A's is empty).
fn b_environment() -> Vec<String> {
    std::env::var("READ_MIX_B_ENV")
        .unwrap_or_default()
        .split(',')
        .filter(|pair| pair.contains('='))
        .map(str::to_string)
        .collect()
}

/// utime + stime of `pid`, in seconds (0 if it is gone).
fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the command's closing parenthesis: utime and stime are the
    // 12th and 13th of them.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|i| fields.get(*i).and_then(|f| f.parse::<f64>().ok()))
        .sum();
    // USER_HZ is 100 on Linux.
    ticks / 100.0
}

/// The java process serving DynamoDB Local on `port`.
fn java_pid(port: u16) -> Option<u32> {
    let port = port.to_string();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline =
                std::fs::read(Path::new("/proc").join(pid.to_string()).join("cmdline")).ok()?;
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            let is_java = args.first().is_some_and(|a| a.ends_with(b"java"));
            let on_port = args.contains(&port.as_bytes());
            (is_java && on_port).then_some(pid)
        })
}
