//! Webhooks (contract section 9), the API's half: endpoints, their cap,
//! their secrets, ownership, and the deliveries a ping or retry makes,
//! through the real router on DynamoDB Local. The attempts themselves are
//! webhooks-delivery's tests.

mod deliveries;
mod endpoints;

use crate::helpers::TestApp;
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{json, Value};
use std::net::{IpAddr, Ipv4Addr};

/// A receiver's name, resolving (in the tests' resolver) to a public address.
pub const RECEIVER: &str = "https://receiver.example/hooks";

/// `app` with [`RECEIVER`]'s name resolvable.
pub fn resolving(app: &TestApp) {
    let public = IpAddr::V4(Ipv4Addr::new(93, 184, 215, 14));
    app.hooks
        .resolver
        .answer("receiver.example", vec![vec![public]]);
}

/// Registers an endpoint for `app`'s key; answers its record.
pub async fn register(app: &TestApp, body: Value) -> Value {
    resolving(app);
    let response = app.post("/webhooks", body).await;
    response.assert_status(201);
    response.json()
}

/// Registers an endpoint at [`RECEIVER`] for every type `app` may receive.
pub async fn register_default(app: &TestApp) -> u64 {
    register(app, json!({"url": RECEIVER})).await["id"]
        .as_u64()
        .expect("a webhook id")
}

/// Sets attributes of a stored item directly (what the delivery side or
/// the passing of time would have written).
pub async fn set_attributes(
    app: &TestApp,
    pk: String,
    sk: String,
    values: &[(&str, AttributeValue)],
) {
    let mut update = app
        .app
        .db
        .client()
        .update_item()
        .table_name(&app.app.config.table_name)
        .key("PK", AttributeValue::S(pk))
        .key("SK", AttributeValue::S(sk));
    let mut sets = Vec::new();
    for (i, (name, value)) in values.iter().enumerate() {
        sets.push(format!("#a{i} = :v{i}"));
        update = update
            .expression_attribute_names(format!("#a{i}"), *name)
            .expression_attribute_values(format!(":v{i}"), value.clone());
    }
    update
        .update_expression(format!("SET {}", sets.join(", ")))
        .send()
        .await
        .expect("DynamoDB Local takes the update");
}
