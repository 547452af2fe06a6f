//! The table `make bench` prints: the results, a section per measure.

use crate::results::{BenchResults, Costs, OhaCheck, OhaRun, OperationCalls, Overhead};
use serde::Serialize;
use std::collections::BTreeMap;

/// `partitions`: the partition model's section, as `tools/partitions` rendered it.
pub fn print_table(results: &BenchResults, partitions: Option<&str>) {
    let machine = &results.machine;
    println!(
        "\nMachine: {} ({} logical CPUs, {} GiB), {}",
        machine.cpu,
        machine.logical_cpus,
        machine.memory_gib,
        machine.kernel.as_deref().unwrap_or("?")
    );
    print_cold_starts(results);
    print_warm(results);
    if let Some(oha) = &results.oha {
        print_oha(oha);
    }
    print_calls(&results.dynamodb_calls, &results.cost);
    print_costs(&results.cost);
    crate::abuse::print(&results.abuse);
    if let Some(overhead) = &results.in_process_overhead {
        print_overhead(overhead);
    }
    print_sizes(results);
    if let Some(section) = partitions {
        print!("{section}");
    }
    print_targets(results);
}

/// `x` to `places` decimals; `-` for the NaN of a summary of no sample.
fn decimals(x: f64, places: usize) -> String {
    if x.is_finite() {
        format!("{x:.places$}")
    } else {
        "-".into()
    }
}

fn ms(x: f64) -> String {
    decimals(x, 2)
}

fn optional_ms(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), ms)
}

/// Status counts as JSON, `{"200":5}`: short, and plain to read.
fn counts(statuses: &impl Serialize) -> String {
    serde_json::to_string(statuses).unwrap_or_default()
}

fn print_cold_starts(results: &BenchResults) {
    // Lambda-like figures: tools/coldstart, printed before this table.
    println!("\nCold start at FULL CPU, no TLS: a local figure, not Lambda's (x86_64 release bootstrap, local Runtime API; ms)");
    println!(
        "  {:<8} {:>6} {:>9} {:>9} {:>11} {:>11} {:>10} {:>10}",
        "function",
        "spawns",
        "ready p50",
        "ready p95",
        "1st resp p50",
        "1st resp p95",
        "warm p50",
        "status"
    );
    for cold in &results.cold_start {
        println!(
            "  {:<8} {:>6} {:>9} {:>9} {:>11} {:>11} {:>10} {:>10}",
            cold.function,
            cold.spawns,
            ms(cold.ready.p50_ms),
            ms(cold.ready.p95_ms),
            ms(cold.first_response.p50_ms),
            ms(cold.first_response.p95_ms),
            ms(cold.warm_invocation.p50_ms),
            counts(&cold.statuses),
        );
    }
}

fn print_warm(results: &BenchResults) {
    println!("\nWarm, petstore-local on DynamoDB Local (closed loop; ms)");
    for run in &results.warm {
        println!(
            "  {} mix, c={}, {} s: {} req/s, p50 {} p99 {}, errors {}",
            run.mix,
            run.concurrency,
            run.seconds,
            decimals(run.requests_per_second, 0),
            ms(run.latency.p50_ms),
            ms(run.latency.p99_ms),
            run.errors
        );
        for (operation, load) in &run.operations {
            println!(
                "    {:<34} {:>6} req  p50 {:>7}  p99 {:>7}  non-2xx {}",
                operation,
                load.requests,
                ms(load.latency.p50_ms),
                ms(load.latency.p99_ms),
                counts(&load.unexpected)
            );
        }
    }
}

fn print_oha(oha: &OhaCheck) {
    println!(
        "  oha cross-check (one URL each, c={}, {} s):",
        oha.concurrency, oha.seconds
    );
    for (request, run) in &oha.runs {
        let request: String = request.chars().take(34).collect();
        match run {
            OhaRun::Measured(figures) => println!(
                "    {:<34} {:>7} req/s  p50 {:>7}  p99 {:>7}  {}",
                request,
                figures
                    .requests_per_second
                    .map_or_else(|| "-".into(), |x| decimals(x, 0)),
                optional_ms(figures.p50_ms),
                optional_ms(figures.p99_ms),
                counts(&figures.status_codes)
            ),
            OhaRun::Failed { error } => println!("    {request:<34} failed: {error}"),
        }
    }
}

