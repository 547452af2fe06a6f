//! The `store` Lambda function: wiring only. Configuration and the DynamoDB
//! client are built once per cold start; every request goes through the
//! shared wrapper around this function's router, and its metrics line goes to
//! stdout with the dimension `Function` = `store`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    petstore::telemetry::init();
    let app = petstore::App::from_env()
        .await?
        .with_metrics(petstore::metrics::Emitter::stdout("store"));
    lambda_http::run(petstore::http::service(store::routes(), app)).await
}
