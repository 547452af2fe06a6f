//! The test harness: a fresh pet store per test, on real DynamoDB Local,
//! driven through the same router API Gateway requests reach, without a network.
//!
//! ```ignore
//! let app = TestApp::spawn().await;
//! let category = app.create_category("Dogs").await;
//! let response = app.post("/pets", json!({"name": "Rex", "categoryId": category})).await;
//! assert_eq!(response.status, 201);
//! ```
//!
//! DynamoDB Local is started once for the test binary (or taken from
//! `AWS_ENDPOINT_URL_DYNAMODB`); every test gets its own tables, so tests run
//! in parallel without seeing each other's records.

pub mod carried;
pub mod contract;
mod dynamodb;
mod remote;
pub mod schema;

use axum::body::Body;
use axum::extract::ConnectInfo;
use bytes::Bytes;
use dynamodb::dynamodb_endpoint;
use http::{header, HeaderMap, HeaderValue, Method, Request};
use petstore::config::Config;
use petstore::ratelimit::keys::{IssuedKey, NewApiKey};
use petstore::ratelimit::Clock;
use petstore::ratelimit::{Plan, SystemClock};
use petstore::records::Role;
use petstore::App;
use serde_json::Value;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tower::ServiceExt;

/// The header that carries the API key.
pub const API_KEY_HEADER: &str = "x-api-key";

/// The limits of the key every `TestApp` sends by default: an enterprise key
/// no functional test comes near, so only the rate-limit tests meet a limit.
pub const DEFAULT_KEY_LIMITS: (u64, u64) = (1_000_000, 10_000_000);

/// The source address of requests, as the socket would give it locally.
pub const DEFAULT_SOURCE_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));

/// What the webhook routes are given in the tests: a queue that keeps the
/// messages a ping or retry sends, and a resolver whose names the test sets
/// (no DNS), both shared by every instance of one `TestApp`.
#[derive(Clone, Default)]
pub struct TestHooks {
    pub queue: Arc<petstore::webhooks::queue::HeldQueue>,
    pub resolver: Arc<petstore::webhooks::address::ScriptedResolver>,
}

impl TestHooks {
    /// What the webhook routes are given: this queue and resolver, and the
    /// deployed URL policy (no loopback).
    pub fn webhooks(&self) -> webhooks::Webhooks {
        // Secrets sealed with a key made in memory, one per test process.
        petstore::webhooks::secrets::install(petstore::webhooks::secrets::Keyring::ephemeral());
        webhooks::Webhooks {
            queue: self.queue.clone(),
            policy: petstore::webhooks::address::UrlPolicy::default(),
            resolver: self.resolver.clone(),
        }
    }

    /// The router every function serves, merged, as API Gateway reaches them.
    pub fn service(&self, app: &App) -> axum::Router {
        let routes = pets::routes()
            .merge(store::routes())
            .merge(webhooks::routes(self.webhooks()));
        petstore::http::service(routes, app.clone())
    }
}

/// One pet store with its own tables: what a test talks to.
///
/// Cloning is cheap (the app and router are shared), so a test can move clones
/// into `tokio::spawn` to fire concurrent requests.
#[derive(Clone)]
pub struct TestApp {
    /// The app behind the router, for looking at the store directly.
    pub app: App,
    /// The DynamoDB endpoint the app uses.
    pub endpoint: String,
    /// This test's rate-limit table.
    pub rate_limit_table_name: String,
    /// Sent as `X-API-Key` with every request that does not set its own.
    pub api_key: Option<String>,
    /// The id of the key created for this app (the default `api_key`).
    pub key_id: u64,
    /// Where requests come from (the `ConnectInfo` a socket would give).
    pub source_ip: IpAddr,
    /// The clock the rate limiter reads.
    pub clock: Arc<dyn Clock>,
    /// The webhook routes' queue and resolver, shared by its instances.
    pub hooks: TestHooks,
    router: axum::Router,
    /// Set when requests go over the network to a running stack instead.
    remote: Option<remote::Remote>,
}

impl TestApp {
    /// A pet store with default configuration and fresh tables.
    pub async fn spawn() -> TestApp {
        TestApp::spawn_with(|_| None).await
    }

    /// A pet store whose configuration variables are looked up in `overrides`
    /// first (e.g. `BAN_THRESHOLD`, `SUNSET_AT`), then default. The table names
    /// are fresh unless `overrides` names them.
    pub async fn spawn_with(overrides: impl Fn(&str) -> Option<String>) -> TestApp {
        TestApp::spawn_with_clock(overrides, Arc::new(SystemClock)).await
    }

