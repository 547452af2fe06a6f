//! `GET /webhooks` reads its page in one query of the list's index (issue
//! 47): layout 2's list indexes carry whole items, so no batch read of the
//! items follows; layout 1's do not hold a webhook's fields, so there the
//! keys' query is followed by one batch read. Neither read asks for the
//! sealed secrets, which a list never opens. And both webhook lists keep
//! to section 2's bound, in stated calls (issue 61): a staff page of a
//! hundred owners' endpoints reads their keys and bans together, and a
//! deliveries page queries each partition once and at most 16 more.
//! Counted by the proxy between the service and DynamoDB Local.

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

/// Tries a measurement of round trips at most this often, keeping the
/// fewest (as `abuse::round_trips` does): a chain the code makes shows in
/// every try, a loaded machine can only lengthen one.
const TRIES: usize = 3;

/// Whether `call` is the wrapper's, not the page's: the limiter's count of
/// the request, or the caller's key looked up again (its cache lapsed on a
/// slow machine).
fn is_the_wrapper_s(app: &TestApp, call: &Call) -> bool {
    (call.operation == "UpdateItem" && call.reaches(&app.rate_limit_table_name))
        || (call.operation == "GetItem" && call.body.contains("APIKEY#"))
}

/// The page's own calls of one `GET path` through `app` (every call
/// `proxy` received meanwhile but the wrapper's), their round trips one
/// after another, the fewest of [`TRIES`], and that try's answer.
async fn page_calls(
    app: &TestApp,
    proxy: &FaultProxy,
    path: &str,
) -> (Vec<Call>, usize, crate::helpers::TestResponse) {
    let mut fewest: Option<(Vec<Call>, usize, crate::helpers::TestResponse)> = None;
    for _ in 0..TRIES {
        let before = proxy.calls().len();
        let page = app.get(path).await;
        page.assert_status(200);
        let calls: Vec<Call> = proxy
            .calls()
            .into_iter()
            .skip(before)
            .filter(|c| !is_the_wrapper_s(app, c))
            .collect();
        let rounds = crate::idempotency::proxy::sequential_round_trips(&calls);
        if fewest.as_ref().is_none_or(|(_, f, _)| rounds < *f) {
            fewest = Some((calls, rounds, page));
        }
    }
    fewest.expect("tried")
}

fn count(calls: &[Call], operation: &str) -> usize {
    calls.iter().filter(|c| c.operation == operation).count()
}

#[tokio::test]
async fn a_staff_page_of_a_hundred_owners_endpoints_reads_their_keys_and_bans_in_a_bounded_number_of_calls(
) {
    use crate::webhooks_delivery::{
        register as store_endpoint, system_resolver, NewEndpoint, LOCAL,
    };
    use aws_sdk_dynamodb::types::AttributeValue;
    use petstore::ratelimit::keys::KeyStore;
    use petstore::ratelimit::Plan;
    // Given 100 customer keys with one endpoint each, one key revoked and
    // one banned
    let app = TestApp::spawn().await;
    // Made twenty at once: the set-up is not what is measured.
    let mut owners = Vec::new();
    for _ in 0..5 {
        let made = (0..20).map(|_| app.create_key(Plan::Pro, None));
        let made = futures::future::join_all(made).await;
        owners.extend(made.into_iter().map(|key| key.record.id.get()));
    }
    let resolver = system_resolver();
    let secret = petstore::webhooks::sign::new_secret();
    for chunk in owners.chunks(20) {
        let stored = chunk.iter().map(|owner| {
            let endpoint =
                NewEndpoint::new(*owner, "customer", "http://127.0.0.1:9999/hooks", &secret);
            let resolver = resolver.clone();
            let app = &app;
            async move { store_endpoint(app, &endpoint, &LOCAL, resolver.as_ref()).await }
        });
        futures::future::join_all(stored).await;
    }
    let (revoked, banned) = (owners[10], owners[20]);
    let keys = KeyStore::new(app.app.db.client().clone(), &app.app.config.table_name);
    let id = |owner| petstore::records::Id::new(owner).expect("an id");
    keys.revoke(id(revoked)).await.expect("revoked");
    let until = chrono::Utc::now() + chrono::Duration::hours(1);
    app.app
        .db
        .client()
        .put_item()
        .table_name(&app.rate_limit_table_name)
        .item("PK", AttributeValue::S(format!("LIMIT#key:{banned}")))
        .item(
            "bannedUntil",
            AttributeValue::N(until.timestamp().to_string()),
        )
        .send()
        .await
        .expect("the ban is stored");
    let proxy = FaultProxy::start(&app.endpoint, FaultMix::NONE, 1).await;
    let staff = app.instance_reaching(&proxy.endpoint).await;
    staff.get("/pets?limit=1").await.assert_status(200); // the key, cached

    // When staff reads them in one page
    let (calls, rounds, page) = page_calls(&staff, &proxy, "/webhooks?limit=100").await;

    // Then each is shown as its key stands
    let body = page.json();
    let listed = body.as_array().expect("an array");
    assert_eq!(listed.len(), 100);
    for endpoint in listed {
        let owner = endpoint["ownerId"].as_u64().unwrap_or_default();
        let reason = match owner {
            o if o == revoked => Some("key_revoked"),
            o if o == banned => Some("key_banned"),
            _ => None,
        };
        assert_eq!(endpoint["receiving"], reason.is_none(), "{endpoint}");
        assert_eq!(
            endpoint["notReceivingReason"].as_str(),
            reason,
            "{endpoint}"
        );
    }
    // And the page is the list's query, one look-up of each owner's key on
    // the keys' index, one batch read of the keys and one of the bans: 103
    // calls (was a query, a key read and a ban read per owner, one after
    // another: 301), within section 2's 10 round trips
    let operations: Vec<&str> = calls.iter().map(|c| c.operation.as_str()).collect();
    assert_eq!(count(&calls, "Query"), 101, "{operations:?}");
    assert_eq!(count(&calls, "BatchGetItem"), 2, "{operations:?}");
    assert_eq!(calls.len(), 103, "{operations:?}");
    println!(
        "a staff page of 100 owners' endpoints: {} calls, {rounds} round trips",
        calls.len()
    );
    assert!(rounds <= 10, "{rounds} round trips: {operations:?}");
}

