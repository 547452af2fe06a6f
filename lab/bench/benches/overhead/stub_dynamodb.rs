//! A DynamoDB in the SDK's HTTP client slot: each call answered at once with
//! a canned, valid response, so no socket, no DynamoDB and no network time is
//! in the figure. The bench's alone; tests use real DynamoDB Local.

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;

/// A DynamoDB client whose every call the stub answers.
pub fn client() -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url("http://dynamodb.stub")
        .credentials_provider(Credentials::new("bench", "bench", None, None, "bench"))
        .http_client(StubDynamoDb)
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

/// Answers each DynamoDB call with a canned, valid response.
#[derive(Debug, Clone)]
struct StubDynamoDb;

/// A pet item as written with a stock item: its stock, open orders and
/// inventory entry are on [`stock_item`], beside it in its partition.
fn pet_item(id: u64) -> String {
    let item = serde_json::json!({
        "PK": {"S": format!("PET#{id}")},
        "SK": {"S": "PET"},
        "GSI1PK": {"S": "PET#0"},
        "GSI2PK": {"S": "PET#STATUS#available#0"},
        "GSI3PK": {"S": "PET#CATEGORY#7"},
        "id": {"N": id.to_string()},
        "name": {"S": format!("Pet number {id}")},
        "categoryId": {"N": "7"},
        "status": {"S": "available"},
    });
    item.to_string()
}

/// Pet `id`'s stock item (`shared/src/db/pets/stock.rs`).
fn stock_item(id: u64) -> String {
    serde_json::json!({
        "PK": {"S": format!("PET#{id}")},
        "SK": {"S": "STOCK"},
        "GSI5PK": {"S": format!("PET#{id}")},
        "id": {"N": id.to_string()},
        "status": {"S": "available"},
        "stock": {"N": "1000"},
        "openOrders": {"N": "0"},
    })
    .to_string()
}

fn category_item() -> String {
    serde_json::json!({
        "PK": {"S": "CATEGORY#7"},
        "SK": {"S": "CATEGORY"},
        "GSI1PK": {"S": "CATEGORY"},
        "id": {"N": "7"},
        "name": {"S": "Dogs"},
        "petCount": {"N": "3"},
    })
    .to_string()
}

fn order_item() -> String {
    serde_json::json!({
        "PK": {"S": "ORDER#9"},
        "SK": {"S": "ORDER"},
        "GSI1PK": {"S": "ORDER"},
        "GSI2PK": {"S": "ORDER#COMPLETE#false"},
        "GSI3PK": {"S": "ORDER#PET#1"},
        "GSI4PK": {"S": "ORDER#OWNER#1"},
        "ownerId": {"N": "1"},
        "id": {"N": "9"},
        "petId": {"N": "1"},
        "quantity": {"N": "1"},
        "complete": {"BOOL": false},
    })
    .to_string()
}

/// The bench's API key: enterprise, with limits it cannot reach.
fn api_key_item() -> String {
    serde_json::json!({
        "PK": {"S": "APIKEY#stub"},
        "SK": {"S": "APIKEY"},
        "GSI1PK": {"S": "APIKEY"},
        "id": {"N": "1"},
        "plan": {"S": "enterprise"},
        "role": {"S": "staff"},
        "perMinute": {"N": "100000000"},
        "perDay": {"N": "1000000000"},
        "name": {"S": "bench"},
        "createdAt": {"S": "2025-01-01T00:00:00.000Z"},
    })
    .to_string()
}

/// Responses built once, so the stub costs a clone per call.
struct Canned {
    get_api_key: String,
    get_pet: String,
    /// `get_pet`'s Query of the pet's partition: its pet and stock items.
    query_pet_partition: String,
    get_category: String,
    get_order: String,
    query_20: String,
    batch_5: String,
}

