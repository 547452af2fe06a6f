//! The pre-traffic check against a store version that cannot read its
//! table's indexes (issue 38, point 3): this code on `DATA_LAYOUT=2` over a
//! table of layout 1 (the switch deployed without the migration; it has no
//! GSI4v2), sent the store's checks exactly as the hook sends them (its API
//! Gateway events, its own short-lived key made by its own code, its
//! verdicts), through the real Lambda path (`lambda_http` turns the event
//! into a request) and the store function's own service.
//!
//! The keyless checks pass that version (a refusal needs no index); the
//! keyed one reads the customer's own orders on the owner index, answers
//! 500 and fails it. The same checks pass the version that reads layout 1.
//!
//! And the key the hook makes is one its role may put: exactly the
//! attributes template.yaml's `dynamodb:Attributes` condition lists (IAM
//! would refuse any other; `make iam-check` proves the condition refuses a
//! role, a key list, limits of its own), a free customer's, in no key list,
//! expiring within the hour.

use crate::deploy::read_yaml;
use crate::helpers::{TestApp, TestResponse};
use aws_sdk_dynamodb::types::AttributeValue;
use petstore::db::Layout;
use petstore::ratelimit::keys::ApiKeyHash;
use petstore::ratelimit::Plan;
use petstore::records::Role;
use petstore_pretraffic::checks::{self, Answer, Check, Function, Probe};
use petstore_pretraffic::{apigw, key};
use std::collections::BTreeSet;

/// What the store function serving `app` answers to `check`, sent as the
/// hook sends it (with `key` when the check is keyed, and the front's
/// `origin` secret when given).
async fn answer(app: &TestApp, check: &Check, key: &str, origin: Option<&str>) -> Answer {
    let Probe::Http { method, path, .. } = check.probe else {
        panic!("{} is not an HTTP check", check.name);
    };
    let key = check.keyed().then_some(key);
    let event = apigw::http_event(
        method,
        &checks::resolved(path),
        "pretraffic-test",
        key,
        origin,
    );
    let request = lambda_http::request::from_str(&event.to_string())
        .expect("the check's event is an API Gateway event");
    let service = petstore::http::service(store::routes(), app.app.clone());
    let response = TestResponse::read(service, request).await;
    let headers = response.headers.iter().map(|(name, value)| {
        let value = value.to_str().unwrap_or_default().to_string();
        (name.as_str().to_ascii_lowercase(), value)
    });
    Answer {
        status: response.status,
        headers: headers.collect(),
        body: String::from_utf8_lossy(&response.body).into_owned(),
    }
}

/// Each store check's verdict on `app`, by whether it is keyed.
async fn verdicts(app: &TestApp, key: &str) -> Vec<(bool, Answer, Result<(), String>)> {
    let mut verdicts = Vec::new();
    for check in checks::of(Function::Store) {
        let origin = app.app.config.origin_secret.as_deref();
        let answer = answer(app, check, key, origin).await;
        let verdict = checks::judge_http(&check.probe, &answer);
        verdicts.push((check.keyed(), answer, verdict));
    }
    verdicts
}

#[tokio::test]
async fn a_version_that_cannot_read_its_indexes_fails_the_keyed_check_only() {
    // A table of layout 1, read by the version of its own layout and by one
    // of layout 2 (whose owner index, GSI4v2, the table does not have).
    let readable = TestApp::spawn_with(|name| (name == "DATA_LAYOUT").then(|| "1".into())).await;
    assert_eq!(readable.app.db.layout(), Layout::V1);
    let unreadable = readable
        .another_instance_with(|config| config.data_layout = Layout::V2)
        .await;
    // The key the hook makes for a run, made by its own code in this table.
    let db = &readable.app.db;
    let key = key::mint(db.client().clone(), db.table())
        .await
        .expect("the check's key is made in DynamoDB Local");

    let passed = verdicts(&readable, &key).await;
    assert!(passed.iter().any(|(keyed, ..)| *keyed));
    for (_, answer, verdict) in &passed {
        assert_eq!(verdict, &Ok(()), "{answer:?}");
    }

    let failed = verdicts(&unreadable, &key).await;
    for (keyed, answer, verdict) in &failed {
        if *keyed {
            assert_eq!(answer.status, 500, "{answer:?}");
            let why = verdict.as_ref().expect_err("the keyed check fails it");
            assert!(why.starts_with("status 500, want 200"), "{why}");
        } else {
            // What the check was before: it would have let this version through.
            assert_eq!(verdict, &Ok(()), "{answer:?}");
        }
    }
}

