//! `data check` on webhooks (contract section 9): the endpoints, their
//! owners' counts, the deliveries and the slots the service writes (through
//! the real router and the real delivery handler) are sound, and each
//! webhook invariant, broken by a direct write, is reported with the broken
//! item's key.

use super::check::{check, n, s, Store};
use crate::helpers::TestApp;
use crate::webhooks::register_default;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::Utc;
use petstore::webhooks::address::UrlPolicy;
use petstore::webhooks::attempt::Attempter;
use petstore::webhooks::deliver::{slots, Deliverer};
use petstore::webhooks::receiving::KeyStates;
use petstore::webhooks::schedule::RetrySchedule;
use serde_json::json;
use std::net::{IpAddr, Ipv4Addr};

/// [`Store`]'s data and webhooks as the service leaves them: a staff
/// endpoint whose ping was attempted once, a customer's endpoint with a ping
/// pending and a slot leased (as a process that died mid-attempt leaves
/// it), and a delivery whose endpoint the customer deleted.
pub(super) struct Webhooks {
    pub(super) store: Store,
    pub(super) staff_endpoint: u64,
    pub(super) customer: u64,
    pub(super) customer_endpoint: u64,
    /// The staff endpoint's attempted delivery: its event id.
    pub(super) attempted: String,
    /// The deleted endpoint and its delivery's event id.
    pub(super) orphan: (u64, String),
}

impl Webhooks {
    pub(super) async fn new() -> Webhooks {
        let store = Store::new().await;
        let staff = &store.app;
        let staff_endpoint = register_default(staff).await;
        let customer = staff.as_customer().await;
        let customer_endpoint = register_default(&customer).await;
        let deleted = register_default(&customer).await;
        let orphan = (deleted, ping(&customer, deleted).await);
        customer
            .delete(&format!("/webhooks/{deleted}"))
            .await
            .assert_status(204);
        ping(&customer, customer_endpoint).await;
        let attempted = ping(staff, staff_endpoint).await;
        attempt_refused(staff, staff_endpoint, &attempted).await;
        let lease = slots::take(store.client(), store.table(), customer_endpoint, Utc::now())
            .await
            .expect("DynamoDB Local takes the lease");
        assert!(lease.is_some(), "the customer's endpoint has a free slot");
        staff.hooks.queue.take();
        Webhooks {
            customer: customer.key_id,
            store,
            staff_endpoint,
            customer_endpoint,
            attempted,
            orphan,
        }
    }

    fn staff_owner(&self) -> u64 {
        self.store.app.key_id
    }
}

/// Pings endpoint `id` as `app`; answers the delivery's event id.
async fn ping(app: &TestApp, id: u64) -> String {
    let response = app.post(&format!("/webhooks/{id}/ping"), json!({})).await;
    response.assert_status(202);
    response.json()["eventId"]
        .as_str()
        .expect("the delivery's eventId")
        .to_string()
}

/// One attempt of the delivery by the real delivery handler, its name now
/// resolving to loopback: refused before any connection, and recorded.
async fn attempt_refused(app: &TestApp, webhook_id: u64, event_id: &str) {
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    app.hooks
        .resolver
        .answer("receiver.example", vec![vec![loopback]]);
    let deliverer = Deliverer {
        client: app.app.db.client().clone(),
        table: app.app.config.table_name.clone(),
        attempter: Attempter::new(UrlPolicy::default(), app.hooks.resolver.clone())
            .expect("TLS settings"),
        schedule: RetrySchedule::parse("0,0,0").expect("a schedule"),
        queue: app.hooks.queue.clone(),
        keys: std::sync::Arc::new(KeyStates::of(app.app.db.client().clone(), &app.app.config)),
    };
    let message = crate::webhooks_delivery::message_to(app, webhook_id, event_id, false).await;
    deliverer.deliver(&message, 1).await.expect("handled");
}

fn endpoint(id: u64) -> String {
    format!("WEBHOOK#{id}")
}

/// The key (`PK`, `SK`) of the delivery of `event_id` to `webhook_id`.
async fn delivery(hooks: &Webhooks, webhook_id: u64, event_id: &str) -> (String, String) {
    let key = crate::webhooks_delivery::delivery_key(&hooks.store.app, webhook_id, event_id).await;
    let text = |name: &str| match key.get(name) {
        Some(AttributeValue::S(text)) => text.clone(),
        other => panic!("a delivery key's {name}: {other:?}"),
    };
    (text("PK"), text("SK"))
}

