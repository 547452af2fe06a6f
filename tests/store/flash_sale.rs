//! A flash sale: many buyers at once for one pet. Every order's transaction
//! writes that pet's item, so the item is the first partition to reach
//! DynamoDB's limit (docs/partitions.md, "Flash sale"). Under any load nothing is
//! oversold, and past the limit the answer is 503 with `Retry-After`, never
//! a 500.

use super::{inventory, order, pet, set_stock};
use crate::helpers::{TestApp, TestResponse};
use aws_sdk_dynamodb::config::http::{HttpRequest, HttpResponse};
use aws_sdk_dynamodb::config::interceptors::{
    BeforeDeserializationInterceptorContextMut, BeforeTransmitInterceptorContextMut,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::config_bag::{Storable, StoreReplace};
use futures::future::join_all;
use serde_json::json;
use std::collections::HashSet;

/// 503 `SERVICE_UNAVAILABLE` with a `Retry-After` of at least a second.
#[track_caller]
fn assert_retry_later(response: &TestResponse) {
    response.assert_error(503, "SERVICE_UNAVAILABLE");
    let seconds = response
        .header("retry-after")
        .and_then(|s| s.parse::<u64>().ok());
    assert!(seconds.is_some_and(|s| s >= 1), "{:?}", response.headers);
}

#[tokio::test]
async fn a_flash_sale_sells_exactly_the_stock_and_never_answers_500() {
    // Given a pet with 50 units and 20 customers
    let app = TestApp::spawn().await;
    let id = pet(&app, "available").await;
    set_stock(&app, id, 50).await.assert_status(200);
    let customers = join_all((0..20).map(|_| app.as_customer())).await;

    // When 200 orders of one unit arrive at once
    let responses = join_all((0..200).map(|i| {
        let customer = customers[i % customers.len()].clone();
        tokio::spawn(async move { order(&customer, id, 1).await })
    }))
    .await;
    let responses: Vec<TestResponse> = responses
        .into_iter()
        .map(|r| r.expect("task ran"))
        .collect();

    // Then exactly 50 are placed; each other is refused as the state
    // forbids, or told to come back later
    let placed: HashSet<u64> = responses
        .iter()
        .filter(|r| r.status == 201)
        .map(TestResponse::id)
        .collect();
    let statuses: Vec<u16> = responses.iter().map(|r| r.status).collect();
    assert_eq!(placed.len(), 50, "statuses: {statuses:?}");
    for refused in responses.iter().filter(|r| r.status != 201) {
        if refused.status == 503 {
            assert_retry_later(refused);
            continue;
        }
        refused.assert_status(409);
        let code = refused.json()["code"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            code == "INSUFFICIENT_STOCK" || code == "PET_NOT_AVAILABLE",
            "{code}"
        );
    }

    // And the stock is sold exactly: none left, 50 open orders of one unit
    assert_eq!(
        inventory(&app, id).await,
        json!({ "petId": id, "quantity": 0, "status": "pending" })
    );
    let stored = app.app.db.get_pet(petstore_id(id)).await.expect("read");
    assert_eq!(stored.map(|p| (p.stock, p.open_orders)), Some((0, 50)));
    let listed = app
        .get(&format!("/store/orders?petId={id}&limit=100"))
        .await
        .ids();
    assert_eq!(listed.into_iter().collect::<HashSet<_>>(), placed);
}

fn petstore_id(raw: u64) -> petstore::records::Id {
    petstore::records::Id::parse_param(&raw.to_string(), "id").expect("a valid id")
}

/// DynamoDB's answer to a transaction whose item's partition is past its
/// limit. DynamoDB Local never throttles, so this interceptor plays the
/// part: the transaction goes out emptied (DynamoDB refuses it; nothing is
/// written) and its answer comes back as the throttled cancellation.
#[derive(Debug)]
struct HotPartition;

/// Marks an attempt whose answer is to be the throttled cancellation.
#[derive(Debug, Clone)]
struct Throttled;

impl Storable for Throttled {
    type Storer = StoreReplace<Throttled>;
}

const THROTTLED: &str = r#"{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","Message":"Transaction cancelled, please refer cancellation reasons for specific reasons [None, ThrottlingError]","CancellationReasons":[{"Code":"None"},{"Code":"ThrottlingError","Message":"Throughput exceeds the current capacity of your table or index."}]}"#;
const EMPTY_TRANSACTION: &str = r#"{"TransactItems":[]}"#;

fn is_transaction(request: &HttpRequest) -> bool {
    request
        .headers()
        .get("x-amz-target")
        .is_some_and(|target| target.ends_with(".TransactWriteItems"))
}

impl Intercept for HotPartition {
    fn name(&self) -> &'static str {
        "HotPartition"
    }

    fn modify_before_transmit(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if is_transaction(context.request()) {
            let request = context.request_mut();
            *request.body_mut() = SdkBody::from(EMPTY_TRANSACTION);
            let length = EMPTY_TRANSACTION.len().to_string();
            request.headers_mut().insert("content-length", length);
            cfg.interceptor_state().store_put(Throttled);
        }
        Ok(())
    }

    fn modify_before_deserialization(
        &self,
        context: &mut BeforeDeserializationInterceptorContextMut<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if cfg.load::<Throttled>().is_some() {
            let mut throttled = HttpResponse::new(400.try_into()?, SdkBody::from(THROTTLED));
            let headers = throttled.headers_mut();
            headers.insert("content-type", "application/x-amz-json-1.0");
            headers.insert("x-amzn-requestid", "hot-partition");
            *context.response_mut() = throttled;
        }
        Ok(())
    }
}

#[tokio::test]
async fn an_order_on_a_partition_past_its_limit_is_503_with_retry_after_and_sells_nothing() {
    // Given a pet with 5 units, on a DynamoDB that throttles its item's partition
    let app = TestApp::spawn().await;
    let id = pet(&app, "available").await;
    set_stock(&app, id, 5).await.assert_status(200);
    let local = petstore::local_client(&app.endpoint).await;
    let hot = local
        .config()
        .to_builder()
        .interceptor(HotPartition)
        .build();
    let throttled = app.instance_on(
        app.app.config.clone(),
        aws_sdk_dynamodb::Client::from_conf(hot),
    );

    // When an order arrives
    let response = order(&throttled, id, 1).await;

    // Then it is told to come back later, and nothing was sold
    assert_retry_later(&response);
    assert_eq!(
        inventory(&app, id).await,
        json!({ "petId": id, "quantity": 5, "status": "available" })
    );
    let listed = app.get(&format!("/store/orders?petId={id}")).await.ids();
    assert!(listed.is_empty(), "{listed:?}");
}