    /// As [`TestApp::spawn_with`], the rate limiter reading the time from
    /// `clock` (a `ManualClock` keeps a test inside one minute window).
    pub async fn spawn_with_clock(
        overrides: impl Fn(&str) -> Option<String>,
        clock: Arc<dyn Clock>,
    ) -> TestApp {
        let endpoint = dynamodb_endpoint().await;
        let suffix = format!("{:016x}", rand::random::<u64>());
        let table_name = format!("t-{suffix}");
        let rate_limit_table_name = format!("t-{suffix}-limits");
        let config = Config::from_lookup(|name| {
            overrides(name).or_else(|| match name {
                "TABLE_NAME" => Some(table_name.clone()),
                "RATE_LIMIT_TABLE_NAME" => Some(rate_limit_table_name.clone()),
                _ => None,
            })
        })
        .expect("test configuration is valid");
        let rate_limit_table_name = config.rate_limit_table_name.clone();
        let app = App::with_clock(
            config,
            petstore::local_client(&endpoint).await,
            clock.clone(),
        );
        app.create_tables()
            .await
            .expect("tables are created in DynamoDB Local");
        TestApp::serving(app, endpoint, rate_limit_table_name, clock, None)
            .with_default_key()
            .await
    }

    /// The running stack `PETSTORE_LAMBDA_URL` names (`make run-lambda`'s:
    /// the function binaries behind `cargo lambda watch`), reached over the
    /// network; `app` reaches its tables (named by the same environment the
    /// functions read) for keys and checks.
    pub async fn on_lambda_stack() -> TestApp {
        let remote = remote::Remote::from_env();
        let endpoint = std::env::var("AWS_ENDPOINT_URL_DYNAMODB")
            .expect("AWS_ENDPOINT_URL_DYNAMODB names the stack's DynamoDB");
        let config = Config::from_env().expect("the stack's configuration is valid");
        let rate_limit_table_name = config.rate_limit_table_name.clone();
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let app = App::with_clock(
            config,
            petstore::local_client(&endpoint).await,
            clock.clone(),
        );
        TestApp::serving(app, endpoint, rate_limit_table_name, clock, Some(remote))
            .with_default_key()
            .await
    }

    /// A keyless `TestApp` for `app`, reached through its router or `remote`.
    fn serving(
        app: App,
        endpoint: String,
        rate_limit_table_name: String,
        clock: Arc<dyn Clock>,
        remote: Option<remote::Remote>,
    ) -> TestApp {
        let hooks = TestHooks::default();
        let router = hooks.service(&app);
        TestApp {
            app,
            hooks,
            endpoint,
            rate_limit_table_name,
            api_key: None,
            key_id: 0,
            source_ip: DEFAULT_SOURCE_IP,
            clock,
            router,
            remote,
        }
    }

    /// This app with its default key: staff's, as most tests exercise the
    /// whole catalogue and order life cycle (role tests make customers with
    /// `as_customer`).
    async fn with_default_key(mut self) -> TestApp {
        let key = self
            .create_key_as(Plan::Enterprise, Some(DEFAULT_KEY_LIMITS), Role::Staff)
            .await;
        self.api_key = Some(key.key);
        self.key_id = key.record.id.get();
        self
    }

    /// Issues a customer's key through the store function the admin tool
    /// uses; `limits` (per minute, per day) only for enterprise.
    pub async fn create_key(&self, plan: Plan, limits: Option<(u64, u64)>) -> IssuedKey {
        self.create_key_as(plan, limits, Role::Customer).await
    }

    /// As [`TestApp::create_key`], a key with `role`.
    pub async fn create_key_as(
        &self,
        plan: Plan,
        limits: Option<(u64, u64)>,
        role: Role,
    ) -> IssuedKey {
        let new = NewApiKey::new(plan, limits, Some("test".into()))
            .expect("the key request is valid")
            .with_role(role);
        self.app
            .limiter
            .keys()
            .create(new, chrono::Utc::now())
            .await
            .expect("the key is stored in DynamoDB Local")
    }

    /// This app, sending a fresh key of `plan` (`limits` for enterprise).
    pub async fn with_new_key(&self, plan: Plan, limits: Option<(u64, u64)>) -> TestApp {
        let key = self.create_key(plan, limits).await;
        TestApp {
            api_key: Some(key.key),
            key_id: key.record.id.get(),
            ..self.clone()
        }
    }

