//! The wrapper every request and response passes through, in Lambda and locally.
//!
//! As a tower [`Layer`] it sits around a function's whole router (fallback
//! included), so no route can forget it. It:
//! - gives the request an id (API Gateway's, or a fresh one locally) and logs under it;
//! - refuses bodies over 64 KiB before any handler reads them;
//! - turns the router's bare 405 into the contract's Error record, keeping `Allow`;
//! - counts the request against its key's (or source IP's) limits before any
//!   handler runs, answering 401, 429 or 503 itself (see [`crate::ratelimit`]);
//!   a read's handler runs concurrently with the count;
//! - gives the handler the [`Caller`] a valid key identifies;
//! - adds `X-Request-Id` and the rate-limit headers to every response.

use crate::http::error::ApiError;
use crate::http::extract::MAX_BODY_BYTES;
use crate::ratelimit::Verdict;
use crate::records::{Caller, Role};
use crate::App;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use http::{header, HeaderValue, Method, Request, StatusCode};
use http_body_util::BodyExt;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::task::{Context, Poll};
use tower::{Layer, Service, ServiceExt};
use tracing::Instrument;

/// Puts the wrapper around a router.
#[derive(Clone)]
pub struct ApiLayer {
    app: App,
}

impl ApiLayer {
    pub fn new(app: App) -> ApiLayer {
        ApiLayer { app }
    }
}

impl<S> Layer<S> for ApiLayer {
    type Service = ApiService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ApiService {
            app: self.app.clone(),
            inner,
        }
    }
}

/// The wrapped router.
#[derive(Clone)]
pub struct ApiService<S> {
    app: App,
    inner: S,
}

/// What the wrapper knows about a request before routing it.
#[derive(Debug, Clone)]
pub struct RequestMeta {
    pub request_id: String,
    pub source_ip: Option<IpAddr>,
    pub api_key: Option<String>,
}

impl RequestMeta {
    /// Reads API Gateway's request context when running in Lambda, the socket
    /// address when served locally.
    pub fn of<B>(req: &Request<B>) -> RequestMeta {
        let (mut request_id, mut source_ip) = (None, None);
        if let Some(context) = req
            .extensions()
            .get::<lambda_http::request::RequestContext>()
        {
            use lambda_http::request::RequestContext as Ctx;
            match context {
                Ctx::ApiGatewayV2(c) => {
                    request_id = c.request_id.clone();
                    source_ip = c.http.source_ip.as_deref().and_then(|ip| ip.parse().ok());
                }
                Ctx::ApiGatewayV1(c) => {
                    request_id = c.request_id.clone();
                    source_ip = c
                        .identity
                        .source_ip
                        .as_deref()
                        .and_then(|ip| ip.parse().ok());
                }
                _ => {}
            }
        }
        if source_ip.is_none() {
            source_ip = req
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.ip());
        }
        RequestMeta {
            request_id: request_id.unwrap_or_else(fresh_request_id),
            source_ip,
            api_key: req
                .headers()
                .get("x-api-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
        }
    }
}

/// A request id for requests that did not come through API Gateway.
fn fresh_request_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

impl<S> Service<Request<Body>> for ApiService<S>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        // The clone that was polled ready is the one to call; a fresh clone
        // stays behind for the next request (the tower idiom for boxed futures).
        let fresh = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, fresh);
        let app = self.app.clone();
        let meta = RequestMeta::of(&req);
        let span = tracing::info_span!("request", request_id = %meta.request_id, method = %req.method(), path = %req.uri().path());
        Box::pin(async move { Ok(handle(app, inner, meta, req).await) }.instrument(span))
    }
}

/// Where the handler stands once the request has been counted.
enum Handler<S> {
    /// A read, served while it was counted.
    Served(Response),
    /// Not yet run: it runs only if the request is admitted.
    Waiting(S, Request<Body>),
}

async fn handle<S>(app: App, inner: S, meta: RequestMeta, req: Request<Body>) -> Response
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    let public = is_public(&req);
    let limiter = &app.limiter;
    let admission = limiter.admit(meta.api_key.as_deref(), meta.source_ip);
    // A read's handler runs while the request is counted, and its response is
    // dropped if the request is refused; only when the caller may be allowed
    // in, so requests without a valid key cause no data reads. Order reads
    // depend on who calls, known once admitted, so they wait.
    let read = req.method() == Method::GET || req.method() == Method::HEAD;
    let early = read
        && !req.uri().path().starts_with("/store/orders")
        && (public || limiter.may_be_valid(meta.api_key.as_deref()));
    let (admission, handler) = if early {
        let (admission, response) = tokio::join!(admission, serve(inner, req));
        (admission, Handler::Served(response))
    } else {
        (admission.await, Handler::Waiting(inner, req))
    };
    let response = match admission.verdict {
        Verdict::Refused(error) => error.into_response(),
        Verdict::Admitted {
            authenticated: None,
        } if !public => ApiError::Unauthorized.into_response(),
        Verdict::Admitted { authenticated } => match handler {
            Handler::Served(response) => response,
            Handler::Waiting(inner, mut req) => {
                // Every key is a customer's until keys carry their role.
                if let Some(key_id) = authenticated {
                    req.extensions_mut().insert(Caller {
                        key_id,
                        role: Role::Customer,
                    });
                }
                serve(inner, req).await
            }
        },
    };
    let mut response = finish(response, &meta);
    admission.status.apply(response.headers_mut());
    response
}

/// `GET /openapi.json` needs no key (it is still counted).
fn is_public<B>(req: &Request<B>) -> bool {
    req.method() == Method::GET && req.uri().path() == "/openapi.json"
}

/// Runs the router on a request whose body fits.
async fn serve<S>(inner: S, req: Request<Body>) -> Response
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    match limit_body(req).await {
        Ok(req) => match inner.oneshot(req).await {
            Ok(response) => response,
            Err(never) => match never {},
        },
        Err(error) => error.into_response(),
    }
}

/// Reads the body into memory, refusing it past 64 KiB.
async fn limit_body(req: Request<Body>) -> Result<Request<Body>, ApiError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|length| length > MAX_BODY_BYTES) {
        return Err(ApiError::PayloadTooLarge);
    }
    let (parts, body) = req.into_parts();
    let bytes = http_body_util::Limited::new(body, MAX_BODY_BYTES)
        .collect()
        .await
        .map_err(|_| ApiError::PayloadTooLarge)?
        .to_bytes();
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// What every response gets on its way out.
fn finish(response: Response, meta: &RequestMeta) -> Response {
    let mut response = if response.status() == StatusCode::METHOD_NOT_ALLOWED
        && response.headers().get(header::CONTENT_TYPE).is_none()
    {
        let allow = response
            .headers()
            .get(header::ALLOW)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        ApiError::MethodNotAllowed { allow }.into_response()
    } else {
        response
    };
    if let Ok(id) = HeaderValue::from_str(&meta.request_id) {
        response.headers_mut().insert("x-request-id", id);
    }
    response
}
