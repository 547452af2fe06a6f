//! A webhook endpoint's validator (contract 4c): every answer carrying one
//! endpoint has an `ETag`, a `GET` answers 304 to it, and `If-Match` on
//! `PATCH` and `DELETE` is held in the write's own condition.

use super::{current_etag, etag, send_with};
use crate::helpers::{TestApp, TestResponse};
use crate::idempotency::proxy::{FaultMix, FaultProxy};
use crate::webhooks::{register_default, resolving, set_attributes, RECEIVER};
use aws_sdk_dynamodb::types::AttributeValue;
use futures::future::join_all;
use http::Method;
use serde_json::json;

/// A customer's key holding one endpoint, and the endpoint's path.
async fn customer_with_endpoint() -> (TestApp, String) {
    let staff = TestApp::spawn().await;
    let customer = staff.as_customer().await;
    let id = register_default(&customer).await;
    (customer, format!("/webhooks/{id}"))
}

async fn patch_with(app: &TestApp, path: &str, body: serde_json::Value, tag: &str) -> TestResponse {
    send_with(app, Method::PATCH, path, Some(&body), &[("if-match", tag)]).await
}

#[tokio::test]
async fn every_answer_carrying_an_endpoint_has_the_validator_a_change_accepts() {
    // Given a customer's key
    let staff = TestApp::spawn().await;
    let customer = staff.as_customer().await;
    resolving(&customer);

    // When it registers an endpoint, its answer (with the secret) has an
    // ETag that a PATCH under If-Match accepts
    let created = customer.post("/webhooks", json!({"url": RECEIVER})).await;
    created.assert_status(201);
    let path = format!("/webhooks/{}", created.id());
    let changed = patch_with(
        &customer,
        &path,
        json!({"description": "A"}),
        &etag(&created),
    )
    .await;
    changed.assert_status(200);
    // and a PATCH's answer's ETag, and a GET's (which shows `receiving`)
    let changed = patch_with(
        &customer,
        &path,
        json!({"description": "B"}),
        &etag(&changed),
    )
    .await;
    changed.assert_status(200);
    let shown = customer.get(&path).await;
    assert_eq!(shown.json()["receiving"], true);
    let changed = patch_with(&customer, &path, json!({"description": "C"}), &etag(&shown)).await;
    changed.assert_status(200);
    // and a new secret's answer
    let rotated = customer.post(&format!("{path}/secret"), json!({})).await;
    rotated.assert_status(200);
    assert!(rotated.json()["secret"].is_string());
    let changed = patch_with(&customer, &path, json!({"enabled": false}), &etag(&rotated)).await;
    changed.assert_status(200);

    // Then a GET of the endpoint as not receiving carries another validator,
    // which a change accepts as well
    let shown = customer.get(&path).await;
    assert_eq!(shown.json()["notReceivingReason"], "disabled");
    assert_ne!(etag(&shown), etag(&changed));
    let tag = etag(&shown);
    let deleted = send_with(
        &customer,
        Method::DELETE,
        &path,
        None,
        &[("if-match", &tag)],
    )
    .await;
    deleted.assert_status(204);
}

#[tokio::test]
async fn if_none_match_naming_the_endpoint_s_validator_is_a_304_until_its_key_changes() {
    // Given a customer's endpoint, and the validator a GET by staff sends
    let staff = TestApp::spawn().await;
    let customer = staff.as_customer().await;
    let path = format!("/webhooks/{}", register_default(&customer).await);
    let tag = current_etag(&staff, &path).await;

    // When the same is asked under If-None-Match, the answer is 304, no body
    let again = send_with(&staff, Method::GET, &path, None, &[("if-none-match", &tag)]).await;
    again.assert_status(304);
    assert_eq!(etag(&again), tag);
    assert!(again.body.is_empty());

    // Then once its key is revoked, the endpoint receives nothing, and a
    // copy that says it does is no longer current
    let owner = petstore::records::Id::new(customer.key_id).expect("an id");
    let revoked = staff.app.limiter.keys().revoke(owner).await;
    assert!(revoked.expect("the store answers").is_some());
    let after = send_with(&staff, Method::GET, &path, None, &[("if-none-match", &tag)]).await;
    after.assert_status(200);
    assert_eq!(after.json()["notReceivingReason"], "key_revoked");
    assert_ne!(etag(&after), tag);
}