    /// This app, sending a fresh customer's key (with the default limits).
    pub async fn as_customer(&self) -> TestApp {
        let key = self
            .create_key_as(Plan::Enterprise, Some(DEFAULT_KEY_LIMITS), Role::Customer)
            .await;
        TestApp {
            api_key: Some(key.key),
            key_id: key.record.id.get(),
            ..self.clone()
        }
    }

    /// This app, its requests coming from `ip`.
    pub fn with_source_ip(&self, ip: IpAddr) -> TestApp {
        TestApp {
            source_ip: ip,
            ..self.clone()
        }
    }

    /// A second process serving the same tables with the same configuration,
    /// as another Lambda instance would (its own client and in-memory state).
    pub async fn another_instance(&self) -> TestApp {
        self.instance_reaching(&self.endpoint).await
    }

    /// As [`TestApp::another_instance`], reaching DynamoDB at `endpoint`
    /// (a proxy in front of this app's DynamoDB Local, say).
    pub async fn instance_reaching(&self, endpoint: &str) -> TestApp {
        let app = App::with_clock(
            self.app.config.clone(),
            petstore::local_client(endpoint).await,
            self.clock.clone(),
        );
        let router = self.hooks.service(&app);
        TestApp {
            app,
            router,
            endpoint: endpoint.to_string(),
            ..self.clone()
        }
    }

    /// As [`TestApp::another_instance`], its configuration changed by
    /// `change` (e.g. other shard counts over the same tables).
    pub async fn another_instance_with(&self, change: impl FnOnce(&mut Config)) -> TestApp {
        let mut config = self.app.config.clone();
        change(&mut config);
        self.instance_on(config, petstore::local_client(&self.endpoint).await)
    }

    /// A process serving `config` through `client` (e.g. one whose calls a
    /// test intercepts), with this app's clock and key.
    pub fn instance_on(&self, config: Config, client: aws_sdk_dynamodb::Client) -> TestApp {
        let app = App::with_clock(config, client, self.clock.clone());
        let router = self.hooks.service(&app);
        TestApp {
            app,
            router,
            ..self.clone()
        }
    }

    /// This app, sending `key` as `X-API-Key`.
    ///
    /// `spawn` creates an enterprise key with limits no functional test
    /// reaches ([`DEFAULT_KEY_LIMITS`]); tests that need another plan or no key
    /// call [`TestApp::with_new_key`], `with_key` or `without_key`.
    pub fn with_key(&self, key: impl Into<String>) -> TestApp {
        TestApp {
            api_key: Some(key.into()),
            ..self.clone()
        }
    }

    /// This app, sending no `X-API-Key`.
    pub fn without_key(&self) -> TestApp {
        TestApp {
            api_key: None,
            ..self.clone()
        }
    }

    /// Sends `request` through the router, adding the API key unless the
    /// request carries one.
    pub async fn request(&self, mut request: Request<Body>) -> TestResponse {
        if request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .is_none()
        {
            request
                .extensions_mut()
                .insert(ConnectInfo(SocketAddr::new(self.source_ip, 40_000)));
        }
        if let Some(key) = &self.api_key {
            if !request.headers().contains_key(API_KEY_HEADER) {
                let value = HeaderValue::from_str(key).expect("API key is a valid header value");
                request.headers_mut().insert(API_KEY_HEADER, value);
            }
        }
        let (method, path) = (request.method().clone(), request.uri().path().to_string());
        match &self.remote {
            Some(remote) => {
                let response = remote.send(request).await;
                if remote::is_dev_server_answer(&response) {
                    return response;
                }
                response.conforming(&method, &path)
            }
            None => TestResponse::of(self.router.clone(), request).await,
        }
    }

    /// What the app answers to `request`, unchecked against the contract: for
    /// requests no client of the API sends (those that went around the front).
    pub async fn request_unchecked(&self, request: Request<Body>) -> TestResponse {
        TestResponse::read(self.router.clone(), request).await
    }

    /// Sends a request without a body.
    pub async fn send(&self, method: Method, path: &str) -> TestResponse {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .body(Body::empty())
            .expect("request is valid");
        self.request(request).await
    }

    /// Sends `body` as `application/json`.
    pub async fn send_json(&self, method: Method, path: &str, body: &Value) -> TestResponse {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .expect("request is valid");
        self.request(request).await
    }

    pub async fn get(&self, path: &str) -> TestResponse {
        self.send(Method::GET, path).await
    }

    pub async fn delete(&self, path: &str) -> TestResponse {
        self.send(Method::DELETE, path).await
    }

    pub async fn post(&self, path: &str, body: Value) -> TestResponse {
        self.send_json(Method::POST, path, &body).await
    }

