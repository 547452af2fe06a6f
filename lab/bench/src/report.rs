//! The table `make bench` prints: the results, a section per measure.

use crate::results::{BenchResults, Costs, OhaCheck, OhaRun, OperationCalls, Overhead};
use serde::Serialize;
use std::collections::BTreeMap;

/// `partitions`: the partition model's section, as `lab/partitions` rendered it.
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
    crate::webhook_cost::print(&results.webhooks);
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
    // Lambda-like figures: lab/coldstart, printed before this table.
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
    println!("\nPer request: DynamoDB calls (counted through a proxy), units by DynamoDB's rules (from the items), log bytes as in Lambda");
    println!(
        "  {:<36} {:>5} {:>5} {:>5} {:>6} {:>6} {:>6} {:>6} {:>7} {:>7}  calls",
        "operation",
        "calls",
        "RRU",
        "WRU",
        "of GSI",
        "log B",
        "lines",
        "req ms",
        "DDB $/M",
        "all $/M"
    );
    for (operation, c) in calls {
        let by_call: Vec<String> = c
            .by_call
            .iter()
            .map(|(call, per_request)| format!("{call}×{}", short_number(*per_request)))
            .collect();
        let all = cost
            .per_operation
            .get(operation)
            .map_or(f64::NAN, |o| o.total);
        println!(
            "  {:<36} {:>5} {:>5} {:>5} {:>6} {:>6} {:>6} {:>6} {:>7} {:>7}  {}",
            operation,
            ms(c.calls_per_request),
            ms(c.read_units_per_request),
            ms(c.write_units_per_request),
            ms(c.index_write_units_per_request),
            decimals(c.log_bytes_per_request, 0),
            decimals(c.log_lines_per_request, 1),
            ms(c.request_ms),
            decimals(crate::cost::dynamodb_per_million(c), 3),
            decimals(all, 3),
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
    let basis = &cost.basis;
    println!(
        "\nAll-in $ per million requests, by AWS's rules ({}; {} MB, tracing {}, {} cold starts per million of {} ms init)",
        cost.prices_as_of,
        basis.memory_mb,
        basis.tracing,
        basis.cold_starts_per_million,
        decimals(basis.init_ms, 1)
    );
    println!(
        "  {:<10} {:>7} {:>7} {:>8} {:>7} {:>7} {:>11} {:>7}   RRU   WRU  log B",
        "mix", "API GW", "Lambda", "DynamoDB", "Logs", "X-Ray", "EventBridge", "total"
    );
    for mix in &cost.mixes {
        let c = &mix.usd_per_million;
        println!(
            "  {:<10} {:>7} {:>7} {:>8} {:>7} {:>7} {:>11} {:>7} {:>5} {:>5} {:>6}",
            mix.mix,
            decimals(c.api_gateway, 3),
            decimals(c.lambda, 3),
            decimals(c.dynamodb, 3),
            decimals(c.logs, 3),
            decimals(c.xray, 3),
            decimals(c.eventbridge, 3),
            decimals(c.total, 3),
            ms(mix.read_units),
            ms(mix.write_units),
            decimals(mix.log_bytes, 0)
        );
    }
    println!(
        "  write units: placing an order {}, an order's life in the order mix {} (by DynamoDB's rules)",
        ms(cost.write_units_place_order),
        ms(cost.write_units_per_order)
    );
    println!(
        "  log bytes per request besides the function's: metrics line {}, Lambda's platform lines {}, access log line {}",
        decimals(basis.metrics_line_bytes, 0),
        decimals(basis.platform_log_bytes, 0),
        decimals(basis.access_log_bytes, 0)
    );
    for monthly in &cost.monthly {
        println!(
            "  by the month: {} ({}): ${:.2}",
            monthly.item,
            short_number(monthly.quantity),
            monthly.usd_per_month
        );
    }
    for note in &basis.notes {
        println!("  note: {note}");
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
