//! The optional front (template.yaml's `Front`: CloudFront and AWS WAF before
//! the HTTP API): the API answers only requests that came through it.
//!
//! CloudFront adds [`ORIGIN_HEADER`] with a secret to every request it
//! forwards; a request to the `execute-api` endpoint that lacks it went
//! around the front's per-source limits and is refused here, first, before
//! the request id, the route, the count or any DynamoDB call: a refusal costs
//! nothing but this comparison. A request that has it comes from CloudFront,
//! so its source is the viewer CloudFront names in `CloudFront-Viewer-Address`
//! (set by CloudFront, never taken from the viewer), not CloudFront's own
//! address, which every viewer of one edge shares. The secret is removed from
//! the request, so no handler, log line or echo can show it.

use crate::http::error::ApiError;
use axum::extract::{Request, State};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// The header CloudFront adds as a custom origin header.
pub const ORIGIN_HEADER: &str = "x-origin-verify";

/// The header CloudFront sets to the viewer's address and port.
pub const VIEWER_ADDRESS_HEADER: &str = "cloudfront-viewer-address";

/// The viewer's address, as CloudFront gave it: the request's source for the
/// rate limiter (read by [`super::route::Sender::read`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Viewer(pub IpAddr);

/// Wraps `service` in the check when `secret` is set; returns it as it is otherwise.
pub fn guard(service: Router, secret: Option<&str>) -> Router {
    match secret {
        Some(secret) => service.layer(from_fn_with_state(
            Arc::<[u8]>::from(secret.as_bytes()),
            admit,
        )),
        None => service,
    }
}

async fn admit(State(secret): State<Arc<[u8]>>, mut req: Request, next: Next) -> Response {
    let sent = req.headers_mut().remove(ORIGIN_HEADER);
    if !sent.is_some_and(|sent| same_secret(sent.as_bytes(), &secret)) {
        return ApiError::NotThroughFront.into_response();
    }
    let viewer = req
        .headers()
        .get(VIEWER_ADDRESS_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(viewer_ip);
    if let Some(ip) = viewer {
        req.extensions_mut().insert(Viewer(ip));
    }
    next.run(req).await
}

/// Compares in time that depends on the length only, so the secret cannot be
/// guessed a byte at a time from answer times.
fn same_secret(sent: &[u8], secret: &[u8]) -> bool {
    sent.len() == secret.len()
        && sent
            .iter()
            .zip(secret)
            .fold(0u8, |differ, (a, b)| differ | (a ^ b))
            == 0
}

/// The address of `CloudFront-Viewer-Address`: `198.51.100.7:46532` or
/// `2001:db8::1:46532` (an IPv6 address, unbracketed, then the port).
fn viewer_ip(raw: &str) -> Option<IpAddr> {
    if let Ok(socket) = raw.parse::<SocketAddr>() {
        return Some(socket.ip());
    }
    let (ip, port) = raw.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    ip.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewer_addresses_are_read_in_both_families() {
        assert_eq!(viewer_ip("198.51.100.7:46532"), "198.51.100.7".parse().ok());
        assert_eq!(viewer_ip("2001:db8::1:46532"), "2001:db8::1".parse().ok());
        assert_eq!(viewer_ip("[2001:db8::1]:443"), "2001:db8::1".parse().ok());
        assert_eq!(viewer_ip("not an address"), None);
        assert_eq!(viewer_ip("198.51.100.7"), None);
    }

    #[test]
    fn only_the_same_secret_is_the_secret() {
        assert!(same_secret(b"s3cret", b"s3cret"));
        assert!(!same_secret(b"s3creT", b"s3cret"));
        assert!(!same_secret(b"s3cre", b"s3cret"));
        assert!(!same_secret(b"", b"s3cret"));
    }
}
