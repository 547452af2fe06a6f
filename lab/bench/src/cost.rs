//! What a million requests cost, all in, by AWS's published rules: one model,
//! its prices in one table ([`PRICES`], `prices.rs`).
//!
//! Per request: API Gateway (HTTP API), Lambda (the request, and GB-seconds
//! of its measured duration in 1 ms steps at the template's memory, plus its
//! share of billed init), DynamoDB (read and write units by the rules, from
//! the items themselves: `capacity.rs`), CloudWatch Logs (the bytes the
//! function writes, its metrics line, Lambda's own lines and the API's
//! access log line), X-Ray (the traces Lambda records at the template's
//! tracing setting) and EventBridge (the events a change publishes, and the
//! events function that publishes them). Custom metrics are billed by the
//! month, not by the request: [`Costs::monthly`].

use crate::log_lines;
use crate::monthly;
use crate::prices::{PRICES, PRICES_AS_OF};
use crate::results::{ColdStart, CostBasis, Costs, MixCost, OperationCalls, ServiceCosts};
use petstore_lab_template::Template;
use std::collections::BTreeMap;
use std::path::Path;

/// The function whose settings (memory, tracing, Lambda's log level) every
/// request is priced at: the API's functions share them (Globals, and one
/// `LoggingConfig`; a test holds the store's equal).
const PRICED_AT: &str = "PetsFunction";

/// Lambda's active tracing records 1 request a second and 5% of the rest
/// (docs.aws.amazon.com/lambda/latest/dg/services-xray.html): at scale, 5%
/// per request, and the reservoir by the month.
const XRAY_SHARE: f64 = 0.05;
/// Cold starts assumed per million requests: a steady load on warm
/// instances; Lambda bills the init phase of each.
const COLD_STARTS_PER_MILLION: f64 = 1_000.0;
/// The events function: stream records per invocation under load (the
/// template's `BatchSize`), and an invocation's assumed time, one
/// `PutEvents` call of about 30 ms per ten events, at 128 MB.
const EVENTS_BATCH: f64 = 100.0;
const EVENTS_CALL_SECONDS: f64 = 0.030;
const EVENTS_MEMORY_GB: f64 = 0.125;

/// The mixes the costs are given for: operation (as `calls.rs` names it)
/// and weight.
pub const MIXES: [(&str, &[(&str, f64)]); 3] = [
    (
        "read",
        &[
            ("GET /pets?limit=20", 0.4),
            ("GET /pets?ids=(5)", 0.4),
            ("GET /store/inventory?limit=20", 0.2),
        ],
    ),
    // An order's life: placed; 8 in 10 completed, 1 cancelled; a restock
    // per 10 orders (the partition model's mix).
    (
        "order",
        &[
            ("POST /store/orders", 10.0),
            ("PATCH /store/orders/{id} (complete)", 8.0),
            ("DELETE /store/orders/{id}", 1.0),
            ("PUT /store/inventory/{id}", 1.0),
        ],
    ),
    (
        "catalogue",
        &[
            ("PATCH /pets/{id}", 4.0),
            ("POST /pets", 2.0),
            ("PUT /store/inventory/{id}", 2.0),
            ("POST /categories", 1.0),
            ("PUT /categories/{id}", 1.0),
        ],
    ),
];

/// What the model reads besides the calls: the template, the cold starts,
/// the events per change, and the functions' metrics lines.
pub struct Inputs<'a> {
    pub calls: &'a BTreeMap<String, OperationCalls>,
    pub cold_starts: &'a [ColdStart],
    pub events_per_change: Option<f64>,
    pub template: &'a Template,
    /// The repository (openapi.yaml).
    pub root: &'a Path,
    /// `target/bench`, where `lab/coldstart` left the functions' logs.
    pub out: &'a Path,
}

