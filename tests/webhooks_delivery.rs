//! Webhook delivery (contract section 9, issue 39): the real fan-out and
//! delivery handlers on DynamoDB Local and the in-process queue `make run`
//! uses, delivering to real receivers that verify every attempt with the
//! specification's own libraries (`receivers`), never the project's signing.
//!
//! Endpoints are stored here as the webhooks API stores them (the design's
//! item format), their URLs checked by `check_url` as registration does.
//! The retry schedule is shortened as `WEBHOOK_RETRY_SCHEDULE` would be
//! (`RetrySchedule::parse`, the code that reads the variable).

mod authorization;
mod cost;
mod delay;
mod events_fanout;
mod flows;
mod queue;
mod races;
mod receivers;
mod secrets_kept;
mod ssrf;
mod stranding;
mod subscriptions;

use crate::helpers::TestApp;
use aws_sdk_dynamodb::types::AttributeValue;
use petstore::webhooks::address::{
    check_url, Resolve, ScriptedResolver, SystemResolver, UrlPolicy,
};
use petstore::webhooks::attempt::Attempter;
use petstore::webhooks::deliver::{local, Deliverer};
use petstore::webhooks::receiving::KeyStates;
use petstore::webhooks::schedule::RetrySchedule;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// How long a test waits for what must happen within seconds (section 9:
/// an order's webhook arrives within seconds); a bound, never a pause.
pub const WITHIN: Duration = Duration::from_secs(30);

/// `make run`'s rules: loopback receivers allowed.
pub const LOCAL: UrlPolicy = UrlPolicy {
    allow_loopback: true,
};

/// A shortened schedule, as `WEBHOOK_RETRY_SCHEDULE=0,0,0` gives it: four
/// attempts, each as soon as the last failed.
pub fn quick_schedule() -> RetrySchedule {
    RetrySchedule::parse("0,0,0").expect("a schedule")
}

/// A deliverer on `app`'s table, its local queue running.
pub fn deliverer(app: &TestApp, policy: UrlPolicy, resolver: Arc<dyn Resolve>) -> Arc<Deliverer> {
    let attempter = Attempter::new(policy, resolver).expect("TLS settings");
    deliverer_with(app, attempter)
}

pub fn deliverer_with(app: &TestApp, attempter: Attempter) -> Arc<Deliverer> {
    let client = app.app.db.client().clone();
    local::start_with(
        client,
        app.app.config.table_name.clone(),
        attempter,
        quick_schedule(),
        key_states(app, Duration::ZERO),
    )
}

/// The keys' states on `app`'s tables, each trusted for `ttl` (zero: read
/// at every decision, so a test sees a change at once).
pub fn key_states(app: &TestApp, ttl: Duration) -> Arc<KeyStates> {
    let config = &app.app.config;
    Arc::new(KeyStates::new(
        app.app.db.client().clone(),
        &config.table_name,
        &config.rate_limit_table_name,
        config.data_layout,
        ttl,
    ))
}

/// An endpoint, stored as the webhooks API stores one after `check_url`.
pub struct NewEndpoint<'a> {
    pub owner_id: u64,
    pub role: &'a str,
    pub url: &'a str,
    pub events: &'a [&'a str],
    /// Newest first: (secret, retiresAt).
    pub secrets: Vec<(String, Option<&'a str>)>,
    pub failing_since: Option<String>,
}

impl NewEndpoint<'_> {
    pub fn new(owner_id: u64, role: &str, url: &str, secret: &str) -> NewEndpoint<'static> {
        let url: &'static str = Box::leak(url.to_string().into_boxed_str());
        let role: &'static str = Box::leak(role.to_string().into_boxed_str());
        NewEndpoint {
            owner_id,
            role,
            url,
            events: &[],
            secrets: vec![(secret.to_string(), None)],
            failing_since: None,
        }
    }
}

