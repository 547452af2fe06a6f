//! Cold start: spawns a function's `bootstrap` against a minimal Lambda
//! Runtime API and times it, from spawn to its first `GET .../invocation/next`
//! (ready) and to its first response (first invocation done). Each process
//! then answers one more invocation, which is a warm invocation's duration as
//! Lambda would bill it (minus Lambda's own rounding).

use crate::client::Error;
use crate::results::ColdStart;
use crate::stats::summarize;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};
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

/// What the Runtime API saw of one process, as it happened.
#[derive(Default)]
struct Timeline {
    served: usize,
    ready: Option<Instant>,
    next_at: Vec<Instant>,
    done_at: Vec<Instant>,
    statuses: Vec<u16>,
    error: Option<String>,
}

/// One process's figures, from its spawn.
struct Spawn {
    ready: Duration,
    first_response: Duration,
    first_invocation: Duration,
    /// `None` when the process died after its first invocation.
    warm_invocation: Option<Duration>,
    first_status: u16,
}

impl Spawn {
    fn from_timeline(spawned: Instant, timeline: &Timeline) -> Option<Spawn> {
        let invocation = |i: usize| Some(*timeline.done_at.get(i)? - *timeline.next_at.get(i)?);
        Some(Spawn {
            ready: timeline.ready? - spawned,
            first_response: *timeline.done_at.first()? - spawned,
            first_invocation: invocation(0)?,
            warm_invocation: invocation(1),
            first_status: *timeline.statuses.first()?,
        })
    }
}

struct RuntimeApi {
    /// Held only for pushes and takes that cannot panic, so never poisoned:
    /// hence the `expect`s on locking it.
    timeline: Mutex<Timeline>,
    changed: Notify,
    event: Bytes,
    function_arn: String,
}

/// Invocations served per process: the cold one and one warm one.
const INVOCATIONS: usize = 2;

pub async fn measure(setup: &ColdSetup<'_>, spawns: usize) -> Result<ColdStart, Error> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(setup.log)?;
    let mut measured = Vec::with_capacity(spawns);
    for _ in 0..spawns {
        match spawn_once(setup, &log).await {
            Ok(spawn) => measured.push(spawn),
            Err(e) => eprintln!("bench: cold start of {} failed: {e}", setup.function),
        }
    }
    let summary_of = |figure: fn(&Spawn) -> Option<Duration>| {
        summarize(&measured.iter().filter_map(figure).collect::<Vec<_>>())
    };
    let mut statuses = BTreeMap::new();
    for spawn in &measured {
        *statuses.entry(spawn.first_status).or_insert(0) += 1;
    }
    let separator = if setup.query.is_empty() { "" } else { "?" };
    Ok(ColdStart {
        function: setup.function.to_string(),
        request: format!("{} {}{separator}{}", setup.method, setup.path, setup.query),
        spawns,
        failures: spawns - measured.len(),
        ready: summary_of(|s| Some(s.ready)),
        first_response: summary_of(|s| Some(s.first_response)),
        first_invocation: summary_of(|s| Some(s.first_invocation)),
        warm_invocation: summary_of(|s| s.warm_invocation),
        statuses,
    })
}

/// Spawns the bootstrap against a Runtime API of its own and times it through
/// [`INVOCATIONS`] invocations.
async fn spawn_once(setup: &ColdSetup<'_>, log: &std::fs::File) -> Result<Spawn, Error> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let runtime_api = listener.local_addr()?;
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
    let mut command = lambda_command(setup, runtime_api, log)?;
    let spawned = Instant::now();
    let mut child = command.spawn()?;
    let finished =
        tokio::time::timeout(Duration::from_secs(20), invocations_done(&api, &mut child));
    let finished = finished.await;
    let _ = child.start_kill();
    let _ = child.wait().await;
    server.abort();
    let timeline = std::mem::take(&mut *api.timeline.lock().expect("timeline lock"));
    if finished.is_err() {
        return Err("no response within 20 s".into());
    }
    match &timeline.error {
        // Answered at least once: the figures up to the error stand.
        Some(error) if timeline.done_at.is_empty() => return Err(error.clone().into()),
        _ => {}
    }
    Spawn::from_timeline(spawned, &timeline)
        .ok_or_else(|| "a response before any GET .../invocation/next".into())
}

/// Until every invocation was answered, the Runtime API saw an error, or the
/// process exited.
async fn invocations_done(api: &RuntimeApi, child: &mut Child) {
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
}

/// The bootstrap with Lambda's environment, nothing of ours but
/// `BENCH_COLD_ENV`.
fn lambda_command(
    setup: &ColdSetup<'_>,
    runtime_api: SocketAddr,
    log: &std::fs::File,
) -> Result<Command, Error> {
    let mut command = Command::new(setup.bootstrap);
    command
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("TZ", ":UTC")
        .env("LANG", "en_US.UTF-8")
        .env("AWS_LAMBDA_RUNTIME_API", runtime_api.to_string())
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
    Ok(command)
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
        return next_invocation(api, now).await;
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
            let status = serde_json::from_slice::<FunctionResponse>(&body)
                .map_or(0, |response| response.status_code);
            timeline.statuses.push(status);
        } else {
            timeline.error = Some(format!("{path}: {}", String::from_utf8_lossy(&body)));
        }
    }
    api.changed.notify_one();
    Response::builder()
        .status(StatusCode::ACCEPTED)
        .body(Full::new(Bytes::from_static(b"{\"status\":\"OK\"}")))
        .expect("a static status and body build")
}

/// The part of the function's API Gateway response we record.
#[derive(Deserialize)]
struct FunctionResponse {
    #[serde(rename = "statusCode")]
    status_code: u16,
}

/// The event, with the headers the runtime client reads, while there are
/// invocations left.
async fn next_invocation(api: &RuntimeApi, now: Instant) -> Response<Full<Bytes>> {
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
    Response::builder()
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
        // Header values are ASCII we made (the ARN from a function name of ours).
        .expect("a response of valid headers builds")
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
