//! Staff's reach over another key's endpoint (section 9): list, read
//! (without secrets), disable, enable, retry and delete it; never say where
//! its events go, rename it, ping it, nor rotate or read its secret (403
//! `FORBIDDEN`, 1.3.0).

use super::{register, RECEIVER};
use crate::helpers::TestApp;
use serde_json::json;

#[tokio::test]
async fn staff_may_read_disable_enable_retry_and_delete_but_not_redirect_or_rotate() {
    let staff = TestApp::spawn().await;
    let customer = staff.as_customer().await;
    let created = register(
        &customer,
        json!({"url": RECEIVER, "events": ["order.placed"], "description": "Ops"}),
    )
    .await;
    let id = created["id"].as_u64().expect("a webhook id");
    let secret = created["secret"].as_str().expect("a secret").to_string();
    let path = format!("/webhooks/{id}");

    let read = staff.get(&path).await;
    read.assert_status(200);
    assert!(read.json().get("secret").is_none());
    let listed = staff.get("/webhooks").await;
    assert!(!listed.text().contains(&secret), "no list shows a secret");

    super::resolving(&staff);
    let elsewhere = json!({"url": "https://receiver.example/elsewhere"});
    for (body, what) in [
        (elsewhere, "url"),
        (json!({"events": ["order.completed"]}), "events"),
        (
            json!({"events": null, "enabled": false}),
            "events with enabled",
        ),
        (json!({"description": "Checked by staff"}), "description"),
        (json!({"description": null}), "description removed"),
        (
            json!({"enabled": true, "description": "Checked by staff"}),
            "description with enabled",
        ),
    ] {
        let refused = staff.patch(&path, body).await;
        refused.assert_error(403, "FORBIDDEN");
        assert!(
            refused.text().contains("own key"),
            "{what}: {}",
            refused.text()
        );
    }
    let rotate = staff.post(&format!("{path}/secret"), json!({})).await;
    rotate.assert_error(403, "FORBIDDEN");
    staff.hooks.queue.take();
    let ping = staff.post(&format!("{path}/ping"), json!({})).await;
    ping.assert_error(403, "FORBIDDEN");
    assert!(ping.text().contains("own key"), "{}", ping.text());
    assert!(staff.queue_is_empty(), "a refused ping sends nothing");
    let deliveries = customer.get(&format!("{path}/deliveries")).await;
    assert_eq!(
        deliveries.json(),
        json!([]),
        "a refused ping makes no delivery"
    );
    let untouched = customer.get(&path).await.json();
    assert_eq!(untouched["url"], RECEIVER);
    assert_eq!(untouched["events"], json!(["order.placed"]));
    assert_eq!(untouched["description"], "Ops");
    assert_eq!(
        untouched["enabled"], true,
        "a refused patch changes nothing"
    );

    let disabled = staff.patch(&path, json!({"enabled": false})).await;
    disabled.assert_status(200);
    assert_eq!(customer.get(&path).await.json()["enabled"], false);
    staff
        .patch(&path, json!({"enabled": true}))
        .await
        .assert_status(200);
    assert_eq!(customer.get(&path).await.json()["enabled"], true);

    let ping = customer.post(&format!("{path}/ping"), json!({})).await;
    ping.assert_status(202);
    let event_id = ping.json()["eventId"]
        .as_str()
        .expect("an eventId")
        .to_string();
    staff
        .post(&format!("{path}/deliveries/{event_id}/retry"), json!({}))
        .await
        .assert_status(202);

    staff.delete(&path).await.assert_status(204);
    customer.get(&path).await.assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn the_owner_itself_may_redirect_and_rotate_staff_or_not() {
    let staff = TestApp::spawn().await;
    let own = register(&staff, json!({"url": RECEIVER})).await;
    let id = own["id"].as_u64().expect("a webhook id");
    super::resolving(&staff);
    staff
        .patch(
            &format!("/webhooks/{id}"),
            json!({"events": ["pet.created"]}),
        )
        .await
        .assert_status(200);
    let rotated = staff
        .post(&format!("/webhooks/{id}/secret"), json!({}))
        .await;
    rotated.assert_status(200);
    assert!(rotated.json()["secret"].is_string());
    staff
        .patch(&format!("/webhooks/{id}"), json!({"description": "Ours"}))
        .await
        .assert_status(200);
    staff
        .post(&format!("/webhooks/{id}/ping"), json!({}))
        .await
        .assert_status(202);
}
