//! What a million requests cost, all in, by AWS's published rules: one model,
//! its prices in one table ([`PRICES`]).
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

use crate::results::{
    ColdStart, CostBasis, Costs, MixCost, MonthlyCost, OperationCalls, Price, ServiceCosts,
};
use std::collections::BTreeMap;
use std::path::Path;

pub const PRICES_AS_OF: &str =
    "us-east-1 list prices, arm64, standard table class and log class, as of 2026-11";

/// The price table: every dollar figure the model uses.
pub struct Prices {
    /// HTTP API requests, first 300 million a month; a request of more than
    /// 512 KB counts once per 512 KB (ours are far smaller).
    pub http_api_per_million: f64,
    pub lambda_per_million_requests: f64,
    /// arm64, first 6 billion GB-seconds a month.
    pub lambda_per_gb_second: f64,
    /// On-demand, per million write and read request units.
    pub dynamodb_per_million_writes: f64,
    pub dynamodb_per_million_reads: f64,
    /// Standard log class, per GB ingested (GB of 1024³ bytes).
    pub logs_per_gb: f64,
    /// Per million traces recorded.
    pub xray_per_million_traces: f64,
    /// Per custom metric a month, first 10,000.
    pub metric_per_month: f64,
    /// Per million custom events put on a bus (each 64 KB chunk one event).
    pub eventbridge_per_million_events: f64,
}

/// Sources: aws.amazon.com/api-gateway/pricing, /lambda/pricing,
/// /dynamodb/pricing/on-demand, /cloudwatch/pricing, /xray/pricing,
/// /eventbridge/pricing.
pub const PRICES: Prices = Prices {
    http_api_per_million: 1.00,
    lambda_per_million_requests: 0.20,
    lambda_per_gb_second: 0.000_013_333_4,
    dynamodb_per_million_writes: 0.625,
    dynamodb_per_million_reads: 0.125,
    logs_per_gb: 0.50,
    xray_per_million_traces: 5.00,
    metric_per_month: 0.30,
    eventbridge_per_million_events: 1.00,
};

impl Prices {
    fn table(&self) -> Vec<Price> {
        let price = |item: &str, usd: f64, per: &str| Price {
            item: item.into(),
            usd,
            per: per.into(),
        };
        vec![
            price(
                "API Gateway HTTP API",
                self.http_api_per_million,
                "million requests",
            ),
            price(
                "Lambda requests",
                self.lambda_per_million_requests,
                "million requests",
            ),
            price(
                "Lambda duration, arm64",
                self.lambda_per_gb_second,
                "GB-second",
            ),
            price(
                "DynamoDB on-demand writes",
                self.dynamodb_per_million_writes,
                "million write units",
            ),
            price(
                "DynamoDB on-demand reads",
                self.dynamodb_per_million_reads,
                "million read units",
            ),
            price("CloudWatch Logs ingestion", self.logs_per_gb, "GB"),
            price(
                "X-Ray traces recorded",
                self.xray_per_million_traces,
                "million traces",
            ),
            price(
                "CloudWatch custom metrics",
                self.metric_per_month,
                "metric-month",
            ),
            price(
                "EventBridge custom events",
                self.eventbridge_per_million_events,
                "million events",
            ),
        ]
    }
}

/// Lambda's active tracing records 1 request a second and 5% of the rest
/// (docs.aws.amazon.com/lambda/latest/dg/services-xray.html): at scale, 5%
/// per request, and the reservoir by the month.
const XRAY_SHARE: f64 = 0.05;
const SECONDS_PER_MONTH: f64 = 30.0 * 86_400.0;
/// Cold starts assumed per million requests: a steady load on warm
/// instances; Lambda bills the init phase of each.
const COLD_STARTS_PER_MILLION: f64 = 1_000.0;
/// The events function: stream records per invocation under load (the
/// template's `BatchSize`), and an invocation's assumed time, one
/// `PutEvents` call of about 30 ms per ten events, at 128 MB.
const EVENTS_BATCH: f64 = 100.0;
const EVENTS_CALL_SECONDS: f64 = 0.030;
const EVENTS_MEMORY_GB: f64 = 0.125;

/// Lambda's JSON-format lines of one invocation (docs.aws.amazon.com/lambda/
/// latest/dg/monitoring-cloudwatchlogs-logformat.html, "JSON format for
/// system logs"): `platform.start` and `platform.report`, the latter with
/// its X-Ray fields under active tracing; sized with realistic values.
const PLATFORM_START: &str = r#"{"time":"2026-11-08T16:39:49.543Z","type":"platform.start","record":{"requestId":"e11d8a9e-31b1-4df5-8d6c-0f3b0b3ba8b0","version":"$LATEST"}}"#;
const PLATFORM_REPORT: &str = r#"{"time":"2026-11-08T16:39:49.567Z","type":"platform.report","record":{"requestId":"e11d8a9e-31b1-4df5-8d6c-0f3b0b3ba8b0","metrics":{"durationMs":4.87,"billedDurationMs":5,"memorySizeMB":256,"maxMemoryUsedMB":22},"status":"success"}}"#;
const PLATFORM_TRACING: &str = r#","tracing":{"spanId":"61c5c0e4b5a4d1a9","type":"X-Amzn-Trace-Id","value":"Root=1-654bb6e5-1e4bd6ad4a2c8b3e5f6a7b8c;Parent=61c5c0e4b5a4d1a9;Sampled=1"}"#;