pub fn costs(inputs: &Inputs<'_>) -> Costs {
    let mut notes = Vec::new();
    let template = inputs.template;
    let memory_mb = template.memory_mb(PRICED_AT).unwrap_or_else(|| {
        notes.push("no MemorySize in template.yaml: 128 MB assumed".into());
        128
    });
    let tracing = template
        .tracing(PRICED_AT)
        .unwrap_or_else(|| "PassThrough".into());
    // An HTTP API sends no trace header, so PassThrough records nothing.
    let traced_share = if tracing == "Active" { XRAY_SHARE } else { 0.0 };
    let metrics_line_bytes = log_lines::metrics_line_bytes(inputs.out).unwrap_or_else(|| {
        notes.push("no metrics (EMF) lines in target/bench/cold-*.log (lab/coldstart did not run): not counted".into());
        0.0
    });
    // Lambda's own lines are INFO: a `SystemLogLevel` of WARN or ERROR drops them.
    let system_level = template.system_log_level(PRICED_AT).unwrap_or_default();
    let platform = log_lines::platform_bytes(&system_level, traced_share > 0.0);
    let format = template.access_log_format();
    let access_log_bytes = format.as_deref().and_then(log_lines::access_log_bytes);
    let access_log_bytes = access_log_bytes.unwrap_or_else(|| {
        notes.push("no access log format in template.yaml: none counted".into());
        0
    });
    let init_ms = mean_init_ms(inputs.cold_starts);
    let events_per_change = inputs.events_per_change.unwrap_or_else(|| {
        notes.push("events per change not measured: none counted".into());
        0.0
    });
    let basis = CostBasis {
        memory_mb,
        tracing,
        traced_share,
        cold_starts_per_million: COLD_STARTS_PER_MILLION,
        init_ms,
        events_per_change,
        metrics_line_bytes,
        platform_log_bytes: platform as f64,
        access_log_bytes: access_log_bytes as f64,
        notes,
    };
    let per_operation: BTreeMap<String, ServiceCosts> = inputs
        .calls
        .iter()
        .map(|(operation, calls)| (operation.clone(), operation_cost(operation, calls, &basis)))
        .collect();
    let mixes = MIXES
        .iter()
        .map(|(mix, weights)| mix_cost(mix, weights, inputs.calls, &per_operation))
        .collect();
    let units = |operation: &str| {
        inputs
            .calls
            .get(operation)
            .map_or(f64::NAN, |c| c.write_units_per_request)
    };
    let (_, order_mix) = MIXES[1];
    let orders: f64 = order_mix[0].1;
    let per_order = order_mix.iter().map(|(op, w)| units(op) * w).sum::<f64>() / orders;
    Costs {
        prices: PRICES.table(),
        prices_as_of: PRICES_AS_OF.into(),
        per_operation,
        mixes,
        write_units_place_order: units("POST /store/orders"),
        write_units_per_order: per_order,
        monthly: monthly::costs(inputs.root, &basis),
        basis,
    }
}

/// Lambda's dollars per million invocations of `duration_ms` (billed in
/// whole milliseconds, rounded up) at `memory_mb`, the request included.
pub fn lambda_per_million(duration_ms: f64, memory_mb: u32) -> f64 {
    let billed_seconds = duration_ms.ceil().max(1.0) / 1e3;
    PRICES.lambda_per_million_requests
        + 1e6 * billed_seconds * (f64::from(memory_mb) / 1024.0) * PRICES.lambda_per_gb_second
}

/// DynamoDB's dollars per million of the operation `calls` counted.
pub fn dynamodb_per_million(calls: &OperationCalls) -> f64 {
    calls.read_units_per_request * PRICES.dynamodb_per_million_reads
        + calls.write_units_per_request * PRICES.dynamodb_per_million_writes
}

