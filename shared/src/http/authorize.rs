//! The access check: 403 `FORBIDDEN` unless the access table
//! ([`super::access`]) lets this caller call the request's operation, as
//! [`super::route::resolve`] found it.

use super::access::permits;
use super::error::ApiError;
use super::route::Route;
use crate::records::Caller;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The route layer: before the handler, on routes axum matched.
pub async fn enforce(req: Request, next: Next) -> Response {
    let access = Route::of(&req).access;
    if permits(access, req.extensions().get::<Caller>()) {
        next.run(req).await
    } else {
        ApiError::Forbidden.into_response()
    }
}