fn owner(id: u64) -> String {
    format!("WEBHOOKOWNER#{id}")
}

#[tokio::test]
async fn webhooks_the_service_wrote_are_sound() {
    let hooks = Webhooks::new().await;
    let store = &hooks.store;
    let (pk, sk) = delivery(&hooks, hooks.staff_endpoint, &hooks.attempted).await;
    let attempted = store.item(&pk, &sk).await;
    assert_eq!(
        attempted.get("attemptCount"),
        Some(&n(1)),
        "the delivery handler recorded its attempt: {attempted:?}"
    );
    let report = check(&store.app).await;
    assert!(report.sound(), "{:#?}", report.findings);
    // The store's 13 items, the customer's key, 2 endpoints and their
    // owners' 2 counts, 3 deliveries (one of a deleted endpoint), 1 slot,
    // the subscriptions' version.
    assert_eq!(report.items, 23, "every item is read");
}

/// The sort key of the slot the customer's endpoint leased (any of its
/// slots: a lease tries them in random order).
async fn leased_slot(hooks: &Webhooks) -> String {
    let store = &hooks.store;
    let out = store
        .client()
        .query()
        .table_name(store.table())
        .key_condition_expression("PK = :pk AND begins_with(SK, :slot)")
        .expression_attribute_values(":pk", s(endpoint(hooks.customer_endpoint)))
        .expression_attribute_values(":slot", s("SLOT#"))
        .consistent_read(true)
        .send()
        .await
        .expect("DynamoDB Local answers");
    let slots = out.items.unwrap_or_default();
    assert_eq!(slots.len(), 1, "one slot leased: {slots:?}");
    match slots[0].get("SK") {
        Some(AttributeValue::S(sk)) => sk.clone(),
        other => panic!("a slot's SK: {other:?}"),
    }
}

#[tokio::test]
async fn a_webhook_item_under_another_kinds_key() {
    let hooks = Webhooks::new().await;
    let store = &hooks.store;
    let slot = leased_slot(&hooks).await;
    let mut misplaced = store.item(&endpoint(hooks.customer_endpoint), &slot).await;
    misplaced.insert("PK".into(), s("PET#1"));
    store.put(misplaced).await;
    store.assert_reported("known-kind", "PET#1").await;
}

#[tokio::test]
async fn an_endpoint_whose_key_does_not_name_its_id() {
    let hooks = Webhooks::new().await;
    let id = hooks.customer_endpoint;
    hooks
        .store
        .reported_after_setting(
            (&endpoint(id), "ENDPOINT", "id", Some(n(id as i64 + 1))),
            ("key-names-id", &endpoint(id)),
        )
        .await;
}

#[tokio::test]
async fn an_endpoint_or_a_delivery_the_service_cannot_read() {
    let hooks = Webhooks::new().await;
    let id = hooks.customer_endpoint;
    hooks
        .store
        .reported_after_setting(
            (&endpoint(id), "ENDPOINT", "ownerRole", Some(s("admin"))),
            ("reads-as-record", &endpoint(id)),
        )
        .await;
    let hooks = Webhooks::new().await;
    let (pk, attempted) = delivery(&hooks, hooks.staff_endpoint, &hooks.attempted).await;
    hooks
        .store
        .reported_after_setting(
            (&pk, &attempted, "state", Some(s("lost"))),
            ("reads-as-record", &pk),
        )
        .await;
}

#[tokio::test]
async fn an_endpoint_in_the_wrong_lists() {
    let hooks = Webhooks::new().await;
    let (customers, staffs) = (
        endpoint(hooks.customer_endpoint),
        endpoint(hooks.staff_endpoint),
    );
    let staff_list = Some(s("WEBHOOKSTAFF"));
    hooks
        .store
        .reported_after_setting(
            (&customers, "ENDPOINT", "GSI2PK", staff_list),
            ("webhook-endpoint-index-keys", &customers),
        )
        .await;
    hooks
        .store
        .reported_after_setting(
            (&staffs, "ENDPOINT", "GSI2PK", None),
            ("webhook-endpoint-index-keys", &staffs),
        )
        .await;
    let hooks = Webhooks::new().await;
    let customers = endpoint(hooks.customer_endpoint);
    let anothers = Some(s(owner(hooks.staff_owner())));
    hooks
        .store
        .reported_after_setting(
            (&customers, "ENDPOINT", "GSI4PK", anothers),
            ("webhook-endpoint-index-keys", &customers),
        )
        .await;
}