/// Stores `endpoint` after checking its URL on `resolver`; answers its id.
pub async fn register(
    app: &TestApp,
    endpoint: &NewEndpoint<'_>,
    policy: &UrlPolicy,
    resolver: &dyn Resolve,
) -> u64 {
    check_url(endpoint.url, policy, resolver)
        .await
        .expect("the URL is accepted at registration");
    let id = rand::random::<u64>() >> 12;
    let s = |v: &str| AttributeValue::S(v.to_string());
    let mut secrets = Vec::new();
    for (secret, retires) in &endpoint.secrets {
        let sealed = petstore::webhooks::secrets::seal(id, secret).await;
        let sealed = sealed.expect("the tests' key seals");
        let mut m = std::collections::HashMap::from([("secret".to_string(), s(&sealed))]);
        if let Some(at) = retires {
            m.insert("retiresAt".to_string(), s(at));
        }
        secrets.push(AttributeValue::M(m));
    }
    let failing_since = endpoint.failing_since.as_deref().map(s);
    let owner_id = live_owner(app, endpoint).await;
    let mut lists = vec![
        ("GSI1PK", s("WEBHOOK")),
        ("GSI4PK", s(&format!("WEBHOOKOWNER#{owner_id}"))),
    ];
    if endpoint.role == "staff" {
        lists.push(("GSI2PK", s("WEBHOOKSTAFF")));
    }
    let mut item = failing_since
        .map(|at| std::collections::HashMap::from([("failingSince".to_string(), at)]))
        .unwrap_or_default();
    item.extend(
        lists
            .into_iter()
            .map(|(name, value)| (name.to_string(), value)),
    );
    app.app
        .db
        .client()
        .put_item()
        .set_item(Some(item))
        .table_name(&app.app.config.table_name)
        .item("PK", s(&format!("WEBHOOK#{id}")))
        .item("SK", s("ENDPOINT"))
        .item("id", AttributeValue::N(id.to_string()))
        .item("ownerId", AttributeValue::N(owner_id.to_string()))
        .item("ownerRole", s(endpoint.role))
        .item("url", s(endpoint.url))
        .item(
            "events",
            AttributeValue::L(endpoint.events.iter().map(|e| s(e)).collect()),
        )
        .item("enabled", AttributeValue::Bool(true))
        .item("secrets", AttributeValue::L(secrets))
        .item("createdAt", s("2026-11-26T20:00:00.000Z"))
        .item(
            "deliveryShards",
            AttributeValue::N(DELIVERY_SHARDS.to_string()),
        )
        .send()
        .await
        .expect("the endpoint is stored");
    id
}

/// The delivery partitions of the endpoints stored here: several, so that
/// every test finds each delivery where its shard puts it.
pub const DELIVERY_SHARDS: u16 = 4;

/// The delivery partitions endpoint `webhook_id` has (`deliveryShards`);
/// a deleted one's, registered through the API, had the stack's count.
async fn delivery_shards(app: &TestApp, webhook_id: u64) -> u16 {
    use petstore::db::shards::Kind;
    match item(app, webhook_id, "ENDPOINT").await {
        Some(endpoint) => endpoint["deliveryShards"]
            .as_u64()
            .and_then(|n| u16::try_from(n).ok())
            .unwrap_or(1),
        None => app.app.config.shards.count(Kind::Delivery),
    }
}

/// The key of the delivery of `event_id` to `webhook_id`.
pub async fn delivery_key(
    app: &TestApp,
    webhook_id: u64,
    event_id: &str,
) -> std::collections::HashMap<String, AttributeValue> {
    let shards = delivery_shards(app, webhook_id).await;
    let shard = petstore::webhooks::deliveries::shard_of_event(event_id, shards);
    petstore::webhooks::deliveries::key(webhook_id, shard, event_id)
}

/// The delivery of `event_id` to `webhook_id` as stored, as JSON.
pub async fn delivery_item(app: &TestApp, webhook_id: u64, event_id: &str) -> Option<Value> {
    item_at(app, delivery_key(app, webhook_id, event_id).await).await
}

