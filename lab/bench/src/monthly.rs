//! What the deployed stack costs by the month, whatever the traffic: the
//! custom metrics the functions emit, and X-Ray's reservoir when traced.

use crate::prices::PRICES;
use crate::results::{CostBasis, MonthlyCost};
use std::path::Path;

const SECONDS_PER_MONTH: f64 = 30.0 * 86_400.0;

/// Custom metrics (metric × dimension values, as `shared/src/metrics.rs`
/// emits them) and X-Ray's reservoir, by the month.
pub fn costs(root: &Path, basis: &CostBasis) -> Vec<MonthlyCost> {
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
