//! The targets set for the service, each against what was measured.
//!
//! "A read is one DynamoDB round trip" is not among them: the calls table
//! (calls per request) shows it, as latency here is DynamoDB Local's.

use crate::results::{ColdStart, Costs, FunctionSizes, Overhead, TargetCheck};
use std::collections::BTreeMap;

const COLD_READY_P50_MS: f64 = 15.0;
const OVERHEAD_P99_US: f64 = 50.0;
const ZIP_MB: f64 = 3.0;
/// #25's: the read mix all in, at the template's defaults, and the write
/// units of placing an order by DynamoDB's rules (rate limiter included).
const READ_MIX_USD_PER_MILLION: f64 = 2.30;
const PLACE_ORDER_WRITE_UNITS: f64 = 10.0;
/// #47's: with the capacity knob at its highest, the webhooks' busiest
/// partition holds at least this many orders a second.
const WEBHOOKS_FIRST_LIMIT_AT_TOP_RATE: f64 = 10_000.0;

pub fn check(
    cold_starts: &[ColdStart],
    overhead: Option<&Overhead>,
    sizes: &BTreeMap<String, FunctionSizes>,
    cost: &Costs,
    partitions_at_top_rate: Option<&serde_json::Value>,
) -> Vec<TargetCheck> {
    let cold = cold_starts.iter().map(|cold| {
        TargetCheck::at_most(
            format!(
                "cold start to ready ({}) median <= {COLD_READY_P50_MS} ms",
                cold.function
            ),
            cold.ready.p50_ms,
            COLD_READY_P50_MS,
        )
    });
    let benches = overhead.into_iter().flat_map(|o| &o.benches);
    let ours = benches.filter(|(name, _)| !Overhead::is_reference(name));
    let overhead = ours.map(|(name, case)| {
        TargetCheck::at_most(
            format!("router + wrapper p99 <= {OVERHEAD_P99_US} us ({name})"),
            case.p99_us,
            OVERHEAD_P99_US,
        )
    });
    let zips = sizes.iter().filter_map(|(function, sizes)| {
        let megabytes = sizes.arm64_zip_bytes? as f64 / 1e6;
        Some(TargetCheck::at_most(
            format!("{function} arm64 zip <= {ZIP_MB:.1} MB"),
            megabytes,
            ZIP_MB,
        ))
    });
    let read_mix = cost
        .mixes
        .iter()
        .filter(|mix| mix.mix == "read")
        .map(|mix| {
            TargetCheck::at_most(
                format!("read mix all in <= ${READ_MIX_USD_PER_MILLION:.2} per million"),
                mix.usd_per_million.total,
                READ_MIX_USD_PER_MILLION,
            )
        });
    let place_order = TargetCheck::at_most(
        format!("placing an order <= {PLACE_ORDER_WRITE_UNITS} write units"),
        cost.write_units_place_order,
        PLACE_ORDER_WRITE_UNITS,
    );
    let webhooks_at_top_rate = partitions_at_top_rate.and_then(|model| {
        let rate = model["order_rate"].as_str()?;
        let first_limit = model["webhooks"]["ceiling_orders_per_second"].as_f64()?;
        Some(TargetCheck::at_least(
            format!(
                "webhooks' first partition limit at OrderRate {rate} >= \
                 {WEBHOOKS_FIRST_LIMIT_AT_TOP_RATE} orders/s"
            ),
            first_limit,
            WEBHOOKS_FIRST_LIMIT_AT_TOP_RATE,
        ))
    });
    cold.chain(overhead)
        .chain(zips)
        .chain(read_mix)
        .chain([place_order])
        .chain(webhooks_at_top_rate)
        .collect()
}
