//! The `store` Lambda function: wiring only. Configuration and the DynamoDB
//! client are built, their connections opened and the inventory served once,
//! per cold start, during init (see [`petstore::warm_up`]); every request goes
//! through the shared wrapper around this function's router, and its metrics
//! line goes to stdout with the dimension `Function` = `store`.
//!
//! One thread: Lambda gives a function of up to 1,769 MB less than one vCPU,
//! and a multi-threaded runtime spends it waking and parking its workers
//! (README, Performance).

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    petstore::telemetry::init();
    let app = petstore::App::from_env()
        .await?
        .with_metrics(petstore::metrics::Emitter::stdout("store"));
    let service = petstore::http::service(store::routes(), app.clone());
    petstore::warm_up::warm_up(&app, &service, "/store/inventory?limit=20").await;
    lambda_http::run(service).await
}
