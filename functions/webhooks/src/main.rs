//! The `webhooks` Lambda function: wiring only. Configuration and the
//! DynamoDB client are built once per cold start; every HTTP request goes
//! through the shared wrapper around this function's router, and its metrics
//! line goes to stdout with the dimension `Function` = `webhooks`.
//!
//! The same function serves the two SQS event sources (the events queue's
//! fan-out and the deliveries queue's attempts, webhooks-delivery): `main`
//! tells an SQS event from an HTTP one by its shape
//! (`Records[0].eventSource == "aws:sqs"`). Until that branch is merged, the
//! queue handed to the routes only holds what a ping or retry sends.

use std::sync::Arc;
use webhooks::Webhooks;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    let app = petstore::App::from_env().await?;
    petstore::telemetry::init();
    let app = app.with_metrics(petstore::metrics::Emitter::stdout("webhooks"));
    // The SQS dispatch goes here (webhooks-delivery): the deliveries queue
    // (`WEBHOOK_QUEUE_URL`) replaces this held one, and an SQS event is
    // handed to its handlers instead of the HTTP service.
    let queue = Arc::new(petstore::webhooks::queue::HeldQueue::default());
    let service = petstore::http::service(webhooks::routes(Webhooks::from_env(queue)), app);
    lambda_http::run(service).await
}