    pub async fn put(&self, path: &str, body: Value) -> TestResponse {
        self.send_json(Method::PUT, path, &body).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> TestResponse {
        self.send_json(Method::PATCH, path, &body).await
    }

    /// Creates a category and returns its id.
    pub async fn create_category(&self, name: &str) -> u64 {
        let response = self
            .post("/categories", serde_json::json!({ "name": name }))
            .await;
        response.assert_status(201);
        response.id()
    }

    /// Creates a pet (`status`: `available`, `pending` or `sold`) and returns its id.
    pub async fn create_pet(&self, name: &str, category_id: u64, status: &str) -> u64 {
        let body = serde_json::json!({ "name": name, "categoryId": category_id, "status": status });
        let response = self.post("/pets", body).await;
        response.assert_status(201);
        response.id()
    }
}

/// A response, fully read.
#[derive(Debug, Clone)]
pub struct TestResponse {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl TestResponse {
    /// What `service` answers to `request`, its body read, held to
    /// `openapi.yaml` (see [`TestResponse::conforming`]).
    pub async fn of<B>(service: axum::Router, request: Request<B>) -> TestResponse
    where
        B: axum::body::HttpBody<Data = Bytes> + Send + 'static,
        B::Error: Into<axum::BoxError>,
    {
        let (method, path) = (request.method().clone(), request.uri().path().to_string());
        TestResponse::read(service, request)
            .await
            .conforming(&method, &path)
    }

    /// What `service` answers to `request`, its body read, unchecked.
    pub async fn read<B>(service: axum::Router, request: Request<B>) -> TestResponse
    where
        B: axum::body::HttpBody<Data = Bytes> + Send + 'static,
        B::Error: Into<axum::BoxError>,
    {
        let response = service
            .oneshot(request)
            .await
            .unwrap_or_else(|never| match never {});
        let (parts, body) = response.into_parts();
        let body = axum::body::to_bytes(body, usize::MAX)
            .await
            .expect("response body can be read");
        TestResponse {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
        }
    }

    /// This answer to `method path`, once held to `openapi.yaml`: the
    /// operation documents its status, the body is that status's closed
    /// schema, the required headers are there. Panics naming the operation
    /// (method, path template, status) and each fault.
    pub fn conforming(self, method: &Method, path: &str) -> TestResponse {
        if let Err(faults) = self.contract_faults(method, path) {
            panic!("{faults}");
        }
        self
    }

    /// What [`TestResponse::conforming`] checks, as a result.
    pub fn contract_faults(&self, method: &Method, path: &str) -> Result<(), String> {
        contract::check(method, path, self)
    }

    /// The body as JSON; panics, showing the body, if it is not JSON.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// A header's value, if present and visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Panics, showing the body, unless the status is `expected`.
    #[track_caller]
    pub fn assert_status(&self, expected: u16) {
        assert_eq!(
            self.status,
            expected,
            "unexpected status; body: {}",
            self.text()
        );
    }

    /// Panics unless this is the Error record with `status` and `code`.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str) {
        self.assert_status(status);
        let body = self.json();
        assert_eq!(body["code"], code, "unexpected error code; body: {body}");
        assert_eq!(
            body["status"], status,
            "Error.status must equal the HTTP status; body: {body}"
        );
        assert!(
            body["message"].is_string(),
            "Error.message is required; body: {body}"
        );
    }

    /// The `id` of each record in a JSON array body, in order.
    #[track_caller]
    pub fn ids(&self) -> Vec<u64> {
        let body = self.json();
        body.as_array()
            .unwrap_or_else(|| panic!("body is not an array: {body}"))
            .iter()
            .map(|record| {
                record["id"]
                    .as_u64()
                    .unwrap_or_else(|| panic!("record has no integer id: {record}"))
            })
            .collect()
    }

    /// The URL of the next page, from `Link: <URL>; rel="next"`.
    pub fn next_page(&self) -> Option<String> {
        let link = self.header("link")?;
        let url = link.strip_prefix('<')?.split('>').next()?;
        link.ends_with("rel=\"next\"").then(|| url.to_string())
    }

    /// The `id` field of the JSON body.
    #[track_caller]
    pub fn id(&self) -> u64 {
        let body = self.json();
        body["id"]
            .as_u64()
            .unwrap_or_else(|| panic!("body has no integer id: {body}"))
    }
}

/// The repository root (this crate lives in `tests/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

impl TestApp {
    /// Whether no webhook message is waiting (and takes none).
    pub fn queue_is_empty(&self) -> bool {
        self.hooks.queue.take().is_empty()
    }
}
