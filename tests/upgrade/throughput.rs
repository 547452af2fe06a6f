//! The backfills' throughput on DynamoDB Local, for docs/upgrade.md: not a
//! check (a shared machine's figures vary), so ignored by `make test`; run
//! `cargo test --test api upgrade::throughput -- --ignored --nocapture`.

use super::{create_new_indexes, fixture_items, old_table, options, run_backfills};
use crate::data::check::check;
use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use futures::StreamExt;
use std::time::Instant;

/// Old open orders added to the fixture's table: enough for a steady rate.
const ORDERS: u64 = 10_000;

#[tokio::test]
#[ignore = "a measurement, not a check: run it by name with --ignored --nocapture"]
async fn throughput() {
    let (staff, _) = old_table().await;
    let template = fixture_items()
        .into_iter()
        .find(|i| {
            i.get("complete") == Some(&AttributeValue::Bool(false)) && i.contains_key("ownerId")
        })
        .expect("an old open order");
    let (client, table) = (
        staff.app.db.client().clone(),
        staff.app.db.table().to_string(),
    );
    let started = Instant::now();
    let batches = (0..ORDERS).collect::<Vec<_>>();
    let loads = batches.chunks(25).map(|chunk| {
        let requests: Vec<WriteRequest> = chunk
            .iter()
            .map(|i| {
                let id = 375_000_000_000_000 + i;
                let mut item = template.clone();
                item.insert("PK".into(), AttributeValue::S(format!("ORDER#{id}")));
                item.insert("id".into(), AttributeValue::N(id.to_string()));
                // A thousand owners: each hold count is its own item, as in a
                // store with many customers (one owner's count would be a
                // hot item every transaction waits on).
                let owner = 1_000_000 + i % 1_000;
                item.insert("ownerId".into(), AttributeValue::N(owner.to_string()));
                let owned = AttributeValue::S(format!("ORDER#OWNER#{owner}"));
                item.insert("GSI4PK".into(), owned);
                let put = PutRequest::builder().set_item(Some(item)).build();
                WriteRequest::builder()
                    .put_request(put.expect("a put"))
                    .build()
            })
            .collect();
        let (client, table) = (client.clone(), table.clone());
        async move {
            client
                .batch_write_item()
                .request_items(table, requests)
                .send()
                .await
                .expect("a batch is written")
        }
    });
    futures::stream::iter(loads)
        .buffer_unordered(8)
        .collect::<Vec<_>>()
        .await;
    let load = started.elapsed().as_secs_f64();
    let started = Instant::now();
    create_new_indexes(&staff).await;
    let indexes = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let outcomes = run_backfills(&staff, &options(1_000_000, 4, None)).await;
    let backfill = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let report = check(&staff).await;
    let checked = started.elapsed().as_secs_f64();
    eprintln!("load {ORDERS} orders: {load:.1} s; four indexes: {indexes:.1} s; data check: {checked:.1} s ({} items, sound: {})", report.items, report.sound());
    for o in &outcomes {
        eprintln!(
            "{}: {:.1} s, {} scanned ({:.0} items/s), {} changed ({:.0}/s)",
            o.backfill,
            o.seconds,
            o.scanned,
            o.scanned as f64 / o.seconds,
            o.changed,
            o.changed as f64 / o.seconds
        );
    }
    eprintln!("backfills: {backfill:.1} s");
    // The copies are not whole orders (their pets do not count them, their
    // shards are the template's): only their holds are checked.
    let holds = report
        .findings
        .iter()
        .find(|f| f.invariant == "holds-counted");
    assert!(holds.is_none(), "{holds:#?}");
}
