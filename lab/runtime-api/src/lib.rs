//! The Lambda Runtime API the lab spawns a function's release `bootstrap`
//! against (`AWS_LAMBDA_RUNTIME_API` names its address), on loopback: what
//! `lab/coldstart` times and `petstore-warm-instructions` counts. The
//! emulator speaks the protocol; what each call does (which event, when,
//! what is timed or counted) is its owner's [`Function`].
//!
//! Served, of the `2018-06-01` API the runtime client speaks:
//! - `GET /2018-06-01/runtime/invocation/next`: the event [`Function::next`]
//!   hands out, with the headers the runtime client reads (request id
//!   `bench-request-<n>`, a deadline 30 s on, the function's ARN, an
//!   unsampled trace id); or no answer ever, as Lambda gives a process with
//!   no more work (frozen or ended in its `next`);
//! - `POST /2018-06-01/runtime/invocation/<id>/response`: the answer, to
//!   [`Function::response`] with its status ([`status_of`]);
//! - `POST /2018-06-01/runtime/invocation/<id>/error` and
//!   `POST /2018-06-01/runtime/init/error`: to [`Function::error`], as is
//!   any other call (a bootstrap that asks anything else is not measured).
//!
//! Every call but `next` is answered `202 {"status":"OK"}`.
//!
//! Not served: response streaming (`Lambda-Runtime-Function-Response-Mode`),
//! the Extensions, Telemetry and Logs APIs, SnapStart's restore calls, the
//! client-context and Cognito-identity headers. Request ids are not checked
//! (an answer is taken for the invocation handed out last: the runtime
//! client asks for one event at a time), the deadline is not enforced, and
//! no payload limit is applied.

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

const NEXT: &str = "/2018-06-01/runtime/invocation/next";
const INVOCATION: &str = "/2018-06-01/runtime/invocation/";
const INIT_ERROR: &str = "/2018-06-01/runtime/init/error";

/// What the emulator's owner does at each call of the process.
pub trait Function: Send + Sync + 'static {
    /// The process asks for its `served`-th event (the first is 1), in a
    /// call that arrived at `at`. `Some(event)` is handed out; `None` holds
    /// the call unanswered until the process is ended.
    fn next(&self, served: usize, at: Instant) -> impl Future<Output = Option<Bytes>> + Send;

    /// The process answered the invocation handed out last.
    fn response(&self, answer: Answer);

    /// The process reported an error, or asked for something not served.
    fn error(&self, report: Report);
}

/// An invocation's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// The events handed out when it arrived: the one it answers.
    pub served: usize,
    /// When its call arrived (before its body was read).
    pub at: Instant,
    /// [`status_of`] its body.
    pub status: u16,
}

/// What a call other than `next` or a response said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub kind: ReportKind,
    pub path: String,
    pub body: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportKind {
    /// `.../invocation/<id>/error`: the handler failed.
    Invocation,
    /// `.../init/error`: the process could not start.
    Init,
    /// A call the emulator does not serve.
    Unknown,
}

/// `<path>: <body>`, as the tools print it.
impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.body)
    }
}

/// An answer's status: API Gateway's `statusCode` for an HTTP function's
/// answer; 200 for a JSON answer without one (the stream consumer's batch
/// report); 0 for anything else.
pub fn status_of(body: &[u8]) -> u16 {
    #[derive(Deserialize)]
    struct FunctionResponse {
        #[serde(rename = "statusCode", default = "answered")]
        status_code: u16,
    }
    fn answered() -> u16 {
        200
    }
    serde_json::from_slice::<FunctionResponse>(body).map_or(0, |response| response.status_code)
}

/// The emulator, serving one process on a loopback port of its own until it
/// is dropped (its connections with it).
pub struct RuntimeApi {
    addr: SocketAddr,
    server: JoinHandle<()>,
}

impl RuntimeApi {
    /// Listens on a free loopback port and serves `function` there, as the
    /// function `function_arn` names.
    pub async fn start<F: Function>(
        function_arn: String,
        function: Arc<F>,
    ) -> std::io::Result<RuntimeApi> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let emulator = Arc::new(Emulator {
            function,
            function_arn,
            served: AtomicUsize::new(0),
        });
        let server = tokio::spawn(serve(listener, emulator));
        Ok(RuntimeApi { addr, server })
    }

    /// What `AWS_LAMBDA_RUNTIME_API` is set to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

struct Emulator<F> {
    function: Arc<F>,
    function_arn: String,
    /// Events asked for so far.
    served: AtomicUsize,
}

/// Accepts until aborted; the connections' tasks end with it.
async fn serve<F: Function>(listener: TcpListener, emulator: Arc<Emulator<F>>) {
    let mut connections = JoinSet::new();
    while let Ok((stream, _)) = listener.accept().await {
        while connections.try_join_next().is_some() {}
        let _ = stream.set_nodelay(true);
        let emulator = emulator.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let emulator = emulator.clone();
                async move { Ok::<_, std::convert::Infallible>(emulator.route(req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

impl<F: Function> Emulator<F> {
    async fn route(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let at = Instant::now();
        let path = req.uri().path().to_string();
        let method = req.method().clone();
        if method == Method::GET && path == NEXT {
            let served = self.served.fetch_add(1, Ordering::SeqCst) + 1;
            let Some(event) = self.function.next(served, at).await else {
                // No more work: the process waits here until it is ended.
                return std::future::pending().await;
            };
            return invocation(served, &self.function_arn, event);
        }
        let body = req
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let invocation_call = path
            .strip_prefix(INVOCATION)
            .filter(|_| method == Method::POST);
        if invocation_call.is_some_and(|call| call.ends_with("/response")) {
            self.function.response(Answer {
                served: self.served.load(Ordering::SeqCst),
                at,
                status: status_of(&body),
            });
        } else {
            let kind = match invocation_call {
                Some(call) if call.ends_with("/error") => ReportKind::Invocation,
                _ if method == Method::POST && path == INIT_ERROR => ReportKind::Init,
                _ => ReportKind::Unknown,
            };
            self.function.error(Report {
                kind,
                path,
                body: String::from_utf8_lossy(&body).into_owned(),
            });
        }
        Response::builder()
            .status(StatusCode::ACCEPTED)
            .body(Full::new(Bytes::from_static(b"{\"status\":\"OK\"}")))
            .unwrap_or_default()
    }
}

/// The answer to a `next`: invocation `served` (its request id
/// `bench-request-<served>`), due within 30 seconds, of the function
/// `function_arn`, carrying `event`, untraced, as Lambda hands one over.
fn invocation(served: usize, function_arn: &str, event: Bytes) -> Response<Full<Bytes>> {
    let deadline = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        + Duration::from_secs(30);
    let response = Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .header(
            "lambda-runtime-aws-request-id",
            format!("bench-request-{served}"),
        )
        .header(
            "lambda-runtime-deadline-ms",
            deadline.as_millis().to_string(),
        )
        .header("lambda-runtime-invoked-function-arn", function_arn)
        .header(
            "lambda-runtime-trace-id",
            "Root=1-00000000-000000000000000000000000;Parent=0000000000000000;Sampled=0",
        )
        .body(Full::new(event));
    // Header values are ASCII made here (an ARN from a function name of
    // the tool's): the builder cannot refuse them; an empty answer if it did.
    response.unwrap_or_default()
}

#[cfg(test)]
mod tests;
