//! The `pets` Lambda function: wiring only. Configuration and the DynamoDB
//! client are built, its one connection opened and one list served, once per
//! cold start, during init (see [`petstore::warm_up`]); every request goes
//! through the shared wrapper around this function's router, and its metrics
//! line goes to stdout with the dimension `Function` = `pets`.
//!
//! One thread: Lambda gives a function of up to 1,769 MB less than one vCPU,
//! and a multi-threaded runtime spends it waking and parking its workers
//! (docs/performance.md, "Cold start as Lambda runs it").

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    // The connection the first request uses is opened first, while the
    // rest of init runs (petstore::warm_up).
    let app = petstore::App::from_function_env()?;
    let warm_up = petstore::warm_up::start(&app).await;
    petstore::telemetry::init();
    let app = app.with_metrics(petstore::metrics::Emitter::stdout("pets"));
    let service = petstore::http::service(pets::routes(), app.clone());
    warm_up.finish(&service, "/pets?limit=20").await;
    lambda_http::run(service).await
}
