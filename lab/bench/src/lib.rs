//! `make bench`: measures the pet store on this machine and reports, never fails.
//!
//! - [`load`]: warm latency and throughput of `petstore-local` on DynamoDB Local
//!   (seeded by [`load::seed`]), with [`oha`] as a cross-check;
//! - [`calls`]: DynamoDB calls, units and log bytes per operation, counted by
//!   the [`proxy`] in between, the [`capture`] on it seeing the items written
//!   and read, and [`capacity`] giving their units by DynamoDB's rules (raw
//!   calls of its own in [`dynamo`]);
//! - [`cost`]: all of it, by AWS's rules and prices, in dollars per million
//!   requests of each operation and of each mix;
//! - [`abuse`]: the calls and dollars of refused, random-key and worst-page requests;
//! - [`webhooks`]: order events delivered to a [`receiver`] through the
//!   delivery handlers Lambda runs, counted like [`calls`]; [`webhook_cost`]
//!   prices a million deliveries from it (records in [`webhook_results`],
//!   the lines read by [`webhook_lines`]);
//! - [`sizes`]: the arm64 zips; [`targets`]: each figure against its target;
//! - the in-process router + wrapper overhead is `benches/overhead/` (criterion),
//!   the partition-load model `lab/partitions`, the cold starts (Lambda-like,
//!   and at full CPU) `lab/coldstart`; each leaves a file the runner reads.
//!
//! Every figure lands in a record of [`results`] (a leaf), which
//! `results.json` is made of and [`report`] prints; the runner (`main.rs`)
//! only sequences the steps, with the [`processes`] they need.

pub mod abuse;
pub mod api_key;
pub mod calls;
pub mod capacity;
pub mod capture;
pub mod client;
pub mod cost;
pub mod dynamo;
pub mod events;
pub mod lambda_process;
pub mod left_behind;
pub mod load;
pub mod log_lines;
pub mod machine;
pub mod monthly;
pub mod oha;
pub mod operation_calls;
pub mod prices;
pub mod processes;
pub mod proxy;
pub mod quotas;
pub mod receiver;
pub mod report;
pub mod results;
pub mod sizes;
pub mod stats;
pub mod targets;
pub mod webhook_cost;
pub mod webhook_lines;
pub mod webhook_results;
pub mod webhooks;

/// Cargo's target directory for the workspace at `root`: `CARGO_TARGET_DIR`,
/// else `root/target`, where the tools find the builds they run and write
/// their figures.
pub fn target_dir(root: &std::path::Path) -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
