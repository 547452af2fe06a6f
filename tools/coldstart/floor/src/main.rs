//! The floor: the least a function that reads DynamoDB once per request can
//! do, which the pet store's functions are measured against (issue 42): a
//! bare `lambda_http` function, one thread, the SDK on rustls with ring (as
//! `petstore::http_client`), its one TLS connection primed in init with the
//! request's own `GetItem`, and one `GetItem` per request.

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
use lambda_http::{run, service_fn, Body, Error, Request, Response};

async fn get_item(client: &Client, table: &str) -> Result<bool, Error> {
    let item = client
        .get_item()
        .table_name(table)
        .key("PK", AttributeValue::S("FLOOR".into()))
        .key("SK", AttributeValue::S("FLOOR".into()))
        .send()
        .await?;
    Ok(item.item.is_some())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https();
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(http)
        .load()
        .await;
    let client = Client::new(&config);
    let table = std::env::var("TABLE_NAME").unwrap_or_else(|_| "petstore".to_string());
    // Init primes the one connection (a failure is left to the request).
    let _ = get_item(&client, &table).await;
    run(service_fn(|_request: Request| {
        let (client, table) = (&client, &table);
        async move {
            let found = get_item(client, table).await?;
            let body = format!("{{\"found\":{found}}}");
            Ok::<_, Error>(Response::builder().status(200).body(Body::from(body))?)
        }
    }))
    .await
}
