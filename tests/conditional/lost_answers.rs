//! `If-Match` when a change's answer is lost (the fault proxy resets the
//! connection once DynamoDB answered the write): retried with the same
//! `Idempotency-Key` it replays its outcome, `ETag` included; retried
//! without one it is a 412, never a second change over another's.

use super::{current_etag, etag, send_with};
use crate::helpers::TestApp;
use crate::idempotency::proxy::{FaultMix, FaultProxy};
use crate::idempotency::stocked_pet;
use http::Method;
use serde_json::json;

#[tokio::test]
async fn a_lost_answer_retried_with_its_idempotency_key_replays_the_outcome_and_its_etag() {
    // Given a pet, its validator, and an instance behind the fault proxy
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 5).await;
    let path = format!("/pets/{pet}");
    let tag = current_etag(&staff, &path).await;
    let proxy = FaultProxy::start(&staff.endpoint, FaultMix::NONE, 3).await;
    let through_proxy = staff.instance_reaching(&proxy.endpoint).await;
    let body = json!({"name": "Mine"});
    let headers = [("if-match", tag.as_str()), ("idempotency-key", "rename-1")];

    // When the change's write is made but its answer lost
    proxy.lose_next_answer("TransactWriteItems", &format!("PET#{pet}"));
    let mut first = send_with(&through_proxy, Method::PATCH, &path, Some(&body), &headers).await;
    while first.status == 503 {
        first = send_with(&through_proxy, Method::PATCH, &path, Some(&body), &headers).await;
    }
    first.assert_status(200);

    // Then its retry with the key replays the outcome, with the record's validator
    let replay = send_with(&staff, Method::PATCH, &path, Some(&body), &headers).await;
    replay.assert_status(200);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.json(), first.json());
    assert_eq!(etag(&replay), current_etag(&staff, &path).await);
    assert_eq!(etag(&replay), etag(&first));
    assert_ne!(etag(&replay), tag);
}

#[tokio::test]
async fn a_lost_answer_retried_without_a_key_is_a_412_never_a_second_change() {
    // Given a pet, its validator, and an instance behind the fault proxy
    let staff = TestApp::spawn().await;
    let pet = stocked_pet(&staff, 5).await;
    let path = format!("/pets/{pet}");
    let tag = current_etag(&staff, &path).await;
    let proxy = FaultProxy::start(&staff.endpoint, FaultMix::NONE, 4).await;
    let through_proxy = staff.instance_reaching(&proxy.endpoint).await;
    let body = json!({"name": "Mine"});
    let if_match = [("if-match", tag.as_str())];

    // When the rename's write is made but its answer lost (the SDK, or the
    // caller after a 503, sends it again)
    proxy.lose_next_answer("UpdateItem", &format!("PET#{pet}"));
    let first = send_with(&through_proxy, Method::PATCH, &path, Some(&body), &if_match).await;
    assert!([200, 412, 503].contains(&first.status), "{}", first.text());
    assert_eq!(staff.get(&path).await.json()["name"], "Mine");
    // and another staff member then moves the pet to another status
    let theirs = staff.patch(&path, json!({"status": "pending"})).await;
    theirs.assert_status(200);

    // Then the caller's retry with its validator is a 412: its rename is
    // not made again over the other change
    let retry = send_with(&staff, Method::PATCH, &path, Some(&body), &if_match).await;
    retry.assert_error(412, "PRECONDITION_FAILED");
    let now = staff.get(&path).await.json();
    assert_eq!(
        (now["name"].clone(), now["status"].clone()),
        (json!("Mine"), json!("pending"))
    );
}
