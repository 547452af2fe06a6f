//! The request id: API Gateway's in Lambda, a fresh one locally.

use http::{HeaderValue, Request};

/// The id for `req`, set (overriding anything the client sent) on the request
/// by tower-http's `SetRequestHeaderLayer` and copied to the response by its
/// `PropagateRequestIdLayer`.
pub fn request_id<B>(req: &Request<B>) -> Option<HeaderValue> {
    use lambda_http::request::RequestContext as Ctx;
    let from_gateway = match req.extensions().get::<Ctx>() {
        Some(Ctx::ApiGatewayV2(c)) => c.request_id.as_deref(),
        Some(Ctx::ApiGatewayV1(c)) => c.request_id.as_deref(),
        _ => None,
    };
    match from_gateway {
        Some(id) => HeaderValue::from_str(id).ok(),
        None => HeaderValue::from_str(&format!("{:032x}", rand::random::<u128>())).ok(),
    }
}
