//! In-process overhead: what one request costs in our code (router, wrapper,
//! parsing, the store's request building, JSON both ways) with every DynamoDB
//! call answered at once by a stub inside the SDK's HTTP client slot, so no
//! socket, no DynamoDB and no network time is in the figure.
//!
//! The stub is the bench's alone; tests use real DynamoDB Local.
//!
//! criterion gives the mean and median with confidence intervals; the p99 the
//! target is set on comes from our own loop of individually timed requests
//! after it. Both go to `target/bench/overhead.json` for the runner.

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use axum::body::Body;
use criterion::Criterion;
use http::{Method, Request};
use std::time::{Duration, Instant};
use tower::ServiceExt;

/// Answers each DynamoDB call with a canned, valid response.
#[derive(Debug, Clone)]
struct StubDynamoDb;

fn pet_item(id: u64) -> String {
    let item = serde_json::json!({
        "PK": {"S": format!("PET#{id}")},
        "SK": {"S": "PET"},
        "GSI1PK": {"S": "PET"},
        "GSI2PK": {"S": "PET#STATUS#available"},
        "GSI3PK": {"S": "PET#CATEGORY#7"},
        "id": {"N": id.to_string()},
        "name": {"S": format!("Pet number {id}")},
        "categoryId": {"N": "7"},
        "status": {"S": "available"},
        "stock": {"N": "1000"},
        "openOrders": {"N": "0"},
    });
    item.to_string()
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

fn app() -> petstore::App {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url("http://dynamodb.stub")
        .credentials_provider(Credentials::new("bench", "bench", None, None, "bench"))
        .http_client(StubDynamoDb)
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    let config = petstore::config::Config::from_lookup(|_| None).expect("default configuration");
    petstore::App::new(config, client)
}

/// One request the bench repeats: through a router, or (for reference) one
/// bare SDK call, to tell the SDK's own cost per call from ours.
struct Case {
    name: &'static str,
    sdk: Option<SdkCall>,
    router: axum::Router,
    method: Method,
    path: &'static str,
    body: Option<&'static str>,
}

impl Case {
    fn new(name: &'static str, router: &axum::Router, method: Method, path: &'static str) -> Case {
        Case {
            name,
            sdk: None,
            router: router.clone(),
            method,
            path,
            body: None,
        }
    }

    fn sdk(name: &'static str, router: &axum::Router, call: SdkCall) -> Case {
        Case {
            sdk: Some(call),
            ..Case::new(name, router, Method::GET, "/")
        }
    }

    fn with_body(mut self, body: &'static str) -> Case {
        self.body = Some(body);
        self
    }

    fn request(&self) -> Request<Body> {
        let mut builder = Request::builder()
            .method(self.method.clone())
            .uri(self.path)
            .header("x-api-key", "bench-key-0000000000000000000000000000")
            .header("host", "localhost");
        let body = match self.body {
            Some(body) => {
                builder = builder.header("content-type", "application/json");
                Body::from(body)
            }
            None => Body::empty(),
        };
        builder.body(body).expect("request builds")
    }

    async fn once(&self) -> u16 {
        if let Some(call) = &self.sdk {
            return call.once().await;
        }
        let response = self
            .router
            .clone()
            .oneshot(self.request())
            .await
            .expect("infallible");
        let status = response.status().as_u16();
        // Read the body, as lambda_http and hyper would.
        let _ = http_body_util::BodyExt::collect(response.into_body()).await;
        status
    }
}

/// A bare SDK call against the stub.
enum SdkCall {
    GetItem(aws_sdk_dynamodb::Client),
    UpdateItem(aws_sdk_dynamodb::Client),
    /// A page of 20 pets: the SDK's own parsing of the response, no conversion.
    Query(aws_sdk_dynamodb::Client),
}

impl SdkCall {
    async fn once(&self) -> u16 {
        use aws_sdk_dynamodb::types::AttributeValue::{N, S};
        let ok = match self {
            SdkCall::GetItem(client) => client
                .get_item()
                .table_name("petstore")
                .key("PK", S("PET#1".into()))
                .key("SK", S("PET".into()))
                .consistent_read(true)
                .send()
                .await
                .is_ok(),
            SdkCall::UpdateItem(client) => client
                .update_item()
                .table_name("petstore-ratelimits")
                .key("PK", S("LIMIT#KEY#1".into()))
                .update_expression("ADD minuteCount :one, dayCount :one")
                .expression_attribute_values(":one", N("1".into()))
                .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
                .send()
                .await
                .is_ok(),
            SdkCall::Query(client) => client
                .query()
                .table_name("petstore")
                .index_name("GSI1")
                .key_condition_expression("#pk = :pk")
                .expression_attribute_names("#pk", "GSI1PK")
                .expression_attribute_values(":pk", S("PET".into()))
                .limit(21)
                .send()
                .await
                .is_ok_and(|out| out.items().len() == 20),
        };
        if ok {
            200
        } else {
            500
        }
    }
}

fn cases() -> Vec<Case> {
    let app = app();
    let client = app.db.client().clone();
    let pets = petstore::http::service(pets::routes(), app.clone());
    let store = petstore::http::service(store::routes(), app);
    vec![
        Case::sdk(
            "SDK GetItem alone (reference)",
            &pets,
            SdkCall::GetItem(client.clone()),
        ),
        Case::sdk(
            "SDK UpdateItem alone (reference)",
            &pets,
            SdkCall::UpdateItem(client.clone()),
        ),
        Case::sdk(
            "SDK Query, 20 pets (reference)",
            &pets,
            SdkCall::Query(client),
        ),
        Case::new("404 (wrapper only)", &pets, Method::GET, "/nothing-here"),
        Case::new("GET /pets?limit=20", &pets, Method::GET, "/pets?limit=20"),
        Case::new(
            "GET /pets?ids=(5)",
            &pets,
            Method::GET,
            "/pets?ids=1,2,3,4,5",
        ),
        Case::new(
            "GET /store/inventory?limit=20",
            &store,
            Method::GET,
            "/store/inventory?limit=20",
        ),
        Case::new("POST /pets", &pets, Method::POST, "/pets")
            .with_body("{\"name\":\"Rex\",\"categoryId\":7}"),
        Case::new("POST /store/orders", &store, Method::POST, "/store/orders")
            .with_body("{\"petId\":1,\"quantity\":1}"),
        Case::new(
            "DELETE /store/orders/{id}",
            &store,
            Method::DELETE,
            "/store/orders/9",
        ),
    ]
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn target_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// criterion's median for each case, in µs, from the estimates it saved.
fn criterion_medians() -> std::collections::HashMap<String, f64> {
    let mut medians = std::collections::HashMap::new();
    let Ok(entries) = std::fs::read_dir(target_dir().join("criterion/overhead")) else {
        return medians;
    };
    for entry in entries.flatten() {
        let dir = entry.path().join("new");
        let read = |file: &str| {
            let bytes = std::fs::read(dir.join(file)).ok()?;
            serde_json::from_slice::<serde_json::Value>(&bytes).ok()
        };
        let (Some(meta), Some(estimates)) = (read("benchmark.json"), read("estimates.json")) else {
            continue;
        };
        let name = meta["function_id"].as_str();
        let median_ns = estimates["median"]["point_estimate"].as_f64();
        if let (Some(name), Some(ns)) = (name, median_ns) {
            medians.insert(name.to_string(), ns / 1e3);
        }
    }
    medians
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let cases = cases();
    for case in &cases {
        let status = runtime.block_on(case.once());
        eprintln!("overhead: {} answers {status}", case.name);
    }

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
        .configure_from_args();
    {
        let mut group = criterion.benchmark_group("overhead");
        for case in &cases {
            group.bench_function(case.name, |b| b.to_async(&runtime).iter(|| case.once()));
        }
        group.finish();
    }
    criterion.final_summary();

    // Individually timed requests, for the tail criterion does not report.
    let iterations: usize = std::env::var("BENCH_OVERHEAD_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let medians = criterion_medians();
    let mut benches = serde_json::Map::new();
    for case in &cases {
        let (status, mut sample) = runtime.block_on(async {
            for _ in 0..iterations / 10 {
                case.once().await;
            }
            let mut sample = Vec::with_capacity(iterations);
            let mut status = 0;
            for _ in 0..iterations {
                let t = Instant::now();
                status = case.once().await;
                sample.push(t.elapsed().as_secs_f64() * 1e6);
            }
            (status, sample)
        });
        sample.sort_by(f64::total_cmp);
        let mean = sample.iter().sum::<f64>() / sample.len() as f64;
        let (p50, p99) = (percentile(&sample, 0.50), percentile(&sample, 0.99));
        benches.insert(
            case.name.to_string(),
            serde_json::json!({
                "status": status,
                "iterations": sample.len(),
                "p50_us": p50,
                "p90_us": percentile(&sample, 0.90),
                "p99_us": p99,
                "p999_us": percentile(&sample, 0.999),
                "max_us": sample[sample.len() - 1],
                "mean_us": mean,
                "criterion_median_us": medians.get(case.name),
            }),
        );
        eprintln!(
            "overhead: {:<32} p50 {p50:>7.1} µs  p99 {p99:>7.1} µs  (status {status})",
            case.name
        );
    }
    let out = target_dir().join("bench/overhead.json");
    let _ = std::fs::create_dir_all(out.parent().expect("has a parent"));
    let report = serde_json::json!({
        "runtime": "tokio current_thread, one request at a time",
        "dynamodb": "stub in the SDK's HTTP client slot: no socket, canned responses",
        "benches": benches,
    });
    std::fs::write(
        &out,
        serde_json::to_vec_pretty(&report).expect("serializes"),
    )
    .expect("writes overhead.json");
    eprintln!("overhead: wrote {}", out.display());
}