/// The delivery's claims made as old as they are when SQS hands their
/// message over again after its visibility timeout (6 minutes): older than
/// any receipt lives (`CLAIM_LEASE`), so a receipt that finds one knows the
/// receipt that made it ended before recording its attempt.
pub async fn age_claims(app: &TestApp, webhook_id: u64, event_id: &str) {
    let delivery = delivery_item(app, webhook_id, event_id)
        .await
        .expect("the delivery");
    let names: Vec<String> = delivery["claims"]
        .as_object()
        .map(|claims| claims.keys().cloned().collect())
        .unwrap_or_default();
    let old = chrono::Utc::now() - chrono::Duration::minutes(6);
    let old = old.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    for name in names {
        app.app
            .db
            .client()
            .update_item()
            .table_name(&app.app.config.table_name)
            .set_key(Some(delivery_key(app, webhook_id, event_id).await))
            .update_expression("SET claims.#name.#at = :old")
            .expression_attribute_names("#name", name)
            .expression_attribute_names("#at", "at")
            .expression_attribute_values(":old", AttributeValue::S(old.clone()))
            .send()
            .await
            .expect("the claim is aged");
    }
}

/// The deliveries queue's message for the delivery of `event_id` to
/// endpoint `webhook_id`, wherever it was registered (its `deliveryShards`
/// read), as a ping or a retry by hand (`manual`) sends it.
pub async fn message_to(
    app: &TestApp,
    webhook_id: u64,
    event_id: &str,
    manual: bool,
) -> petstore::webhooks::queue::DeliveryMessage {
    let shards = delivery_shards(app, webhook_id).await;
    petstore::webhooks::queue::DeliveryMessage {
        shard: petstore::webhooks::deliveries::shard_of_event(event_id, shards),
        ..message(webhook_id, event_id, manual)
    }
}

/// The deliveries queue's message for the delivery of `event_id` to
/// endpoint `webhook_id` stored here ([`register`], [`DELIVERY_SHARDS`]),
/// as the fan-out or a retry by hand (`manual`) sends it.
pub fn message(
    webhook_id: u64,
    event_id: &str,
    manual: bool,
) -> petstore::webhooks::queue::DeliveryMessage {
    let shard = petstore::webhooks::deliveries::shard_of_event(event_id, DELIVERY_SHARDS);
    petstore::webhooks::queue::DeliveryMessage::new(webhook_id, shard, event_id, manual)
}

/// The endpoint's owner as a live key: `owner_id` when a key has that id,
/// else a new key of the endpoint's role (delivery goes only to endpoints
/// whose owner's key is not revoked).
async fn live_owner(app: &TestApp, endpoint: &NewEndpoint<'_>) -> u64 {
    use petstore::ratelimit::keys::{KeyStore, NewApiKey};
    use petstore::ratelimit::plan::Plan;
    use petstore::records::{Id, Role};
    let keys = KeyStore::new(app.app.db.client().clone(), &app.app.config.table_name);
    if let Some(id) = Id::new(endpoint.owner_id) {
        if keys.exists(id).await.expect("a key look-up") {
            return endpoint.owner_id;
        }
    }
    let role = match endpoint.role {
        "staff" => Role::Staff,
        _ => Role::Customer,
    };
    let new = NewApiKey::new(Plan::Pro, None, Some("webhook owner".into()))
        .expect("a pro key")
        .with_role(role);
    let issued = keys.create(new, chrono::Utc::now()).await.expect("a key");
    issued.record.id.get()
}

/// A stored item of endpoint `webhook_id`'s partition as JSON (the
/// endpoint, `ENDPOINT`, or one of its slots).
pub async fn item(app: &TestApp, webhook_id: u64, sort: &str) -> Option<Value> {
    let key = std::collections::HashMap::from([
        (
            "PK".to_string(),
            AttributeValue::S(format!("WEBHOOK#{webhook_id}")),
        ),
        ("SK".to_string(), AttributeValue::S(sort.to_string())),
    ]);
    item_at(app, key).await
}

