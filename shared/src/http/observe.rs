//! Observing every request, outermost after the request id: the span all of
//! its log lines are written in, its metrics line, and its log line.
//!
//! - The `request` span carries the request id, the X-Ray trace id (in
//!   Lambda, from the invocation's context), the method and the path; every
//!   line logged while the request is served, the SDK's per-call lines
//!   included (see [`crate::telemetry`]), is inside it.
//! - The metrics line ([`crate::metrics`]): `Requests` by function, route and
//!   status class, `Latency`, `RateLimited` (every 429), `ColdStarts` (the
//!   process's first request), and whatever the layers below counted.
//! - One `INFO` line, message `request`: route, status, latency, and who
//!   called: the key's id, role and plan (never the key), as the rate-limit
//!   layer puts them on the response.
//! - Init's own request ([`crate::warm_up`]) has its log line,
//!   message `warm-up request`, and no metrics line.
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
    let trace_id = xray_trace_id(&req).map(str::to_string);
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
    let (response, mut counts) = metrics::tallied(served).instrument(span.clone()).await;
    let latency = started.elapsed();
    let status = response.status();
    if status == StatusCode::TOO_MANY_REQUESTS {
        counts.add(Metric::RateLimited, 1);
    }
    if !warm_up {
        app.metrics().emit(&RequestMetrics {
            route: &route,
            status: status.as_u16(),
            latency,
            counts,
            request_id: &request_id,
            trace_id: trace_id.as_deref(),
        });
    }
    let message = if warm_up {
        "warm-up request"
    } else {
        "request"
    };
    let caller = response.extensions().get::<Caller>();
    let plan = response.extensions().get::<Plan>().map(|p| p.as_str());
    span.in_scope(|| {
        tracing::info!(
            route = %route,
            status = status.as_u16(),
            latency_ms = (latency.as_secs_f64() * 1_000_000.0).round() / 1000.0,
            key_id = caller.map(|c| c.key_id.get()),
            role = caller.map(|c| c.role.as_str()),
            plan,
            "{message}"
        );
    });
    response
}

/// The X-Ray trace id (`1-5759e988-bd862e3fe1be46a994272793`) of the Lambda
/// invocation serving `req`, from the `Root` of its trace header.
fn xray_trace_id<B>(req: &http::Request<B>) -> Option<&str> {
    let header = req
        .extensions()
        .get::<lambda_http::Context>()?
        .xray_trace_id
        .as_deref()?;
    let root = header
        .split(';')
        .find_map(|part| part.trim().strip_prefix("Root="))
        .unwrap_or(header);
    (!root.is_empty()).then_some(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_id_is_the_root_of_the_invocation_s_trace_header() {
        let mut context = lambda_http::Context::default();
        context.xray_trace_id = Some(
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1".into(),
        );
        let mut req = http::Request::new(());
        assert_eq!(xray_trace_id(&req), None);
        req.extensions_mut().insert(context);
        assert_eq!(
            xray_trace_id(&req),
            Some("1-5759e988-bd862e3fe1be46a994272793")
        );
    }
}
