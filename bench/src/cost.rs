//! Prices, and what an operation costs per million requests.
//!
//! us-east-1 list prices; AWS changes them rarely but does (on-demand
//! DynamoDB was halved on 2024-11-01). Where they were checked: `PRICES_CHECKED`.

use crate::results::{ColdStart, Costs, LambdaCost, OperationCalls, OperationCost, Prices};
use std::collections::BTreeMap;

pub const PRICES_CHECKED: &str = "us-east-1 list prices in effect since 2024-11-01 (DynamoDB on-demand after the 50% cut); checked 2025 against third-party summaries (airbyte.com 2025-07, cloudchipr.com), not the AWS pricing pages themselves";
/// DynamoDB on-demand, standard table class, $ per million write request units.
pub const DYNAMODB_WRU_PER_MILLION: f64 = 0.625;
/// DynamoDB on-demand, standard table class, $ per million read request units.
pub const DYNAMODB_RRU_PER_MILLION: f64 = 0.125;
/// Lambda, arm64, $ per GB-second (first 7.5 billion GB-s a month).
pub const LAMBDA_ARM_PER_GB_SECOND: f64 = 0.000_013_333_4;
/// Lambda, $ per million requests.
pub const LAMBDA_PER_MILLION_REQUESTS: f64 = 0.20;
/// API Gateway HTTP API, $ per million requests (first 300 million a month).
pub const HTTP_API_PER_MILLION_REQUESTS: f64 = 1.00;

pub fn prices() -> Prices {
    Prices {
        checked: PRICES_CHECKED.to_string(),
        dynamodb_wru_per_million: DYNAMODB_WRU_PER_MILLION,
        dynamodb_rru_per_million: DYNAMODB_RRU_PER_MILLION,
        lambda_arm64_per_gb_second: LAMBDA_ARM_PER_GB_SECOND,
        lambda_per_million_requests: LAMBDA_PER_MILLION_REQUESTS,
        http_api_per_million_requests: HTTP_API_PER_MILLION_REQUESTS,
    }
}

/// DynamoDB dollars per million requests that each consume these units.
pub fn dynamodb_per_million(read_units: f64, write_units: f64) -> f64 {
    read_units * DYNAMODB_RRU_PER_MILLION + write_units * DYNAMODB_WRU_PER_MILLION
}

/// Lambda dollars per million invocations of `duration_ms` (Lambda bills whole
/// milliseconds, rounded up) at `memory_mb`.
pub fn lambda_per_million(duration_ms: f64, memory_mb: u32) -> f64 {
    let billed_seconds = duration_ms.ceil().max(1.0) / 1e3;
    LAMBDA_PER_MILLION_REQUESTS
        + 1e6 * billed_seconds * (f64::from(memory_mb) / 1024.0) * LAMBDA_ARM_PER_GB_SECOND
}

/// What each function's warm invocation and each operation cost at these prices.
pub fn costs(
    calls: &BTreeMap<String, OperationCalls>,
    cold_starts: &[ColdStart],
    memory_mb: u32,
) -> Costs {
    // Lambda bills the handler's time: the warm invocation, measured between
    // the runtime API's `next` and the posted response.
    let lambda = cold_starts
        .iter()
        .map(|cold| {
            let warm_ms = cold.warm_invocation.p50_ms;
            let cost = LambdaCost {
                warm_invocation_p50_ms: warm_ms,
                usd_per_million_at_p50: lambda_per_million(warm_ms, memory_mb),
                first_invocation_p50_ms: cold.first_invocation.p50_ms,
            };
            (cold.function.clone(), cost)
        })
        .collect();
    let per_operation = calls
        .iter()
        .map(|(operation, calls)| (operation.clone(), operation_cost(calls, memory_mb)))
        .collect();
    Costs {
        prices: prices(),
        lambda_memory_mb: memory_mb,
        lambda,
        per_operation,
    }
}

fn operation_cost(calls: &OperationCalls, memory_mb: u32) -> OperationCost {
    // Lambda runs one request per instance at a time, so the basis is the
    // request sent alone (the counting pass), not the loaded latency.
    let basis_ms = calls.request_ms;
    let lambda_usd = lambda_per_million(basis_ms, memory_mb);
    OperationCost {
        dynamodb_usd_per_million: calls.dynamodb_usd_per_million,
        lambda_usd_per_million: lambda_usd,
        lambda_duration_basis_ms: basis_ms,
        total_usd_per_million: calls.dynamodb_usd_per_million
            + lambda_usd
            + HTTP_API_PER_MILLION_REQUESTS,
        http_api_usd_per_million: HTTP_API_PER_MILLION_REQUESTS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lambda_cost_rounds_up_to_the_millisecond() {
        // 1 ms at 128 MB: 0.001 s * 0.125 GB * 1e6 * price + requests.
        let one = lambda_per_million(0.3, 128);
        assert!((one - (0.20 + 0.001 * 0.125 * 1e6 * LAMBDA_ARM_PER_GB_SECOND)).abs() < 1e-9);
        assert_eq!(lambda_per_million(1.0, 128), one);
    }
}
