//! The `webhooks` function's routes (contract section 9): endpoints,
//! their secrets, a ping, and their deliveries.
//!
//! A handler parses (records), checks the URL's rules where one is sent,
//! calls the database layer (which enforces ownership and the per-plan cap),
//! and answers; every error becomes the Error record through `ApiError`.

mod deliveries;
mod endpoints;

use axum::{Extension, Router};
use petstore::http::error::ApiError;
use petstore::records::ValidationError;
use petstore::webhooks::address::{check_url, Resolve, SystemResolver, UrlPolicy};
use petstore::webhooks::queue::DeliveryQueue;
use petstore::App;
use std::sync::Arc;

/// What the webhook routes need beside the [`App`]: where delivery messages
/// go, and how a URL is checked (the tests give their own resolver, so a
/// name resolves without DNS).
#[derive(Clone)]
pub struct Webhooks {
    pub queue: Arc<dyn DeliveryQueue>,
    pub policy: UrlPolicy,
    pub resolver: Arc<dyn Resolve>,
}

impl Webhooks {
    /// The system's resolver and `WEBHOOKS_ALLOW_LOOPBACK`'s policy.
    pub fn from_env(queue: Arc<dyn DeliveryQueue>) -> Webhooks {
        Webhooks {
            queue,
            policy: UrlPolicy::from_env(),
            resolver: Arc::new(SystemResolver),
        }
    }

    /// `url` under section 9's rules, or 400 `VALIDATION_FAILED` saying why.
    async fn check(&self, url: &str) -> Result<(), ApiError> {
        check_url(url, &self.policy, self.resolver.as_ref())
            .await
            .map(|_| ())
            .map_err(|refusal| ValidationError::new(format!("url {}", refusal.message())).into())
    }
}

/// Every route this function serves (the wrapper and `GET /openapi.json` are
/// added by [`petstore::http::service`]).
pub fn routes(webhooks: Webhooks) -> Router<App> {
    endpoints::routes()
        .merge(deliveries::routes())
        .layer(Extension(webhooks))
}
