//! `If-Match` under races: the check is the write's own condition, so a
//! write that lands between a change's read and its write makes it 412,
//! whoever made that write; of N changes with one validator, one is made.

use super::{current_etag, etag, send_with};
use crate::helpers::{TestApp, TestResponse};
use crate::idempotency::proxy::{FaultMix, FaultProxy};
use crate::idempotency::stocked_pet;
use aws_sdk_dynamodb::types::AttributeValue;
use futures::future::join_all;
use http::Method;
use serde_json::json;

/// Renames pet `id` as release 1.0.0 (e25da8e, `contract/released/`) wrote
/// a `PUT` or `PATCH` of a pet: one `UpdateItem` setting the record's
/// fields, on the condition that the pet exists with the status and
/// category it read; no attribute of its own that this release could read
/// as a version.
async fn rename_as_release_1_0_0(app: &TestApp, id: u64, name: &str) {
    let pet = app.get(&format!("/pets/{id}")).await.json();
    let (status, category) = (
        pet["status"].as_str().unwrap_or_default(),
        &pet["categoryId"],
    );
    let category = AttributeValue::N(category.to_string());
    app.app
        .db
        .client()
        .update_item()
        .table_name(app.app.db.table())
        .key("PK", AttributeValue::S(format!("PET#{id}")))
        .key("SK", AttributeValue::S("PET".into()))
        .update_expression("SET #name = :name, #categoryId = :category, #status = :status")
        .condition_expression(
            "attribute_exists(PK) AND #status = :status AND #categoryId = :category",
        )
        .expression_attribute_names("#name", "name")
        .expression_attribute_names("#categoryId", "categoryId")
        .expression_attribute_names("#status", "status")
        .expression_attribute_values(":name", AttributeValue::S(name.into()))
        .expression_attribute_values(":category", category)
        .expression_attribute_values(":status", AttributeValue::S(status.into()))
        .send()
        .await
        .expect("the last release's write is made");
}

#[tokio::test]
async fn the_last_release_s_write_between_the_read_and_the_conditional_write_makes_it_412() {
    // Given a pet, its validator, and an instance whose DynamoDB calls pass a proxy
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 5).await;
    let path = format!("/pets/{pet}");
    let tag = current_etag(&staff, &path).await;
    let proxy = FaultProxy::start(&staff.endpoint, FaultMix::NONE, 1).await;
    let through_proxy = staff.instance_reaching(&proxy.endpoint).await;

    // When a PATCH under If-Match has read the pet and its write is held
    let held = proxy.hold_next("UpdateItem", &format!("PET#{pet}"));
    let patch = tokio::spawn({
        let (app, path, tag) = (through_proxy.clone(), path.clone(), tag.clone());
        async move {
            let body = json!({"name": "Mine"});
            send_with(
                &app,
                Method::PATCH,
                &path,
                Some(&body),
                &[("if-match", &tag)],
            )
            .await
        }
    });
    held.arrived().await;
    // and the last release, serving beside this one, renames the pet
    rename_as_release_1_0_0(&staff, pet, "Theirs").await;
    held.release();

    // Then the PATCH is 412 and the last release's change stands
    let response = patch.await.expect("the PATCH ran");
    response.assert_error(412, "PRECONDITION_FAILED");
    let now = staff.get(&path).await;
    assert_eq!(now.json()["name"], "Theirs");
    // and the pet's validator moved with the old release's write
    assert_ne!(etag(&now), tag);
}

#[tokio::test]
async fn a_stock_level_an_order_moves_between_read_and_write_makes_a_stock_set_412() {
    // Given a pet in stock, its entry's validator and a customer
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 5).await;
    let path = format!("/store/inventory/{pet}");
    let tag = current_etag(&staff, &path).await;
    let customer = staff.as_customer().await;
    let proxy = FaultProxy::start(&staff.endpoint, FaultMix::NONE, 2).await;
    let through_proxy = staff.instance_reaching(&proxy.endpoint).await;

    // When a stock set under If-Match has read the entry and its write is held
    let held = proxy.hold_next("UpdateItem", &format!("PET#{pet}"));
    let set = tokio::spawn({
        let (app, path, tag) = (through_proxy.clone(), path.clone(), tag.clone());
        async move {
            let body = json!({"quantity": 40});
            send_with(&app, Method::PUT, &path, Some(&body), &[("if-match", &tag)]).await
        }
    });
    held.arrived().await;
    // and an order takes a unit
    customer
        .post("/store/orders", json!({"petId": pet, "quantity": 1}))
        .await
        .assert_status(201);
    held.release();

    // Then the set is 412 and the stock is what the order left
    set.await
        .expect("the PUT ran")
        .assert_error(412, "PRECONDITION_FAILED");
    assert_eq!(staff.get(&path).await.json()["quantity"], 4);
}

#[tokio::test]
async fn of_n_concurrent_changes_with_one_validator_exactly_one_is_made() {
    // Given a pet and a category, and their validators
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 5).await;
    let category = staff.create_category("Dogs").await;
    for (path, field) in [
        (format!("/pets/{pet}"), "name"),
        (format!("/categories/{category}"), "name"),
        (format!("/store/inventory/{pet}"), "quantity"),
    ] {
        let tag = current_etag(&staff, &path).await;

        // When 8 changes, each of its own value, are sent at once with it
        let sent = join_all((0..8u64).map(|i| {
            let (app, path, tag) = (staff.clone(), path.clone(), tag.clone());
            tokio::spawn(async move {
                let body = match field {
                    "quantity" => json!({"quantity": 10 + i}),
                    _ => json!({"name": format!("Name {i}")}),
                };
                let method = if path.starts_with("/pets") {
                    Method::PATCH
                } else {
                    Method::PUT
                };
                let if_match = [("if-match", tag.as_str())];
                let answer = send_with(&app, method, &path, Some(&body), &if_match).await;
                (body, answer)
            })
        }))
        .await;

        // Then exactly one is made, and the record is its
        let answers: Vec<(serde_json::Value, TestResponse)> =
            sent.into_iter().map(|r| r.expect("task ran")).collect();
        let made: Vec<_> = answers.iter().filter(|(_, r)| r.status == 200).collect();
        assert_eq!(made.len(), 1, "{path}");
        for (_, refused) in answers.iter().filter(|(_, r)| r.status != 200) {
            refused.assert_error(412, "PRECONDITION_FAILED");
        }
        let now = staff.get(&path).await;
        assert_eq!(now.json()[field], made[0].0[field], "{path}");
        assert_eq!(etag(&now), etag(&made[0].1), "{path}");
    }
}
