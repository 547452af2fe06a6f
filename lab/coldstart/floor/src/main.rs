//! The floor: the least a function that reads DynamoDB once per request can
//! do, which the pet store's functions are measured against (issue 42): a
//! bare `lambda_http` function, one thread, the SDK on rustls with ring (as
//! `petstore::http_client`), its one TLS connection primed in init with the
//! request's own call, and one call per request: a `GetItem`, or with
//! `FLOOR_CALL=update` an `UpdateItem` adding one to a count (the least a
//! function that must write its count does: the `floor-write` row).
//!
//! With `FLOOR_CALL=keyed` it makes the calls contract section 4 leaves a
//! keyed `GET /pets?limit=20`, no more: the first request looks its key up
//! (a `GetItem`), then counts (the `UpdateItem`) beside the page's `Query`;
//! a warm request, its key known, makes the count and the query side by
//! side. Init opens the two connections those need, as the pet store's
//! does. So the `floor-keyed` row is the bare SDK doing a keyed page's
//! DynamoDB work: what is left over it is the pet store's own.

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

/// The first page of the pets list, as the pets function queries it.
async fn page(client: &Client, table: &str) -> Result<bool, Error> {
    let out = client
        .query()
        .table_name(table)
        .index_name("GSI1v2")
        .key_condition_expression("#pk = :pk")
        .expression_attribute_names("#pk", "GSI1PK")
        .expression_attribute_values(":pk", AttributeValue::S("PET#0".into()))
        .limit(20)
        .send()
        .await?;
    Ok(out.count > 0)
}

/// What the floor does for one request.
#[derive(Clone, Copy)]
enum Call {
    Get,
    Update,
    /// A keyed page: the key's look-up first (when `first`), then the count
    /// beside the page's query.
    Keyed {
        first: bool,
    },
}

async fn call(client: &Client, table: &str, call: Call) -> Result<bool, Error> {
    match call {
        Call::Get => get_item(client, table).await,
        Call::Update => update_item(client, table).await,
        Call::Keyed { first } => {
            if first {
                get_item(client, table).await?;
            }
            let (count, page) = tokio::join!(update_item(client, table), page(client, table));
            count?;
            page
        }
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
    let kind = match std::env::var("FLOOR_CALL").as_deref() {
        Ok("update") => Call::Update,
        Ok("keyed") => Call::Keyed { first: true },
        _ => Call::Get,
    };
    // Init primes the connections (a failure is left to the request): the
    // request's one call, or for a keyed page two reads at once.
    if matches!(kind, Call::Keyed { .. }) {
        let _ = tokio::join!(get_item(&client, &table), get_item(&client, &table));
    } else {
        let _ = call(&client, &table, kind).await;
    }
    // Only the process's first request looks its key up.
    let first = std::cell::Cell::new(true);
    run(service_fn(|_request: Request| {
        let (client, table) = (&client, &table);
        let kind = match kind {
            Call::Keyed { .. } => Call::Keyed {
                first: first.replace(false),
            },
            other => other,
        };
        async move {
            let found = call(client, table, kind).await?;
            let body = format!("{{\"found\":{found}}}");
            Ok::<_, Error>(Response::builder().status(200).body(Body::from(body))?)
        }
    }))
    .await
}