fn canned() -> &'static Canned {
    static CANNED: std::sync::OnceLock<Canned> = std::sync::OnceLock::new();
    CANNED.get_or_init(|| {
        let pets: Vec<String> = (1..=20).map(pet_item).collect();
        let five: Vec<String> = (1..=5).map(pet_item).collect();
        Canned {
            get_api_key: format!("{{\"Item\":{}}}", api_key_item()),
            get_pet: format!("{{\"Item\":{}}}", pet_item(1)),
            query_pet_partition: format!(
                "{{\"Count\":2,\"ScannedCount\":2,\"Items\":[{},{}]}}",
                pet_item(1),
                stock_item(1)
            ),
            get_category: format!("{{\"Item\":{}}}", category_item()),
            get_order: format!("{{\"Item\":{}}}", order_item()),
            query_20: format!(
                "{{\"Count\":20,\"ScannedCount\":20,\"Items\":[{}]}}",
                pets.join(",")
            ),
            batch_5: format!(
                "{{\"Responses\":{{\"petstore\":[{}]}},\"UnprocessedKeys\":{{}}}}",
                five.join(",")
            ),
        }
    })
}

/// The 20-pet Query answer with only the attributes the request projects, as
/// DynamoDB answers it. Cached per projection, so after the first call the
/// stub's own cost is one substring search.
fn projected_query(body: &[u8]) -> String {
    static ANSWERS: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<Vec<u8>, String>>,
    > = std::sync::OnceLock::new();
    let marker = b"\"ProjectionExpression\":\"";
    let Some(start) = body.windows(marker.len()).position(|w| w == marker) else {
        return canned().query_20.clone();
    };
    let rest = &body[start + marker.len()..];
    let key = rest[..rest.iter().position(|b| *b == b'"').unwrap_or(rest.len())].to_vec();
    let answers = ANSWERS.get_or_init(Default::default);
    let mut answers = answers
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    answers
        .entry(key)
        .or_insert_with(|| {
            let request: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
            let names = &request["ExpressionAttributeNames"];
            let wanted: Vec<String> = request["ProjectionExpression"]
                .as_str()
                .unwrap_or_default()
                .split(',')
                .map(|a| {
                    let a = a.trim();
                    names[a].as_str().unwrap_or(a).to_string()
                })
                .collect();
            let items: Vec<serde_json::Value> = (1..=20)
                .map(|id| {
                    let full: serde_json::Value =
                        serde_json::from_str(&pet_item(id)).unwrap_or_default();
                    let kept: serde_json::Map<String, serde_json::Value> = full
                        .as_object()
                        .into_iter()
                        .flatten()
                        .filter(|(k, _)| wanted.contains(k))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    serde_json::Value::Object(kept)
                })
                .collect();
            serde_json::json!({"Count": 20, "ScannedCount": 20, "Items": items}).to_string()
        })
        .clone()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

impl HttpConnector for StubDynamoDb {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let target = request.headers().get("x-amz-target").unwrap_or("");
        let operation = target.rsplit('.').next().unwrap_or("");
        let body = request.body().bytes().unwrap_or(&[]);
        let c = canned();
        let answer: String = match operation {
            "GetItem" if contains(body, b"\"APIKEY#") => c.get_api_key.clone(),
            "GetItem" if contains(body, b"\"PET#") => c.get_pet.clone(),
            "GetItem" if contains(body, b"\"CATEGORY#") => c.get_category.clone(),
            "GetItem" if contains(body, b"\"ORDER#") => c.get_order.clone(),
            // The table's own key (no index): a pet's partition, which
            // `get_pet` reads whole (every order and stock change does).
            "Query" if !contains(body, b"\"IndexName\"") && contains(body, b"\"PET#") => {
                c.query_pet_partition.clone()
            }
            "Query" => projected_query(body),
            "BatchGetItem" => c.batch_5.clone(),
            "UpdateItem" | "PutItem" | "DeleteItem" => "{\"Attributes\":{}}".into(),
            _ => "{}".into(),
        };
        let status = 200.try_into().expect("200 is a status");
        let mut response =
            aws_smithy_runtime_api::http::Response::new(status, SdkBody::from(answer));
        response
            .headers_mut()
            .insert("content-type", "application/x-amz-json-1.0");
        response.headers_mut().insert("x-amzn-requestid", "stub");
        HttpConnectorFuture::ready(Ok(response))
    }
}

impl HttpClient for StubDynamoDb {
    fn http_connector(
        &self,
        _: &HttpConnectorSettings,
        _: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(self.clone())
    }
}
