//! The `webhooks` Lambda function: wiring only. Configuration, the DynamoDB
//! and SQS clients are built, the connection opened and one list served,
//! once per cold start, during init (see [`petstore::warm_up`]).
//!
//! One function serves three event sources: API Gateway (the HTTP API of
//! contract section 9, through the shared wrapper around this function's
//! router, its metrics line on stdout with `Function` = `webhooks`), and the
//! SQS queues: the deliveries queue's attempts, and the events queue's
//! fan-out, which only drains the release before's queue (the `events`
//! function fans out now; `petstore::webhooks::deliver`). An invocation's
//! payload says which: an SQS batch has `Records[0].eventSource == "aws:sqs"`.

use lambda_http::lambda_runtime::{self, service_fn, LambdaEvent};
use lambda_http::request::LambdaRequest;
use lambda_http::{Adapter, Service};
use petstore::webhooks::deliver::lambda::{is_sqs_event, QueueSide, SetupError};
use petstore::webhooks::queue::{DeliveryQueue, HeldQueue};
use serde_json::Value;
use std::sync::Arc;
use webhooks::Webhooks;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    // The connection the first request uses is opened first, while the
    // rest of init runs (petstore::warm_up), as the other API functions do.
    let app = petstore::App::from_function_env()?;
    let warm_up = petstore::warm_up::start(&app).await;
    petstore::telemetry::init();
    let app = app.with_metrics(petstore::metrics::Emitter::stdout("webhooks"));
    let aws = petstore::aws_env::sdk_config(petstore::http_client())?;
    // A local server's setting, refused where Lambda runs the function.
    petstore::webhooks::address::UrlPolicy::refuse_in_lambda()?;
    // Endpoint secrets are sealed and opened with the stack's KMS key (the
    // template's WEBHOOK_SECRETS_KEY); off Lambda, a local key.
    let keyring = petstore::webhooks::secrets::Keyring::from_env(&aws)?;
    petstore::webhooks::secrets::install(keyring);
    // Without `WEBHOOK_QUEUE_URL` (only `make run-lambda`: the template
    // always sets it) the binary serves the HTTP API alone, and a ping or
    // retry is held in process; delivery is `make run`'s local runner's.
    let queue_side = match QueueSide::from_env(&aws, app.db.client().clone(), &app.config) {
        Ok(side) => Some(Arc::new(side)),
        Err(SetupError::NoQueueUrl) => None,
        Err(other) => return Err(other.into()),
    };
    let deliveries: Arc<dyn DeliveryQueue> = match &queue_side {
        Some(side) => Arc::new(side.deliveries.clone()),
        None => Arc::new(HeldQueue::default()),
    };
    let service = petstore::http::service(webhooks::routes(Webhooks::from_env(deliveries)), app);
    // Its most frequent read: a customer's own endpoints (one index query).
    warm_up.finish(&service, "/webhooks?limit=20").await;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        // The router is an `Arc` inside: an adapter per invocation is a clone.
        let (queue_side, http) = (queue_side.clone(), Adapter::from(service.clone()));
        async move { dispatch(event, &queue_side, http).await }
    }))
    .await
}

/// An SQS batch to the queue handlers, anything else to the HTTP service.
async fn dispatch<S>(
    event: LambdaEvent<Value>,
    queue_side: &Option<Arc<QueueSide>>,
    mut http: S,
) -> Result<Value, lambda_http::Error>
where
    S: Service<LambdaEvent<LambdaRequest>>,
    S::Response: serde::Serialize,
    S::Error: std::fmt::Debug,
{
    let (payload, context) = event.into_parts();
    if is_sqs_event(&payload) {
        let side = queue_side
            .as_ref()
            .ok_or("an SQS batch, but WEBHOOK_QUEUE_URL is not set")?;
        let batch = serde_json::from_value(payload)?;
        return Ok(serde_json::to_value(side.handle(batch).await)?);
    }
    let request: LambdaRequest = serde_json::from_value(payload)?;
    std::future::poll_fn(|cx| http.poll_ready(cx))
        .await
        .map_err(|error| format!("the HTTP service is not ready: {error:?}"))?;
    let response = http
        .call(LambdaEvent::new(request, context))
        .await
        .map_err(|error| format!("the HTTP service failed: {error:?}"))?;
    Ok(serde_json::to_value(response)?)
}
