//! `petstore-admin keys update` (contract 4, 1.2.0): a key identity's plan,
//! role and limits changed in place. Its secret, endpoints and counts stay
//! its own, and every instance follows within its key cache's time.

use super::{config, key_id, pinned};
use crate::helpers::TestApp;
use crate::webhooks::{register_default, RECEIVER};
use petstore::ratelimit::keys::{KeyChange, KeyRequestError, RotateError, UpdateError};
use petstore::ratelimit::Plan;
use petstore::records::Role;
use serde_json::json;

fn limit(response: &crate::helpers::TestResponse) -> Option<String> {
    response.header("x-ratelimit-limit").map(str::to_string)
}

#[tokio::test]
async fn an_upgrade_keeps_the_identity_and_reaches_every_instance_within_the_cache_time() {
    let (staff, clock) = pinned(config(&[("KEY_CACHE_SECONDS", "20")])).await;
    let free = staff.with_new_key(Plan::Free, None).await;
    let endpoint = register_default(&free).await;
    let another = json!({"url": RECEIVER});
    let refused = free.post("/webhooks", another.clone()).await;
    refused.assert_error(409, "TOO_MANY_WEBHOOKS");
    assert_eq!(limit(&free.get("/categories").await).as_deref(), Some("60"));
    let birds = json!({"name": "Birds"});
    let refused = free.post("/categories", birds.clone()).await;
    refused.assert_error(403, "FORBIDDEN");

    let change = KeyChange {
        plan: Some(Plan::Pro),
        role: Some(Role::Staff),
        ..KeyChange::default()
    };
    let keys = staff.app.limiter.keys();
    let updated = keys.update(key_id(&free), &change).await.expect("updated");
    assert_eq!(
        (updated.id, updated.plan, updated.role, updated.per_minute),
        (key_id(&free), Plan::Pro, Role::Staff, 300)
    );

    // The instance that cached the key goes on with it until its entry
    // ends; one that had not cached it follows at once.
    assert_eq!(limit(&free.get("/categories").await).as_deref(), Some("60"));
    let fresh = free.another_instance().await;
    assert_eq!(
        limit(&fresh.get("/categories").await).as_deref(),
        Some("300")
    );
    clock.advance(20);
    assert_eq!(
        limit(&free.get("/categories").await).as_deref(),
        Some("300")
    );
    // The same secret and endpoint; the pro cap and the staff role now.
    assert_eq!(free.get("/webhooks").await.ids(), vec![endpoint]);
    free.post("/webhooks", another).await.assert_status(201);
    free.post("/categories", birds).await.assert_status(201);
}

#[tokio::test]
async fn an_update_follows_a_new_key_s_rules_and_never_revives_a_revoked_key() {
    let staff = TestApp::spawn().await;
    let keys = staff.app.limiter.keys();
    let free = key_id(&staff.with_new_key(Plan::Free, None).await);
    let own_limits = KeyChange {
        limits: Some((10, 100)),
        ..KeyChange::default()
    };
    let refused = keys.update(free, &own_limits).await;
    assert!(matches!(
        refused,
        Err(UpdateError::Request(
            KeyRequestError::LimitsOnlyForEnterprise
        ))
    ));
    let enterprise = KeyChange {
        plan: Some(Plan::Enterprise),
        ..KeyChange::default()
    };
    let refused = keys.update(free, &enterprise).await;
    assert!(matches!(
        refused,
        Err(UpdateError::Request(KeyRequestError::EnterpriseNeedsLimits))
    ));
    let enterprise = KeyChange {
        limits: Some((10, 100)),
        max_webhooks: Some(2),
        ..enterprise
    };
    let record = keys.update(free, &enterprise).await.expect("enterprise");
    assert_eq!((record.per_minute, record.webhooks_cap()), (10, 2));
    let pro = KeyChange {
        plan: Some(Plan::Pro),
        ..KeyChange::default()
    };
    let record = keys.update(free, &pro).await.expect("pro");
    assert_eq!((record.per_minute, record.max_webhooks), (300, None));
    assert_eq!(keys.find_by_id(free).await.expect("read"), Some(record));

    keys.revoke(free).await.expect("revoked");
    let refused = keys.update(free, &pro).await;
    assert!(matches!(refused, Err(UpdateError::Revoked(_))));
    let stored = keys.find_by_id(free).await.expect("read").expect("there");
    assert!(stored.revoked, "still revoked");
}

#[tokio::test]
async fn an_update_racing_a_rotation_is_never_lost() {
    let staff = TestApp::spawn().await;
    let keys = staff.app.limiter.keys();
    for _ in 0..5 {
        let id = key_id(&staff.with_new_key(Plan::Free, None).await);
        let pro = KeyChange {
            plan: Some(Plan::Pro),
            ..KeyChange::default()
        };
        let (updated, rotated) =
            tokio::join!(keys.update(id, &pro), keys.rotate(id, chrono::Utc::now()));
        updated.expect("the update is made");
        match rotated {
            // Rotated first (the update read again) or after it (copying it).
            Ok(issued) => assert_eq!(issued.record.id, id),
            // Refused: it read the record before the update changed it.
            Err(RotateError::Raced(_)) => {}
            Err(other) => panic!("{other}"),
        }
        let stored = keys.find_by_id(id).await.expect("read").expect("there");
        assert_eq!((stored.plan, stored.per_minute), (Plan::Pro, 300));
    }
}
