//! Calls answered in the process, for the warm-up's own work: every SDK
//! client of ours sends through [`http_client`], which within [`dry`] answers
//! each call at once from here and never reaches the network, and otherwise
//! is the real client untouched.
//!
//! So init runs the SDK's code for each operation the first request makes
//! (its serializer, signing, runtime plugins, its deserializer) and the
//! service's own (routing, every layer, the handler, serde, the log line) at
//! full CPU, without waiting for DynamoDB's round trips or opening a
//! connection for each call made at once: the one real call of init is the
//! one that opens the first request's connection ([`crate::warm_up::start`]).
//!
//! A read finds nothing (an empty item, page or batch); a write is refused
//! as a failed condition would refuse it, so a dry run cannot be taken for
//! a write that happened.

use super::client::{self, Around};
use aws_sdk_dynamodb::config::SharedHttpClient;
use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorFuture, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_types::body::SdkBody;
use std::future::Future;

tokio::task_local! {
    /// Set while the warm-up's dry work runs: its calls are answered here.
    static DRY: ();
}

/// `work`, its SDK calls answered in the process (see the module's
/// documentation). The SDK sends within the future that awaits a call, so
/// this covers every call `work` makes and none from another task.
pub async fn dry<F: Future>(work: F) -> F::Output {
    DRY.scope((), work).await
}

/// `inner`, answering in the process within [`dry`].
pub fn http_client(inner: SharedHttpClient) -> SharedHttpClient {
    client::wrap(inner, Dry)
}

#[derive(Debug)]
struct Dry;

impl Around for Dry {
    fn call(&self, inner: &SharedHttpConnector, request: HttpRequest) -> HttpConnectorFuture {
        if DRY.try_with(|_| ()).is_err() {
            return inner.call(request);
        }
        let (status, body) = answer(client::operation(&request));
        HttpConnectorFuture::ready(Ok(HttpResponse::new(status.into(), SdkBody::from(body))))
    }
}

/// The status and body of `operation`'s dry answer (DynamoDB's JSON
/// protocol; other services' calls, which the warm-up does not make, get an
/// empty object).
fn answer(operation: &str) -> (http::StatusCode, &'static str) {
    use http::StatusCode as S;
    match operation {
        "Query" | "Scan" => (S::OK, r#"{"Count":0,"Items":[],"ScannedCount":0}"#),
        "BatchGetItem" => (S::OK, r#"{"Responses":{},"UnprocessedKeys":{}}"#),
        "PutItem" | "UpdateItem" | "DeleteItem" => (
            S::BAD_REQUEST,
            r#"{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"dry run: nothing is written"}"#,
        ),
        "TransactWriteItems" => (
            S::BAD_REQUEST,
            r#"{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"dry run: nothing is written"}"#,
        ),
        _ => (S::OK, "{}"),
    }
}

#[cfg(test)]
mod tests;
