//! The `pets` Lambda function: wiring only. Configuration and the DynamoDB
//! client are built, and its connection opened, once per cold start, during
//! init (see [`petstore::App::warmed_up`]); every request goes through the
//! shared wrapper around this function's router, and its metrics line goes to
//! stdout with the dimension `Function` = `pets`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    petstore::telemetry::init();
    let app = petstore::App::from_env()
        .await?
        .warmed_up()
        .await
        .with_metrics(petstore::metrics::Emitter::stdout("pets"));
    lambda_http::run(petstore::http::service(pets::routes(), app)).await
}
