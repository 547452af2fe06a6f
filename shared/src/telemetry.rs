//! Logging: JSON lines in Lambda (CloudWatch reads them), text locally.
//!
//! What a request logs at the default level, `INFO`, is one line: its
//! metrics line ([`crate::metrics`], written by [`crate::http::observe`]),
//! which carries what an operator needs besides the metrics. Warnings and
//! errors are logged at their levels always; the lines below `INFO` are there
//! to be turned on when something needs a closer look.
//!
//! Every line a request logs through `tracing` is inside its `request` span
//! (opened by [`crate::http::observe`]), which carries the request id and, in
//! Lambda, the X-Ray trace id of a sampled request; the JSON line shows that
//! span as `span`.
//!
//! DynamoDB calls are counted where they are sent: every SDK client of ours
//! sends through [`http_client`] (around the SDK's HTTP client, see
//! [`crate::sdk::client`]), which adds each call to the request's
//! [`DbCalls`] ([`counting_calls`], set around every request by
//! [`crate::http::observe`]), a call the SDK sends again as a retry (its
//! `amz-sdk-request` header says `attempt=2` and on). At `DEBUG` it also logs
//! one line per attempt, target `dynamodb`, with the operation, the attempt's
//! duration and how many attempts came before it (`retries`). The SDK's own
//! spans stay off (the level's hint stays at the lines' own), so the counts
//! do not hang on the names the SDK gives its spans (`DynamoDB.<Operation>`,
//! `try_attempt`), which an SDK upgrade may change without a word.
//!
//! The level follows Lambda's: `LoggingConfig.ApplicationLogLevel` (the
//! template's `LogLevel`) reaches the function as `AWS_LAMBDA_LOG_LEVEL`, and
//! Lambda drops a JSON line whose `level` is below it. Filtering here as well
//! means a line Lambda would drop is never formatted (see [`lambda_level`]).
//! `RUST_LOG`, when set, overrides it.
//!
//! The levels are `tracing_subscriber`'s `Targets` (`info,dynamodb=debug`:
//! a default level and a level per target), not its `EnvFilter`: the same
//! directives, without the span and field-value ones (`[span{field=x}]`)
//! this service never uses, whose regular expressions linked a regex
//! compiler into every function (the `webhooks` zip's budget, issue 47).

use crate::sdk::client::{self, Around};
use aws_sdk_dynamodb::config::SharedHttpClient;
use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorFuture, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use std::cell::Cell;
use std::future::Future;
use std::time::Instant;
use tracing::{Level, Subscriber};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::{fmt, Layer, Registry};

/// The name of the span every request runs in.
pub const REQUEST_SPAN: &str = "request";

/// The target of the line logged per DynamoDB call (at `DEBUG`).
pub const DYNAMODB_TARGET: &str = "dynamodb";

/// Installs the global subscriber once, at the level [`level`] chooses.
pub fn init() {
    let in_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let result = if in_lambda {
        tracing::subscriber::set_global_default(json(std::io::stdout))
    } else {
        let text = fmt::layer().with_target(false).with_filter(level());
        tracing::subscriber::set_global_default(Registry::default().with(text))
    };
    // A second init (tests) keeps the first subscriber; nothing to do.
    drop(result);
}

/// The subscriber Lambda runs with, writing to `writer`: one JSON object per
/// line, the event's fields at the top level beside `level` and `message`,
/// and the innermost span as `span`. No timestamp: CloudWatch Logs stamps
/// every event it ingests.
pub fn json<W>(writer: W) -> impl Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    json_filtered(writer, level())
}

/// [`json`] at Lambda's application log level `lambda_log_level` (`INFO`,
/// `DEBUG`, ...), whatever the environment says: tests hold each level's
/// lines with it.
pub fn json_at<W>(writer: W, lambda_log_level: &str) -> impl Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    json_filtered(writer, directives(lambda_level(Some(lambda_log_level))))
}

fn json_filtered<W>(writer: W, level: Targets) -> impl Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let lines = fmt::layer()
        .json()
        .flatten_event(true)
        .with_current_span(true)
        .with_span_list(false)
        .without_time()
        .with_target(false)
        .with_writer(writer)
        .with_filter(level);
    Registry::default().with(lines)
}

/// `RUST_LOG` if it is set (and reads as directives), else the level
/// Lambda was given ([`lambda_level`] of `AWS_LAMBDA_LOG_LEVEL`; `INFO`
/// when there is none).
fn level() -> Targets {
    let asked = std::env::var("RUST_LOG").ok();
    asked
        .and_then(|asked| asked.parse().ok())
        .unwrap_or_else(|| {
            let lambda = std::env::var("AWS_LAMBDA_LOG_LEVEL").ok();
            directives(lambda_level(lambda.as_deref()))
        })
}

/// One of [`lambda_level`]'s directives, which always read.
fn directives(lambda_level: &str) -> Targets {
    lambda_level.parse().unwrap_or_default()
}

/// The directives for Lambda's application log level. `DEBUG` turns on our
/// own `DEBUG` lines (the per-call lines among them) but not the SDK's, which
/// log several lines per call and are for `RUST_LOG` to ask for
/// (`RUST_LOG=info,aws_sdk_dynamodb=debug`). `TRACE` is taken as `DEBUG`.
pub fn lambda_level(level: Option<&str>) -> &'static str {
    let level = level.unwrap_or_default();
    if level.eq_ignore_ascii_case("debug") || level.eq_ignore_ascii_case("trace") {
        "info,petstore=debug,events=debug,dynamodb=debug"
    } else if level.eq_ignore_ascii_case("warn") {
        "warn"
    } else if level.eq_ignore_ascii_case("error") || level.eq_ignore_ascii_case("fatal") {
        "error"
    } else {
        "info"
    }
}

