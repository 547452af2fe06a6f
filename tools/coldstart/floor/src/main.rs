//! The floor: a function as AWS's Rust examples write it, one GetItem per
//! request. Everything is the crates' defaults, on purpose.

use aws_sdk_dynamodb::types::AttributeValue;
use lambda_http::{run, service_fn, Body, Error, Request, Response};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let client = aws_sdk_dynamodb::Client::new(&config);
    let table = std::env::var("TABLE_NAME").unwrap_or_else(|_| "petstore".to_string());
    run(service_fn(|_request: Request| {
        let (client, table) = (&client, &table);
        async move {
            let item = client
                .get_item()
                .table_name(table)
                .key("PK", AttributeValue::S("FLOOR".into()))
                .key("SK", AttributeValue::S("FLOOR".into()))
                .send()
                .await?;
            let body = format!("{{\"found\":{}}}", item.item.is_some());
            Ok::<_, Error>(Response::builder().status(200).body(Body::from(body))?)
        }
    }))
    .await
}
