//! The rate-limit layer: every request is counted against its key's (or
//! source IP's) limits before it is served, answered 401, 429 or 503 here
//! (see [`crate::ratelimit`]), and every response carries the rate-limit
//! headers, rendered here from the limiter's numbers.
//!
//! Two paths, so that a refused request costs what contract section 4
//! allows: a 429 runs no write, and reads at most one record or page.
//! - [`serve_while_counting`]: a request whose caller this process knows (a
//!   valid key fresh in its cache, or a public operation) and whose window
//!   shows no sign of exhaustion here runs its handler while the count is
//!   made, behind a [`gate`]: the handler's first read goes out beside the
//!   count, and every later call, every write among them, waits until the
//!   count admits the request. Should the count refuse after all (other
//!   instances used the room meanwhile), the handler is dropped, its read's
//!   answer with it. A key this process does not know is looked up first
//!   ([`RateLimiter::look_up_ahead`](crate::ratelimit::RateLimiter::look_up_ahead)),
//!   so a cold instance's first request takes this path too.
//! - [`count_then_serve`]: the limiter decides first; the handler runs only
//!   for an admitted request: every other request (a known refusal, a key
//!   unknown or invalid, a source refused here).

use super::error::ApiError;
use super::route::{Route, Sender};
use crate::ratelimit::keys::ApiKeyHash;
use crate::ratelimit::window::Usage;
use crate::ratelimit::{Admission, Known, Plan, RateStatus, Verdict};
use crate::sdk::gate::{self, Gate};
use crate::warm_up::WarmUpRequest;
use crate::App;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use std::pin::pin;
use tokio::sync::watch;

/// What this request's count came to, for a handler that shows it (`GET
/// /me`, contract 4d): the numbers its rate-limit headers state, both
/// windows, so the body and the headers of one answer agree. Handed to the
/// handler before the count ends (a read beside the count); [`ThisCount::admitted`]
/// waits for it.
#[derive(Clone, Debug)]
pub struct ThisCount(watch::Receiver<Option<Counts>>);

/// One admitted request's count (see [`ThisCount`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    /// What the rate-limit headers say: one window, and both windows' limits.
    pub status: RateStatus,
    /// Both windows' counts after this request.
    pub usage: Usage,
    pub plan: Option<Plan>,
    /// The Unix second from which the key sent is unknown, if it has one.
    pub key_expires_at: Option<i64>,
}

impl ThisCount {
    /// The count, once the request is admitted (a refused request's handler
    /// is dropped while it waits).
    pub async fn admitted(mut self) -> Option<Counts> {
        let counts = self.0.wait_for(Option::is_some).await.ok()?;
        *counts
    }
}

impl Counts {
    fn of(admission: &Admission) -> Counts {
        Counts {
            status: admission.status,
            usage: admission.usage,
            plan: admission.plan,
            key_expires_at: admission.key_expires_at,
        }
    }
}

/// The middleware: picks the path, then puts the rate-limit headers (and, for
/// the request's log line, the caller and plan) on the answer.
pub async fn enforce(State(app): State<App>, req: Request, next: Next) -> Response {
    // Init's own read (crate::warm_up), which carries its caller: no one's to count.
    if WarmUpRequest::marks(&req) && req.method() == Method::GET {
        return next.run(req).await;
    }
    let route = Route::of(&req);
    let sender = Sender::of(&req);
    let key = ApiKeyHash::presented(sender.api_key.as_deref());
    let counted = Counted {
        key: key.as_ref(),
        source_ip: sender.source_ip,
        route: &route,
    };
    let (counts, this_count) = watch::channel(None);
    let mut req = req;
    req.extensions_mut().insert(ThisCount(this_count));
    let (admission, mut response) = match known(&app, counted).await {
        // The route layer checks a known caller's role before the handler
        // touches any data; an invalid key gets no handler (401 or public).
        Some(known) if route.is_public() || known.caller.is_some() => {
            serve_while_counting(&app, counted, known, req, next, &counts).await
        }
        _ => count_then_serve(&app, counted, req, next, &counts).await,
    };
    apply(&admission.status, response.headers_mut());
    if let Verdict::Admitted {
        caller: Some(caller),
    } = admission.verdict
    {
        response.extensions_mut().insert(caller);
    }
    if let Some(plan) = admission.plan {
        response.extensions_mut().insert(plan);
    }
    response
}

/// What this process knows of the request's caller and room, the key looked
/// up first when it does not know it (and may look it up).
async fn known(app: &App, counted: Counted<'_>) -> Option<Known> {
    let limiter = &app.limiter;
    if let Some(known) = limiter.known_with_room(counted.key, counted.source_ip) {
        return Some(known);
    }
    let key = counted.key?;
    if !limiter.look_up_ahead(key, counted.source_ip).await {
        return None;
    }
    limiter.known_with_room(counted.key, counted.source_ip)
}

