//! The pet store's shared crate: everything the Lambda functions use.
//!
//! # Layers
//!
//! Imports run down this table, never up it nor across a line: a module
//! uses only the modules on the lines below its own (`crate` is this file's
//! own items, [`App`] and the client constructors). `make check-circles`
//! reads the table and fails on any other reference between two modules, in
//! code and tests alike, and on a module left off it.
//!
//! ```text
//! http
//! warm_up
//! crate
//! index_reads_tests
//! webhooks
//! ratelimit
//! config
//! db
//! rules
//! records
//! aws_env
//! sdk_config
//! telemetry
//! sdk
//! metrics aws_calls
//! ```
//!
//! From the top:
//!
//! - [`http`]: the edge: request extractors, the one mapping of every error
//!   to the Error record ([`http::error`]), responses, and the wrapper every
//!   response passes through (which applies [`ratelimit`]);
//! - [`warm_up`]: a function's once-per-process work, run through the
//!   function's service; the edge knows its marked request;
//! - [`App`]: what every handler needs, built once per process;
//! - [`webhooks`] (contract section 9): endpoints, deliveries and receiving,
//!   on [`records`], [`db`]'s client and [`ratelimit`]'s key store, nothing
//!   of the HTTP edge;
//! - [`ratelimit`]: API keys, and counting requests against their limits;
//! - [`config`]: the settings read from the environment;
//! - [`db`]: DynamoDB items and expressions that apply the rules atomically
//!   ([`db::DbError`]);
//! - [`rules`]: the stock, order and status rules, as pure functions
//!   ([`rules::RuleViolation`] when the state forbids a change);
//! - [`records`]: the contract's records, and types that can only hold valid
//!   values ([`records::ValidationError`] when they cannot);
//! - the SDK's side, under them all: [`aws_env`] (AWS settings from a
//!   function's environment), [`sdk_config`] (what our DynamoDB clients add
//!   to the SDK's configuration), [`telemetry`] (logging, and each call
//!   counted in its request), [`sdk`] (the HTTP client every SDK client of
//!   ours sends through: the gate that holds a handler's calls until its
//!   request is admitted, the warm-up's dry run), [`metrics`] (the
//!   service's own CloudWatch metrics) and [`aws_calls`] (the record of AWS
//!   calls `make iam-check` evaluates).
//!
//! The routes are not here: each Lambda function's crate owns its own
//! (`functions/pets`, `functions/store`, `functions/webhooks`), and its
//! `main` only builds an [`App`] and serves [`http::service`] of its routes
//! (`lambda_http`).

pub mod aws_calls;
pub mod aws_env;
pub mod config;
pub mod db;
pub mod http;
pub mod metrics;
pub mod ratelimit;
pub mod records;
pub mod rules;
pub mod sdk;
pub mod sdk_config;
pub mod telemetry;
pub mod warm_up;
pub mod webhooks;

#[cfg(test)]
mod index_reads_tests;

use aws_sdk_dynamodb::Client;
use config::Config;
use db::{Db, DbError};
use ratelimit::Clock;
use ratelimit::RateLimiter;
use std::sync::Arc;

/// What every handler needs, built once per process (cold start).
#[derive(Clone)]
pub struct App {
    inner: Arc<AppInner>,
    metrics: metrics::Emitter,
}

pub struct AppInner {
    pub config: Config,
    pub db: Db,
    /// API keys and rate limits; see [`ratelimit`].
    pub limiter: RateLimiter,
}

impl std::ops::Deref for App {
    type Target = AppInner;
    fn deref(&self) -> &AppInner {
        &self.inner
    }
}

impl App {
    pub fn new(config: Config, client: Client) -> App {
        App::with_clock(config, client, Arc::new(ratelimit::SystemClock))
    }

    /// An app whose rate limiter reads the time from `clock` (tests pin it).
    pub fn with_clock(config: Config, client: Client, clock: Arc<dyn Clock>) -> App {
        aws_calls::name_resources(&[
            ("TABLE_NAME", &config.table_name),
            ("RATE_LIMIT_TABLE_NAME", &config.rate_limit_table_name),
        ]);
        let limiter = RateLimiter::new(
            client.clone(),
            &config.table_name,
            &config.rate_limit_table_name,
            config.limits.clone(),
            clock,
        )
        .with_layout(config.data_layout);
        let db = Db::new(client, config.table_name.clone())
            .with_shards(config.shards)
            .with_hold(config.hold)
            .with_layout(config.data_layout);
        App {
            inner: Arc::new(AppInner {
                config,
                db,
                limiter,
            }),
            metrics: metrics::Emitter::off(),
        }
    }

    /// This app, writing its metrics lines through `emitter` (the default
    /// writes none: each Lambda function's `main` asks for stdout).
    pub fn with_metrics(self, emitter: metrics::Emitter) -> App {
        App {
            metrics: emitter,
            ..self
        }
    }

    /// Where this app's metrics lines go.
    pub fn metrics(&self) -> &metrics::Emitter {
        &self.metrics
    }

    /// Reads configuration from the environment and AWS settings by the
    /// SDK's whole chain (profiles, SSO, ...): for tools run by people.
    pub async fn from_env() -> Result<App, Box<dyn std::error::Error + Send + Sync>> {
        let config = Config::from_env()?;
        let aws = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .http_client(http_client())
            .load()
            .await;
        Ok(App::with_aws(config, &aws))
    }

    /// A function's: configuration and AWS settings from its environment
    /// alone ([`aws_env`]), without I/O.
    pub fn from_function_env() -> Result<App, Box<dyn std::error::Error + Send + Sync>> {
        let config = Config::from_env()?;
        let aws = aws_env::sdk_config(http_client())?;
        Ok(App::with_aws(config, &aws))
    }

    fn with_aws(config: Config, aws: &aws_config::SdkConfig) -> App {
        let mut client = sdk_config::lean(aws_sdk_dynamodb::config::Builder::from(aws));
        if let Some(recorder) = aws_calls::interceptor() {
            client.push_interceptor(recorder);
        }
        App::new(config, Client::from_conf(client.build()))
    }

    /// Creates the tables unless they exist; for local runs and tests.
    pub async fn create_tables(&self) -> Result<(), DbError> {
        let (client, table) = (self.db.client(), &self.config.table_name);
        db::tables::create_data_table_in(client, table, self.config.data_layout).await?;
        ratelimit::create_counter_table(self.db.client(), &self.config.rate_limit_table_name).await
    }
}

/// The HTTP client of every DynamoDB client of ours: [`sdk::hyper_client`]
/// (hyper and rustls on ring). Within the warm-up's dry run it answers in the
/// process ([`sdk::dry_run`]); within a request counted while it is served,
/// its calls wait for the count as its gate says ([`sdk::gate`]); otherwise
/// it is that client as it is. Each call, answered or sent, is counted in
/// the request that made it ([`telemetry`]).
pub fn http_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    let gated = sdk::gate::http_client(sdk::dry_run::http_client(sdk::hyper_client()));
    telemetry::http_client(gated)
}

/// A client for DynamoDB Local at `endpoint`, with the dummy credentials it accepts.
pub async fn local_client(endpoint: &str) -> Client {
    let credentials =
        aws_sdk_dynamodb::config::Credentials::new("local", "local", None, None, "petstore-local");
    let mut config = sdk_config::lean(aws_sdk_dynamodb::Config::builder())
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(credentials)
        .http_client(http_client());
    if let Some(recorder) = aws_calls::interceptor() {
        config.push_interceptor(recorder);
    }
    Client::from_conf(config.build())
}
