//! The model's records, which `target/bench/partitions.json` is made of and
//! the bench carries into its `results.json` as they are, and its section of
//! the bench's table. The field names are the files' keys.

use petstore_bench::results::StatusCounts;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The partition-load model of a replayed mix.
#[derive(Debug, Serialize)]
pub struct PartitionModel {
    pub mix: MixRun,
    /// The table, then each index: the store's partitions, every one not
    /// keyed `WEBHOOK…`.
    pub scopes: Vec<ScopeLoad>,
    /// The webhooks' partitions, which `scopes` leaves out.
    pub webhooks: WebhookLoad,
    /// Orders a second at which the first of the store's partitions reaches
    /// a limit.
    pub ceiling_orders_per_second: Option<f64>,
    /// The mix's reads a second at that order rate.
    pub ceiling_reads_per_second: Option<f64>,
    /// Which limit, on which partition, comes first.
    pub first_limit: Option<String>,
}

/// What was replayed, against what.
#[derive(Debug, Serialize)]
pub struct MixRun {
    pub description: String,
    /// The service binary that ran it, and the environment the bench added.
    pub service: String,
    pub service_env: Vec<String>,
    pub pets: usize,
    pub categories: usize,
    pub customers: usize,
    pub workers: usize,
    /// Orders placed (201), and the mix's reads sent.
    pub orders: usize,
    pub reads: usize,
    /// By operation.
    pub statuses: BTreeMap<String, StatusCounts>,
    pub seconds: f64,
}

/// One scope's (`table` or an index's) load over the replay.
#[derive(Debug, Serialize)]
pub struct ScopeLoad {
    pub scope: String,
    pub partitions_written: usize,
    pub write_units: f64,
    pub hottest_write: Option<HotPartition>,
    pub partitions_read: usize,
    pub read_units: f64,
    pub hottest_read: Option<HotPartition>,
    /// Orders a second at which its busiest partition reaches 1,000 write
    /// units a second (`None`: no writes), and 3,000 read units.
    pub write_ceiling_orders_per_second: Option<f64>,
    pub read_ceiling_orders_per_second: Option<f64>,
}

/// The webhooks' part of the replay: the endpoints it registered, what
/// they were sent, and the load on the webhooks' partitions (keyed
/// `WEBHOOK…`: an endpoint's items and deliveries, their index entries,
/// the lists the fan-out reads).
#[derive(Debug, Serialize)]
pub struct WebhookLoad {
    /// Endpoints registered before the mix: the staff key's (every type)
    /// and one per customer key (its own orders' events).
    pub staff_endpoints: usize,
    pub customer_endpoints: usize,
    /// What the receiver was sent while the mix ran: deliveries (one
    /// endpoint, one event) and requests (every attempt).
    pub deliveries: usize,
    pub attempts: usize,
    pub deliveries_per_order: f64,
    /// Deliveries the endpoints' lists showed at the end (`GET
    /// /webhooks/{id}/deliveries`, the seed's too), and those not `delivered`.
    pub listed: usize,
    pub undelivered: usize,
    /// Each scope's webhook partitions by pattern of key.
    pub partitions: Vec<PatternLoad>,
    /// Orders a second at which the first webhook partition reaches a limit.
    pub ceiling_orders_per_second: Option<f64>,
    /// Which limit, on which partition (its pattern, and whose it is).
    pub first_limit: Option<String>,
}

/// The partitions of one pattern of key (`WEBHOOK#<id>`) in one scope.
#[derive(Debug, Serialize)]
pub struct PatternLoad {
    pub pattern: String,
    #[serde(flatten)]
    pub load: ScopeLoad,
}

/// A scope's busiest partition, and its share of the scope's units.
#[derive(Debug, Serialize)]
pub struct HotPartition {
    pub partition: String,
    pub units: f64,
    pub share: f64,
}

fn hot(partition: &Option<HotPartition>) -> String {
    partition.as_ref().map_or_else(
        || "-".into(),
        |h| format!("{} {:.0}%", h.partition, 100.0 * h.share),
    )
}

