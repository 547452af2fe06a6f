//! Contract section 1's value rules on text and dates: text is what it looks
//! like, category names are unique under NFKC and case folding, and a
//! customer's `shipDate` lies in its window. Through the real router, on
//! DynamoDB Local.

use crate::helpers::TestApp;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{Duration, SecondsFormat, Utc};
use serde_json::json;

#[tokio::test]
async fn names_hold_only_what_is_seen() {
    let app = TestApp::spawn().await;
    let dogs = app.create_category("Dogs").await;
    for hidden in [
        "Dogs\u{200b}",
        "\u{202e}sgoD",
        "Do\u{feff}gs",
        "Dogs\u{e000}!",
    ] {
        app.post("/categories", json!({ "name": hidden }))
            .await
            .assert_error(400, "VALIDATION_FAILED");
        app.post("/pets", json!({ "name": hidden, "categoryId": dogs }))
            .await
            .assert_error(400, "VALIDATION_FAILED");
    }
    let pet = app.create_pet("Rex", dogs, "available").await;
    app.patch(&format!("/pets/{pet}"), json!({ "name": "Rex\u{2066}" }))
        .await
        .assert_error(400, "VALIDATION_FAILED");
}

#[tokio::test]
async fn descriptions_keep_only_tabs_and_line_breaks() {
    let app = TestApp::spawn().await;
    for (i, hidden) in ["a\u{0}b", "\u{1b}[31mred", "a\rb", "\u{202e}x"]
        .iter()
        .enumerate()
    {
        let body = json!({ "name": format!("C{i}"), "description": hidden });
        app.post("/categories", body)
            .await
            .assert_error(400, "VALIDATION_FAILED");
    }
    let kept = "Loyal,\tfour-legged.\nFond of walks.\r\nGood.";
    let created = app
        .post(
            "/categories",
            json!({ "name": "Dogs", "description": kept }),
        )
        .await;
    created.assert_status(201);
    assert_eq!(created.json()["description"], kept);
}

#[tokio::test]
async fn category_names_are_unique_under_compatibility_and_case_folding() {
    let app = TestApp::spawn().await;
    app.create_category("Dogs").await;
    for twin in ["Ｄｏｇｓ", "DOGS", "ｄｏｇｓ"] {
        app.post("/categories", json!({ "name": twin }))
            .await
            .assert_error(409, "CATEGORY_EXISTS");
    }
    let strasse = app.create_category("Straße").await;
    app.post("/categories", json!({ "name": "STRASSE" }))
        .await
        .assert_error(409, "CATEGORY_EXISTS");
    // A rename to a twin of its own name keeps the claim.
    app.put(
        &format!("/categories/{strasse}"),
        json!({ "name": "Strasse" }),
    )
    .await
    .assert_status(200);
}

async fn claim(app: &TestApp, folded: &str) -> Option<String> {
    let found = app
        .app
        .db
        .client()
        .get_item()
        .table_name(app.app.db.table())
        .key("PK", AttributeValue::S(format!("CATEGORYNAME#{folded}")))
        .key("SK", AttributeValue::S("CATEGORYNAME".into()))
        .consistent_read(true)
        .send()
        .await
        .expect("the claim is read");
    found
        .item
        .and_then(|item| item.get("categoryId").cloned())
        .and_then(|id| id.as_n().ok().cloned())
}

/// Makes `id`'s claim look as it was made before NFKC: under the lower case.
async fn make_legacy_claim(app: &TestApp, id: u64, folded: &str, lower: &str) {
    let client = app.app.db.client();
    let table = app.app.db.table();
    client
        .delete_item()
        .table_name(table)
        .key("PK", AttributeValue::S(format!("CATEGORYNAME#{folded}")))
        .key("SK", AttributeValue::S("CATEGORYNAME".into()))
        .send()
        .await
        .expect("the claim is deleted");
    client
        .put_item()
        .table_name(table)
        .item("PK", AttributeValue::S(format!("CATEGORYNAME#{lower}")))
        .item("SK", AttributeValue::S("CATEGORYNAME".into()))
        .item("categoryId", AttributeValue::N(id.to_string()))
        .send()
        .await
        .expect("the legacy claim is stored");
}

/// A name stored before NFKC has its claim under its lower case; renaming
/// the category moves it to the folded form, deleting it frees both.
#[tokio::test]
async fn claims_made_before_nfkc_are_moved_and_freed() {
    let app = TestApp::spawn().await;
    let cats = app.create_category("Ｃａｔｓ").await;
    make_legacy_claim(&app, cats, "cats", "ｃａｔｓ").await;

    app.put(&format!("/categories/{cats}"), json!({ "name": "CATS" }))
        .await
        .assert_status(200);
    assert_eq!(claim(&app, "ｃａｔｓ").await, None);
    assert_eq!(claim(&app, "cats").await, Some(cats.to_string()));
    app.post("/categories", json!({ "name": "Ｃａｔｓ" }))
        .await
        .assert_error(409, "CATEGORY_EXISTS");

    let birds = app.create_category("Ｂｉｒｄｓ").await;
    make_legacy_claim(&app, birds, "birds", "ｂｉｒｄｓ").await;
    app.delete(&format!("/categories/{birds}"))
        .await
        .assert_status(204);
    assert_eq!(claim(&app, "ｂｉｒｄｓ").await, None);
    assert_eq!(claim(&app, "birds").await, None);
}

fn rfc3339(t: chrono::DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[tokio::test]
async fn a_customer_ship_date_lies_in_its_window() {
    let staff = TestApp::spawn().await;
    let category = staff.create_category("Dogs").await;
    let pet = staff.create_pet("Rex", category, "available").await;
    staff
        .put(
            &format!("/store/inventory/{pet}"),
            json!({ "quantity": 100 }),
        )
        .await
        .assert_status(200);
    let customer = staff.as_customer().await;
    let now = Utc::now();
    let out_of_window = [
        "0001-01-01T00:00:00Z".to_string(),
        "9999-12-31T23:59:59Z".to_string(),
        rfc3339(now - Duration::hours(25)),
        rfc3339(now + Duration::days(366)),
    ];
    for date in &out_of_window {
        customer
            .post("/store/orders", json!({ "petId": pet, "shipDate": date }))
            .await
            .assert_error(400, "VALIDATION_FAILED");
    }
    for date in [now, now - Duration::hours(23), now + Duration::days(364)] {
        let placed = customer
            .post(
                "/store/orders",
                json!({ "petId": pet, "shipDate": rfc3339(date) }),
            )
            .await;
        placed.assert_status(201);
    }
    // Staff are not bound by the window.
    for date in &out_of_window {
        staff
            .post("/store/orders", json!({ "petId": pet, "shipDate": date }))
            .await
            .assert_status(201);
    }
}