/// What a request is counted as: the hash of the key it sent (made once),
/// its source, and its route.
#[derive(Clone, Copy)]
struct Counted<'a> {
    key: Option<&'a ApiKeyHash>,
    source_ip: Option<std::net::IpAddr>,
    route: &'a Route,
}

/// The handler runs behind its gate while the request is counted; the gate
/// opens when the count admits it, and the handler is dropped when it
/// refuses.
async fn serve_while_counting(
    app: &App,
    counted: Counted<'_>,
    known: Known,
    mut req: Request,
    next: Next,
    counts: &watch::Sender<Option<Counts>>,
) -> (Admission, Response) {
    if let Some(caller) = known.caller {
        req.extensions_mut().insert(caller);
    }
    let gate = Gate::default();
    let mut counting = pin!(app.limiter.admit_presented(counted.key, counted.source_ip));
    let mut serving = pin!(gate::within(gate.clone(), next.run(req)));
    let mut served = None;
    let admission = tokio::select! {
        admission = &mut counting => admission,
        response = &mut serving => {
            served = Some(response);
            counting.await
        }
    };
    let response = match admission.verdict {
        Verdict::Refused(refusal) => ApiError::from(refusal).into_response(),
        // The key's cache entry expired meanwhile, and it is no longer valid.
        Verdict::Admitted { caller: None } if !counted.route.is_public() => {
            ApiError::Unauthorized.into_response()
        }
        Verdict::Admitted { .. } => {
            counts.send_replace(Some(Counts::of(&admission)));
            gate.open();
            match served {
                Some(response) => response,
                None => serving.await,
            }
        }
    };
    (admission, response)
}

/// The request is counted; only an admitted one reaches its handler.
async fn count_then_serve(
    app: &App,
    counted: Counted<'_>,
    mut req: Request,
    next: Next,
    counts: &watch::Sender<Option<Counts>>,
) -> (Admission, Response) {
    let admission = app
        .limiter
        .admit_presented(counted.key, counted.source_ip)
        .await;
    let response = match admission.verdict {
        Verdict::Refused(refusal) => ApiError::from(refusal).into_response(),
        Verdict::Admitted { caller: None } if !counted.route.is_public() => {
            ApiError::Unauthorized.into_response()
        }
        Verdict::Admitted { caller } => {
            if let Some(caller) = caller {
                req.extensions_mut().insert(caller);
            }
            counts.send_replace(Some(Counts::of(&admission)));
            next.run(req).await
        }
    };
    (admission, response)
}

/// The `X-RateLimit-*` headers and the IETF draft's `RateLimit-Policy` /
/// `RateLimit`, for `status`.
pub fn headers(status: &RateStatus) -> Vec<(HeaderName, HeaderValue)> {
    let policy = format!(
        "\"minute\";q={};w=60, \"day\";q={};w=86400",
        status.limits.per_minute, status.limits.per_day
    );
    let current = format!(
        "\"{}\";r={};t={}",
        status.window.name(),
        status.remaining,
        status.seconds_to_reset()
    );
    let mut headers = vec![
        (
            HeaderName::from_static("x-ratelimit-limit"),
            HeaderValue::from(status.limit),
        ),
        (
            HeaderName::from_static("x-ratelimit-remaining"),
            HeaderValue::from(status.remaining),
        ),
        (
            HeaderName::from_static("x-ratelimit-reset"),
            HeaderValue::from(status.reset),
        ),
    ];
    // Both are ASCII digits, quotes, letters and punctuation: always valid.
    if let Ok(value) = HeaderValue::from_str(&policy) {
        headers.push((HeaderName::from_static("ratelimit-policy"), value));
    }
    if let Ok(value) = HeaderValue::from_str(&current) {
        headers.push((HeaderName::from_static("ratelimit"), value));
    }
    headers
}

/// Sets the headers for `status`, replacing any already there.
pub fn apply(status: &RateStatus, headers: &mut HeaderMap) {
    for (name, value) in self::headers(status) {
        headers.insert(name, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ratelimit::window::{usage, MIDNIGHT};
    use crate::ratelimit::Limits;

    #[test]
    fn the_policy_and_current_window_headers() {
        let now = MIDNIGHT + 15;
        let status = RateStatus::of(Limits::FREE, usage(now, 60, 60), now);
        let headers: HeaderMap = headers(&status).into_iter().collect();
        assert_eq!(headers["x-ratelimit-limit"], "60");
        assert_eq!(headers["x-ratelimit-remaining"], "0");
        assert_eq!(
            headers["x-ratelimit-reset"],
            (MIDNIGHT + 60).to_string().as_str()
        );
        assert_eq!(
            headers["ratelimit-policy"],
            "\"minute\";q=60;w=60, \"day\";q=1000;w=86400"
        );
        assert_eq!(headers["ratelimit"], "\"minute\";r=0;t=45");
    }
}