fn print_calls(calls: &BTreeMap<String, OperationCalls>, cost: &Costs) {
    println!(
        "\nDynamoDB per request (counted through a proxy; capacity as DynamoDB Local reports it)"
    );
    println!(
        "  {:<34} {:>5} {:>6} {:>6} {:>7} {:>7} {:>7} {:>8} {:>10}  calls",
        "operation", "calls", "RRU", "WRU", "of GSIs", "req ms", "DDB ms", "DDB $/M", "Lambda $/M"
    );
    for (operation, c) in calls {
        let by_call: Vec<String> = c
            .by_call
            .iter()
            .map(|(call, per_request)| format!("{call}×{}", short_number(*per_request)))
            .collect();
        let lambda_usd = cost.per_operation.get(operation);
        println!(
            "  {:<34} {:>5} {:>6} {:>6} {:>7} {:>7} {:>7} {:>8} {:>10}  {}",
            operation,
            ms(c.calls_per_request),
            ms(c.read_units_per_request),
            ms(c.write_units_per_request),
            ms(c.index_units_per_request),
            ms(c.request_ms),
            ms(c.dynamodb_ms),
            decimals(c.dynamodb_usd_per_million, 3),
            lambda_usd.map_or_else(|| "-".into(), |o| decimals(o.lambda_usd_per_million, 3)),
            by_call.join(" ")
        );
    }
}

/// Two decimals at most, no trailing zeros: `1`, `0.5`, `1.33`.
fn short_number(x: f64) -> String {
    let fixed = format!("{x:.2}");
    fixed
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string()
}

fn print_costs(cost: &Costs) {
    let prices = &cost.prices;
    println!(
        "  prices: DynamoDB on-demand ${}/M WRU, ${}/M RRU; Lambda arm64 ${}/GB-s + ${}/M requests at {} MB ({})",
        prices.dynamodb_wru_per_million,
        prices.dynamodb_rru_per_million,
        prices.lambda_arm64_per_gb_second,
        prices.lambda_per_million_requests,
        cost.lambda_memory_mb,
        prices.checked
    );
    for (function, lambda) in &cost.lambda {
        println!(
            "  Lambda {function}: warm invocation p50 {} ms -> ${:.3} per million (duration + requests)",
            ms(lambda.warm_invocation_p50_ms),
            lambda.usd_per_million_at_p50
        );
    }
}

fn print_overhead(overhead: &Overhead) {
    println!("\nIn-process router + wrapper (DynamoDB answered in-process; µs)");
    for (name, case) in &overhead.benches {
        println!(
            "  {:<34} p50 {:>7}  p99 {:>7}  mean {:>7}  criterion median {}",
            name,
            ms(case.p50_us),
            ms(case.p99_us),
            ms(case.mean_us),
            optional_ms(case.criterion_median_us)
        );
    }
}

fn print_sizes(results: &BenchResults) {
    let megabytes = |bytes: Option<u64>| {
        bytes.map_or_else(|| "-".into(), |b| format!("{:.2} MB", b as f64 / 1e6))
    };
    println!("\nSize (arm64, cargo lambda build --release --arm64 --output-format zip)");
    for (function, sizes) in &results.size {
        println!(
            "  {:<8} zip {:>9}  binary {:>9}  (x86_64 binary {})",
            function,
            megabytes(sizes.arm64_zip_bytes),
            megabytes(sizes.arm64_binary_bytes),
            megabytes(sizes.x86_64_binary_bytes)
        );
    }
}

fn print_targets(results: &BenchResults) {
    println!("\nTargets (reported, never enforced)");
    for check in &results.targets {
        println!(
            "  [{}] {:<50} measured {}",
            if check.met { "met" } else { "MISSED" },
            check.target,
            ms(check.measured)
        );
    }
    for note in &results.notes {
        println!("  note: {note}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_of_the_calls_column_drop_trailing_zeros() {
        assert_eq!(short_number(1.0), "1");
        assert_eq!(short_number(0.5), "0.5");
        assert_eq!(short_number(4.0 / 3.0), "1.33");
    }

    #[test]
    fn a_summary_of_no_sample_prints_a_dash() {
        assert_eq!(ms(f64::NAN), "-");
        assert_eq!(ms(1.234), "1.23");
    }
}
