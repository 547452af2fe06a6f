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
//! DynamoDB calls are counted with the SDK's own spans: it wraps each
//! operation in a `DEBUG` span named `DynamoDB.<Operation>`, a child of the
//! span that made the call (so of the request's), and each attempt in a
//! `try_attempt` span inside it. [`DynamoDbCalls`] keeps, in the request's
//! span, how many calls the request made and how many attempts the SDK made
//! again ([`db_calls`] reads them for the request's line), and, when a call
//! ends, logs one `DEBUG` line, target `dynamodb`, with the operation, its
//! duration (retries included) and its retries. Only those spans are enabled
//! below `INFO` for it: the SDK's other spans and its `DEBUG` events stay off.
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

use std::time::Instant;
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::filter::{filter_fn, Targets};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::{LookupSpan, SpanRef};
use tracing_subscriber::{fmt, Layer, Registry};

/// The name of the span every request runs in.
pub const REQUEST_SPAN: &str = "request";

/// The target of the line logged per DynamoDB call (at `DEBUG`).
pub const DYNAMODB_TARGET: &str = "dynamodb";

/// The SDK's span around each attempt of an operation (aws-smithy-runtime's
/// orchestrator); more than one in an operation's span is a retry.
const ATTEMPT_SPAN: &str = "try_attempt";

/// The SDK's operation spans are named `<Service>.<Operation>`.
const DYNAMODB_SPAN_PREFIX: &str = "DynamoDB.";

/// Installs the global subscriber once, at the level [`level`] chooses.
pub fn init() {
    let in_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let result = if in_lambda {
        tracing::subscriber::set_global_default(json(std::io::stdout))
    } else {
        let text = fmt::layer().with_target(false).with_filter(level());
        tracing::subscriber::set_global_default(
            Registry::default().with(text).with(dynamodb_calls()),
        )
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
    Registry::default().with(lines).with(dynamodb_calls())
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

/// The DynamoDB calls made so far inside `span` (a request's), as
/// [`DynamoDbCalls`] counted them; `None` when the subscriber is not one of
/// this module's.
pub fn db_calls(span: &tracing::Span) -> Option<DbCalls> {
    span.with_subscriber(|(id, dispatch)| {
        let registry = dispatch.downcast_ref::<Registry>()?;
        let span = registry.span(id)?;
        let calls = span.extensions().get::<DbCalls>().copied();
        Some(calls.unwrap_or_default())
    })
    .flatten()
}

/// [`DynamoDbCalls`], seeing only the SDK's operation and attempt spans and
/// the request spans they belong to (a layer's filter hides the spans it
/// rejects, so a span's parent, for this layer, is its nearest ancestor of
/// those kinds).
fn dynamodb_calls<S>() -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    DynamoDbCalls.with_filter(
        filter_fn(|meta| {
            meta.is_span()
                && (meta.name().starts_with(DYNAMODB_SPAN_PREFIX)
                    || meta.name() == REQUEST_SPAN
                    || (meta.name() == ATTEMPT_SPAN
                        && meta.target().starts_with("aws_smithy_runtime")))
        })
        .with_max_level_hint(LevelFilter::DEBUG),
    )
}

/// Counts each request's DynamoDB calls and the SDK's retries of them from
/// the SDK's own spans, and logs one `DEBUG` line per call.
pub struct DynamoDbCalls;

/// One DynamoDB operation under way.
struct Call {
    started: Instant,
    attempts: u32,
}

impl<S> Layer<S> for DynamoDbCalls
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, _: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        if span.name().starts_with(DYNAMODB_SPAN_PREFIX) {
            span.extensions_mut().insert(Call {
                started: Instant::now(),
                attempts: 0,
            });
        } else if span.name() == ATTEMPT_SPAN {
            if let Some(operation) = span.parent() {
                if let Some(call) = operation.extensions_mut().get_mut::<Call>() {
                    call.attempts += 1;
                }
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(operation) = span.name().strip_prefix(DYNAMODB_SPAN_PREFIX) else {
            return;
        };
        let Some(call) = span.extensions_mut().remove::<Call>() else {
            return;
        };
        let retries = call.attempts.saturating_sub(1);
        let request = span.scope().skip(1).find(|s| s.name() == REQUEST_SPAN);
        if let Some(request) = &request {
            add_call(request, retries);
        }
        let duration_ms = (call.started.elapsed().as_secs_f64() * 1_000_000.0).round() / 1000.0;
        tracing::debug!(
            target: DYNAMODB_TARGET,
            parent: request.map(|r| r.id()),
            operation,
            duration_ms,
            retries,
            "dynamodb call"
        );
    }
}

/// Adds one call, retried `retries` times, to `request`'s [`DbCalls`].
fn add_call<S>(request: &SpanRef<'_, S>, retries: u32)
where
    S: for<'a> LookupSpan<'a>,
{
    let mut extensions = request.extensions_mut();
    if let Some(calls) = extensions.get_mut::<DbCalls>() {
        calls.calls = calls.calls.saturating_add(1);
        calls.retries = calls.retries.saturating_add(retries);
    } else {
        extensions.insert(DbCalls { calls: 1, retries });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
