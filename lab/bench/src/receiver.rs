//! The webhook receiver the bench's deliveries go to: on 127.0.0.1, it
//! answers at once, so an attempt's time is the delivery path's own. It does
//! not verify signatures (the integration tests do, with the specification's
//! libraries); it answers as the step asks: 200, 500 on each event's first
//! attempt then 200 (one retry), or always 500 (every attempt fails).

use crate::client::Error;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;

/// How the receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Answer {
    Ok = 0,
    /// 500 to an event's first attempt (by `webhook-id`), 200 to the next.
    FailOnce = 1,
    Fail = 2,
}

impl Answer {
    /// As the page shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Ok => "200",
            Answer::FailOnce => "500, then 200",
            Answer::Fail => "500 to every attempt",
        }
    }
}

struct State {
    answer: AtomicU8,
    /// The `webhook-id`s already failed once ([`Answer::FailOnce`]).
    failed: Mutex<HashSet<String>>,
}

impl State {
    fn current(&self) -> Answer {
        match self.answer.load(Ordering::SeqCst) {
            a if a == Answer::Fail as u8 => Answer::Fail,
            a if a == Answer::FailOnce as u8 => Answer::FailOnce,
            _ => Answer::Ok,
        }
    }
}

/// A running receiver; it stops with the bench.
pub struct Receiver {
    pub addr: SocketAddr,
    state: Arc<State>,
}

impl Receiver {
    pub async fn start() -> Result<Receiver, Error> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            answer: AtomicU8::new(Answer::Ok as u8),
            failed: Mutex::default(),
        });
        let shared = state.clone();
        serve(listener, move |request| answer(shared.clone(), request));
        Ok(Receiver { addr, state })
    }

    /// The URL an endpoint registers.
    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    pub fn answer(&self, answer: Answer) {
        self.state.answer.store(answer as u8, Ordering::SeqCst);
    }

    pub fn current(&self) -> Answer {
        self.state.current()
    }
}

/// Serves HTTP/1.1 on `listener` from now on, each request answered by
/// `handle` (a receiver of the bench's or of the partition model's).
pub fn serve<F, Fut>(listener: TcpListener, handle: F)
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<Response<Full<Bytes>>, std::convert::Infallible>>
        + Send
        + 'static,
{
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let service = hyper::service::service_fn(handle.clone());
            tokio::spawn(async move {
                let io = TokioIo::new(stream);
                let served = hyper::server::conn::http1::Builder::new();
                let _ = served.serve_connection(io, service).await;
            });
        }
    });
}

/// An attempt's `webhook-id` (the event's id, the same on every attempt
/// of a delivery), its body read whole, as a receiver verifying it would.
pub async fn delivery_id(request: Request<Incoming>) -> String {
    let id = request
        .headers()
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let _ = request.into_body().collect().await;
    id
}

async fn answer(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let id = delivery_id(request).await;
    let status = match state.current() {
        Answer::Fail => StatusCode::INTERNAL_SERVER_ERROR,
        Answer::FailOnce => {
            let mut failed = state.failed.lock().unwrap_or_else(|e| e.into_inner());
            if failed.insert(id) {
                StatusCode::INTERNAL_SERVER_ERROR
            } else {
                StatusCode::OK
            }
        }
        Answer::Ok => StatusCode::OK,
    };
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    Ok(response)
}
