//! The request id: API Gateway's in Lambda, a fresh one locally.

use super::route::gateway;
use http::{HeaderValue, Request};

/// The header API Gateway's (or a fresh) request id travels in.
pub const REQUEST_ID: &str = "x-request-id";

/// The id for `req`, set (overriding anything the client sent) on the request
/// by tower-http's `SetRequestHeaderLayer` and copied to the response by its
/// `PropagateRequestIdLayer`.
pub fn request_id<B>(req: &Request<B>) -> Option<HeaderValue> {
    match gateway(req).and_then(|g| g.request_id) {
        Some(id) => HeaderValue::from_str(id).ok(),
        None => HeaderValue::from_str(&format!("{:032x}", rand::random::<u128>())).ok(),
    }
}
