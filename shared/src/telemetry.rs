//! Logging: JSON lines in Lambda (CloudWatch reads them), text locally.
//!
//! Every line a request logs is inside its `request` span (opened by
//! [`crate::http::observe`]), which carries the request id and, in Lambda, the
//! X-Ray trace id; in Lambda the JSON line shows that span as `span`.
//!
//! DynamoDB calls are traced with the SDK's own spans: it wraps each operation
//! in a `DEBUG` span named `DynamoDB.<Operation>`, a child of the span that
//! made the call (so of the request's). [`DynamoDbCalls`] times those spans
//! and, when one closes, logs one `INFO` line, target `dynamodb`, with the
//! operation and its duration (retries included) inside the request's span.
//! Only those spans are enabled below `INFO`: the SDK's inner spans and its
//! `DEBUG` events stay off, so a request logs one line per call and no more.
//! `RUST_LOG=info,dynamodb=off` turns the per-call lines off.

use std::time::Instant;
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::filter::{filter_fn, EnvFilter};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{fmt, Layer, Registry};

/// The name of the span every request runs in.
pub const REQUEST_SPAN: &str = "request";

/// The target of the line logged per DynamoDB call.
pub const DYNAMODB_TARGET: &str = "dynamodb";

/// Installs the global subscriber once; `RUST_LOG` sets the level (default
/// `info`; locally the per-call `dynamodb` lines are off unless it names them,
/// e.g. `RUST_LOG=info,dynamodb=info`).
pub fn init() {
    let in_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let result = if in_lambda {
        tracing::subscriber::set_global_default(json(std::io::stdout))
    } else {
        // Locally a line per DynamoDB call drowns the request lines (and
        // `make run`'s demo keys): off unless RUST_LOG asks for them.
        let text = fmt::layer()
            .with_target(false)
            .with_filter(level_or(&format!("info,{DYNAMODB_TARGET}=off")));
        tracing::subscriber::set_global_default(
            Registry::default().with(text).with(dynamodb_calls()),
        )
    };
    // A second init (tests) keeps the first subscriber; nothing to do.
    drop(result);
}

/// The subscriber Lambda runs with, writing to `writer`: one JSON object per
/// line, the event's fields at the top level beside `level` and `message`,
/// and the innermost span as `span`. No timestamp: Lambda adds its own.
pub fn json<W>(writer: W) -> impl Subscriber + Send + Sync
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
        .with_filter(level());
    Registry::default().with(lines).with(dynamodb_calls())
}

fn level() -> EnvFilter {
    level_or("info")
}

/// `RUST_LOG`, or `default` when it is not set.
fn level_or(default: &str) -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default))
}

/// [`DynamoDbCalls`], seeing only the SDK's operation spans and the request
/// spans they belong to (a layer's filter hides the spans it rejects, parents
/// included).
fn dynamodb_calls<S>() -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    DynamoDbCalls.with_filter(
        filter_fn(|meta| {
            meta.is_span() && (meta.name().starts_with("DynamoDB.") || meta.name() == REQUEST_SPAN)
        })
        .with_max_level_hint(LevelFilter::DEBUG),
    )
}

/// Logs one line per DynamoDB call from the SDK's own operation span.
pub struct DynamoDbCalls;

struct Started(Instant);

impl<S> Layer<S> for DynamoDbCalls
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, _: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if span.name().starts_with("DynamoDB.") {
                span.extensions_mut().insert(Started(Instant::now()));
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(operation) = span.name().strip_prefix("DynamoDB.") else {
            return;
        };
        let Some(elapsed) = span.extensions().get::<Started>().map(|s| s.0.elapsed()) else {
            return;
        };
        let duration_ms = (elapsed.as_secs_f64() * 1_000_000.0).round() / 1000.0;
        let parent = span.parent().map(|parent| parent.id());
        tracing::info!(
            target: DYNAMODB_TARGET,
            parent: parent,
            operation,
            duration_ms,
            "dynamodb call"
        );
    }
}
