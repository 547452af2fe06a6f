use super::*;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};

/// A DynamoDB client at `endpoint` sending through [`http_client`] alone.
fn client_at(endpoint: &str) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(Credentials::new("local", "local", None, None, "test"))
        .http_client(http_client(crate::sdk::hyper_client()))
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

#[tokio::test]
async fn within_dry_a_call_is_answered_in_the_process_and_outside_it_reaches_the_endpoint() {
    // Given a client whose endpoint refuses every connection
    let client = client_at("http://127.0.0.1:9");
    let get = || {
        client
            .get_item()
            .table_name("t")
            .key("PK", aws_sdk_dynamodb::types::AttributeValue::S("k".into()))
            .send()
    };
    let update = || {
        client
            .update_item()
            .table_name("t")
            .key("PK", aws_sdk_dynamodb::types::AttributeValue::S("k".into()))
            .update_expression("SET a = :a")
            .expression_attribute_values(
                ":a",
                aws_sdk_dynamodb::types::AttributeValue::N("1".into()),
            )
            .send()
    };

    // Then within dry a read finds nothing and a write is refused
    let found = dry(get()).await.expect("a dry read is answered");
    assert!(found.item.is_none());
    let refused = dry(update()).await.expect_err("a dry write is refused");
    assert!(refused
        .as_service_error()
        .is_some_and(|e| e.is_conditional_check_failed_exception()));
    // And outside it the same call meets the endpoint
    let error = get().await.expect_err("nothing listens on port 9");
    assert!(error.as_service_error().is_none(), "{error:?}");
}
