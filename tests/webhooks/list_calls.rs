//! `GET /webhooks` reads its page in one query of the list's index (issue
//! 47): layout 2's list indexes carry whole items, so no batch read of the
//! items follows; layout 1's do not hold a webhook's fields, so there the
//! keys' query is followed by one batch read. Neither read asks for the
//! sealed secrets, which a list never opens. Counted by the proxy between
//! the service and DynamoDB Local.

use super::{register, RECEIVER};
use crate::helpers::TestApp;
use crate::idempotency::proxy::{Call, FaultMix, FaultProxy};
use serde_json::json;

/// The list's reads of the data table among the calls after the first
/// `since`: its queries and batch reads of webhook items (the key states
/// `receiving` reads for the answer, `APIKEY` items, are not the list's).
fn list_reads(app: &TestApp, proxy: &FaultProxy, since: usize) -> Vec<Call> {
    proxy
        .calls()
        .into_iter()
        .skip(since)
        .filter(|call| call.reaches(&app.app.config.table_name))
        .filter(|call| call.operation == "Query" || call.operation == "BatchGetItem")
        .filter(|call| !call.body.contains("APIKEY"))
        .collect()
}

/// Three endpoints of a customer, and the customer and staff each listing
/// them through a proxy that counts the calls; answers the read calls of
/// the customer's first page of 2, its second page, and staff's page.
async fn listed_pages(app: TestApp) -> [Vec<Call>; 3] {
    let customer = app.as_customer().await;
    let mut ids = Vec::new();
    for n in 0..3 {
        let body = json!({"url": RECEIVER, "description": format!("hook {n}")});
        let created = register(&customer, body).await;
        ids.push(created["id"].as_u64().expect("a webhook id"));
    }
    ids.reverse();
    let proxy = FaultProxy::start(&app.endpoint, FaultMix::NONE, 1).await;
    let customer_through = customer.instance_reaching(&proxy.endpoint).await;
    let staff_through = app.instance_reaching(&proxy.endpoint).await;

    let before = proxy.calls().len();
    let first = customer_through.get("/webhooks?limit=2").await;
    first.assert_status(200);
    let first_reads = list_reads(&app, &proxy, before);
    assert_eq!(first.ids(), ids[..2], "newest first, a page of 2");
    let next = first.next_page().expect("a next page");

    let before = proxy.calls().len();
    let second = customer_through.get(&next).await;
    second.assert_status(200);
    let second_reads = list_reads(&app, &proxy, before);
    let rest = second.json();
    assert_eq!(rest[0]["id"].as_u64(), Some(ids[2]), "{rest}");
    assert_eq!(rest[0]["description"], "hook 0", "{rest}");
    assert!(rest[0].get("secret").is_none(), "{rest}");

    let before = proxy.calls().len();
    let every = staff_through.get("/webhooks").await;
    every.assert_status(200);
    let staff_reads = list_reads(&app, &proxy, before);
    assert_eq!(every.json().as_array().map(Vec::len), Some(3));
    [first_reads, second_reads, staff_reads]
}

fn operations(reads: &[Call]) -> Vec<&str> {
    reads.iter().map(|call| call.operation.as_str()).collect()
}

/// No read of the list names the endpoints' `secrets` (each attribute a
/// list reads is named in its projection).
fn assert_no_secrets_read(reads: &[Call]) {
    for call in reads {
        assert!(
            call.body.contains("ProjectionExpression"),
            "a list read names what it reads: {}",
            call.body
        );
        assert!(
            !call.body.contains("secrets"),
            "a list read asks for the secrets: {}",
            call.body
        );
    }
}

#[tokio::test]
async fn a_webhook_list_page_is_one_query_without_the_secrets() {
    let pages = listed_pages(TestApp::spawn().await).await;
    for reads in &pages {
        assert_eq!(operations(reads), ["Query"]);
        assert_no_secrets_read(reads);
    }
}

#[tokio::test]
async fn on_layout_1_a_webhook_list_page_reads_the_keys_then_the_items_without_the_secrets() {
    let app = TestApp::spawn_with(|name| (name == "DATA_LAYOUT").then(|| "1".to_string())).await;
    assert_eq!(app.app.db.layout(), petstore::db::Layout::V1);
    let pages = listed_pages(app).await;
    for reads in &pages {
        assert_eq!(operations(reads), ["Query", "BatchGetItem"]);
        assert_no_secrets_read(reads);
    }
}