fn rate(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), whole)
}

/// The model's section of the bench's table.
pub fn table(model: &PartitionModel) -> String {
    let mut out = String::new();
    let mix = &model.mix;
    let _ = writeln!(
        out,
        "\nPartitions: {} orders, {} reads of the mix in {:.0} s ({} pets in {} categories, {} customers{})",
        mix.orders,
        mix.reads,
        mix.seconds,
        mix.pets,
        mix.categories,
        mix.customers,
        if mix.service_env.is_empty() { String::new() } else { format!("; {}", mix.service_env.join(" ")) }
    );
    let _ = writeln!(
        out,
        "  {:<6} {:>5} {:>8}  {:<34} {:>5} {:>8}  {:<34} {:>10} {:>10}",
        "scope",
        "parts",
        "WCU",
        "hottest write partition, share",
        "parts",
        "RCU",
        "hottest read partition, share",
        "W orders/s",
        "R orders/s"
    );
    let _ = writeln!(
        out,
        "  (orders/s: the order rate at which the busiest partition reaches 1,000 write units a second (W), or 3,000 read units (R))"
    );
    for scope in &model.scopes {
        let _ = writeln!(
            out,
            "  {:<6} {:>5} {:>8}  {:<34} {:>5} {:>8}  {:<34} {:>10} {:>10}",
            scope.scope,
            scope.partitions_written,
            whole(scope.write_units),
            hot(&scope.hottest_write),
            scope.partitions_read,
            whole(scope.read_units),
            hot(&scope.hottest_read),
            rate(scope.write_ceiling_orders_per_second),
            rate(scope.read_ceiling_orders_per_second),
        );
    }
    let _ = writeln!(
        out,
        "  ceiling: {} orders/s with {} reads/s of the mix; first limit: {}",
        rate(model.ceiling_orders_per_second),
        rate(model.ceiling_reads_per_second),
        model.first_limit.as_deref().unwrap_or("none")
    );
    webhooks_table(&mut out, &model.webhooks);
    out
}

/// The webhooks' lines of the table.
fn webhooks_table(out: &mut String, webhooks: &WebhookLoad) {
    let _ = writeln!(
        out,
        "\nWebhooks: {} staff endpoint (every type) and {} customer endpoints (own orders); \
         {} deliveries in {} attempts while the mix ran ({:.2} an order); \
         {} listed at the end, {} not delivered",
        webhooks.staff_endpoints,
        webhooks.customer_endpoints,
        webhooks.deliveries,
        webhooks.attempts,
        webhooks.deliveries_per_order,
        webhooks.listed,
        webhooks.undelivered,
    );
    let _ = writeln!(
        out,
        "  {:<6} {:<22} {:>5} {:>8}  {:<34} {:>5} {:>8}  {:<34} {:>10} {:>10}",
        "scope",
        "partitions",
        "parts",
        "WCU",
        "hottest write partition, share",
        "parts",
        "RCU",
        "hottest read partition, share",
        "W orders/s",
        "R orders/s"
    );
    for row in &webhooks.partitions {
        let scope = &row.load;
        let _ = writeln!(
            out,
            "  {:<6} {:<22} {:>5} {:>8}  {:<34} {:>5} {:>8}  {:<34} {:>10} {:>10}",
            scope.scope,
            row.pattern,
            scope.partitions_written,
            whole(scope.write_units),
            hot(&scope.hottest_write),
            scope.partitions_read,
            whole(scope.read_units),
            hot(&scope.hottest_read),
            rate(scope.write_ceiling_orders_per_second),
            rate(scope.read_ceiling_orders_per_second),
        );
    }
    let _ = writeln!(
        out,
        "  webhooks' first limit: {} orders/s; {}",
        rate(webhooks.ceiling_orders_per_second),
        webhooks.first_limit.as_deref().unwrap_or("none")
    );
}

/// A whole number; `-` where there is none.
fn whole(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.0}")
    } else {
        "-".into()
    }
}
