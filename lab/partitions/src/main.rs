//! `petstore-partitions`: the partition-load model `make bench` reports.
//!
//! [`replay`] runs an order mix against a `petstore-local` of its own tables,
//! through the bench's counting proxy with its capture
//! ([`petstore_bench::capture`]) attached; [`model`] attributes every write
//! and read to the partition it landed on, with its units by DynamoDB's
//! rules and the table's layout as DynamoDB describes it
//! ([`petstore_bench::capacity`]), and finds the order rate at which the
//! busiest partition reaches a limit. The webhooks' partitions (keyed
//! `WEBHOOK…`: the endpoints the replay registers, at a [`receiver`] of its
//! own, and their deliveries) are modelled apart, with a first limit of
//! their own.
//!
//! `lab/bench/run.sh` runs it before the runner: it starts its own DynamoDB Local,
//! writes its [`records`] to `target/bench/partitions.json` and its section
//! of the table to `partitions.txt`, which the runner carries into its
//! `results.json` and its table.
//! `BENCH_ONLY=partitions make bench` runs it alone. With
//! `BENCH_PARTITIONS_STEM` its files are named so (`make bench` runs it a
//! second time at the highest OrderRate, as `partitions-top`).

mod endpoints;
mod model;
mod receiver;
mod records;
mod replay;