fn operation_cost(operation: &str, calls: &OperationCalls, basis: &CostBasis) -> ServiceCosts {
    let p = &PRICES;
    let gb = f64::from(basis.memory_mb) / 1024.0;
    let init_gb_seconds = gb * basis.cold_starts_per_million * basis.init_ms.ceil() / 1e3;
    let lambda = lambda_per_million(calls.request_ms, basis.memory_mb)
        + init_gb_seconds * p.lambda_per_gb_second;
    let dynamodb = dynamodb_per_million(calls);
    // The metrics line is among the counted service's own lines (it logs as
    // a function does); `metrics_line_bytes` is the real bootstraps' for
    // comparison, not added again.
    let log_bytes = calls.log_bytes_per_request + basis.platform_log_bytes + basis.access_log_bytes;
    let logs = 1e6 * log_bytes / f64::powi(1024.0, 3) * p.logs_per_gb;
    let xray = basis.traced_share * p.xray_per_million_traces;
    let changes = !operation.starts_with("GET ");
    let eventbridge = if changes {
        eventbridge_per_million_changes(basis.events_per_change)
    } else {
        0.0
    };
    let mut cost = ServiceCosts {
        api_gateway: p.http_api_per_million,
        lambda,
        dynamodb,
        logs,
        xray,
        eventbridge,
        total: 0.0,
    };
    cost.total =
        cost.api_gateway + cost.lambda + cost.dynamodb + cost.logs + cost.xray + eventbridge;
    cost
}

/// EventBridge entries and the events function's invocations, per million
/// changes that each publish `per_change` events.
pub fn eventbridge_per_million_changes(per_change: f64) -> f64 {
    let p = &PRICES;
    let events = per_change * p.eventbridge_per_million_events;
    let invocations = 1e6 / EVENTS_BATCH;
    let calls_per_invocation = (EVENTS_BATCH * per_change / 10.0).ceil();
    let gb_seconds = invocations * calls_per_invocation * EVENTS_CALL_SECONDS * EVENTS_MEMORY_GB;
    events + invocations / 1e6 * p.lambda_per_million_requests + gb_seconds * p.lambda_per_gb_second
}

fn mix_cost(
    mix: &str,
    weights: &[(&str, f64)],
    calls: &BTreeMap<String, OperationCalls>,
    per_operation: &BTreeMap<String, ServiceCosts>,
) -> MixCost {
    let total: f64 = weights.iter().map(|(_, w)| w).sum();
    let mut cost = ServiceCosts::default();
    let (mut reads, mut writes, mut logs) = (0.0, 0.0, 0.0);
    for (operation, weight) in weights {
        let share = weight / total;
        // An operation not measured leaves the mix's total unknown.
        let Some(one) = per_operation.get(*operation) else {
            cost.total = f64::NAN;
            continue;
        };
        let counted = calls.get(*operation);
        cost.api_gateway += share * one.api_gateway;
        cost.lambda += share * one.lambda;
        cost.dynamodb += share * one.dynamodb;
        cost.logs += share * one.logs;
        cost.xray += share * one.xray;
        cost.eventbridge += share * one.eventbridge;
        cost.total += share * one.total;
        if let Some(counted) = counted {
            reads += share * counted.read_units_per_request;
            writes += share * counted.write_units_per_request;
            logs += share * counted.log_bytes_per_request;
        }
    }
    MixCost {
        mix: mix.into(),
        weights: weights
            .iter()
            .map(|(op, w)| (op.to_string(), w / total))
            .collect(),
        usd_per_million: cost,
        read_units: reads,
        write_units: writes,
        log_bytes: logs,
    }
}

