//! The `docs` Lambda function: wiring only. It serves the API reference
//! page's static files and touches no table, so it builds no DynamoDB client.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_http::run(docs::routes()).await
}