#[tokio::test]
async fn if_match_naming_another_validator_is_a_412_and_changes_nothing() {
    // Given an endpoint and its validator, and then a change to it
    let (customer, path) = customer_with_endpoint().await;
    let stale = current_etag(&customer, &path).await;
    let moved = customer
        .patch(&path, json!({"description": "Theirs"}))
        .await;
    moved.assert_status(200);

    // When a PATCH and a DELETE are sent with the stale validator
    let patch = patch_with(&customer, &path, json!({"description": "Mine"}), &stale).await;
    let delete = send_with(
        &customer,
        Method::DELETE,
        &path,
        None,
        &[("if-match", &stale)],
    )
    .await;

    // Then both are 412, and the endpoint is as the other change left it
    patch.assert_error(412, "PRECONDITION_FAILED");
    delete.assert_error(412, "PRECONDITION_FAILED");
    let now = customer.get(&path).await;
    assert_eq!(now.json()["description"], "Theirs");
    // and `*` asks only that it exists
    let any = patch_with(&customer, &path, json!({"description": "Any"}), "*").await;
    any.assert_status(200);
}

#[tokio::test]
async fn a_delivery_s_write_between_the_read_and_the_conditional_write_makes_it_412() {
    // Given an endpoint, its validator, and an instance whose DynamoDB
    // calls pass a proxy
    let (customer, path) = customer_with_endpoint().await;
    let id = path.trim_start_matches("/webhooks/").to_string();
    let tag = current_etag(&customer, &path).await;
    let proxy = FaultProxy::start(&customer.endpoint, FaultMix::NONE, 1).await;
    let through_proxy = customer.instance_reaching(&proxy.endpoint).await;
    resolving(&through_proxy);

    // When a PATCH under If-Match has read the endpoint and its write is held
    let held = proxy.hold_next("UpdateItem", &format!("WEBHOOK#{id}"));
    let patch = tokio::spawn({
        let (app, path, tag) = (through_proxy.clone(), path.clone(), tag.clone());
        async move { patch_with(&app, &path, json!({"description": "Mine"}), &tag).await }
    });
    held.arrived().await;
    // and a delivery records that the endpoint has been failing
    let since = AttributeValue::S("2030-01-01T00:00:00.000Z".into());
    let key = (format!("WEBHOOK#{id}"), "ENDPOINT".to_string());
    set_attributes(&customer, key.0, key.1, &[("failingSince", since)]).await;
    held.release();

    // Then the PATCH is 412 and the endpoint keeps the delivery's write
    let response = patch.await.expect("the PATCH ran");
    response.assert_error(412, "PRECONDITION_FAILED");
    let now = customer.get(&path).await;
    assert_eq!(now.json()["failingSince"], "2030-01-01T00:00:00.000Z");
    assert!(now.json().get("description").is_none());
    assert_ne!(etag(&now), tag);
}

#[tokio::test]
async fn of_n_concurrent_changes_of_an_endpoint_with_one_validator_exactly_one_is_made() {
    // Given an endpoint and its validator
    let (customer, path) = customer_with_endpoint().await;
    let tag = current_etag(&customer, &path).await;

    // When 8 PATCHes, each of its own description, are sent at once with it
    let sent = join_all((0..8u64).map(|i| {
        let (app, path, tag) = (customer.clone(), path.clone(), tag.clone());
        tokio::spawn(async move {
            let body = json!({"description": format!("Ops {i}")});
            let answer = patch_with(&app, &path, body.clone(), &tag).await;
            (body, answer)
        })
    }))
    .await;

    // Then exactly one is made, the others are 412, and the endpoint is its
    let answers: Vec<(serde_json::Value, TestResponse)> =
        sent.into_iter().map(|r| r.expect("task ran")).collect();
    let made: Vec<_> = answers.iter().filter(|(_, r)| r.status == 200).collect();
    assert_eq!(made.len(), 1);
    for (_, refused) in answers.iter().filter(|(_, r)| r.status != 200) {
        refused.assert_error(412, "PRECONDITION_FAILED");
    }
    let now = customer.get(&path).await;
    assert_eq!(now.json()["description"], made[0].0["description"]);
}

#[tokio::test]
async fn a_replayed_change_carries_the_endpoint_s_validator() {
    // Given an endpoint changed under an Idempotency-Key
    let (customer, path) = customer_with_endpoint().await;
    let body = json!({"description": "Once"});
    let key = [("idempotency-key", "rename-once")];
    let first = send_with(&customer, Method::PATCH, &path, Some(&body), &key).await;
    first.assert_status(200);

    // When it is sent again
    let replay = send_with(&customer, Method::PATCH, &path, Some(&body), &key).await;

    // Then the replay carries the first answer's ETag, which a change accepts
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(etag(&replay), etag(&first));
    let tag = etag(&replay);
    let changed = patch_with(&customer, &path, json!({"description": "Twice"}), &tag).await;
    changed.assert_status(200);
}
