//! Every optional property `openapi.yaml` documents in an answer is sent:
//! the closed-schema check (`helpers/contract.rs`) fails a property the code
//! sends and the document lacks, but a documented property the code never
//! sends passes it. So one flow here makes every record with every optional
//! field set, and fails naming each documented optional property none of its
//! answers carried: a property added to `openapi.yaml` must be set here too,
//! and one the code stops sending fails here.
//!
//! And each record's schema in both documents lists exactly the record's
//! fields, so a field added to a record and left out of either document
//! fails even before any flow sets it.
//!
//! The flow collects its own answers only (`helpers/carried.rs`), so the
//! test passes or fails alike whatever else runs beside it or is filtered.

use crate::helpers::carried::collecting;
use crate::helpers::contract::optional_response_properties;
use crate::helpers::TestApp;
use chrono::{Duration, Utc};
use petstore::db::record_fields;
use petstore::records::{Category, Order, Pet};
use serde_json::json;
use std::collections::BTreeSet;

/// A category, a pet in stock and an order, each with every optional field
/// set, each read back.
async fn every_kind_of_record(staff: &TestApp) {
    let described = json!({"name": "Dogs", "description": "Loyal"});
    let category = staff.post("/categories", described).await;
    category.assert_status(201);
    let category = category.id();
    staff
        .get(&format!("/categories/{category}"))
        .await
        .assert_status(200);
    let pet = staff.create_pet("Rex", category, "available").await;
    staff.get(&format!("/pets/{pet}")).await.assert_status(200);
    let stock = json!({"quantity": 3});
    let inventory = format!("/store/inventory/{pet}");
    staff.put(&inventory, stock).await.assert_status(200);
    let ship_date = (Utc::now() + Duration::days(1)).to_rfc3339();
    let dated = json!({"petId": pet, "shipDate": ship_date});
    let order = staff.post("/store/orders", dated).await;
    order.assert_status(201);
    let order = format!("/store/orders/{}", order.id());
    staff.get(&order).await.assert_status(200);
    staff.get("/store/orders").await.assert_status(200);
    crate::webhooks::every_kind_of_webhook_record(staff).await;
    // `GET /me` of a key that stops at a known time (`expiresAt`).
    let ends = Utc::now() + Duration::minutes(30);
    let short = petstore::ratelimit::keys::NewApiKey::short_lived("expiring", ends);
    let keys = staff.app.limiter.keys();
    let issued = keys
        .create(short, Utc::now())
        .await
        .expect("a key is stored");
    staff
        .with_key(issued.key)
        .get("/me")
        .await
        .assert_status(200);
}

#[tokio::test]
async fn every_optional_response_property_is_sent() {
    let staff = TestApp::spawn().await;

    let ((), carried) = collecting(every_kind_of_record(&staff)).await;

    let documented = optional_response_properties();
    let unsent: Vec<&String> = documented.difference(&carried).collect();
    assert!(
        unsent.is_empty(),
        "openapi.yaml documents optional response properties no answer of this flow carried; \
         set them in every_kind_of_record (tests/responses.rs), or send them:\n{}",
        unsent
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        documented.contains("Order.shipDate"),
        "the document was read"
    );
}

/// The properties `schema` (in `document`'s components) lists.
fn properties(document: &str, schema: &str) -> BTreeSet<String> {
    let document = serde_json::to_value(crate::deploy::read_yaml(document)).unwrap_or_default();
    let properties = document["components"]["schemas"][schema]["properties"].as_object();
    properties
        .into_iter()
        .flatten()
        .map(|(name, _)| name.clone())
        .collect()
}

#[test]
fn each_record_s_schemas_list_exactly_its_fields() {
    let records = [
        ("Pet", "Pet", record_fields::<Pet>(), None),
        ("Category", "Category", record_fields::<Category>(), None),
        // An event's order also names who placed it.
        (
            "Order",
            "OwnedOrder",
            record_fields::<Order>(),
            Some("ownerId"),
        ),
    ];
    for (openapi, asyncapi, fields, event_only) in records {
        let fields: BTreeSet<String> = fields.iter().map(|f| f.to_string()).collect();
        assert!(!fields.is_empty(), "{openapi}: its fields were read");
        assert_eq!(
            properties("openapi.yaml", openapi),
            fields,
            "openapi.yaml's {openapi} (left) against the record's fields (right)"
        );
        let mut event_fields = fields.clone();
        event_fields.extend(event_only.map(String::from));
        assert_eq!(
            properties("asyncapi.yaml", asyncapi),
            event_fields,
            "asyncapi.yaml's {asyncapi} (left) against the record's fields (right)"
        );
    }
}
