//! Observing every request, outermost after the request id: the span all of
//! its log lines are written in, and its one line.
//!
//! - The `request` span carries the request id, the X-Ray trace id (in
//!   Lambda, of a request X-Ray records), the method and the path; every line
//!   logged while the request is served, the per-call `DEBUG` lines included
//!   (see [`crate::telemetry`]), is inside it.
//! - The request's line, where the app has a metrics emitter (in Lambda):
//!   its metrics line ([`crate::metrics`]: `Latency` by function, route and
//!   status class, `RateLimited` (every 429), `ColdStarts` (the process's
//!   first request), and whatever the layers below counted), which also
//!   carries the request id, the status, the caller's key id (never the key),
//!   the DynamoDB calls and the SDK's retries of them. At the default level it
//!   is the only line a request writes.
//! - Without an emitter (`make run`, most tests), the same as one `INFO`
//!   `tracing` line, message `request`, with the key's role and plan too.
//! - Init's own request ([`crate::warm_up`]) has an `INFO` line, message
//!   `warm-up request`, and no metrics line.
//!
//! The route is the contract's operation (`GET /pets/{petId}`), as
//! [`super::route::resolve`] found it for every request, including those the
//! rate-limit layer refuses before anything is routed; anything the contract
//! does not list is `unmatched`.

use super::request_id::REQUEST_ID;
use super::route::Route;
use crate::metrics::{self, Metric, RequestMetrics};
use crate::ratelimit::Plan;
use crate::records::Caller;
use crate::telemetry;
use crate::warm_up::WarmUpRequest;
use crate::App;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::StatusCode;
use std::time::Instant;
use tracing::field::Empty;
use tracing::Instrument;

/// The middleware (see the module's documentation).
pub async fn observe(State(app): State<App>, req: Request, next: Next) -> Response {
    // Init's own request (crate::warm_up): logged as such, but no metrics
    // line, and the process's first real request is still its cold start.
    let warm_up = WarmUpRequest::marks(&req);
    let started = Instant::now();
    let route = Route::of(&req).name();
    let request_id = req
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let trace_id = recorded_trace_id(&req).map(str::to_string);
    let span = tracing::info_span!(
        crate::telemetry::REQUEST_SPAN,
        request_id = %request_id,
        xray_trace_id = Empty,
        method = %req.method(),
        path = %req.uri().path(),
    );
    if let Some(trace_id) = &trace_id {
        span.record("xray_trace_id", trace_id.as_str());
    }
    let served = async {
        if !warm_up && metrics::first_request() {
            metrics::count(Metric::ColdStarts, 1);
        }
        next.run(req).await
    };
    let ((response, mut counts), db) = telemetry::counting_calls(metrics::tallied(served))
        .instrument(span.clone())
        .await;
    let latency = started.elapsed();
    let status = response.status();
    if status == StatusCode::TOO_MANY_REQUESTS {
        counts.add(Metric::RateLimited, 1);
    }
    let caller = response.extensions().get::<Caller>();
    let latency_ms = (latency.as_secs_f64() * 1_000_000.0).round() / 1000.0;
    if warm_up {
        span.in_scope(|| {
            tracing::info!(
                route = %route,
                status = status.as_u16(),
                latency_ms,
                db_calls = db.calls,
                "warm-up request"
            );
        });
    } else if app.metrics().is_on() {
        app.metrics().emit(&RequestMetrics {
            route: &route,
            status: status.as_u16(),
            latency,
            counts,
            request_id: &request_id,
            key_id: caller.map(|c| c.key_id.get()),
            db_calls: db.calls,
            sdk_retries: db.retries,
            trace_id: trace_id.as_deref(),
        });
    } else {
        let plan = response.extensions().get::<Plan>().map(|p| p.as_str());
        span.in_scope(|| {
            tracing::info!(
                route = %route,
                status = status.as_u16(),
                latency_ms,
                key_id = caller.map(|c| c.key_id.get()),
                role = caller.map(|c| c.role.as_str()),
                plan,
                db_calls = db.calls,
                sdk_retries = db.retries,
                "request"
            );
        });
    }
    response
}

/// The X-Ray trace id (`1-5759e988-bd862e3fe1be46a994272793`) of the Lambda
/// invocation serving `req`, from the `Root` of its trace header, when X-Ray
/// records it (`Sampled=1`): the id of a trace that was not recorded leads
/// nowhere, and would cost its bytes on every line.
fn recorded_trace_id<B>(req: &http::Request<B>) -> Option<&str> {
    let header = req
        .extensions()
        .get::<lambda_http::Context>()?
        .xray_trace_id
        .as_deref()?;
    let mut parts = header.split(';').map(str::trim);
    if !parts.clone().any(|part| part == "Sampled=1") {
        return None;
    }
    let root = parts.find_map(|part| part.strip_prefix("Root="))?;
    (!root.is_empty()).then_some(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traced(header: &str) -> http::Request<()> {
        let mut context = lambda_http::Context::default();
        context.xray_trace_id = Some(header.into());
        let mut req = http::Request::new(());
        req.extensions_mut().insert(context);
        req
    }

    #[test]
    fn the_trace_id_is_the_root_of_a_recorded_invocation_s_trace_header() {
        assert_eq!(recorded_trace_id(&http::Request::new(())), None);
        let sampled =
            traced("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1");
        assert_eq!(
            recorded_trace_id(&sampled),
            Some("1-5759e988-bd862e3fe1be46a994272793")
        );
        let unsampled =
            traced("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0");
        assert_eq!(recorded_trace_id(&unsampled), None);
        assert_eq!(recorded_trace_id(&traced("Sampled=1")), None);
    }
}
