//! The full-CPU cold start: each function's bootstrap spawned as before Lambda
//! throttles anything, against plain DynamoDB Local (no TLS). A local figure,
//! not Lambda's; the runner (`petstore-bench`) reads what this writes into
//! `results.json`, its costs and targets, and its table.
//!
//! Knobs, the runner's: `BENCH_COLD_SPAWNS` (30), `BENCH_MEMORY_MB` (128, the
//! memory size the functions are told), `BENCH_COLD_ENV`.

use crate::lambda_env::{source_of, ColdSetup, Function};
use crate::spawn::{spawn_once, Hooks, Spawn};
use petstore_bench::client::Error;
use petstore_bench::results::{ColdStart, StatusCounts, COLD_START_FILE};
use petstore_bench::stats::summarize;
use std::path::Path;
use std::time::Duration;

/// Every function in `functions` whose bootstrap is in `release`, `spawns`
/// times each, written to `out`'s [`COLD_START_FILE`].
pub async fn measure_all(
    functions: &[&Function],
    release: &Path,
    out: &Path,
    dynamodb_url: &str,
    api_key: Option<&str>,
) -> Result<(), Error> {
    let spawns = petstore_bench::env_or("BENCH_COLD_SPAWNS", 30);
    let memory_mb = petstore_bench::env_or("BENCH_MEMORY_MB", 128);
    let mut cold_starts = Vec::new();
    for &function in functions {
        let bootstrap = release.join(function.name);
        if !bootstrap.is_file() {
            continue;
        }
        eprintln!(
            "coldstart: full CPU, {} spawns of {}",
            spawns, function.name
        );
        let setup = ColdSetup {
            function,
            bootstrap: &bootstrap,
            dynamodb_endpoint: dynamodb_url,
            api_key,
            source_ip: source_of(0),
            memory_mb,
            log: &out.join(format!("cold-{}.log", function.name)),
        };
        cold_starts.push(measure(&setup, spawns).await?);
    }
    let path = out.join(COLD_START_FILE);
    std::fs::write(&path, serde_json::to_vec_pretty(&cold_starts)?)?;
    Ok(())
}

async fn measure(setup: &ColdSetup<'_>, spawns: usize) -> Result<ColdStart, Error> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(setup.log)?;
    let mut measured = Vec::with_capacity(spawns);
    for _ in 0..spawns {
        match spawn_once(setup, &Hooks::default(), &log).await {
            Ok(spawn) => measured.push(spawn),
            Err(e) => eprintln!(
                "coldstart: full-CPU cold start of {} failed: {e}",
                setup.function.name
            ),
        }
    }
    let summary_of = |figure: fn(&Spawn) -> Option<Duration>| {
        summarize(&measured.iter().filter_map(figure).collect::<Vec<_>>())
    };
    let mut statuses = StatusCounts::new();
    for spawn in &measured {
        *statuses.entry(spawn.first_status).or_insert(0) += 1;
    }
    Ok(ColdStart {
        function: setup.function.name.to_string(),
        request: setup.function.request(),
        spawns,
        failures: spawns - measured.len(),
        ready: summary_of(|s| Some(s.ready)),
        first_response: summary_of(|s| Some(s.first_response)),
        first_invocation: summary_of(|s| Some(s.first_invocation)),
        warm_invocation: summary_of(|s| s.warm_invocation),
        statuses,
    })
}
