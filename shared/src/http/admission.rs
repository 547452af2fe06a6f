//! Admission: the one layer of the wrapper that is ours.
//!
//! For every request, in Lambda and locally, it counts the request against
//! its key's (or source IP's) limits before any handler runs, answering 401,
//! 429 or 503 itself (see [`crate::ratelimit`]); lets a read's handler run
//! while the request is counted; and puts the rate-limit headers on every
//! response. The request id, the body limit and the 405 record come from
//! tower-http and axum (see [`super::service`]).

use super::access;
use super::error::ApiError;
use crate::ratelimit::{Admission, Verdict};
use crate::App;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::Method;
use std::net::{IpAddr, SocketAddr};

/// The header API Gateway's (or a fresh) request id travels in.
pub const REQUEST_ID: &str = "x-request-id";

/// Who sent a request, as far as the wrapper can tell before routing it.
#[derive(Debug, Clone)]
pub struct Sender {
    pub source_ip: Option<IpAddr>,
    pub api_key: Option<String>,
}

impl Sender {
    /// API Gateway's source IP in Lambda, the socket's locally, and the key.
    pub fn of<B>(req: &http::Request<B>) -> Sender {
        let from_gateway = req
            .extensions()
            .get::<lambda_http::request::RequestContext>()
            .and_then(|context| {
                use lambda_http::request::RequestContext as Ctx;
                match context {
                    Ctx::ApiGatewayV2(c) => c.http.source_ip.as_deref(),
                    Ctx::ApiGatewayV1(c) => c.identity.source_ip.as_deref(),
                    _ => None,
                }
            })
            .and_then(|ip| ip.parse().ok());
        let from_socket = || {
            req.extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.ip())
        };
        Sender {
            source_ip: from_gateway.or_else(from_socket),
            api_key: req
                .headers()
                .get("x-api-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
        }
    }
}

/// The middleware: count, then serve (or serve while counting), then add the
/// rate-limit headers. Runs inside the request's span (see [`super::observe`]).
pub async fn admit(State(app): State<App>, mut req: Request, next: Next) -> Response {
    let sender = Sender::of(&req);
    let public = access::is_public(req.method(), req.uri().path());
    let limiter = &app.limiter;
    let counting = limiter.admit(sender.api_key.as_deref(), sender.source_ip);
    // A read's handler runs while the request is counted, and its answer is
    // dropped if the request is refused; only for callers this process
    // already knows (the route layer checks their role before the handler
    // touches any data), so unknown keys cause no data reads.
    let read = req.method() == Method::GET || req.method() == Method::HEAD;
    let known = limiter.known_caller(sender.api_key.as_deref());
    let (admission, served) = if read && (public || known.is_some()) {
        if let Some(caller) = known {
            req.extensions_mut().insert(caller);
        }
        let (admission, response) = tokio::join!(counting, next.run(req));
        (admission, Ok(response))
    } else {
        (counting.await, Err((req, next)))
    };
    let Admission {
        status,
        verdict,
        plan,
    } = admission;
    let mut caller = None;
    let mut response = match verdict {
        Verdict::Refused(refusal) => ApiError::from(refusal).into_response(),
        Verdict::Admitted { caller: None } if !public => ApiError::Unauthorized.into_response(),
        Verdict::Admitted { caller: admitted } => {
            caller = admitted;
            match served {
                Ok(response) => response,
                Err((mut req, next)) => {
                    if let Some(caller) = admitted {
                        req.extensions_mut().insert(caller);
                    }
                    next.run(req).await
                }
            }
        }
    };
    status.apply(response.headers_mut());
    // For the request's log line (observe), which sees only the response.
    if let Some(caller) = caller {
        response.extensions_mut().insert(caller);
    }
    if let Some(plan) = plan {
        response.extensions_mut().insert(plan);
    }
    response
}
