//! The `events` Lambda function: wiring only. The EventBridge client is built
//! once per cold start; every batch of the data table's stream goes through
//! [`events::handler::handle`] to the bus named by `EVENT_BUS_NAME`.

// The handler's future nests the SDK's call inside the AWS call recorder's
// task-local scope (petstore::aws_calls): one level deeper than rustc's
// default limit lets it lay out.
#![recursion_limit = "256"]

use events::EventBridgePublisher;
use lambda_runtime::{service_fn, LambdaEvent};

// One thread: Lambda gives less than one vCPU below 1,769 MB (README, Performance).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_runtime::Error> {
    petstore::telemetry::init();
    let bus = std::env::var("EVENT_BUS_NAME").map_err(|_| "EVENT_BUS_NAME is not set")?;
    // The same TLS stack as the data functions (rustls on ring: README, Performance).
    let aws = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(petstore::http_client())
        .load()
        .await;
    let publisher = EventBridgePublisher::from_config(&aws, bus);
    let publisher = &publisher;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<_>| async move {
        events::handler::handle(event, publisher).await
    }))
    .await
}