/// The attribute names template.yaml's PreTrafficFunction may put (its
/// `dynamodb:Attributes` condition).
fn attributes_the_hook_may_put() -> BTreeSet<String> {
    let template = read_yaml("template.yaml");
    let hook = &template["Resources"]["PreTrafficFunction"]["Properties"];
    let statements = hook["Policies"][0]["Statement"]
        .as_sequence()
        .expect("the hook's policy statements");
    let put = statements
        .iter()
        .find(|s| s["Action"].as_str() == Some("dynamodb:PutItem"))
        .expect("a statement allowing the hook's PutItem");
    let allowed = &put["Condition"]["ForAllValues:StringEquals"]["dynamodb:Attributes"];
    allowed
        .as_sequence()
        .expect("a list of attributes")
        .iter()
        .filter_map(|name| name.as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn the_hooks_key_item_has_exactly_the_attributes_its_role_may_put() {
    let app = TestApp::spawn().await;
    let db = &app.app.db;
    let key = key::mint(db.client().clone(), db.table())
        .await
        .expect("the check's key is made in DynamoDB Local");
    let pk = format!("APIKEY#{}", ApiKeyHash::of(&key).as_str());
    let read = db
        .client()
        .get_item()
        .table_name(db.table())
        .key("PK", AttributeValue::S(pk))
        .key("SK", AttributeValue::S("APIKEY".into()))
        .consistent_read(true)
        .send()
        .await
        .expect("the key's item is read");
    let item = read.item.expect("the key's item is stored");
    let names: BTreeSet<String> = item.keys().cloned().collect();
    // IAM would refuse a put with any other attribute: the hook's check
    // would fail every release before its first request.
    assert_eq!(names, attributes_the_hook_may_put());
    // A customer key of the free plan, in no key list, that ends by itself.
    let record = app.app.limiter.keys().find(&ApiKeyHash::of(&key)).await;
    let record = record.ok().flatten().expect("the key is found");
    assert_eq!(record.role, Role::Customer);
    assert_eq!(record.plan, Plan::Free);
    let now = chrono::Utc::now().timestamp();
    let expires_at = record.expires_at.expect("an expiresAt");
    assert!(expires_at > now && expires_at <= now + key::LIFETIME.num_seconds());
    let listed = app.app.limiter.keys().list().await.expect("the key list");
    assert!(listed.iter().all(|listed| listed.id != record.id));
}

#[tokio::test]
async fn behind_the_front_the_checks_send_its_secret_and_pass() {
    // Front=on: every function refuses a request without the front's secret
    // (403), the hook's included unless it sends what CloudFront sends.
    const SECRET: &str = "front-secret-for-the-pretraffic-check-0123";
    let app = TestApp::spawn().await;
    let behind = app
        .another_instance_with(|config| config.origin_secret = Some(SECRET.to_string()))
        .await;
    let db = &behind.app.db;
    let key = key::mint(db.client().clone(), db.table())
        .await
        .expect("the check's key is made in DynamoDB Local");
    for (_, answer, verdict) in verdicts(&behind, &key).await {
        assert_eq!(verdict, Ok(()), "{answer:?}");
    }
    // The event the hook sent before: no secret, every check refused.
    for check in checks::of(Function::Store) {
        let refused = answer(&behind, check, &key, None).await;
        assert_eq!(refused.status, 403, "{}: {refused:?}", check.name);
        assert!(checks::judge_http(&check.probe, &refused).is_err());
    }
}
