//! The pet store's shared crate: everything both Lambda functions use.
//!
//! Read it top-down, as the layers depend on each other:
//!
//! 1. [`model`]: the contract's records, and types that can only hold valid values;
//! 2. [`domain`]: the stock, order and status rules, as pure functions;
//! 3. [`store`]: DynamoDB items and expressions that apply those rules atomically;
//! 4. [`ratelimit`]: API keys, and counting requests against their limits;
//! 5. [`http`]: routes, the Error record ([`error`]), and the wrapper that every
//!    response passes through (which applies [`ratelimit`]).
//!
//! A function's `main` only builds an [`App`] and hands
//! [`http::service`] to `lambda_http::run`.

pub mod config;
pub mod domain;
pub mod error;
pub mod http;
pub mod model;
pub mod ratelimit;
pub mod store;
pub mod telemetry;

use aws_sdk_dynamodb::Client;
use config::Config;
use ratelimit::window::Clock;
use ratelimit::RateLimiter;
use std::sync::Arc;
use store::{Store, StoreError};

/// What every handler needs, built once per process (cold start).
#[derive(Clone)]
pub struct App {
    inner: Arc<AppInner>,
}

pub struct AppInner {
    pub config: Config,
    pub store: Store,
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
        let limiter = RateLimiter::new(
            client.clone(),
            &config.table_name,
            &config.rate_limit_table_name,
            config.limits.clone(),
            clock,
        );
        let store = Store::new(client, config.table_name.clone());
        App {
            inner: Arc::new(AppInner {
                config,
                store,
                limiter,
            }),
        }
    }

    /// Reads configuration and AWS settings from the environment. With
    /// credentials in the environment (as in Lambda) this does no I/O.
    pub async fn from_env() -> Result<App, Box<dyn std::error::Error + Send + Sync>> {
        let config = Config::from_env()?;
        let aws = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        Ok(App::new(config, Client::new(&aws)))
    }

    /// Creates the tables unless they exist; for local runs and tests.
    pub async fn create_tables(&self) -> Result<(), StoreError> {
        store::tables::create_data_table(self.store.client(), &self.config.table_name).await?;
        ratelimit::create_counter_table(self.store.client(), &self.config.rate_limit_table_name)
            .await
    }
}

/// A client for DynamoDB Local at `endpoint`, with the dummy credentials it accepts.
pub async fn local_client(endpoint: &str) -> Client {
    let credentials =
        aws_sdk_dynamodb::config::Credentials::new("local", "local", None, None, "petstore-local");
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(credentials)
        .build();
    Client::from_conf(config)
}