/// Realistic values of the access log's `$context` variables.
const CONTEXT_VALUES: &[(&str, &str)] = &[
    ("$context.requestId", "Vx1bKjLQoAMEVTw="),
    ("$context.identity.sourceIp", "203.0.113.7"),
    ("$context.httpMethod", "POST"),
    ("$context.path", "/store/orders/1732550400123"),
    ("$context.routeKey", "$default"),
    ("$context.status", "201"),
    ("$context.responseLatency", "23"),
    ("$context.integrationErrorMessage", "-"),
];

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
    /// The repository (template.yaml, openapi.yaml).
    pub root: &'a Path,
    /// `target/bench`, where `tools/coldstart` left the functions' logs.
    pub out: &'a Path,
}

pub fn costs(inputs: &Inputs<'_>) -> Costs {
    let mut notes = Vec::new();
    let template = std::fs::read_to_string(inputs.root.join("template.yaml")).unwrap_or_default();
    let memory_mb = template_setting(&template, "MemorySize")
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| {
            notes.push("no MemorySize in template.yaml: 128 MB assumed".into());
            128
        });
    let tracing = template_setting(&template, "Tracing").unwrap_or_else(|| "PassThrough".into());
    // An HTTP API sends no trace header, so PassThrough records nothing.
    let traced_share = if tracing == "Active" { XRAY_SHARE } else { 0.0 };
    let metrics_line_bytes = metrics_line_bytes(inputs.out).unwrap_or_else(|| {
        notes.push("no metrics (EMF) lines in target/bench/cold-*.log (tools/coldstart did not run): not counted".into());
        0.0
    });
    // Lambda's own lines are INFO: a `SystemLogLevel` of WARN or ERROR drops them.
    let system_level = template_setting(&template, "SystemLogLevel").unwrap_or_default();
    let platform = if ["WARN", "ERROR", "FATAL"].contains(&system_level.as_str()) {
        0
    } else {
        let tracing = if traced_share > 0.0 {
            PLATFORM_TRACING.len()
        } else {
            0
        };
        PLATFORM_START.len() + PLATFORM_REPORT.len() + tracing + 2
    };
    let access_log_bytes = access_log_bytes(&template).unwrap_or_else(|| {
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
        monthly: monthly(inputs.root, &basis),
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

/// A setting of the template's `Globals` (the first `name:` in the file),
/// resolved through a `!Ref` to its parameter's default.
pub fn template_setting(template: &str, name: &str) -> Option<String> {
    let prefix = format!("{name}:");
    // The first `Name: value`: a parameter of the same name (`Tracing:`
    // under `Parameters:`) is a heading with no value on its line.
    let raw = template
        .lines()
        .filter_map(|line| line.trim().strip_prefix(&prefix))
        .map(str::trim)
        .find(|value| !value.is_empty())?
        .to_string();
    let Some(parameter) = raw.strip_prefix("!Ref ") else {
        return Some(raw);
    };
    // `  Name:` under `Parameters:`, then its `Default:`.
    let heading = format!("  {}:", parameter.trim());
    let lines = template.lines().skip_while(|line| *line != heading).skip(1);
    lines
        .take_while(|line| line.starts_with("    ") || line.trim().is_empty())
        .map(str::trim)
        .find_map(|line| line.strip_prefix("Default:"))
        .map(|value| value.trim().trim_matches('"').to_string())
}

/// The API's access log line as the template's format writes it, with
/// realistic values, newline included.
fn access_log_bytes(template: &str) -> Option<usize> {
    let mut lines = template
        .lines()
        .skip_while(|line| !line.trim_start().starts_with("AccessLogSettings:"));
    let format_line = lines.find(|line| line.trim_start().starts_with("Format:"))?;
    let indent = format_line.len() - format_line.trim_start().len();
    // A folded block (`>-`): its lines joined by spaces.
    let folded: Vec<&str> = lines
        .take_while(|line| line.len() - line.trim_start().len() > indent)
        .map(str::trim)
        .collect();
    let mut line = folded.join(" ");
    for (variable, value) in CONTEXT_VALUES {
        line = line.replace(variable, value);
    }
    (!line.is_empty()).then_some(line.len() + 1)
}

/// The mean size of the functions' metrics (EMF) lines in the logs
/// `tools/coldstart` left (`cold-<function>.log`): every request writes one.
fn metrics_line_bytes(out: &Path) -> Option<f64> {
    let mut sizes = Vec::new();
    for function in ["pets", "store"] {
        let log =
            std::fs::read_to_string(out.join(format!("cold-{function}.log"))).unwrap_or_default();
        sizes.extend(
            log.lines()
                .filter(|l| l.contains("\"_aws\""))
                .map(|l| l.len() + 1),
        );
    }
    (!sizes.is_empty()).then(|| sizes.iter().sum::<usize>() as f64 / sizes.len() as f64)
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

/// Custom metrics (metric × dimension values, as `shared/src/metrics.rs`
/// emits them) and X-Ray's reservoir, by the month.
fn monthly(root: &Path, basis: &CostBasis) -> Vec<MonthlyCost> {
    let openapi = std::fs::read_to_string(root.join("openapi.yaml")).unwrap_or_default();
    let routes = routes(&openapi);
    let store = routes.iter().filter(|r| r.contains(" /store/")).count() as f64;
    // `unmatched` is the pets function's (it takes every other path).
    let pets = routes.len() as f64 - store + 1.0;
    let functions = 2.0;
    // `Latency` (its sample count is the requests) by Function, by Function ×
    // Route, by Function × StatusClass (2xx, 4xx, 5xx); the counters by
    // Function.
    // The runner links nothing of ours: the count is read from the source.
    let counters = std::fs::read_to_string(root.join("shared/src/metrics.rs"))
        .ok()
        .and_then(|source| {
            let (_, rest) = source.split_once("const COUNTERS: usize = ")?;
            rest.split(';').next()?.trim().parse::<f64>().ok()
        })
        .unwrap_or(0.0);
    let metrics = functions + (pets + store) + functions * 3.0 + functions * counters;
    let mut monthly = vec![MonthlyCost {
        item: format!("CloudWatch custom metrics (EMF): Latency by Function, Route and StatusClass; {counters} counts by Function"),
        quantity: metrics,
        usd_per_month: metrics * PRICES.metric_per_month,
    }];
    if basis.traced_share > 0.0 {
        // The 1 request a second reservoir of each function under steady traffic.
        let traces = 3.0 * SECONDS_PER_MONTH;
        monthly.push(MonthlyCost {
            item: "X-Ray: each function's 1 trace a second reservoir (pets, store, events), at steady traffic".into(),
            quantity: traces,
            usd_per_month: traces / 1e6 * PRICES.xray_per_million_traces,
        });
    }
    monthly
}

/// `METHOD /path` of every operation in the contract, but the docs' own.
fn routes(openapi: &str) -> Vec<String> {
    let mut path = "";
    let mut routes = Vec::new();
    for line in openapi.lines() {
        if let Some(p) = line.strip_prefix("  /").and_then(|p| p.strip_suffix(':')) {
            path = p;
        } else if let Some(method) = line.strip_prefix("    ").and_then(|m| m.strip_suffix(':')) {
            let methods = ["get", "put", "post", "patch", "delete"];
            if methods.contains(&method)
                && !path.is_empty()
                && !path.starts_with("openapi")
                && path != "docs"
            {
                routes.push(format!("{} /{path}", method.to_uppercase()));
            }
        } else if !line.starts_with(' ') && !line.is_empty() {
            path = "";
        }
    }
    routes
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = concat!(
        "Parameters:\n  FunctionMemoryMb:\n    Type: Number\n    Default: 256\n",
        "  Tracing:\n    Type: String\n    Default: Active\n",
        "Globals:\n  Function:\n    MemorySize: !Ref FunctionMemoryMb\n    Tracing: !Ref Tracing\n",
        "Resources:\n  HttpApi:\n    Properties:\n      AccessLogSettings:\n        Format: >-\n",
        "          {\"requestId\":\"$context.requestId\",\n",
        "          \"status\":\"$context.status\"}\n  Next:\n",
    );

    #[test]
    fn settings_come_from_the_template_through_its_parameters() {
        assert_eq!(
            template_setting(TEMPLATE, "MemorySize").as_deref(),
            Some("256")
        );
        assert_eq!(
            template_setting(TEMPLATE, "Tracing").as_deref(),
            Some("Active")
        );
        let line = r#"{"requestId":"Vx1bKjLQoAMEVTw=", "status":"201"}"#;
        assert_eq!(access_log_bytes(TEMPLATE), Some(line.len() + 1));
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
        let basis = CostBasis {
            memory_mb: 256,
            tracing: "Active".into(),
            traced_share: XRAY_SHARE,
            cold_starts_per_million: 0.0,
            init_ms: 0.0,
            events_per_change: 1.0,
            metrics_line_bytes: 0.0,
            platform_log_bytes: 0.0,
            access_log_bytes: 0.0,
            notes: Vec::new(),
        };
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
