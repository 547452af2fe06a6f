//! The once-per-process work of the DynamoDB client, done during Lambda's
//! init, which runs at full CPU, rather than in the first invocation, which
//! runs on the memory size's share of one CPU (128/1769 of a vCPU at 128 MB,
//! so every millisecond of CPU there is 14 of waiting).
//!
//! The first request of a process otherwise pays, inside the throttled
//! invocation: the first use of each DynamoDB operation it makes (the
//! operation's serializer and deserializer, its runtime plugins, signing,
//! each page of that code faulted in), and a TLS connection for each call it
//! makes at once (a list reads its shards in parallel: 4 for pets). So the
//! warm-up makes, all at once, one call of each operation a request makes,
//! on keys no record has, and a few more reads, so that the pool holds as
//! many open connections as a request uses at once:
//!
//! - `GetItem` of the warm-up key (the API key look-up, single reads);
//! - `Query` of a partition no record is in (the lists' shard queries);
//! - `BatchGetItem` of the warm-up key (the inventory's stock, the lists' items);
//! - `UpdateItem` on the rate-limit table, conditional on an attribute the
//!   warm-up key's item cannot have since no such item exists: the condition
//!   fails, nothing is written, and nothing is counted against any key or
//!   address. DynamoDB still charges one write unit for a failed conditional
//!   write: one write unit per cold start.
//!
//! None of these writes a record, emits a metrics line (they do not pass
//! through the HTTP service), or logs anything but one warning should
//! DynamoDB fail or not answer in [`WARM_UP_LIMIT`]: the first request would
//! meet the same failure and answer it properly.

use crate::App;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use aws_sdk_dynamodb::Client;
use futures::future::BoxFuture;
use futures::FutureExt;
use std::collections::HashMap;
use std::time::Duration;

/// The key of every warm-up call: no record of ours has it.
pub const WARM_UP_KEY: &str = "WARMUP";

/// Lambda's init phase has 10 s in all; a DynamoDB that does not answer in
/// this long is left to the first request.
pub const WARM_UP_LIMIT: Duration = Duration::from_secs(2);

/// How many calls are made at once, so that as many pooled connections are
/// open afterwards: the most one request makes at once (a pets list's 4
/// shard queries, while the rate limiter counts), and one to spare.
const CONNECTIONS: usize = 6;

/// One failed warm-up call, for the warning.
type Failure = Box<dyn std::error::Error + Send + Sync>;

/// Makes the warm-up calls (see the module's documentation).
pub async fn warm_up(app: &App) {
    let calls = futures::future::join_all(calls(app));
    match tokio::time::timeout(WARM_UP_LIMIT, calls).await {
        Ok(results) => {
            if let Some(Err(error)) = results.into_iter().find(Result::is_err) {
                tracing::warn!(error = %error, "the warm-up failed");
            }
        }
        Err(_) => tracing::warn!("the warm-up took over {WARM_UP_LIMIT:?}"),
    }
}

fn calls(app: &App) -> Vec<BoxFuture<'static, Result<(), Failure>>> {
    let client = app.db.client().clone();
    let table = app.db.table().to_string();
    let counters = app.config.rate_limit_table_name.clone();
    let mut calls = vec![
        get_item(client.clone(), table.clone()).boxed(),
        query(client.clone(), table.clone()).boxed(),
        batch_get_item(client.clone(), table.clone()).boxed(),
        failed_update(client.clone(), counters).boxed(),
    ];
    while calls.len() < CONNECTIONS {
        calls.push(get_item(client.clone(), table.clone()).boxed());
    }
    calls
}

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_string())
}

fn key() -> HashMap<String, AttributeValue> {
    HashMap::from([("PK".into(), s(WARM_UP_KEY)), ("SK".into(), s(WARM_UP_KEY))])
}

async fn get_item(client: Client, table: String) -> Result<(), Failure> {
    client
        .get_item()
        .table_name(table)
        .set_key(Some(key()))
        .consistent_read(true)
        .send()
        .await?;
    Ok(())
}

async fn query(client: Client, table: String) -> Result<(), Failure> {
    client
        .query()
        .table_name(table)
        .key_condition_expression("PK = :pk")
        .expression_attribute_values(":pk", s(WARM_UP_KEY))
        .limit(1)
        .send()
        .await?;
    Ok(())
}

async fn batch_get_item(client: Client, table: String) -> Result<(), Failure> {
    let keys = KeysAndAttributes::builder().keys(key()).build()?;
    client
        .batch_get_item()
        .request_items(table, keys)
        .send()
        .await?;
    Ok(())
}

/// An update whose condition cannot hold: the item does not exist.
async fn failed_update(client: Client, counters: String) -> Result<(), Failure> {
    let update = client
        .update_item()
        .table_name(counters)
        .key("PK", s(WARM_UP_KEY))
        .update_expression("SET warm_up = :w")
        .condition_expression("attribute_exists(PK)")
        .expression_attribute_values(":w", s(WARM_UP_KEY))
        .send()
        .await;
    match update {
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
        {
            Ok(())
        }
        Err(e) => Err(e.into()),
        Ok(_) => Err("the warm-up update found an item it never writes".into()),
    }
}
