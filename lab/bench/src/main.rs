//! `petstore-bench`: the runner behind `make bench`. See `lab/bench/README.md`.
//!
//! It expects the release binaries to be built (the Makefile does that), starts
//! its own DynamoDB Local and `petstore-local` on free ports, measures, writes
//! `target/bench/results.json` and prints a table. It reports; it never fails
//! on a figure, only when it cannot measure at all.

use petstore_bench::client::Error;
use petstore_bench::left_behind::LeftBehind;
use petstore_bench::load::{self, Fixture, Shape};
use petstore_bench::oha::{self, OhaSetup};
use petstore_bench::processes::{DynamoDbLocal, PetstoreLocal};
use petstore_bench::results::{
    BenchResults, CostBasis, LoadRun, Machine, Mix, OhaCheck, OperationCalls, RunSettings,
    PARTITIONS_TABLE_FILE, RESULTS_FILE,
};
use petstore_bench::webhook_results::Webhooks;
use petstore_bench::{
    abuse, api_key, calls, cost, env_or, machine, processes, proxy, quotas, report, sizes, targets,
    webhook_cost, webhooks,
};
use petstore_lab_template::Template;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Pets the store is seeded with, for the reads to page through.
const SEEDED_PETS: usize = 100;

/// Knobs, from the environment so the Makefile can pass them through.
struct Settings {
    root: PathBuf,
    target: PathBuf,
    /// The host's release binaries.
    release: PathBuf,
    /// `petstore-admin`, which issues the key (a debug build: run.sh's).
    admin: PathBuf,
    out: PathBuf,
    /// The run's knobs as `results.json` records them; `api_key` is filled
    /// in once the key is made.
    run: RunSettings,
    oha: Option<PathBuf>,
    oha_seconds: u64,
}

impl Settings {
    fn from_env() -> Result<Settings, Error> {
        let root = std::env::current_dir()?;
        let target = petstore_bench::target_dir(&root);
        let oha = std::env::var_os("BENCH_OHA")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join(".local/bin/oha"));
        let run = RunSettings {
            concurrency: env_or("BENCH_CONCURRENCY", 16),
            seconds: env_or("BENCH_SECONDS", 10),
            warmup_seconds: env_or("BENCH_WARMUP_SECONDS", 2),
            // Used by lab/coldstart, which made the full-CPU figures.
            cold_spawns: env_or("BENCH_COLD_SPAWNS", 30),
            count_repeats: env_or("BENCH_COUNT_REPEATS", 20),
            lambda_memory_mb: env_or("BENCH_MEMORY_MB", 128),
            cold_env: std::env::var("BENCH_COLD_ENV").ok(),
            api_key: false,
        };
        Ok(Settings {
            release: target.join("release"),
            admin: target.join("debug/petstore-admin"),
            out: target.join("bench"),
            run,
            oha: oha.is_file().then_some(oha),
            oha_seconds: env_or("BENCH_OHA_SECONDS", 5),
            root,
            target,
        })
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
    let settings = Settings::from_env()?;
    std::fs::create_dir_all(&settings.out)?;
    let started = Instant::now();
    let machine = machine::describe();
    eprintln!("bench: {}", machine.cpu);
    let required = [&settings.release.join("petstore-local"), &settings.admin];
    if let Some(missing) = required.iter().find(|path| !path.is_file()) {
        let missing = missing.display();
        return Err(format!("{missing} is missing: run `make bench` (it builds it)").into());
    }

    let mut dynamodb = DynamoDbLocal::start(&settings.root).await?;
    let outcome = async {
        let mut results = measure_all(&settings, &dynamodb, machine, started).await?;
        if !cost_only() {
            abuse::measure_into(&settings.release, dynamodb.addr, &mut results).await;
        }
        results.elapsed_seconds = started.elapsed().as_secs_f64();
        publish(&settings, &results)
    }
    .await;
    dynamodb.stop().await;
    outcome
}