/// The item under `key`, read consistently, as JSON.
async fn item_at(
    app: &TestApp,
    key: std::collections::HashMap<String, AttributeValue>,
) -> Option<Value> {
    let got = app
        .app
        .db
        .client()
        .get_item()
        .table_name(&app.app.config.table_name)
        .set_key(Some(key))
        .consistent_read(true)
        .send()
        .await
        .expect("GetItem");
    got.item
        .map(|item| serde_dynamo::from_item(item).expect("an item reads as JSON"))
}

/// The delivery of `event_id` to `webhook_id`, once `done` holds for it.
pub async fn delivery_when(
    app: &TestApp,
    webhook_id: u64,
    event_id: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        let delivery = delivery_item(app, webhook_id, event_id).await;
        match delivery {
            Some(delivery) if done(&delivery) => return delivery,
            last if tokio::time::Instant::now() > deadline => {
                panic!("delivery {webhook_id}/{event_id}: {last:?}")
            }
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// A pet `app` (staff) creates with `quantity` in stock, for orders to take.
pub async fn pet_in_stock(app: &TestApp, quantity: usize) -> u64 {
    let dogs = app.create_category("Dogs").await;
    let rex = app.create_pet("Rex", dogs, "available").await;
    app.put(
        &format!("/store/inventory/{rex}"),
        json!({"quantity": quantity}),
    )
    .await
    .assert_status(200);
    rex
}

/// An event as EventBridge hands it to the events queue.
pub fn bus_event(detail_type: &str, detail: Value) -> Value {
    json!({
        "version": "0", "id": "0b7c2e7a-0000-4000-8000-000000000000", "detail-type": detail_type,
        "source": "petstore", "account": "000000000000", "time": "2026-11-26T20:00:00Z",
        "region": "us-east-1", "resources": [], "detail": detail,
    })
}

/// A stock change's event, delivered to staff endpoints.
pub fn stock_event(event_id: &str) -> Value {
    bus_event(
        "StockChanged",
        json!({"petId": 1, "quantity": 2, "previousQuantity": 3, "eventId": event_id,
               "occurredAt": "2026-11-26T20:00:00.000Z", "sequence": "1"}),
    )
}

/// An order's placing, owned by key `owner`.
pub fn order_event(event_id: &str, owner: u64) -> Value {
    bus_event(
        "OrderPlaced",
        json!({"order": {"id": 7, "petId": 1, "quantity": 1, "complete": false, "ownerId": owner},
               "eventId": event_id, "occurredAt": "2026-11-26T20:00:00.000Z", "sequence": "1"}),
    )
}

pub fn system_resolver() -> Arc<dyn Resolve> {
    Arc::new(SystemResolver)
}

pub fn scripted() -> Arc<ScriptedResolver> {
    Arc::new(ScriptedResolver::default())
}

/// A staff endpoint on a Rust receiver (secret `secret`, answering
/// `answers`), registered under `make run`'s rules, and a deliverer that
/// has fanned `event_id` out to it.
pub struct OneEndpoint {
    pub receiver: receivers::Receiver,
    pub id: u64,
    pub deliverer: Arc<Deliverer>,
}

pub async fn one_endpoint(
    app: &TestApp,
    answers: Vec<receivers::Answer>,
    failing_since: Option<String>,
    event_id: &str,
) -> OneEndpoint {
    let secret = petstore::webhooks::sign::new_secret();
    let receiver = receivers::rust_receiver(&[&secret], answers).await;
    let mut endpoint = NewEndpoint::new(1, "staff", &receiver.url, &secret);
    endpoint.failing_since = failing_since;
    let resolver = system_resolver();
    let id = register(app, &endpoint, &LOCAL, resolver.as_ref()).await;
    let deliverer = deliverer(app, LOCAL, resolver);
    deliverer
        .fan_out(&stock_event(event_id))
        .await
        .expect("fanned out");
    OneEndpoint {
        receiver,
        id,
        deliverer,
    }
}