/// Init as billed: spawn to the first `next`, the full-CPU figure (a floor:
/// Lambda's share of a CPU makes it longer).
fn mean_init_ms(cold_starts: &[ColdStart]) -> f64 {
    let http: Vec<f64> = cold_starts
        .iter()
        .filter(|c| c.function != "events")
        .map(|c| c.ready.p50_ms)
        .filter(|ms| ms.is_finite())
        .collect();
    if http.is_empty() {
        return 0.0;
    }
    http.iter().sum::<f64>() / http.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = concat!(
        "Parameters:\n  FunctionMemoryMb:\n    Type: Number\n    Default: 512\n",
        "  Tracing:\n    Type: String\n    Default: Active\n",
        "Globals:\n  Function:\n    MemorySize: !Ref FunctionMemoryMb\n    Tracing: !Ref Tracing\n",
        "Resources:\n  HttpApi:\n    Type: AWS::Serverless::HttpApi\n    Properties:\n",
        "      AccessLogSettings:\n        Format: >-\n",
        "          {\"requestId\":\"$context.requestId\",\n",
        "          \"status\":\"$context.status\"}\n  Next:\n",
    );

    fn inputs<'a>(
        template: &'a Template,
        calls: &'a BTreeMap<String, OperationCalls>,
    ) -> Inputs<'a> {
        Inputs {
            calls,
            cold_starts: &[],
            events_per_change: None,
            template,
            root: Path::new("/nonexistent"),
            out: Path::new("/nonexistent"),
        }
    }

    #[test]
    fn the_basis_comes_from_the_template_through_its_parameters() {
        let template = Template::parse(TEMPLATE).unwrap();
        let calls = BTreeMap::new();
        let basis = costs(&inputs(&template, &calls)).basis;
        assert_eq!((basis.memory_mb, basis.tracing.as_str()), (512, "Active"));
        assert_eq!(basis.traced_share, XRAY_SHARE);
        let line = r#"{"requestId":"Vx1bKjLQoAMEVTw=", "status":"201"}"#;
        assert_eq!(basis.access_log_bytes, (line.len() + 1) as f64);
        // No SystemLogLevel: Lambda's INFO lines, traced, are counted.
        assert_eq!(
            basis.platform_log_bytes,
            log_lines::platform_bytes("", true) as f64
        );
        // An empty template: the model's assumptions, each noted.
        let basis = costs(&inputs(&Template::default(), &calls)).basis;
        assert_eq!(
            (basis.memory_mb, basis.tracing.as_str()),
            (128, "PassThrough")
        );
        assert!(basis.notes.iter().any(|n| n.starts_with("no MemorySize")));
        assert!(basis
            .notes
            .iter()
            .any(|n| n.starts_with("no access log format")));
    }

    #[test]
    fn the_deployed_basis_is_every_api_functions() {
        let template = Template::parse(include_str!("../../../template.yaml")).unwrap();
        let calls = BTreeMap::new();
        let basis = costs(&inputs(&template, &calls)).basis;
        assert_eq!(
            (basis.memory_mb, basis.tracing.as_str()),
            (256, "PassThrough")
        );
        // SystemLogLevel WARN: none of Lambda's own lines.
        assert_eq!(basis.platform_log_bytes, 0.0);
        assert_eq!(basis.access_log_bytes, 126.0);
        for function in ["StoreFunction", "WebhooksFunction"] {
            assert_eq!(template.memory_mb(function), template.memory_mb(PRICED_AT));
            assert_eq!(template.tracing(function), template.tracing(PRICED_AT));
            let level = template.system_log_level(function);
            assert_eq!(level, template.system_log_level(PRICED_AT));
        }
    }

    #[test]
    fn lambda_bills_whole_milliseconds_of_its_memory() {
        let calls = OperationCalls {
            repeats: 1,
            statuses: Default::default(),
            calls_per_request: 1.0,
            by_call: Default::default(),
            read_units_per_request: 0.5,
            write_units_per_request: 1.0,
            index_write_units_per_request: 0.0,
            refused_write_units_per_request: 0.0,
            write_units_by_table: Default::default(),
            dynamodb_bytes_per_request: 0.0,
            log_bytes_per_request: 1024.0 * 1024.0 * 1024.0 / 1e6,
            log_lines_per_request: 1.0,
            request_ms: 2.3,
            dynamodb_ms: 1.0,
        };
        let basis = CostBasis::for_tests(256, "Active", XRAY_SHARE);
        let cost = operation_cost("GET /pets", &calls, &basis);
        // 3 ms at 0.25 GB, a million times.
        let lambda = 0.20 + 1e6 * 0.003 * 0.25 * PRICES.lambda_per_gb_second;
        assert!((cost.lambda - lambda).abs() < 1e-9);
        assert!((cost.dynamodb - (0.5 * 0.125 + 0.625)).abs() < 1e-9);
        // A GB of logs a million requests.
        assert!((cost.logs - 0.50).abs() < 1e-9);
        assert!((cost.xray - 0.25).abs() < 1e-9);
        assert_eq!(cost.eventbridge, 0.0);
        assert!(operation_cost("POST /pets", &calls, &basis).eventbridge >= 1.0);
    }
}
