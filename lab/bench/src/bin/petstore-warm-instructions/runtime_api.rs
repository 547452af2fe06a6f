//! The Runtime API the measured bootstrap polls: it hands out the same
//! event for every `next`, counts the answers, and has callgrind zero its
//! counters at the first measured event and dump them after the last.

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::net::TcpListener;
use tokio::process::Command;
use tokio::sync::Notify;

#[derive(Default)]
pub struct Seen {
    /// `next` calls so far.
    pub nexts: usize,
    /// The statuses of the measured invocations' responses.
    pub statuses: Vec<u16>,
    pub error: Option<String>,
    /// Set when the dump is made.
    pub done: bool,
}

pub struct RuntimeApi {
    pub seen: Mutex<Seen>,
    pub changed: Notify,
    pub event: Bytes,
    pub pid: u32,
    /// The `next` at which the counters are zeroed, and the one at which
    /// they are dumped.
    pub zero_at: usize,
    pub dump_at: usize,
}

impl RuntimeApi {
    pub fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub async fn serve(listener: TcpListener, api: Arc<RuntimeApi>) {
    while let Ok((stream, _)) = listener.accept().await {
        let _ = stream.set_nodelay(true);
        let api = api.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let api = api.clone();
                async move { Ok::<_, std::convert::Infallible>(route(&api, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

pub fn fail(api: &RuntimeApi, error: String) {
    api.seen().error = Some(error);
    api.changed.notify_one();
}

async fn route(api: &RuntimeApi, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    if req.method() == http::Method::GET && path == "/2018-06-01/runtime/invocation/next" {
        return next_invocation(api).await;
    }
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    if path.ends_with("/response") {
        let mut seen = api.seen();
        // The response to the invocation handed out by `next` number `nexts`.
        if seen.nexts >= api.zero_at {
            let status = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|response| response["statusCode"].as_u64())
                .and_then(|status| u16::try_from(status).ok())
                .unwrap_or(0);
            seen.statuses.push(status);
        }
    } else {
        fail(api, format!("{path}: {}", String::from_utf8_lossy(&body)));
    }
    Response::builder()
        .status(StatusCode::ACCEPTED)
        .body(Full::new(Bytes::from_static(b"{\"status\":\"OK\"}")))
        .unwrap_or_default()
}

/// `callgrind_control <flag> <pid>`.
async fn callgrind_control(api: &RuntimeApi, flag: &str) -> bool {
    let output = Command::new("callgrind_control")
        .arg(flag)
        .arg(api.pid.to_string())
        .stdin(Stdio::null())
        .output()
        .await;
    match output {
        Ok(output) if output.status.success() => true,
        Ok(output) => {
            let said = String::from_utf8_lossy(&output.stderr).into_owned();
            fail(api, format!("callgrind_control {flag}: {said}"));
            false
        }
        Err(e) => {
            fail(api, format!("callgrind_control {flag}: {e}"));
            false
        }
    }
}

async fn next_invocation(api: &RuntimeApi) -> Response<Full<Bytes>> {
    let served = {
        let mut seen = api.seen();
        seen.nexts += 1;
        seen.nexts
    };
    if served == api.zero_at && !callgrind_control(api, "--zero").await {
        std::future::pending::<()>().await;
    }
    if served == api.dump_at {
        if callgrind_control(api, "--dump").await {
            api.seen().done = true;
            api.changed.notify_one();
        }
        // No more work: the process waits here until it is killed.
        std::future::pending::<()>().await;
    }
    let arn = "arn:aws:lambda:us-east-1:123456789012:function:bench";
    petstore_bench::lambda_process::invocation(served, arn, api.event.clone())
}
