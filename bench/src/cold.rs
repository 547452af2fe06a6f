//! Cold start: spawns a function's `bootstrap` against a minimal Lambda
//! Runtime API and times it, from spawn to its first `GET .../invocation/next`
//! (ready) and to its first response (first invocation done). Each process
//! then answers one more invocation, which is a warm invocation's duration as
//! Lambda would bill it (minus Lambda's own rounding).

use crate::stats::{summarize, Summary};
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// How the function is set up, as Lambda would set it up.
pub struct ColdSetup<'a> {
    pub function: &'a str,
    pub bootstrap: &'a Path,
    pub dynamodb_endpoint: &'a str,
    pub api_key: Option<&'a str>,
    /// Method, path and query of the invocations.
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    pub memory_mb: u32,
    pub log: &'a Path,
}

#[derive(Debug, Serialize)]
pub struct ColdResult {
    pub function: String,
    pub request: String,
    pub spawns: usize,
    pub failures: usize,
    /// Spawn to first `GET /invocation/next`.
    pub ready: Summary,
    /// Spawn to the first invocation's response.
    pub first_response: Summary,
    /// The first invocation alone (`next` served to response posted).
    pub first_invocation: Summary,
    /// The second invocation, warm, in the same process.
    pub warm_invocation: Summary,
    /// Status codes the first invocations answered, with counts.
    pub statuses: std::collections::BTreeMap<u16, usize>,
}

#[derive(Default)]
struct Timeline {
    served: usize,
    ready: Option<Instant>,
    next_at: Vec<Instant>,
    done_at: Vec<Instant>,
    statuses: Vec<u16>,
    error: Option<String>,
}

struct RuntimeApi {
    timeline: Mutex<Timeline>,
    changed: Notify,
    event: Bytes,
    function_arn: String,
}

/// Invocations served per process: the cold one and one warm one.
const INVOCATIONS: usize = 2;

pub async fn measure(
    setup: &ColdSetup<'_>,
    spawns: usize,
) -> Result<ColdResult, Box<dyn std::error::Error + Send + Sync>> {
    let (mut ready, mut first_response, mut first_invocation, mut warm) =
        (vec![], vec![], vec![], vec![]);
    let mut statuses = std::collections::BTreeMap::new();
    let mut failures = 0;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(setup.log)?;
    for _ in 0..spawns {
        match spawn_once(setup, &log).await {
            Ok((t0, timeline)) => {
                ready.push(timeline.ready.expect("ready recorded") - t0);
                first_response.push(timeline.done_at[0] - t0);
                first_invocation.push(timeline.done_at[0] - timeline.next_at[0]);
                if timeline.done_at.len() > 1 {
                    warm.push(timeline.done_at[1] - timeline.next_at[1]);
                }
                *statuses.entry(timeline.statuses[0]).or_insert(0) += 1;
            }
            Err(e) => {
                failures += 1;
                eprintln!("bench: cold start of {} failed: {e}", setup.function);
            }
        }
    }
    Ok(ColdResult {
        function: setup.function.to_string(),
        request: format!(
            "{} {}{}{}",
            setup.method,
            setup.path,
            if setup.query.is_empty() { "" } else { "?" },
            setup.query
        ),
        spawns,
        failures,
        ready: summarize(&ready),
        first_response: summarize(&first_response),
        first_invocation: summarize(&first_invocation),
        warm_invocation: summarize(&warm),
        statuses,
    })
}