#[tokio::test]
async fn a_deliveries_page_over_128_partitions_is_at_most_144_queries_in_10_round_trips() {
    use petstore::webhooks::deliveries::{self, NewDelivery, Start};
    use petstore::webhooks::types::EventType;
    // Given an endpoint of 128 delivery partitions, 40 of which hold 6
    // deliveries each, each partition's older than the one before: a first
    // round of 5 a partition leaves the page unsettled with 40 partitions
    // that may still add to it
    let app =
        TestApp::spawn_with(|name| (name == "WEBHOOK_DELIVERY_SHARDS").then(|| "128".to_string()))
            .await;
    let id = super::register_default(&app).await;
    let newest = chrono::Utc::now();
    let mut expected = Vec::new();
    // A partition's six stored at once, one partition after another.
    for shard in 0..40_u16 {
        let stored = (0..6_i64).map(|j| {
            let at = newest - chrono::Duration::milliseconds(i64::from(shard) * 10 + j);
            let event_id = (0..)
                .map(|n| deliveries::timed_event_id(at, &format!("p{shard}-{j}-{n}")))
                .find(|event_id| deliveries::shard_of_event(event_id, 128) == shard)
                .expect("an id of the shard");
            let app = &app;
            async move {
                let new = NewDelivery {
                    webhook_id: id,
                    shard,
                    event_id: &event_id,
                    event_type: EventType::Ping,
                    body: "{}",
                };
                let (client, table) = (app.app.db.client(), app.app.db.table());
                deliveries::create(client, table, &new, Start::Failed, at)
                    .await
                    .expect("the delivery is stored");
                event_id
            }
        });
        expected.extend(futures::future::join_all(stored).await);
    }
    let proxy = FaultProxy::start(&app.endpoint, FaultMix::NONE, 1).await;
    let staff = app.instance_reaching(&proxy.endpoint).await;
    staff.get("/pets?limit=1").await.assert_status(200); // the key, cached
    let event_ids = |page: &crate::helpers::TestResponse| -> Vec<String> {
        let body = page.json();
        let listed = body.as_array().cloned().unwrap_or_default();
        listed
            .iter()
            .map(|d| d["eventId"].as_str().unwrap_or_default().to_string())
            .collect()
    };

    // When the newest 5 are read, then the 5 after them
    let first = format!("/webhooks/{id}/deliveries?limit=5");
    let (calls, rounds, page) = page_calls(&staff, &proxy, &first).await;
    let next = page.next_page().expect("a next page");
    let (next_calls, next_rounds, next_page) = page_calls(&staff, &proxy, &next).await;

    // Then each page is the next 5, newest first
    assert_eq!(event_ids(&page), expected[..5].to_vec());
    assert_eq!(event_ids(&next_page), expected[5..10].to_vec());
    // And each reads the endpoint, every partition once and at most 16 of
    // them again (the unbounded rounds queried all 40 again: 168), within
    // 10 round trips (the endpoint, 8 of 16 partitions, one more)
    for (calls, rounds) in [(calls, rounds), (next_calls, next_rounds)] {
        let queries = count(&calls, "Query");
        assert!((128..=144).contains(&queries), "{queries} queries");
        assert_eq!(calls.len(), queries + 1, "the endpoint's GetItem beside");
        println!("a deliveries page over 128 partitions: {queries} queries, {rounds} round trips");
        assert!(rounds <= 10, "{rounds} round trips, {queries} queries");
    }
}
