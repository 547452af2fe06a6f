//! `GET /me` (contract 4d): the calling key identity's own record: who it
//! is, its limits and how much of each window it has used (as this very
//! answer's rate-limit headers state them), the webhook endpoints it holds
//! and may hold, and when the key stops working, if it does. Never its
//! secret or its hash.
//!
//! It costs what a warm keyed read costs: the request's count, and beside it
//! one read, the key identity's webhook count (the key itself comes from the
//! wrapper's look-up).

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::{Extension, Router};
use chrono::{DateTime, SecondsFormat};
use petstore::http::error::ApiError;
use petstore::http::rate_limit::{Counts, ThisCount};
use petstore::http::respond::ok;
use petstore::ratelimit::window::RateWindow;
use petstore::ratelimit::Plan;
use petstore::records::{Caller, Id, Role};
use petstore::App;
use serde::Serialize;

pub fn routes() -> Router<App> {
    Router::new().route("/me", get(get_me))
}

/// The `Me` record of `openapi.yaml`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Me {
    id: Id,
    role: Role,
    plan: Plan,
    limits: Windows,
    webhooks: WebhookRoom,
    /// When the key stops working (RFC 3339), for a key that does.
    #[serde(skip_serializing_if = "Option::is_none")]
    expires_at: Option<String>,
}

#[derive(Debug, Serialize)]
struct Windows {
    minute: Window,
    day: Window,
}

/// One window after this request, as the rate-limit headers would state it.
#[derive(Debug, Serialize)]
struct Window {
    limit: u64,
    used: u64,
    remaining: u64,
    /// Unix seconds when the window ends.
    reset: i64,
}

#[derive(Debug, Serialize)]
struct WebhookRoom {
    held: u32,
    max: u32,
}

impl Window {
    fn of(counts: &Counts, window: RateWindow) -> Window {
        let limits = counts.status.limits;
        Window {
            limit: limits.of(window),
            used: counts.usage.count(window),
            remaining: counts.usage.remaining(limits, window),
            reset: window.end(counts.status.now),
        }
    }
}

async fn get_me(
    State(app): State<App>,
    caller: Caller,
    Extension(this_count): Extension<ThisCount>,
) -> Result<Response, ApiError> {
    // The webhook count is read beside the request's count (its first read).
    let (held, counts) = tokio::join!(app.db.webhooks_held(caller.key_id), this_count.admitted());
    let held = held?;
    let counts = counts.ok_or_else(|| ApiError::internal("GET /me answered before its count"))?;
    let plan = counts
        .plan
        .ok_or_else(|| ApiError::internal("GET /me without the key's plan"))?;
    let expires_at = counts
        .key_expires_at
        .and_then(|at| DateTime::from_timestamp(at, 0))
        .map(|at| at.to_rfc3339_opts(SecondsFormat::Secs, true));
    Ok(ok(&Me {
        id: caller.key_id,
        role: caller.role,
        plan,
        limits: Windows {
            minute: Window::of(&counts, RateWindow::Minute),
            day: Window::of(&counts, RateWindow::Day),
        },
        webhooks: WebhookRoom {
            held,
            max: caller.webhooks_cap,
        },
        expires_at,
    }))
}