/// What a request's DynamoDB calls came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DbCalls {
    /// Operations sent (a retried one counts once).
    pub calls: u32,
    /// Attempts the SDK made again within those operations (throttling,
    /// transient errors), after a backoff of its own.
    pub retries: u32,
}

tokio::task_local! {
    /// The DynamoDB calls of the request being served.
    static CALLS: Cell<DbCalls>;
}

/// Runs `request` and returns, with its output, the DynamoDB calls it made
/// (those sent from its own task: the SDK sends within the future that
/// awaits a call).
pub async fn counting_calls<F: Future>(request: F) -> (F::Output, DbCalls) {
    CALLS
        .scope(Cell::default(), async move {
            let output = request.await;
            let calls = CALLS.try_with(Cell::get).unwrap_or_default();
            (output, calls)
        })
        .await
}

/// `inner`, each call counted in the request that makes it (see the
/// module's documentation).
pub fn http_client(inner: SharedHttpClient) -> SharedHttpClient {
    client::wrap(inner, Counted)
}

#[derive(Debug)]
struct Counted;

impl Around for Counted {
    fn call(&self, inner: &SharedHttpConnector, request: HttpRequest) -> HttpConnectorFuture {
        let retries = attempt(&request).saturating_sub(1);
        // Outside any request (init, tools) there is nothing to add to.
        let _ = CALLS.try_with(|calls| {
            let mut counted = calls.get();
            match retries {
                0 => counted.calls = counted.calls.saturating_add(1),
                _ => counted.retries = counted.retries.saturating_add(1),
            }
            calls.set(counted);
        });
        if !tracing::enabled!(target: DYNAMODB_TARGET, Level::DEBUG) {
            return inner.call(request);
        }
        let operation = client::operation(&request).to_string();
        let started = Instant::now();
        let answer = inner.call(request);
        HttpConnectorFuture::new(async move {
            let answered = answer.await;
            let duration_ms = (started.elapsed().as_secs_f64() * 1_000_000.0).round() / 1000.0;
            tracing::debug!(
                target: DYNAMODB_TARGET,
                operation,
                duration_ms,
                retries,
                "dynamodb call"
            );
            answered
        })
    }
}

/// Which attempt of its operation `request` is, from the SDK's
/// `amz-sdk-request: attempt=2; max=3` (1 when it does not say).
fn attempt(request: &HttpRequest) -> u32 {
    request
        .headers()
        .get("amz-sdk-request")
        .and_then(|info| {
            info.split(';')
                .find_map(|part| part.trim().strip_prefix("attempt="))
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_a_retry_from_its_second_attempt_on() {
        let sent = |info: Option<&'static str>| {
            let mut request = HttpRequest::empty();
            if let Some(info) = info {
                request.headers_mut().insert("amz-sdk-request", info);
            }
            attempt(&request)
        };
        assert_eq!(sent(Some("attempt=1; max=3")), 1);
        assert_eq!(sent(Some("attempt=3; max=3")), 3);
        assert_eq!(sent(Some("ttl=20260101T000000Z; attempt=2; max=3")), 2);
        assert_eq!(sent(None), 1, "a call that does not say is a first");
        assert_eq!(sent(Some("attempt=x")), 1);
    }

    #[test]
    fn lambda_s_log_level_sets_ours() {
        assert_eq!(lambda_level(None), "info");
        assert_eq!(lambda_level(Some("INFO")), "info");
        assert_eq!(lambda_level(Some("")), "info");
        let debug = lambda_level(Some("DEBUG"));
        assert!(debug.contains("dynamodb=debug") && debug.starts_with("info,"));
        assert_eq!(lambda_level(Some("TRACE")), debug);
        assert_eq!(lambda_level(Some("WARN")), "warn");
        assert_eq!(lambda_level(Some("ERROR")), "error");
        assert_eq!(lambda_level(Some("FATAL")), "error");
    }

    #[test]
    fn each_lambda_level_reads_as_the_directives_it_names() {
        use tracing::Level;
        let debug = directives(lambda_level(Some("DEBUG")));
        assert!(debug.would_enable("dynamodb", &Level::DEBUG));
        assert!(debug.would_enable("petstore::webhooks::deliver", &Level::DEBUG));
        assert!(!debug.would_enable("aws_smithy_runtime::client", &Level::DEBUG));
        assert!(debug.would_enable("aws_smithy_runtime::client", &Level::INFO));
        let info = directives(lambda_level(None));
        assert!(info.would_enable("petstore", &Level::INFO));
        assert!(!info.would_enable("petstore", &Level::DEBUG));
        let warn = directives(lambda_level(Some("WARN")));
        assert!(warn.would_enable("petstore", &Level::WARN));
        assert!(!warn.would_enable("petstore", &Level::INFO));
        let error = directives(lambda_level(Some("ERROR")));
        assert!(!error.would_enable("petstore", &Level::WARN));
        let asked: Targets = "info,aws_sdk_dynamodb=debug"
            .parse()
            .expect("RUST_LOG's form");
        assert!(asked.would_enable("aws_sdk_dynamodb::client", &Level::DEBUG));
        assert!("off".parse::<Targets>().is_ok());
    }
}