use petstore_bench::client::Error;
use petstore_bench::processes::DynamoDbLocal;
use petstore_bench::results::{PARTITIONS_FILE, PARTITIONS_TABLE_FILE};
use petstore_bench::webhook_cost::deployed_schedule;
use petstore_lab_template::Template;
use serde_json::json;
use std::path::PathBuf;

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("partitions: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Error> {
    let root = std::env::current_dir()?;
    let target = petstore_bench::target_dir(&root);
    let out = target.join("bench");
    std::fs::create_dir_all(&out)?;
    let orders = std::env::var("BENCH_PARTITION_ORDERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    // The `petstore-local` whose layout is measured: an older build's gives
    // the "before" figures.
    let service = std::env::var_os("BENCH_PARTITION_SERVICE")
        .map(PathBuf::from)
        .unwrap_or_else(|| target.join("release/petstore-local"));
    let admin = target.join("debug/petstore-admin");
    for binary in [&service, &admin] {
        if !binary.is_file() {
            let missing = format!(
                "{} is missing: lab/bench/run.sh builds it",
                binary.display()
            );
            return Err(missing.into());
        }
    }
    let capacity = Capacity::of(&root)?;
    let order_rate = &capacity.order_rate;
    // As many retries as the deployed schedule has, each a second after
    // the last (as the bench's webhooks step runs it).
    let schedule = std::fs::read_to_string(root.join("shared/src/webhooks/schedule.rs"))
        .ok()
        .and_then(|source| deployed_schedule(&source))
        .map(|waits| vec!["1"; waits.len()].join(","));
    eprintln!("partitions: the model, {orders} orders of the mix, OrderRate {order_rate}");
    // The follower appends: the count of events must be this run's alone.
    let events = out.join("partitions-events.jsonl");
    let _ = std::fs::remove_file(&events);
    let mut dynamodb = DynamoDbLocal::start(&root).await?;
    let setup = replay::Setup {
        admin: &admin,
        service: &service,
        dynamodb: dynamodb.addr,
        log: &out.join("petstore-local-partitions.log"),
        events: &events,
        retry_schedule: schedule,
        webhooks: std::env::var("BENCH_PARTITION_WEBHOOKS").map_or(true, |v| v != "0"),
        orders,
        env: capacity
            .env()
            .into_iter()
            .chain(
                std::env::var("BENCH_PARTITION_ENV")
                    .unwrap_or_default()
                    .split(',')
                    .filter(|pair| pair.contains('='))
                    .map(str::to_string),
            )
            .collect(),
    };
    let measured = replay::measure(&setup).await;
    dynamodb.stop().await;
    let model = measured?;
    publish(&out, &model, &capacity)
}

/// Writes `model`'s records (with its OrderRate) and its table to `out`
/// (as `BENCH_PARTITIONS_STEM` names them, else `partitions.*`) and prints
/// the table.
fn publish(
    out: &std::path::Path,
    model: &records::PartitionModel,
    capacity: &Capacity,
) -> Result<(), Error> {
    let (order_rate, order_shards, pet_shards) = (
        &capacity.order_rate,
        capacity.row.order_list_shards,
        capacity.row.pet_list_shards,
    );
    let (file, table_file) = match std::env::var("BENCH_PARTITIONS_STEM") {
        Ok(stem) => (format!("{stem}.json"), format!("{stem}.txt")),
        Err(_) => (PARTITIONS_FILE.into(), PARTITIONS_TABLE_FILE.into()),
    };
    let mut records = serde_json::to_value(model)?;
    records["order_rate"] = json!(order_rate);
    std::fs::write(out.join(file), serde_json::to_vec_pretty(&records)?)?;
    let stated: f64 = order_rate.parse().unwrap_or(0.0);
    let verdict = |ceiling: Option<f64>| {
        let ceiling = ceiling.unwrap_or(0.0);
        let verdict = if ceiling >= stated {
            "at or above"
        } else {
            "BELOW"
        };
        format!("{ceiling:.0} orders/s, {verdict} the stated rate")
    };
    let table = format!(
        "OrderRate {order_rate} (order lists {order_shards} shards, pet lists {pet_shards}): \
         ceiling {}; webhooks' first limit {}\n{}",
        verdict(model.ceiling_orders_per_second),
        verdict(model.webhooks.ceiling_orders_per_second),
        records::table(model)
    );
    std::fs::write(out.join(table_file), &table)?;
    print!("{table}");
    Ok(())
}

/// The order rate the stack is built for (template.yaml's `OrderRate`, or
/// `BENCH_ORDER_RATE`: a rate, or `top` for the highest the parameter
/// allows) and the shard counts and delivery batches its `Capacity` row
/// sets, so that the ceiling printed is that value's (`BENCH_PARTITION_ENV`
/// still overrides them).
struct Capacity {
    order_rate: String,
    row: petstore_lab_template::Capacity,
}

impl Capacity {
    fn of(root: &std::path::Path) -> Result<Capacity, Error> {
        let asked = std::env::var("BENCH_ORDER_RATE").ok();
        Capacity::at(&Template::read(root)?, asked.as_deref())
    }

    /// At the rate `asked` (a rate, or `top`), else the template's.
    fn at(template: &Template, asked: Option<&str>) -> Result<Capacity, Error> {
        let order_rate = match asked {
            Some("top") => template.top_order_rate(),
            Some(rate) => Some(rate.to_string()),
            None => template.order_rate(),
        }
        .ok_or("template.yaml has no OrderRate")?;
        let row = template
            .capacity(&order_rate)
            .ok_or_else(|| format!("OrderRate {order_rate} is not in template.yaml's Capacity"))?;
        Ok(Capacity { order_rate, row })
    }

    /// The counts as the functions' variables; the deliveries mapping's
    /// `BatchSize` and window (seconds), which the local queue takes as
    /// Lambda's mapping does.
    fn env(&self) -> Vec<String> {
        let row = &self.row;
        vec![
            format!("ORDER_LIST_SHARDS={}", row.order_list_shards),
            format!("PET_LIST_SHARDS={}", row.pet_list_shards),
            format!("WEBHOOK_DELIVERY_SHARDS={}", row.delivery_shards),
            format!("WEBHOOK_DELIVERY_BATCH_SIZE={}", row.delivery_batch_size),
            format!(
                "WEBHOOK_DELIVERY_BATCH_WINDOW={}",
                row.delivery_batch_window
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::{Capacity, Template};

    #[test]
    fn the_rate_is_the_templates_the_one_asked_or_the_top() {
        let template = Template::parse(include_str!("../../../template.yaml")).unwrap();
        let default = Capacity::at(&template, None).unwrap();
        assert_eq!(default.order_rate, "1000");
        assert_eq!(
            default.env()[..3],
            [
                "ORDER_LIST_SHARDS=4",
                "PET_LIST_SHARDS=1",
                "WEBHOOK_DELIVERY_SHARDS=16"
            ]
        );
        let top = Capacity::at(&template, Some("top")).unwrap();
        assert_eq!(top.order_rate, "10000");
        assert_eq!(
            top.env()[3..],
            [
                "WEBHOOK_DELIVERY_BATCH_SIZE=100",
                "WEBHOOK_DELIVERY_BATCH_WINDOW=1"
            ]
        );
        assert_eq!(
            Capacity::at(&template, Some("2500"))
                .unwrap()
                .row
                .order_list_shards,
            8
        );
        let unknown = Capacity::at(&template, Some("42"))
            .err()
            .unwrap()
            .to_string();
        assert_eq!(unknown, "OrderRate 42 is not in template.yaml's Capacity");
    }
}
