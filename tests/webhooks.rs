//! Webhooks (contract section 9), the API's half: endpoints, their cap,
//! their secrets, ownership, and the deliveries a ping or retry makes,
//! through the real router on DynamoDB Local. The attempts themselves are
//! webhooks-delivery's tests.

mod deliveries;
mod endpoints;
mod list_calls;
mod receivers;
mod staff;

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

/// Sets attributes of the delivery of `event_id` to `webhook_id`.
pub async fn set_delivery_attributes(
    app: &TestApp,
    webhook_id: u64,
    event_id: &str,
    values: &[(&str, AttributeValue)],
) {
    let key = crate::webhooks_delivery::delivery_key(app, webhook_id, event_id).await;
    let text = |name: &str| match key.get(name) {
        Some(AttributeValue::S(text)) => text.clone(),
        _ => String::new(),
    };
    set_attributes(app, text("PK"), text("SK"), values).await;
}

/// An endpoint and a delivery with every optional field set, each read back
/// (for `responses`: every documented optional property is sent).
pub async fn every_kind_of_webhook_record(staff: &TestApp) {
    let described = json!({"url": RECEIVER, "description": "Ops"});
    let id = register(staff, described).await["id"]
        .as_u64()
        .expect("a webhook id");
    let (pk, endpoint) = (format!("WEBHOOK#{id}"), "ENDPOINT".to_string());
    set_attributes(
        staff,
        pk.clone(),
        endpoint,
        &[
            ("enabled", AttributeValue::Bool(false)),
            (
                "disabledReason",
                AttributeValue::S("the receiver answered 410".into()),
            ),
            (
                "failingSince",
                AttributeValue::S("2026-01-01T00:00:00.000Z".into()),
            ),
        ],
    )
    .await;
    staff
        .get(&format!("/webhooks/{id}"))
        .await
        .assert_status(200);
    let ping = staff.post(&format!("/webhooks/{id}/ping"), json!({})).await;
    ping.assert_status(202);
    let event_id = ping.json()["eventId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let attempt = |fields: &[(&str, AttributeValue)]| {
        let mut attempt = std::collections::HashMap::from([
            (
                "at".to_string(),
                AttributeValue::S("2026-01-01T00:00:05.000Z".into()),
            ),
            ("durationMs".to_string(), AttributeValue::N("12".into())),
        ]);
        attempt.extend(fields.iter().map(|(k, v)| (k.to_string(), v.clone())));
        AttributeValue::M(attempt)
    };
    let attempts = AttributeValue::L(vec![
        attempt(&[("error", AttributeValue::S("timeout".into()))]),
        attempt(&[
            ("statusCode", AttributeValue::N("503".into())),
            ("manual", AttributeValue::Bool(true)),
        ]),
    ]);
    set_delivery_attributes(staff, id, &event_id, &[("attempts", attempts)]).await;
    let listed = staff.get(&format!("/webhooks/{id}/deliveries")).await;
    listed.assert_status(200);
    staff.hooks.queue.take();
}

/// Each webhook record's schema in openapi.yaml lists exactly its fields.
#[test]
fn the_webhook_schemas_list_exactly_their_records_fields() {
    use petstore::db::record_fields;
    use petstore::webhooks::records::{WebhookAttempt, WebhookDelivery, WebhookEndpoint};
    use std::collections::BTreeSet;
    let document =
        serde_json::to_value(crate::deploy::read_yaml("openapi.yaml")).unwrap_or_default();
    let records = [
        ("WebhookEndpoint", record_fields::<WebhookEndpoint>()),
        ("WebhookDelivery", record_fields::<WebhookDelivery>()),
        ("WebhookAttempt", record_fields::<WebhookAttempt>()),
    ];
    for (schema, fields) in records {
        let fields: BTreeSet<String> = fields.iter().map(|f| f.to_string()).collect();
        let documented: BTreeSet<String> = document["components"]["schemas"][schema]["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, _)| name.clone())
            .collect();
        assert!(!fields.is_empty(), "{schema}: its fields were read");
        assert_eq!(
            documented, fields,
            "openapi.yaml's {schema} (left) against the record (right)"
        );
    }
}
