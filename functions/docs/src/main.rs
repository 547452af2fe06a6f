//! The `docs` Lambda function: wiring only. It serves the API reference
//! page's static files and touches no table, so it builds no DynamoDB client.

// One thread: Lambda gives less than one vCPU below 1,769 MB
// (docs/performance.md, "Cold start as Lambda runs it").
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_http::run(docs::routes()).await
}
