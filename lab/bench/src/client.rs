//! A minimal keep-alive HTTP/1.1 client: one connection per load worker, so
//! concurrency is exactly the number of workers (a closed loop, like oha's `-c`).

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// One connection to the service under test.
pub struct Conn {
    addr: SocketAddr,
    api_key: Option<String>,
    sender: Option<SendRequest<Full<Bytes>>>,
}

/// What came back.
pub struct Reply {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

/// The part of a created record the bench carries on with.
#[derive(serde::Deserialize)]
struct Created {
    id: u64,
}

impl Reply {
    /// The `id` of the record the request created, if the body has one.
    pub fn created_id(&self) -> Option<u64> {
        serde_json::from_slice::<Created>(&self.body)
            .ok()
            .map(|created| created.id)
    }
}

impl Conn {
    pub fn new(addr: SocketAddr, api_key: Option<String>) -> Conn {
        Conn {
            addr,
            api_key,
            sender: None,
        }
    }

    /// The service this connection goes to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, Error> {
        let stream = tokio::net::TcpStream::connect(self.addr).await?;
        stream.set_nodelay(true)?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(sender)
    }

    /// Sends one request, reconnecting once if the connection was closed.
    pub async fn send(
        &mut self,
        method: Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<Reply, Error> {
        self.send_with(method, path, body, None).await
    }

    /// As [`Conn::send`], with `Idempotency-Key: key` when given.
    pub async fn send_with(
        &mut self,
        method: Method,
        path: &str,
        body: Option<&serde_json::Value>,
        idempotency_key: Option<&str>,
    ) -> Result<Reply, Error> {
        let body = body.map(|b| Bytes::from(serde_json::to_vec(b).expect("JSON serializes")));
        for attempt in 0..2 {
            if self.sender.as_ref().is_none_or(|s| s.is_closed()) {
                self.sender = Some(self.connect().await?);
            }
            let sender = self.sender.as_mut().expect("connected");
            sender.ready().await?;
            let mut request = Request::builder()
                .method(method.clone())
                .uri(path)
                .header(http::header::HOST, self.addr.to_string());
            if let Some(key) = &self.api_key {
                request = request.header("x-api-key", key);
            }
            if body.is_some() {
                request = request.header(http::header::CONTENT_TYPE, "application/json");
            }
            if let Some(key) = idempotency_key {
                request = request.header("idempotency-key", key);
            }
            let request = request.body(Full::new(body.clone().unwrap_or_default()))?;
            match sender.send_request(request).await {
                Ok(response) => {
                    let (parts, body) = response.into_parts();
                    let body = body.collect().await?.to_bytes();
                    return Ok(Reply {
                        status: parts.status,
                        headers: parts.headers,
                        body,
                    });
                }
                Err(e) if attempt == 0 && e.is_canceled() => self.sender = None,
                Err(e) => return Err(e.into()),
            }
        }
        Err("connection kept closing".into())
    }
}
