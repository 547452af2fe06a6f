//! The receiver the replay's webhook endpoints point at: on 127.0.0.1, it
//! answers 200 at once (so no attempt waits on it or is tried again), and
//! counts what it was sent, by endpoint (the URL's path names it) and by
//! `webhook-id` (the event's id, the same on every attempt of a delivery).
//! It does not verify signatures: the integration tests do.

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use petstore_bench::client::Error;
use petstore_bench::receiver::{delivery_id, serve};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::net::TcpListener;

/// What the receiver was sent so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Received {
    /// Requests, every attempt counted.
    pub attempts: usize,
    /// Distinct deliveries: (path, `webhook-id`) pairs.
    pub deliveries: usize,
    /// Distinct deliveries by path.
    pub by_path: BTreeMap<String, usize>,
}

struct State {
    attempts: usize,
    deliveries: BTreeMap<String, BTreeSet<String>>,
    last: Instant,
}

/// A running receiver; it stops with the model.
pub struct Receiver {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl Receiver {
    pub async fn start() -> Result<Receiver, Error> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            attempts: 0,
            deliveries: BTreeMap::new(),
            last: Instant::now(),
        }));
        let shared = state.clone();
        serve(listener, move |request| answer(shared.clone(), request));
        Ok(Receiver { addr, state })
    }

    /// The URL an endpoint registers, its requests counted under `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What it was sent so far.
    pub fn received(&self) -> Received {
        let state = self.lock();
        Received {
            attempts: state.attempts,
            deliveries: state.deliveries.values().map(BTreeSet::len).sum(),
            by_path: state
                .deliveries
                .iter()
                .map(|(path, ids)| (path.clone(), ids.len()))
                .collect(),
        }
    }

    /// When the last request came (or the receiver started).
    pub fn last_request(&self) -> Instant {
        self.lock().last
    }
}

async fn answer(
    state: Arc<Mutex<State>>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let path = request.uri().path().trim_start_matches('/').to_string();
    let id = delivery_id(request).await;
    {
        let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
        state.attempts += 1;
        state.deliveries.entry(path).or_default().insert(id);
        state.last = Instant::now();
    }
    Ok(Response::new(Full::new(Bytes::new())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// One attempt, as the service sends it, on a connection of its own.
    async fn attempt(addr: SocketAddr, path: &str, id: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr)
            .await
            .expect("connects");
        let body = "{}";
        let request = format!(
            "POST /{path} HTTP/1.1\r\nhost: {addr}\r\nwebhook-id: {id}\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.expect("sends");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.expect("answered");
        answer
    }

    #[tokio::test]
    async fn a_delivery_is_counted_once_however_many_attempts_it_takes() {
        let receiver = Receiver::start().await.expect("listens");
        let answer = attempt(receiver.addr, "staff", "evt_1").await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        attempt(receiver.addr, "staff", "evt_1").await;
        attempt(receiver.addr, "customer/3", "evt_1").await;
        let received = receiver.received();
        assert_eq!((received.attempts, received.deliveries), (3, 2));
        let by_path: Vec<(&str, usize)> = received
            .by_path
            .iter()
            .map(|(path, n)| (path.as_str(), *n))
            .collect();
        assert_eq!(by_path, [("customer/3", 1), ("staff", 1)]);
    }
}
