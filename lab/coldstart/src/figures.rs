//! What a run found: `target/bench/coldstart.json`, and its table.

use crate::lambda_env::Bootstrap;
use crate::spawn::Spawn;
use petstore_bench::cost;
use petstore_bench::results::Summary;
use petstore_bench::results::{Machine, StatusCounts};
use petstore_bench::stats::summarize;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// In `target/bench/`.
pub const COLDSTART_FILE: &str = "coldstart.json";

/// The label of the floor function, which the ratios divide by.
pub const FLOOR: &str = "floor";

#[derive(Debug, Serialize, Deserialize)]
pub struct ColdStartRun {
    pub machine: Machine,
    /// How the invocation was throttled, or why it was not.
    pub throttle: String,
    pub spawns_per_bootstrap: usize,
    pub by_memory: Vec<AtMemory>,
    /// What could not be measured, and why.
    pub notes: Vec<String>,
    /// Each bootstrap's init in instructions, when counted.
    #[serde(default)]
    pub init_instructions: Option<Vec<InitInstructions>>,
    pub elapsed_seconds: f64,
}

/// One bootstrap's init, counted.
#[derive(Debug, Serialize, Deserialize)]
pub struct InitInstructions {
    pub label: String,
    /// Instructions executed (callgrind's `Ir`) from exec to the first
    /// `next`, the dynamic loader's included.
    pub instructions: u64,
    /// Over the floor's.
    pub vs_floor: Option<f64>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct AtMemory {
    pub memory_mb: u32,
    /// The share of one CPU the invocation ran on; `None` when unthrottled.
    pub cpu_share: Option<f64>,
    pub bootstraps: Vec<BootstrapFigures>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct BootstrapFigures {
    /// `pets`, `store`, `floor`, or an extra build such as `pets@before`.
    pub label: String,
    pub request: String,
    pub spawns: usize,
    pub failures: usize,
    /// Spawn to the first `GET .../invocation/next`, unthrottled.
    pub init: Summary,
    /// Spawn to the first response: init plus the throttled first invocation.
    pub first_response: Summary,
    /// The first `next` to the first response: the throttled first
    /// invocation, the other part of the first response.
    pub first_invocation: Summary,
    /// The warm invocations that follow in the same processes.
    pub warm: Summary,
    /// CPU time of the first invocation (all threads), which the quota
    /// stretches; steadier than wall time on a shared machine.
    pub first_invocation_cpu: Summary,
    /// CPU time of a warm invocation.
    pub warm_cpu: Summary,
    /// An invocation after the process was frozen while its DynamoDB
    /// connections were closed.
    pub after_idle_close: Summary,
    /// Lambda's part of a warm request's cost, in dollars per million:
    /// arm64 GB-seconds of the warm invocations billed in 1 ms steps, plus the
    /// request fee. API Gateway and DynamoDB do not depend on the memory size.
    pub lambda_dollars_per_million: f64,
    /// First response p50 over the floor's at the same memory size.
    pub first_response_vs_floor: Option<f64>,
    /// Init p50 over the floor's.
    pub init_vs_floor: Option<f64>,
    /// First invocation p50 over the floor's.
    pub first_invocation_vs_floor: Option<f64>,
    /// Of every invocation.
    pub statuses: StatusCounts,
    /// The bootstrap, and zipped as Lambda takes it (x86_64: this host's build).
    pub binary_bytes: Option<u64>,
    pub zip_bytes: Option<u64>,
}

impl BootstrapFigures {
    pub fn of(
        bootstrap: &Bootstrap,
        request: String,
        memory_mb: u32,
        spawns: usize,
        measured: &[Spawn],
    ) -> Self {
        let warm: Vec<Duration> = measured
            .iter()
            .flat_map(|s| s.warm_invocations.clone())
            .collect();
        let summary_of = |figure: fn(&Spawn) -> Option<Duration>| {
            summarize(&measured.iter().filter_map(figure).collect::<Vec<_>>())
        };
        let mut statuses = StatusCounts::new();
        for status in measured.iter().flat_map(|s| &s.statuses) {
            *statuses.entry(*status).or_insert(0) += 1;
        }
        BootstrapFigures {
            label: bootstrap.label.clone(),
            request,
            spawns,
            failures: spawns - measured.len(),
            init: summary_of(|s| Some(s.ready)),
            first_response: summary_of(|s| Some(s.first_response)),
            first_invocation: summary_of(|s| Some(s.first_invocation)),
            warm: summarize(&warm),
            first_invocation_cpu: summary_of(|s| s.first_invocation_cpu),
            warm_cpu: summarize(
                &measured
                    .iter()
                    .flat_map(|s| s.warm_invocations_cpu.clone())
                    .collect::<Vec<_>>(),
            ),
            lambda_dollars_per_million: lambda_dollars_per_million(&warm, memory_mb),
            after_idle_close: summary_of(|s| s.after_idle_close),
            first_response_vs_floor: None,
            init_vs_floor: None,
            first_invocation_vs_floor: None,
            statuses,
            binary_bytes: std::fs::metadata(&bootstrap.path).ok().map(|m| m.len()),
            zip_bytes: zipped_bytes(&bootstrap.path),
        }
    }
}

/// The mean over the warm invocations of what each would cost per million,
/// at the bench's prices (`petstore_bench::cost`).
fn lambda_dollars_per_million(warm: &[Duration], memory_mb: u32) -> f64 {
    if warm.is_empty() {
        return f64::NAN;
    }
    let per_million = warm
        .iter()
        .map(|d| cost::lambda_per_million(d.as_secs_f64() * 1e3, memory_mb));
    per_million.sum::<f64>() / warm.len() as f64
}

/// The bootstrap deflated into a zip as `bootstrap`, as `cargo lambda build
/// --output-format zip` packs it (python3's zipfile; `None` without python3).
fn zipped_bytes(bootstrap: &Path) -> Option<u64> {
    let zip = bootstrap.with_extension("coldstart.zip");
    let script = "import sys, zipfile\n\
        with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED, compresslevel=9) as z:\n\
        \x20   z.write(sys.argv[2], 'bootstrap')";
    let status = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&zip)
        .arg(bootstrap)
        .status()
        .ok()?;
    let bytes = status
        .success()
        .then(|| std::fs::metadata(&zip).ok().map(|m| m.len()));
    let _ = std::fs::remove_file(&zip);
    bytes.flatten()
}

impl AtMemory {
    /// Fills each bootstrap's ratios to the floor's first response, and to
    /// its two parts (init, first invocation), p50 over p50.
    pub fn compare_to_floor(&mut self) {
        let Some(floor) = self.bootstraps.iter().find(|b| b.label == FLOOR) else {
            return;
        };
        let p50 = |summary: &Summary| Some(summary.p50_ms).filter(|ms| ms.is_finite() && *ms > 0.0);
        let (response, init, invocation) = (
            p50(&floor.first_response),
            p50(&floor.init),
            p50(&floor.first_invocation),
        );
        for bootstrap in &mut self.bootstraps {
            bootstrap.first_response_vs_floor =
                response.map(|f| bootstrap.first_response.p50_ms / f);
            bootstrap.init_vs_floor = init.map(|f| bootstrap.init.p50_ms / f);
            bootstrap.first_invocation_vs_floor =
                invocation.map(|f| bootstrap.first_invocation.p50_ms / f);
        }
    }
}

fn pair(summary: &Summary) -> String {
    let one = |ms: f64| match ms {
        ms if !ms.is_finite() => "-".to_string(),
        ms if ms >= 100.0 => format!("{ms:.0}"),
        ms => format!("{ms:.1}"),
    };
    format!("{}/{}", one(summary.p50_ms), one(summary.p95_ms))
}

/// CPU milliseconds, p50/p95, to the hundredth.
fn cpu_pair(summary: &Summary) -> String {
    let one = |ms: f64| match ms {
        ms if !ms.is_finite() => "-".to_string(),
        ms => format!("{ms:.2}"),
    };
    format!("{}/{}", one(summary.p50_ms), one(summary.p95_ms))
}

pub fn print_table(run: &ColdStartRun) {
    println!(
        "\nCold start as Lambda runs it (x86_64 release bootstraps; {}; DynamoDB Local over TLS; \
         ms, p50/p95 of {} spawns)",
        run.throttle, run.spawns_per_bootstrap
    );
    println!(
        "  {:>5} {:<14} {:>13} {:>13} {:>15} {:>16} {:>11} {:>11} {:>11} {:>8} {:>16} {:>8} {:>9}  statuses",
        "MB",
        "bootstrap",
        "init",
        "1st invocation",
        "first response",
        "x floor (i/inv)",
        "1st inv CPU",
        "warm",
        "warm CPU",
        "warm p99",
        "after idle close",
        "zip MB",
        "Lambda $/M"
    );
    for at in &run.by_memory {
        for b in &at.bootstraps {
            let ratio = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{r:.2}"));
            let ratios = format!(
                "{} ({}/{})",
                ratio(b.first_response_vs_floor),
                ratio(b.init_vs_floor),
                ratio(b.first_invocation_vs_floor)
            );
            println!(
                "  {:>5} {:<14} {:>13} {:>13} {:>15} {:>16} {:>11} {:>11} {:>11} {:>8.1} {:>16} {:>8} {:>9.3}  {}{}",
                at.memory_mb,
                b.label,
                pair(&b.init),
                pair(&b.first_invocation),
                pair(&b.first_response),
                ratios,
                cpu_pair(&b.first_invocation_cpu),
                pair(&b.warm),
                cpu_pair(&b.warm_cpu),
                b.warm.p99_ms,
                pair(&b.after_idle_close),
                b.zip_bytes
                    .map_or("-".to_string(), |z| format!("{:.2}", z as f64 / 1e6)),
                b.lambda_dollars_per_million,
                serde_json::to_string(&b.statuses).unwrap_or_default(),
                match b.failures {
                    0 => String::new(),
                    n => format!(" ({n} failed)"),
                }
            );
        }
    }
    for note in &run.notes {
        println!("  note: {note}");
    }
}