async fn spawn_once(
    setup: &ColdSetup<'_>,
    log: &std::fs::File,
) -> Result<(Instant, Timeline), Box<dyn std::error::Error + Send + Sync>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let api = Arc::new(RuntimeApi {
        timeline: Mutex::default(),
        changed: Notify::new(),
        event: Bytes::from(serde_json::to_vec(&api_gateway_v2_event(setup))?),
        function_arn: format!(
            "arn:aws:lambda:us-east-1:123456789012:function:{}",
            setup.function
        ),
    });
    let server = tokio::spawn(serve(listener, api.clone()));

    let mut command = tokio::process::Command::new(setup.bootstrap);
    command
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("TZ", ":UTC")
        .env("LANG", "en_US.UTF-8")
        .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", setup.function)
        .env(
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
            setup.memory_mb.to_string(),
        )
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env(
            "AWS_LAMBDA_LOG_GROUP_NAME",
            format!("/aws/lambda/{}", setup.function),
        )
        .env("AWS_LAMBDA_LOG_STREAM_NAME", "2025/01/01/[$LATEST]bench")
        .env("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand")
        .env("AWS_EXECUTION_ENV", "AWS_Lambda_provided.al2023")
        .env("LAMBDA_TASK_ROOT", "/var/task")
        .env("_HANDLER", "bootstrap")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("AWS_SESSION_TOKEN", "local")
        .env("AWS_ENDPOINT_URL_DYNAMODB", setup.dynamodb_endpoint)
        .env("RUST_LOG", "info")
        .envs(extra_env())
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log.try_clone()?)
        .kill_on_drop(true);
    let t0 = Instant::now();
    let mut child = command.spawn()?;
    let finished = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let notified = api.changed.notified();
            {
                let timeline = api.timeline.lock().expect("timeline lock");
                if timeline.error.is_some() || timeline.done_at.len() >= INVOCATIONS {
                    return;
                }
            }
            tokio::select! {
                _ = notified => {}
                status = child.wait() => {
                    let mut timeline = api.timeline.lock().expect("timeline lock");
                    timeline.error.get_or_insert(format!("bootstrap exited: {status:?}"));
                    return;
                }
            }
        }
    })
    .await;
    let _ = child.start_kill();
    let _ = child.wait().await;
    server.abort();
    let timeline = std::mem::take(&mut *api.timeline.lock().expect("timeline lock"));
    if finished.is_err() {
        return Err("no response within 20 s".into());
    }
    if let Some(error) = &timeline.error {
        if timeline.done_at.is_empty() {
            return Err(error.clone().into());
        }
    }
    Ok((t0, timeline))
}

async fn serve(listener: TcpListener, api: Arc<RuntimeApi>) {
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

async fn route(api: &RuntimeApi, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let now = Instant::now();
    let path = req.uri().path().to_string();
    if req.method() == http::Method::GET && path == "/2018-06-01/runtime/invocation/next" {
        let served = {
            let mut timeline = api.timeline.lock().expect("timeline lock");
            timeline.ready.get_or_insert(now);
            timeline.next_at.push(now);
            timeline.served += 1;
            timeline.served
        };
        if served > INVOCATIONS {
            // No more work: the process waits here until it is killed, as in Lambda.
            std::future::pending::<()>().await;
        }
        let deadline = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            + Duration::from_secs(30);
        return Response::builder()
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
            .header(
                "lambda-runtime-invoked-function-arn",
                api.function_arn.as_str(),
            )
            .header(
                "lambda-runtime-trace-id",
                "Root=1-00000000-000000000000000000000000;Parent=0000000000000000;Sampled=0",
            )
            .body(Full::new(api.event.clone()))
            .expect("response builds");
    }
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    {
        let mut timeline = api.timeline.lock().expect("timeline lock");
        if path.ends_with("/response") {
            timeline.done_at.push(now);
            let status = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| v.get("statusCode").and_then(Value::as_u64))
                .unwrap_or(0);
            timeline.statuses.push(status as u16);
        } else {
            timeline.error = Some(format!("{path}: {}", String::from_utf8_lossy(&body)));
        }
    }
    api.changed.notify_one();
    Response::builder()
        .status(StatusCode::ACCEPTED)
        .body(Full::new(Bytes::from_static(b"{\"status\":\"OK\"}")))
        .expect("response builds")
}

/// `BENCH_COLD_ENV="NAME=value,NAME2=value"`: more variables for the
/// functions, to try a change without a rebuild (e.g. `SSL_CERT_DIR`).
fn extra_env() -> Vec<(String, String)> {
    std::env::var("BENCH_COLD_ENV")
        .unwrap_or_default()
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.to_string()))
        .collect()
}

/// An API Gateway HTTP API (payload 2.0) event, as `lambda_http` receives it.
fn api_gateway_v2_event(setup: &ColdSetup<'_>) -> Value {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut headers = json!({
        "accept": "application/json",
        "host": "abc123.execute-api.us-east-1.amazonaws.com",
        "user-agent": "petstore-bench",
        "x-forwarded-for": "203.0.113.7",
        "x-forwarded-proto": "https",
    });
    if let Some(key) = setup.api_key {
        headers["x-api-key"] = Value::from(key);
    }
    let mut event = json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": setup.path,
        "rawQueryString": setup.query,
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {
                "method": setup.method,
                "path": setup.path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "petstore-bench"
            },
            "requestId": "bench-apigw-request",
            "routeKey": "$default",
            "stage": "$default",
            "time": "01/Jan/2025:00:00:00 +0000",
            "timeEpoch": now.as_millis() as u64
        },
        "isBase64Encoded": false
    });
    if !setup.query.is_empty() {
        let params: serde_json::Map<String, Value> = setup
            .query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (k.to_string(), Value::from(v)))
            .collect();
        event["queryStringParameters"] = Value::Object(params);
    }
    event
}
