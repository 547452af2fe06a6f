//! In-process overhead: what one request costs in our code (router, wrapper,
//! parsing, the store's request building, JSON both ways) with every DynamoDB
//! call answered at once by [`stub_dynamodb`], so no socket, no DynamoDB and
//! no network time is in the figure.
//!
//! criterion gives the mean and median with confidence intervals; the p99 the
//! target is set on comes from our own loop of individually timed requests
//! after it. Both go to `target/bench/overhead.json` for the runner.
//!
//! [`service`] is the only module that names the service's crate.

mod cases;
mod service;
mod stub_dynamodb;

use cases::Case;
use criterion::Criterion;
use petstore_bench::results::{Overhead, OverheadCase, OVERHEAD_FILE};
use petstore_bench::stats::percentile;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let client = stub_dynamodb::client();
    let cases = cases::all(&service::routers(client.clone())?, &client);
    for case in &cases {
        let status = runtime.block_on(case.once());
        eprintln!("overhead: {} answers {status}", case.name);
        // A refused key or a failure would be timed in place of the case.
        if matches!(status, 401 | 403) || status >= 500 {
            return Err(format!(
                "{} answers {status}: its timing would not be the case's",
                case.name
            )
            .into());
        }
    }
    run_criterion(&runtime, &cases);

    // Individually timed requests, for the tail criterion does not report.
    let iterations: usize = std::env::var("BENCH_OVERHEAD_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let medians = criterion_medians();
    let mut benches = BTreeMap::new();
    for case in &cases {
        let mut timed = time_each(&runtime, case, iterations);
        timed.criterion_median_us = medians.get(case.name).copied();
        eprintln!(
            "overhead: {:<32} p50 {:>7.1} µs  p99 {:>7.1} µs  (status {})",
            case.name, timed.p50_us, timed.p99_us, timed.status
        );
        benches.insert(case.name.to_string(), timed);
    }
    let overhead = Overhead {
        runtime: "tokio current_thread, one request at a time".into(),
        dynamodb: "stub in the SDK's HTTP client slot: no socket, canned responses".into(),
        benches,
    };
    let out = target_dir().join("bench");
    std::fs::create_dir_all(&out)?;
    let out = out.join(OVERHEAD_FILE);
    std::fs::write(&out, serde_json::to_vec_pretty(&overhead)?)?;
    eprintln!("overhead: wrote {}", out.display());
    Ok(())
}

fn run_criterion(runtime: &Runtime, cases: &[Case]) {
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
        .configure_from_args();
    let mut group = criterion.benchmark_group("overhead");
    for case in cases {
        group.bench_function(case.name, |b| b.to_async(runtime).iter(|| case.once()));
    }
    group.finish();
    criterion.final_summary();
}

/// `iterations` requests after a tenth as many unrecorded, each timed.
fn time_each(runtime: &Runtime, case: &Case, iterations: usize) -> OverheadCase {
    let (status, mut sample_us) = runtime.block_on(async {
        for _ in 0..iterations / 10 {
            case.once().await;
        }
        let mut sample_us = Vec::with_capacity(iterations);
        let mut status = 0;
        for _ in 0..iterations {
            let started = Instant::now();
            status = case.once().await;
            sample_us.push(started.elapsed().as_secs_f64() * 1e6);
        }
        (status, sample_us)
    });
    sample_us.sort_by(f64::total_cmp);
    OverheadCase {
        status,
        iterations: sample_us.len(),
        p50_us: percentile(&sample_us, 0.50),
        p90_us: percentile(&sample_us, 0.90),
        p99_us: percentile(&sample_us, 0.99),
        p999_us: percentile(&sample_us, 0.999),
        max_us: sample_us.last().copied().unwrap_or(f64::NAN),
        mean_us: sample_us.iter().sum::<f64>() / sample_us.len() as f64,
        criterion_median_us: None,
    }
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}

/// criterion's `benchmark.json`: which case a directory holds.
#[derive(Deserialize)]
struct SavedBenchmark {
    function_id: Option<String>,
}

/// criterion's `estimates.json`, in ns.
#[derive(Deserialize)]
struct SavedEstimates {
    median: SavedEstimate,
}

#[derive(Deserialize)]
struct SavedEstimate {
    point_estimate: f64,
}

/// criterion's median for each case, in µs, from the estimates it saved.
fn criterion_medians() -> BTreeMap<String, f64> {
    let Ok(entries) = std::fs::read_dir(target_dir().join("criterion/overhead")) else {
        return BTreeMap::new();
    };
    let saved = |dir: &Path| -> Option<(String, f64)> {
        let read = |file: &str| std::fs::read(dir.join(file)).ok();
        let benchmark: SavedBenchmark = serde_json::from_slice(&read("benchmark.json")?).ok()?;
        let estimates: SavedEstimates = serde_json::from_slice(&read("estimates.json")?).ok()?;
        Some((
            benchmark.function_id?,
            estimates.median.point_estimate / 1e3,
        ))
    };
    entries
        .flatten()
        .filter_map(|entry| saved(&entry.path().join("new")))
        .collect()
}