/// Writes `results.json` and prints the table.
fn publish(settings: &Settings, results: &BenchResults) -> Result<(), Error> {
    let path = settings.out.join(RESULTS_FILE);
    std::fs::write(&path, serde_json::to_vec_pretty(results)?)?;
    let partitions = std::fs::read_to_string(settings.out.join(PARTITIONS_TABLE_FILE)).ok();
    report::print_table(
        results,
        partitions
            .filter(|_| results.partitions.is_some())
            .as_deref(),
    );
    let shown = path.strip_prefix(&settings.root).unwrap_or(&path);
    println!("\nFull results: {}", shown.display());
    Ok(())
}

async fn measure_all(
    settings: &Settings,
    dynamodb: &DynamoDbLocal,
    machine: Machine,
    started: Instant,
) -> Result<BenchResults, Error> {
    let mut notes = Vec::new();
    let mut local = PetstoreLocal::start(
        &settings.release.join("petstore-local"),
        &dynamodb.url(),
        &settings.out.join("petstore-local.log"),
        &[],
    )
    .await?;
    let api_key = api_key::obtain(&settings.admin, &dynamodb.url(), &mut notes).await;
    let timed = measure_timings(settings, &local, api_key.as_deref(), &mut notes).await;
    local.stop().await;
    let timings = timed?;

    eprintln!("bench: counting DynamoDB calls, units and log bytes per operation");
    let (calls, events_per_change) =
        count_calls(settings, dynamodb.addr, api_key.clone(), &timings.fixture).await?;
    let size = sizes::of_functions(&settings.target);
    let left = LeftBehind::read(&settings.out, &mut notes);
    let (in_process_overhead, cold_start) = (left.overhead, left.cold_start);
    // Unreadable, every setting is missing: the models say what they assumed.
    let template = Template::read(&settings.root).unwrap_or_else(|e| {
        notes.push(e);
        Template::default()
    });
    let cost = cost::costs(&cost::Inputs {
        calls: &calls,
        cold_starts: &cold_start,
        events_per_change,
        template: &template,
        root: &settings.root,
        out: &settings.out,
    });
    let targets = targets::check(
        &cold_start,
        in_process_overhead.as_ref(),
        &size,
        &cost,
        left.partitions_at_top_rate.as_ref(),
    );
    let webhooks = deliver_webhooks(settings, &template, &cost.basis).await;
    let quotas = quotas::quotas(&calls, cost.basis.events_per_change, &template);
    if quotas.is_none() {
        notes.push("a mix's operations were not all counted: no quota model".into());
    }
    Ok(BenchResults {
        machine,
        settings: RunSettings {
            api_key: api_key.is_some(),
            ..settings.run.clone()
        },
        cost,
        targets,
        cold_start,
        warm: timings.warm,
        oha: timings.oha,
        dynamodb_calls: calls,
        in_process_overhead,
        size,
        partitions: left.partitions,
        partitions_at_top_rate: left.partitions_at_top_rate,
        quotas,
        abuse: BTreeMap::new(),
        webhooks,
        notes,
        elapsed_seconds: started.elapsed().as_secs_f64(),
    })
}

/// The webhooks step (`webhooks.rs`) on a DynamoDB Local of its own, priced
/// on the main model's basis (`webhook_cost.rs`). Its own: its service's
/// events consumer reads the table's stream from the start, and the main
/// DynamoDB's holds every change the load runs made (thousands), which the
/// step's waits would have to outlast.
async fn deliver_webhooks(settings: &Settings, template: &Template, basis: &CostBasis) -> Webhooks {
    let mut dynamodb = match DynamoDbLocal::start(&settings.root).await {
        Ok(dynamodb) => dynamodb,
        Err(e) => {
            let mut webhooks = Webhooks::default();
            webhooks.notes.push(format!("webhooks not measured: {e}"));
            return webhooks;
        }
    };
    let service = settings.release.join("petstore-local");
    let setup = webhooks::Setup {
        root: &settings.root,
        service: &service,
        admin: &settings.admin,
        dynamodb: dynamodb.addr,
        out: &settings.out,
        staff_key: None,
        repeats: settings.run.count_repeats,
    };
    let measured = webhooks::measure(&setup).await;
    dynamodb.stop().await;
    webhook_cost::costs(measured, template, basis)
}

/// `BENCH_ONLY=cost`: the counts and the cost model, nothing timed.
fn cost_only() -> bool {
    std::env::var("BENCH_ONLY").is_ok_and(|only| only == "cost")
}

