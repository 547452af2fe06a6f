//! The `events` Lambda function: wiring only. The EventBridge, DynamoDB and
//! SQS clients are built once per cold start; every batch of the data
//! table's stream goes through [`events::handler::handle`] to
//! the bus named by `EVENT_BUS_NAME` and to the webhooks' fan-out (delivery
//! items in the table, messages on `WEBHOOK_QUEUE_URL`), and the hold
//! sweep's schedule through [`events::holds::sweep`].

// The handler's future nests the SDK's call inside the AWS call recorder's
// task-local scope (petstore::aws_calls): one level deeper than rustc's
// default limit lets it lay out.
#![recursion_limit = "256"]

use events::{EventBridgePublisher, WithWebhooks};
use lambda_runtime::{service_fn, LambdaEvent};
use petstore::webhooks::deliver::lambda::QueueSide;
use serde_json::Value;
use std::sync::Arc;

// One thread: Lambda gives less than one vCPU below 1,769 MB
// (docs/performance.md, "Cold start as Lambda runs it").
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_runtime::Error> {
    petstore::telemetry::init();
    let bus = std::env::var("EVENT_BUS_NAME").map_err(|_| "EVENT_BUS_NAME is not set")?;
    let config = petstore::config::Config::from_env()?;
    // The same TLS stack as the data functions (rustls on ring:
    // docs/performance.md, "Cold start as Lambda runs it").
    let aws = petstore::aws_env::sdk_config(petstore::http_client())?;
    // The data functions' DynamoDB client settings (petstore::sdk_config).
    let client = petstore::sdk_config::lean(aws_sdk_dynamodb::config::Builder::from(&aws));
    let client = aws_sdk_dynamodb::Client::from_conf(client.build());
    // The webhooks' fan-out: the same deliverer as the webhooks function's
    // (WEBHOOK_QUEUE_URL, the key cache's bounds); no call until an event
    // comes, then the subscriptions' lists are held for the key cache's TTL.
    let webhooks = QueueSide::from_env(&aws, client.clone(), &config)?;
    let publisher = EventBridgePublisher::from_config(&aws, bus);
    let publisher = WithWebhooks::new(publisher, Arc::new(webhooks.deliverer));
    let publisher = &publisher;
    // The hold sweep's table: no call is made until a schedule invokes it.
    let db = petstore::db::Db::new(client, config.table_name)
        .with_shards(config.shards)
        .with_hold(config.hold)
        .with_layout(config.data_layout);
    let db = &db;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        let (payload, context) = event.into_parts();
        if events::holds::is_sweep(&payload) {
            let swept = events::holds::sweep(db, chrono::Utc::now()).await?;
            return Ok::<Value, lambda_runtime::Error>(serde_json::json!({
                "examined": swept.examined,
                "lapsed": swept.lapsed,
            }));
        }
        let batch = LambdaEvent::new(serde_json::from_value(payload)?, context);
        let response = events::handler::handle(batch, publisher).await?;
        Ok(serde_json::to_value(response)?)
    }))
    .await
}
