//! What a bench run found: the records of `target/bench/results.json`, and of
//! the files other steps write for the runner to read back (the criterion
//! bench's `overhead.json`, `lab/coldstart`'s full-CPU cold starts). The field names are the files' keys, so renaming a field
//! changes the files; tools that compare runs read them.
//!
//! serde_json writes a NaN (a summary of no sample) as `null`; the fields that
//! can be NaN read `null` back as NaN, so every file written reads back.
//!
//! A leaf: the measuring modules build these records, and nothing here
//! depends on them.

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// In `target/bench/`, as the runner writes it.
pub const RESULTS_FILE: &str = "results.json";
/// In `target/bench/`, as the criterion bench writes it for the runner.
pub const OVERHEAD_FILE: &str = "overhead.json";
/// In `target/bench/`, as `lab/coldstart` writes it for the runner: the
/// full-CPU cold starts, a [`ColdStart`] per function.
pub const COLD_START_FILE: &str = "cold-start-full-cpu.json";
/// In `target/bench/`, as `lab/partitions` writes them for the runner: its
/// model, and its section of the table.
pub const PARTITIONS_FILE: &str = "partitions.json";
pub const PARTITIONS_TABLE_FILE: &str = "partitions.txt";
/// The same model at the highest OrderRate template.yaml's `Capacity`
/// mapping allows (`BENCH_PARTITIONS_STEM=partitions-top`): what the knob
/// turned all the way up holds.
pub const PARTITIONS_TOP_STEM: &str = "partitions-top";

pub use crate::operation_calls::{OperationCalls, StatusCounts};

#[derive(Debug, Serialize, Deserialize)]
pub struct BenchResults {
    pub machine: Machine,
    pub settings: RunSettings,
    pub cold_start: Vec<ColdStart>,
    pub warm: Vec<LoadRun>,
    /// `None` when oha is not installed.
    pub oha: Option<OhaCheck>,
    /// By operation, e.g. `GET /pets?limit=20`.
    pub dynamodb_calls: BTreeMap<String, OperationCalls>,
    pub cost: Costs,
    /// `None` when the criterion bench did not run.
    pub in_process_overhead: Option<Overhead>,
    /// By function.
    pub size: BTreeMap<String, FunctionSizes>,
    pub targets: Vec<TargetCheck>,
    /// `None` when the partition model did not run; its records are its own
    /// (`lab/partitions`), carried as it wrote them.
    #[serde(default)]
    pub partitions: Option<serde_json::Value>,
    /// The model again at the highest OrderRate ([`PARTITIONS_TOP_STEM`]).
    #[serde(default)]
    pub partitions_at_top_rate: Option<serde_json::Value>,
    /// The account's quotas on a request's path (`quotas.rs`); `None` when
    /// a mix was not measured.
    #[serde(default)]
    pub quotas: Option<Quotas>,
    /// What abusive requests cost, by kind (see [`crate::abuse`]).
    #[serde(default)]
    pub abuse: BTreeMap<String, OperationCalls>,
    /// What webhook deliveries cost (`webhooks.rs`, `webhook_cost.rs`).
    #[serde(default)]
    pub webhooks: crate::webhook_results::Webhooks,
    /// What could not be measured, and why.
    pub notes: Vec<String>,
    pub elapsed_seconds: f64,
}

/// The figures mean nothing without the machine they were taken on.
#[derive(Debug, Serialize, Deserialize)]
pub struct Machine {
    pub cpu: String,
    pub cpu_mhz: Option<String>,
    pub logical_cpus: usize,
    pub memory_gib: f64,
    pub kernel: Option<String>,
    pub rustc: Option<String>,
    /// DynamoDB Local's JVM, which shares the cores.
    pub java: Option<String>,
}

/// The knobs (`BENCH_*`) the run was made with.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSettings {
    pub concurrency: usize,
    pub seconds: u64,
    pub warmup_seconds: u64,
    pub cold_spawns: usize,
    pub count_repeats: usize,
    pub lambda_memory_mb: u32,
    pub cold_env: Option<String>,
    /// Whether requests carried an API key (else the wrapper refused them).
    pub api_key: bool,
}

/// A summary of a sample of durations, in milliseconds; NaN for no sample.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    #[serde(deserialize_with = "nan_if_null")]
    pub min_ms: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub p50_ms: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub p90_ms: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub p95_ms: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub p99_ms: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub max_ms: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub mean_ms: f64,
}

/// One function's cold starts at full CPU (`lab/coldstart`).
#[derive(Debug, Serialize, Deserialize)]
pub struct ColdStart {
    pub function: String,
    pub request: String,
    pub spawns: usize,
    pub failures: usize,
    /// Spawn to first `GET /invocation/next`.
    pub ready: Summary,
    /// Spawn to the first invocation's response.
    pub first_response: Summary,
    /// The first invocation alone (`next` served to response posted).
    pub first_invocation: Summary,
    /// The second invocation, warm, in the same process: what Lambda bills.
    pub warm_invocation: Summary,
    /// Of the first invocations.
    pub statuses: StatusCounts,
}