/// What is timed while the first `petstore-local` runs, and the records it
/// was seeded with.
struct Timings {
    fixture: Fixture,
    warm: Vec<LoadRun>,
    oha: Option<OhaCheck>,
}

async fn measure_timings(
    settings: &Settings,
    local: &PetstoreLocal,
    api_key: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<Timings, Error> {
    let owned_key = api_key.map(str::to_string);
    let shape = Shape {
        categories: 1,
        pets: SEEDED_PETS,
        stock: None,
    };
    let fixture = load::seed(local.addr, owned_key, shape)
        .await
        .map_err(|e| {
            let log = settings.out.join("petstore-local.log");
            format!("could not seed the store: {e} (see {})", log.display())
        })?;
    eprintln!(
        "bench: seeded 1 category and {} pets",
        fixture.pet_ids.len()
    );
    if cost_only() {
        let (warm, oha) = (Vec::new(), None);
        return Ok(Timings { fixture, warm, oha });
    }
    let warm = measure_load(settings, local.addr, api_key, &fixture).await?;
    let oha = match &settings.oha {
        Some(oha) => {
            let setup = OhaSetup {
                oha,
                addr: local.addr,
                api_key,
                concurrency: settings.run.concurrency,
                seconds: settings.oha_seconds,
            };
            Some(oha::check(&setup, &fixture).await)
        }
        None => {
            notes.push(
                "oha not installed: its cross-check of the read operations was skipped".into(),
            );
            None
        }
    };
    Ok(Timings { fixture, warm, oha })
}

async fn measure_load(
    settings: &Settings,
    addr: SocketAddr,
    api_key: Option<&str>,
    fixture: &Fixture,
) -> Result<Vec<LoadRun>, Error> {
    let mut runs = Vec::new();
    for mix in [Mix::Read, Mix::Write] {
        eprintln!(
            "bench: {mix:?} mix, c={} for {} s",
            settings.run.concurrency, settings.run.seconds
        );
        let run = load::run(
            addr,
            api_key.map(str::to_string),
            fixture,
            mix,
            settings.run.concurrency,
            Duration::from_secs(settings.run.warmup_seconds),
            Duration::from_secs(settings.run.seconds),
        );
        runs.push(run.await?);
    }
    Ok(runs)
}

/// Through a second `petstore-local` whose DynamoDB is the counting proxy,
/// logging as in Lambda; then the events per change.
async fn count_calls(
    settings: &Settings,
    dynamodb: SocketAddr,
    api_key: Option<String>,
    fixture: &Fixture,
) -> Result<(BTreeMap<String, OperationCalls>, Option<f64>), Error> {
    let log = settings.out.join("petstore-local-counted.log");
    let mut meter = calls::Meter::start(dynamodb, &log).await?;
    meter.proxy.leave_uncounted(proxy::is_webhooks_call);
    let (events_file, env) = petstore_bench::events::service_env(dynamodb, &settings.out);
    let mut env = env.to_vec();
    env.extend(calls::LAMBDA_LOGGING.map(str::to_string));
    env.push(processes::NO_HOLD_SWEEP.into());
    // `BENCH_COUNT_ENV` (`NAME=value,...`): a setting tried on the counts.
    let tried = std::env::var("BENCH_COUNT_ENV").unwrap_or_default();
    env.extend(
        tried
            .split(',')
            .filter(|pair| pair.contains('='))
            .map(str::to_string),
    );
    // `BENCH_COUNT_SERVICE`: another build's `petstore-local` (the "before").
    let service = std::env::var_os("BENCH_COUNT_SERVICE")
        .map(PathBuf::from)
        .unwrap_or_else(|| settings.release.join("petstore-local"));
    let url = format!("http://{}", meter.proxy.addr);
    let mut counted = PetstoreLocal::start(&service, &url, &log, &env).await?;
    let repeats = settings.run.count_repeats;
    let calls = calls::count(&mut meter, counted.addr, api_key.clone(), fixture, repeats).await;
    let events =
        petstore_bench::events::measure(counted.addr, api_key, &events_file, &settings.out).await;
    counted.stop().await;
    Ok((calls?, events))
}
