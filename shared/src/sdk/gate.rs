//! The gate between a request's count and its handler's DynamoDB calls,
//! when the two run side by side (contract section 4: the count and the
//! first read a handler makes may run together; no write starts before the
//! request is admitted).
//!
//! [`within`] runs a handler's future with a [`Gate`]; every SDK client of
//! ours sends through [`http_client`], which, within it, lets a read
//! (`GetItem`, `Query`, `Scan`, `BatchGetItem`, `TransactGetItems`) go out
//! at once only while none of the request's reads has been answered (the
//! first read, or a list page's queries sent together), and holds every
//! other call, every write among them, until [`Gate::open`]. The
//! rate-limit layer ([`crate::http::rate_limit`]) opens it when the count
//! admits the request, and drops
//! the handler's future, calls held and all, when the count refuses. A call
//! outside [`within`] (the count itself, init, tools) goes out as it is.
//!
//! The SDK sends within the future that awaits a call, so the gate sees
//! every call the handler makes and none from another task. It lives here,
//! under the layers that call DynamoDB ([`crate::db`], [`crate::ratelimit`],
//! [`crate::webhooks`]), which hold no gate of their own: their calls within
//! a handler are held here, as `db/`'s documentation says.

use super::client::{self, Around};
use aws_sdk_dynamodb::config::SharedHttpClient;
use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorFuture, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::watch;

tokio::task_local! {
    /// The gate of the handler being served while its request is counted.
    static GATE: Gate;
}

/// One request's gate: shut until its count admits it.
#[derive(Clone, Debug)]
pub struct Gate(Arc<State>);

#[derive(Debug)]
struct State {
    /// `true` once the request is admitted.
    open: watch::Sender<bool>,
    /// Whether one of the request's reads has been answered: from then on a
    /// read waits for the gate too.
    read_answered: AtomicBool,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate(Arc::new(State {
            open: watch::Sender::new(false),
            read_answered: AtomicBool::new(false),
        }))
    }
}

impl Gate {
    /// Lets the request's calls go: it is admitted.
    pub fn open(&self) {
        self.0.open.send_replace(true);
    }

    /// Waits until the request is admitted; an error if the gate is gone
    /// shut (its request refused while a call was still waiting).
    async fn admitted(&self) -> Result<(), ConnectorError> {
        let mut open = self.0.open.subscribe();
        let admitted = open.wait_for(|open| *open).await.is_ok();
        if admitted {
            Ok(())
        } else {
            Err(ConnectorError::other(
                "the request was not admitted".into(),
                None,
            ))
        }
    }

    /// Whether a call of `operation` may go out before the request is admitted.
    fn lets_through(&self, operation: &str) -> bool {
        is_read(operation) && !self.0.read_answered.load(Ordering::Acquire) && !self.is_open()
    }

    fn is_open(&self) -> bool {
        *self.0.open.borrow()
    }
}

/// `handler`, its calls held by `gate` (see the module's documentation).
pub async fn within<F: Future>(gate: Gate, handler: F) -> F::Output {
    GATE.scope(gate, handler).await
}

/// DynamoDB's operations that read and write nothing.
fn is_read(operation: &str) -> bool {
    matches!(
        operation,
        "GetItem" | "Query" | "Scan" | "BatchGetItem" | "TransactGetItems"
    )
}

/// `inner`, each call within [`within`] held by its gate.
pub fn http_client(inner: SharedHttpClient) -> SharedHttpClient {
    client::wrap(inner, Gated)
}

#[derive(Debug)]
struct Gated;

impl Around for Gated {
    fn call(&self, inner: &SharedHttpConnector, request: HttpRequest) -> HttpConnectorFuture {
        let Ok(gate) = GATE.try_with(Gate::clone) else {
            return inner.call(request);
        };
        if gate.is_open() {
            return inner.call(request);
        }
        let inner = inner.clone();
        if gate.lets_through(client::operation(&request)) {
            return HttpConnectorFuture::new(async move {
                let answered = inner.call(request).await;
                gate.0.read_answered.store(true, Ordering::Release);
                answered
            });
        }
        HttpConnectorFuture::new(async move {
            gate.admitted().await?;
            inner.call(request).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reads_go_out_before_admission_and_only_the_first_round() {
        let gate = Gate::default();
        for write in [
            "PutItem",
            "UpdateItem",
            "DeleteItem",
            "TransactWriteItems",
            "SendMessage",
        ] {
            assert!(!gate.lets_through(write), "{write}");
        }
        assert!(gate.lets_through("GetItem"));
        assert!(gate.lets_through("Query"));
        gate.0.read_answered.store(true, Ordering::Release);
        assert!(!gate.lets_through("Query"), "a second round waits");
        gate.open();
        assert!(gate.is_open());
    }
}
