//! A function as Lambda runs it: what it is deployed as ([`Function`]), the
//! build spawned ([`Bootstrap`]), how it is set up ([`ColdSetup`]), and what
//! Lambda hands it: its environment and the event of a request. [`crate::spawn`]
//! spawns the bootstraps with these against the lab's Runtime API.

use petstore_bench::client::Error;
use petstore_bench::lambda_process::{env_pairs, lambda_environment, LambdaProcess};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::process::Command;

/// A function, as the template deploys it, and what its cold starts answer.
pub struct Function {
    pub name: &'static str,
    /// Its rows' label: the name, or the name and how its event differs.
    pub label: &'static str,
    pub event: Event,
    /// Whether the event carries the run's key. Without one, the source
    /// address is counted and a route that needs a key answers 401 after
    /// that one count: the least a counted request can make, one
    /// `UpdateItem` where the floor makes one `GetItem`.
    pub keyed: bool,
    /// Its own environment beyond Lambda's, as the template sets it.
    pub env: &'static [(&'static str, &'static str)],
}

/// What a function is invoked with.
pub enum Event {
    /// An API Gateway HTTP API request.
    Http {
        method: &'static str,
        path: &'static str,
        query: &'static str,
    },
    /// A DynamoDB stream batch of no records: the consumer answers it
    /// without calling EventBridge.
    EmptyStreamBatch,
}

impl Function {
    /// `GET /pets?limit=20`, or what the stream batch is.
    pub fn request(&self) -> String {
        match self.event {
            Event::Http {
                method,
                path,
                query,
            } => {
                let separator = if query.is_empty() { "" } else { "?" };
                format!("{method} {path}{separator}{query}")
            }
            Event::EmptyStreamBatch => "DynamoDB stream, empty batch".to_string(),
        }
    }
}

/// One build of a function to spawn, under a label.
pub struct Bootstrap {
    pub label: String,
    pub path: PathBuf,
    pub function: &'static Function,
}

/// The addresses the events come from: round `r` of spawns sends from
/// [`source_of`]`(r)`, so that the counted subject is one another process
/// counted before, as in production where many instances serve the same
/// callers. With the run's key the key is counted (every spawn's, so every
/// earlier spawn counted it); without a valid key, the address: each serves
/// two rounds, the second meeting it counted by the first, and no more, so
/// a keyless row's twelve requests a process (cold, warm, after the idle
/// close) stay within the free plan's 60 a minute and are answered 401, as
/// a first request without a key is, not 429.
pub const SOURCES: [&str; 16] = [
    "203.0.113.7",
    "203.0.113.8",
    "203.0.113.9",
    "203.0.113.10",
    "203.0.113.11",
    "203.0.113.12",
    "203.0.113.13",
    "203.0.113.14",
    "203.0.113.15",
    "203.0.113.16",
    "203.0.113.17",
    "203.0.113.18",
    "203.0.113.19",
    "203.0.113.20",
    "203.0.113.21",
    "203.0.113.22",
];

/// The source of round `round`'s events: rounds 1 and 2 share one, 3 and 4
/// the next, and so on (round 0 has the first to itself).
pub fn source_of(round: usize) -> &'static str {
    SOURCES[round.div_ceil(2) % SOURCES.len()]
}

/// How the function is set up, as Lambda would set it up.
pub struct ColdSetup<'a> {
    pub function: &'a Function,
    pub bootstrap: &'a Path,
    pub dynamodb_endpoint: &'a str,
    pub api_key: Option<&'a str>,
    /// The event's source address ([`source_of`]).
    pub source_ip: &'a str,
    pub memory_mb: u32,
    pub log: &'a Path,
}

/// The bootstrap with Lambda's environment, nothing of ours but
/// `BENCH_COLD_ENV`; run by `wrapper` (a program and its arguments, the
/// bootstrap's path last: valgrind) when it is not empty.
pub fn lambda_command(
    setup: &ColdSetup<'_>,
    runtime_api: SocketAddr,
    log: &std::fs::File,
    wrapper: &[String],
) -> Result<Command, Error> {
    let function = setup.function;
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args).arg(setup.bootstrap);
            command
        }
        None => Command::new(setup.bootstrap),
    };
    let process = LambdaProcess {
        function: function.name,
        memory_mb: setup.memory_mb,
        runtime_api,
        dynamodb_endpoint: setup.dynamodb_endpoint,
    };
    lambda_environment(&mut command, &process)
        .envs(function.env.iter().copied())
        .envs(env_pairs("BENCH_COLD_ENV"))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log.try_clone()?)
        .kill_on_drop(true);
    Ok(command)
}

/// The event of `setup`'s function.
pub fn event(setup: &ColdSetup<'_>) -> Value {
    match setup.function.event {
        Event::Http {
            method,
            path,
            query,
        } => api_gateway_v2_event(method, path, query, setup),
        Event::EmptyStreamBatch => json!({ "Records": [] }),
    }
}

/// An API Gateway HTTP API (payload 2.0) event, as `lambda_http` receives it.
fn api_gateway_v2_event(method: &str, path: &str, query: &str, setup: &ColdSetup<'_>) -> Value {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut headers = json!({
        "accept": "application/json",
        "host": "abc123.execute-api.us-east-1.amazonaws.com",
        "user-agent": "petstore-bench",
        "x-forwarded-for": setup.source_ip,
        "x-forwarded-proto": "https",
    });
    if let Some(key) = setup.api_key {
        headers["x-api-key"] = Value::from(key);
    }
    let mut event = json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": setup.source_ip,
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
    if !query.is_empty() {
        let params: serde_json::Map<String, Value> = query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (k.to_string(), Value::from(v)))
            .collect();
        event["queryStringParameters"] = Value::Object(params);
    }
    event
}