/// The load runs' mixes (`load.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mix {
    /// 40% `GET /pets`, 40% `GET /pets?ids=` (5 ids), 20% `GET /store/inventory`.
    Read,
    /// create pet, place an order for it, cancel that order; repeated.
    Write,
}

impl std::fmt::Display for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mix::Read => "read",
            Mix::Write => "write",
        })
    }
}

/// One mix run against `petstore-local` (`load.rs`).
#[derive(Debug, Serialize, Deserialize)]
pub struct LoadRun {
    pub mix: Mix,
    pub concurrency: usize,
    pub seconds: f64,
    pub requests: usize,
    #[serde(deserialize_with = "nan_if_null")]
    pub requests_per_second: f64,
    /// Requests that got no response at all.
    pub errors: usize,
    pub latency: Summary,
    /// By operation.
    pub operations: BTreeMap<String, OperationLoad>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct OperationLoad {
    pub requests: usize,
    /// Responses other than the expected 2xx.
    pub unexpected: StatusCounts,
    pub latency: Summary,
}

/// oha on each read operation alone, as a check of our own load driver.
#[derive(Debug, Serialize, Deserialize)]
pub struct OhaCheck {
    pub concurrency: usize,
    pub seconds: u64,
    /// By request, e.g. `GET /pets?limit=20`.
    pub runs: BTreeMap<String, OhaRun>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OhaRun {
    Measured(OhaFigures),
    Failed { error: String },
}

/// As oha reports them; absent where oha left them out.
#[derive(Debug, Serialize, Deserialize)]
pub struct OhaFigures {
    pub requests_per_second: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub success_rate: Option<f64>,
    /// oha's keys: the status code as text.
    pub status_codes: BTreeMap<String, u64>,
}

/// What a million requests cost, all in, by AWS's rules (`cost.rs`).
#[derive(Debug, Serialize, Deserialize)]
pub struct Costs {
    /// The price table the figures were computed with.
    pub prices: Vec<Price>,
    pub prices_as_of: String,
    /// What the model assumed or read from elsewhere (template, cold starts).
    pub basis: CostBasis,
    /// By operation, $ per million requests.
    pub per_operation: BTreeMap<String, ServiceCosts>,
    /// The mixes, $ per million requests of the mix.
    pub mixes: Vec<MixCost>,
    /// Write units of placing an order (rate limiter included), and of an
    /// order's whole life in the order mix (its share of completes, cancels
    /// and restocks), by DynamoDB's rules.
    pub write_units_place_order: f64,
    pub write_units_per_order: f64,
    /// Costs by the month, whatever the traffic.
    pub monthly: Vec<MonthlyCost>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Price {
    pub item: String,
    pub usd: f64,
    pub per: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct CostBasis {
    pub memory_mb: u32,
    pub tracing: String,
    pub traced_share: f64,
    pub cold_starts_per_million: f64,
    pub init_ms: f64,
    pub events_per_change: f64,
    pub metrics_line_bytes: f64,
    pub platform_log_bytes: f64,
    pub access_log_bytes: f64,
    pub notes: Vec<String>,
}

#[cfg(test)]
impl CostBasis {
    /// A basis for the cost models' tests: `memory_mb`, `tracing` with
    /// `traced_share` of invocations traced, one event a change, and no cold
    /// start, log line or note.
    pub fn for_tests(memory_mb: u32, tracing: &str, traced_share: f64) -> CostBasis {
        CostBasis {
            memory_mb,
            tracing: tracing.into(),
            traced_share,
            cold_starts_per_million: 0.0,
            init_ms: 0.0,
            events_per_change: 1.0,
            metrics_line_bytes: 0.0,
            platform_log_bytes: 0.0,
            access_log_bytes: 0.0,
            notes: Vec::new(),
        }
    }
}

/// Dollars per million requests, by service.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct ServiceCosts {
    pub api_gateway: f64,
    pub lambda: f64,
    pub dynamodb: f64,
    pub logs: f64,
    pub xray: f64,
    pub eventbridge: f64,
    pub total: f64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct MixCost {
    pub mix: String,
    /// Operation and its weight.
    pub weights: Vec<(String, f64)>,
    pub usd_per_million: ServiceCosts,
    pub read_units: f64,
    pub write_units: f64,
    pub log_bytes: f64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct MonthlyCost {
    pub item: String,
    pub quantity: f64,
    pub usd_per_month: f64,
}

/// `overhead.json`: the router + wrapper in-process, DynamoDB stubbed.
#[derive(Debug, Serialize, Deserialize)]
pub struct Overhead {
    pub runtime: String,
    pub dynamodb: String,
    /// By case, e.g. `GET /pets?limit=20` or `SDK GetItem alone (reference)`.
    pub benches: BTreeMap<String, OverheadCase>,
}

impl Overhead {
    /// A case whose name says so times a bare SDK call, not our code.
    pub fn is_reference(case_name: &str) -> bool {
        case_name.contains("(reference)")
    }
}

/// One case's individually timed requests, in µs.
#[derive(Debug, Serialize, Deserialize)]
pub struct OverheadCase {
    /// The last response's, to show the case did what it says.
    pub status: u16,
    pub iterations: usize,
    #[serde(deserialize_with = "nan_if_null")]
    pub p50_us: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub p90_us: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub p99_us: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub p999_us: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub max_us: f64,
    #[serde(deserialize_with = "nan_if_null")]
    pub mean_us: f64,
    /// `None` when criterion saved no estimate for the case.
    pub criterion_median_us: Option<f64>,
}

/// One function's deployable, in bytes; `None` where it was not built.
#[derive(Debug, Serialize, Deserialize)]
pub struct FunctionSizes {
    pub arm64_zip_bytes: Option<u64>,
    /// When the zip was built, so a stale one is told from a fresh one.
    pub arm64_zip_built_unix: Option<u64>,
    pub arm64_binary_bytes: Option<u64>,
    pub x86_64_binary_bytes: Option<u64>,
}

/// A figure against the target set for it; reported, never enforced.
#[derive(Debug, Serialize, Deserialize)]
pub struct TargetCheck {
    pub target: String,
    #[serde(deserialize_with = "nan_if_null")]
    pub measured: f64,
    pub limit: f64,
    pub met: bool,
}

impl TargetCheck {
    pub fn at_most(target: String, measured: f64, limit: f64) -> TargetCheck {
        TargetCheck {
            target,
            measured,
            limit,
            met: measured <= limit,
        }
    }

    pub fn at_least(target: String, measured: f64, limit: f64) -> TargetCheck {
        TargetCheck {
            target,
            measured,
            limit,
            met: measured >= limit,
        }
    }
}

/// Reads the `null` serde_json wrote for a NaN back as NaN.
pub fn nan_if_null<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_without_a_sample_reads_back() {
        let empty = OverheadCase {
            status: 0,
            iterations: 0,
            p50_us: f64::NAN,
            p90_us: f64::NAN,
            p99_us: f64::NAN,
            p999_us: f64::NAN,
            max_us: f64::NAN,
            mean_us: f64::NAN,
            criterion_median_us: None,
        };
        let json = serde_json::to_string(&empty).unwrap();
        let back: OverheadCase = serde_json::from_str(&json).unwrap();
        assert!(back.p99_us.is_nan());
    }

    #[test]
    fn overhead_json_of_the_untyped_runner_reads() {
        let json = r#"{
          "benches": {"404 (wrapper only)": {"criterion_median_us": 35.8, "iterations": 20000,
            "max_us": 140.9, "mean_us": 35.8, "p50_us": 35.4, "p90_us": 35.8,
            "p999_us": 48.8, "p99_us": 44.4, "status": 404}},
          "dynamodb": "stub in the SDK's HTTP client slot: no socket, canned responses",
          "runtime": "tokio current_thread, one request at a time"
        }"#;
        let overhead: Overhead = serde_json::from_str(json).unwrap();
        assert_eq!(overhead.benches["404 (wrapper only)"].status, 404);
    }

    #[test]
    fn oha_runs_read_back_as_measured_or_failed() {
        let runs: BTreeMap<String, OhaRun> = serde_json::from_str(
            r#"{"a": {"requests_per_second": 1.0, "p50_ms": null, "p99_ms": 2.0,
                      "success_rate": 1.0, "status_codes": {"200": 3}},
                "b": {"error": "no such file"}}"#,
        )
        .unwrap();
        assert!(matches!(runs["a"], OhaRun::Measured(_)));
        assert!(matches!(runs["b"], OhaRun::Failed { .. }));
    }
}

/// Where the account's default quotas bind (`quotas.rs`).
#[derive(Debug, Serialize, Deserialize)]
pub struct Quotas {
    /// The DynamoDB latency assumed per call on AWS.
    pub dynamodb_round_trip_ms: f64,
    /// The region whose defaults are used.
    pub region: String,
    pub target_orders_per_second: f64,
    pub target_reads_per_second: f64,
    /// The target in requests a second, both mixes together.
    pub target_requests_per_second: f64,
    pub by_mix: Vec<MixQuotas>,
    /// What the target needs of each quota, and the increase to ask for.
    pub needs: Vec<QuotaNeed>,
    /// How long Lambda's scaling rate takes to reach the target's concurrency.
    pub lambda_ramp_seconds: f64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct MixQuotas {
    pub mix: String,
    /// A request's time in Lambda on AWS, as the model takes it.
    pub lambda_ms_per_request: f64,
    /// In the order they bind, the first first.
    pub binds: Vec<QuotaBinding>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct QuotaBinding {
    pub quota: String,
    /// What one request of the mix uses of it.
    pub per_request: f64,
    /// The mix's requests a second at which the default is used up.
    pub binds_at_requests_per_second: f64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct QuotaNeed {
    pub service: String,
    pub quota: String,
    /// Service Quotas' code; `None` for the template's own setting.
    pub code: Option<String>,
    pub unit: String,
    pub default: f64,
    pub needed: f64,
    /// The value to ask for, when the default is short.
    pub request: Option<f64>,
}
