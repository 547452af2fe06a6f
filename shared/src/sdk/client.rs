//! The one wrapper around the SDK's HTTP client that every SDK client of
//! ours sends through ([`crate::http_client`]): each [`Around`] sees every
//! call a client makes, synchronously in the task that awaits the call, and
//! sends it on to the client it wraps, holds it, or answers it itself.
//!
//! What goes around is [`super::gate`]'s (a request's calls held until its
//! count admits it), [`super::dry_run`]'s (the warm-up's calls
//! answered in the process) and [`crate::telemetry`]'s (a request's calls
//! counted): each only says what it does with one call, and this module
//! carries the SDK's client and connector plumbing for all of them.

use aws_sdk_dynamodb::config::{HttpClient, RuntimeComponents, SharedHttpClient};
use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use std::fmt::Debug;
use std::sync::Arc;

/// What a wrapper does with each call.
pub trait Around: Debug + Send + Sync + 'static {
    /// Sends `request` through `inner`, later or at once, or answers it.
    fn call(&self, inner: &SharedHttpConnector, request: HttpRequest) -> HttpConnectorFuture;
}

/// `inner`, each of its calls going through `around` first.
pub fn wrap<A: Around>(inner: SharedHttpClient, around: A) -> SharedHttpClient {
    SharedHttpClient::new(Client {
        inner,
        around: Arc::new(around),
    })
}

/// The DynamoDB operation a call names (`GetItem`, from its `X-Amz-Target`
/// `DynamoDB_20120810.GetItem`); empty for a call that names none.
pub fn operation(request: &HttpRequest) -> &str {
    let target = request.headers().get("x-amz-target").unwrap_or_default();
    target.rsplit('.').next().unwrap_or_default()
}

#[derive(Debug)]
struct Client<A> {
    inner: SharedHttpClient,
    around: Arc<A>,
}

impl<A: Around> HttpClient for Client<A> {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(Connector {
            inner: self.inner.http_connector(settings, components),
            around: self.around.clone(),
        })
    }
}

#[derive(Debug)]
struct Connector<A> {
    inner: SharedHttpConnector,
    around: Arc<A>,
}

impl<A: Around> HttpConnector for Connector<A> {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        self.around.call(&self.inner, request)
    }
}
