//! The floor: the least a function that reads DynamoDB once per request can
//! do, which the pet store's functions are measured against (issue 42): a
//! bare `lambda_http` function, one thread, the SDK on rustls with ring (as
//! `petstore::http_client`), its one TLS connection primed in init with the
//! request's own call, and one call per request: a `GetItem`, or with
//! `FLOOR_CALL=update` an `UpdateItem` adding one to a count (the least a
//! function that must write its count does: the `floor-write` row).

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

/// Adds one to the floor's count, as a counter is written.
async fn update_item(client: &Client, table: &str) -> Result<bool, Error> {
    let item = client
        .update_item()
        .table_name(table)
        .key("PK", AttributeValue::S("FLOOR#COUNT".into()))
        .key("SK", AttributeValue::S("FLOOR#COUNT".into()))
        .update_expression("ADD #n :one")
        .expression_attribute_names("#n", "n")
        .expression_attribute_values(":one", AttributeValue::N("1".into()))
        .return_values(aws_sdk_dynamodb::types::ReturnValue::UpdatedNew)
        .send()
        .await?;
    Ok(item.attributes.is_some())
}

async fn call(client: &Client, table: &str, update: bool) -> Result<bool, Error> {
    if update {
        update_item(client, table).await
    } else {
        get_item(client, table).await
    }
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
    let update = std::env::var("FLOOR_CALL").is_ok_and(|call| call == "update");
    // Init primes the one connection (a failure is left to the request).
    let _ = call(&client, &table, update).await;
    run(service_fn(|_request: Request| {
        let (client, table) = (&client, &table);
        async move {
            let found = call(client, table, update).await?;
            let body = format!("{{\"found\":{found}}}");
            Ok::<_, Error>(Response::builder().status(200).body(Body::from(body))?)
        }
    }))
    .await
}
