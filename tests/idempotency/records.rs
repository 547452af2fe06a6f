//! The records themselves: in the data table only for keyed changes, expired
//! by TTL, and treated as absent once expired.

use super::{assert_replay_of, send_keyed, stock, stocked_pet};
use crate::helpers::TestApp;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use http::Method;
use petstore::db::idempotency::record_key;
use petstore::records::{Id, IdempotencyKey};
use serde_json::json;

/// Writes `owner`'s record for `key` directly, as an old request left it.
async fn plant_record(app: &TestApp, owner: u64, key: &str, expires_at: i64) {
    let (Some(owner), Ok(key)) = (Id::new(owner), IdempotencyKey::parse(key.as_bytes())) else {
        panic!("a valid owner and key");
    };
    let mut item = record_key(owner, &key);
    let fields = [
        ("fingerprint", AttributeValue::S("0".repeat(64))),
        (
            "response",
            AttributeValue::B(Blob::new(br#"{"status":204}"#)),
        ),
        ("expiresAt", AttributeValue::N(expires_at.to_string())),
    ];
    item.extend(fields.map(|(name, value)| (name.to_string(), value)));
    app.app
        .db
        .client()
        .put_item()
        .table_name(app.app.db.table())
        .set_item(Some(item))
        .send()
        .await
        .expect("DynamoDB Local stores the item");
}

#[tokio::test]
async fn an_expired_record_is_absent_though_ttl_has_not_deleted_it() {
    // Given a record of another request under each of two keys, one expired
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 5).await;
    let now = chrono::Utc::now().timestamp();
    plant_record(&staff, staff.key_id, "expired", now - 1).await;
    plant_record(&staff, staff.key_id, "live", now + 60).await;
    let body = json!({ "petId": pet });

    // When each key is sent with an order
    let live = send_keyed(&staff, Method::POST, "/store/orders", Some(&body), "live").await;
    let fresh = send_keyed(
        &staff,
        Method::POST,
        "/store/orders",
        Some(&body),
        "expired",
    )
    .await;

    // Then the live one belongs to another request, the expired one to nobody
    live.assert_error(422, "IDEMPOTENCY_KEY_REUSED");
    fresh.assert_status(201);
    let again = send_keyed(
        &staff,
        Method::POST,
        "/store/orders",
        Some(&body),
        "expired",
    )
    .await;
    assert_replay_of(&again, &fresh);
    assert_eq!(stock(&staff, pet).await, 4);
}

#[tokio::test]
async fn only_a_change_sent_with_a_key_writes_a_record() {
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 5).await;
    let records = || async {
        let scan = staff
            .app
            .db
            .client()
            .scan()
            .table_name(staff.app.db.table())
            .filter_expression("begins_with(PK, :record)")
            .expression_attribute_values(":record", AttributeValue::S("IDEMPOTENCY#".into()))
            .send()
            .await
            .expect("DynamoDB Local scans");
        scan.items().len()
    };
    staff
        .post("/store/orders", json!({"petId": pet}))
        .await
        .assert_status(201);
    assert_eq!(records().await, 0);
    send_keyed(
        &staff,
        Method::POST,
        "/store/orders",
        Some(&json!({"petId": pet})),
        "k",
    )
    .await
    .assert_status(201);
    assert_eq!(records().await, 1);
}

#[tokio::test]
async fn records_expire_by_ttl_in_the_template_and_locally() {
    let path = crate::helpers::repo_root().join("template.yaml");
    let text = std::fs::read_to_string(path).expect("template.yaml is readable");
    let template: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect("valid YAML");
    let ttl = &template["Resources"]["DataTable"]["Properties"]["TimeToLiveSpecification"];
    assert_eq!(ttl["AttributeName"].as_str(), Some("expiresAt"));
    assert_eq!(ttl["Enabled"].as_bool(), Some(true));

    let app = TestApp::spawn().await;
    let described = app
        .app
        .db
        .client()
        .describe_time_to_live()
        .table_name(app.app.db.table())
        .send()
        .await
        .expect("DynamoDB Local describes TTL");
    let local = described.time_to_live_description();
    assert_eq!(local.and_then(|d| d.attribute_name()), Some("expiresAt"));
}