#[tokio::test]
async fn an_owner_count_that_misses_an_endpoint() {
    let hooks = Webhooks::new().await;
    let customer = owner(hooks.customer);
    hooks
        .store
        .reported_after_setting(
            (&customer, "WEBHOOKS", "endpoints", Some(n(2))),
            ("webhook-endpoints-counted", &customer),
        )
        .await;
    let hooks = Webhooks::new().await;
    let staff = owner(hooks.staff_owner());
    hooks.store.delete(&staff, "WEBHOOKS").await;
    hooks
        .store
        .assert_reported("webhook-endpoints-counted", &staff)
        .await;
}

#[tokio::test]
async fn a_delivery_in_an_index_or_under_another_endpoint_s_key() {
    let hooks = Webhooks::new().await;
    let id = hooks.staff_endpoint;
    let (pk, attempted) = delivery(&hooks, id, &hooks.attempted).await;
    let listed = Some(s(format!("WEBHOOKDELIVERY#{id}")));
    hooks
        .store
        .reported_after_setting(
            (&pk, &attempted, "GSI3PK", listed),
            ("webhook-delivery-keys", &pk),
        )
        .await;
    let (gone, event) = &hooks.orphan;
    let (pk, sk) = delivery(&hooks, *gone, event).await;
    hooks
        .store
        .reported_after_setting(
            (&pk, &sk, "webhookId", Some(n(*gone as i64 + 1))),
            ("webhook-delivery-keys", &pk),
        )
        .await;
}

#[tokio::test]
async fn a_delivery_or_a_slot_that_never_expires() {
    let hooks = Webhooks::new().await;
    let (pk, attempted) = delivery(&hooks, hooks.staff_endpoint, &hooks.attempted).await;
    hooks
        .store
        .reported_after_setting(
            (&pk, &attempted, "expiresAt", None),
            ("webhook-items-expire", &pk),
        )
        .await;
    let hooks = Webhooks::new().await;
    let (id, slot) = (hooks.customer_endpoint, leased_slot(&hooks).await);
    hooks
        .store
        .reported_after_setting(
            (&endpoint(id), &slot, "expiresAt", None),
            ("webhook-items-expire", &endpoint(id)),
        )
        .await;
}

#[tokio::test]
async fn a_slot_or_an_owner_count_in_an_index() {
    let hooks = Webhooks::new().await;
    let (id, slot) = (hooks.customer_endpoint, leased_slot(&hooks).await);
    hooks
        .store
        .reported_after_setting(
            (&endpoint(id), &slot, "GSI1PK", Some(s("WEBHOOK"))),
            ("unlisted-kinds", &endpoint(id)),
        )
        .await;
    let hooks = Webhooks::new().await;
    let customer = owner(hooks.customer);
    hooks
        .store
        .reported_after_setting(
            (&customer, "WEBHOOKS", "GSI4PK", Some(s(customer.clone()))),
            ("unlisted-kinds", &customer),
        )
        .await;
}

#[tokio::test]
async fn a_pending_delivery_no_message_carries_any_more() {
    let hooks = Webhooks::new().await;
    let (pk, attempted) = delivery(&hooks, hooks.staff_endpoint, &hooks.attempted).await;
    let at = |minutes: i64| {
        let at = Utc::now() - chrono::Duration::minutes(minutes);
        Some(s(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)))
    };
    // Late within the bound: slot waits and hand-backs make it so.
    hooks
        .store
        .set(&pk, &attempted, "nextAttemptAt", at(50))
        .await;
    let report = check(&hooks.store.app).await;
    assert!(report.sound(), "{:#?}", report.findings);
    hooks
        .store
        .reported_after_setting(
            (&pk, &attempted, "nextAttemptAt", at(61)),
            ("webhook-delivery-not-overdue", &pk),
        )
        .await;
}
