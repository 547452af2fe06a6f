//! What the edge knows of a request before anything is routed: its operation
//! (method, route template, who may call it) and its sender (source address,
//! key). [`resolve`] works both out once, outermost, and puts them on the
//! request; every layer below reads them from there ([`Route::of`],
//! [`Sender::of`]).
//!
//! The route is found in the access table ([`access::listed`]) for every
//! request, including those the rate-limit layer answers before axum routes
//! anything; a path the table does not list has no template, so the metrics'
//! `Route` dimension stays bounded whatever paths clients send. axum still
//! dispatches to the handler by its own match; a test holds the table to the
//! router (`tests/routes.rs`).

use super::access::{self, Access};
use crate::aws_calls;
use axum::extract::{ConnectInfo, Request};
use axum::middleware::Next;
use axum::response::Response;
use http::Method;
use lambda_http::request::RequestContext;
use std::net::{IpAddr, SocketAddr};

/// The route name of requests the contract does not describe.
pub const UNMATCHED: &str = "unmatched";

/// The contract's operation a request is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The method it is served as: `HEAD` is served (and counted) as `GET`.
    pub method: Method,
    /// The route template (`/pets/{petId}`); `None` when the table lists none.
    pub template: Option<&'static str>,
    /// Who may call it; `None` (nobody) when the table lists no such operation.
    pub access: Option<Access>,
}

impl Route {
    /// The operation of `method` on `path`.
    pub fn resolve(method: &Method, path: &str) -> Route {
        let method = if method == Method::HEAD {
            Method::GET
        } else {
            method.clone()
        };
        let listed = access::listed(&method, path);
        Route {
            method,
            template: listed.map(|(template, _)| template),
            access: listed.map(|(_, access)| access),
        }
    }

    /// The route [`resolve`] put on `req` (resolved afresh if it is missing).
    pub fn of<B>(req: &http::Request<B>) -> Route {
        req.extensions()
            .get::<Route>()
            .cloned()
            .unwrap_or_else(|| Route::resolve(req.method(), req.uri().path()))
    }

    /// `METHOD /route/{param}` as the contract lists it, or [`UNMATCHED`].
    pub fn name(&self) -> String {
        match self.template {
            Some(template) => format!("{} {template}", self.method),
            None => UNMATCHED.to_string(),
        }
    }

    /// Whether it may be called without a key.
    pub fn is_public(&self) -> bool {
        self.access == Some(Access::Public)
    }
}

/// Who sent a request, as far as the edge can tell before routing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sender {
    pub source_ip: Option<IpAddr>,
    pub api_key: Option<String>,
}

impl Sender {
    /// The viewer's address behind the optional front ([`super::front`]),
    /// else API Gateway's source IP in Lambda, the socket's locally; and the key.
    pub fn read<B>(req: &http::Request<B>) -> Sender {
        let from_front = req.extensions().get::<super::front::Viewer>().map(|v| v.0);
        let from_gateway = || {
            gateway(req)
                .and_then(|g| g.source_ip)
                .and_then(|ip| ip.parse().ok())
        };
        let from_socket = || {
            req.extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.ip())
        };
        Sender {
            source_ip: from_front.or_else(from_gateway).or_else(from_socket),
            api_key: req
                .headers()
                .get("x-api-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
        }
    }

    /// The sender [`resolve`] put on `req` (read afresh if it is missing).
    pub fn of<B>(req: &http::Request<B>) -> Sender {
        req.extensions()
            .get::<Sender>()
            .cloned()
            .unwrap_or_else(|| Sender::read(req))
    }
}

/// What API Gateway's context says of a request (in Lambda only).
pub struct Gateway<'a> {
    pub request_id: Option<&'a str>,
    pub source_ip: Option<&'a str>,
}

/// API Gateway's context of `req`, v2 (HTTP API) or v1 (REST API).
pub fn gateway<B>(req: &http::Request<B>) -> Option<Gateway<'_>> {
    match req.extensions().get::<RequestContext>()? {
        RequestContext::ApiGatewayV2(c) => Some(Gateway {
            request_id: c.request_id.as_deref(),
            source_ip: c.http.source_ip.as_deref(),
        }),
        RequestContext::ApiGatewayV1(c) => Some(Gateway {
            request_id: c.request_id.as_deref(),
            source_ip: c.identity.source_ip.as_deref(),
        }),
        _ => None,
    }
}

/// The middleware: puts the request's [`Route`] and [`Sender`] on it.
pub async fn resolve(mut req: Request, next: Next) -> Response {
    let route = Route::resolve(req.method(), req.uri().path());
    let sender = Sender::read(&req);
    // The AWS calls the request makes are recorded as its route's (`make
    // iam-check` finds the function API Gateway would send it to).
    let caller = aws_calls::enabled().then(|| aws_calls::Caller::Request {
        method: route.method.to_string(),
        route: route.template.unwrap_or(req.uri().path()).to_string(),
    });
    req.extensions_mut().insert(route);
    req.extensions_mut().insert(sender);
    aws_calls::within(caller, next.run(req)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(method: Method, path: &str) -> String {
        Route::resolve(&method, path).name()
    }

    #[test]
    fn a_path_is_named_by_its_route_and_unknown_paths_by_one_name() {
        assert_eq!(name(Method::GET, "/pets"), "GET /pets");
        assert_eq!(name(Method::HEAD, "/pets/12"), "GET /pets/{petId}");
        assert_eq!(
            name(Method::DELETE, "/store/orders/7"),
            "DELETE /store/orders/{orderId}"
        );
        assert_eq!(name(Method::GET, "/pets/"), UNMATCHED);
        assert_eq!(name(Method::GET, "/pets/1/2"), UNMATCHED);
        assert_eq!(name(Method::POST, "/pets/1"), UNMATCHED);
        assert_eq!(name(Method::GET, "/wp-admin.php"), UNMATCHED);
    }

    #[test]
    fn only_the_listed_public_operations_are_public() {
        assert!(Route::resolve(&Method::GET, "/openapi.json").is_public());
        assert!(Route::resolve(&Method::HEAD, "/openapi.json").is_public());
        let listed_get = access::listed(&Method::GET, "/pets").map(|(_, access)| access);
        assert_eq!(Route::resolve(&Method::HEAD, "/pets").access, listed_get);
        assert!(!Route::resolve(&Method::POST, "/openapi.json").is_public());
        assert!(!Route::resolve(&Method::GET, "/pets").is_public());
        assert_eq!(Route::resolve(&Method::POST, "/openapi.json").access, None);
    }
}
