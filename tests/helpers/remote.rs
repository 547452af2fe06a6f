//! Requests over the network to a running stack: the tests that go through
//! `make run-lambda`'s function binaries (tests/lambda.rs) send them here.

use super::TestResponse;
use axum::body::Body;
use bytes::Bytes;
use http::{header, HeaderValue, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// The variable that names the stack, e.g. `http://127.0.0.1:3000`.
pub const STACK_URL: &str = "PETSTORE_LAMBDA_URL";

/// Whether `response` is `cargo lambda watch`'s own (a `problem+json` 500
/// it gives now and then while it recycles an instance), not the function's:
/// the tests that meet it retry, and `openapi.yaml` does not describe it.
pub fn is_dev_server_answer(response: &TestResponse) -> bool {
    response
        .header("content-type")
        .is_some_and(|value| value.starts_with("application/problem+json"))
}

/// A stack's address.
#[derive(Clone, Debug)]
pub struct Remote {
    /// `host:port`.
    authority: String,
}

impl Remote {
    /// The stack [`STACK_URL`] names; panics, saying how to run these tests, if none.
    pub fn from_env() -> Remote {
        let url = std::env::var(STACK_URL).unwrap_or_else(|_| {
            panic!("{STACK_URL} is not set: scripts/test-run-lambda.sh starts the stack and runs these tests")
        });
        let authority = url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        Remote { authority }
    }

    /// Sends `request` (its URI a path) on a connection of its own.
    pub async fn send(&self, request: Request<Body>) -> TestResponse {
        let (mut parts, body) = request.into_parts();
        let body: Bytes = body
            .collect()
            .await
            .expect("the request body is in memory")
            .to_bytes();
        let host = HeaderValue::from_str(&self.authority).expect("host:port is a header value");
        parts.headers.insert(header::HOST, host);
        let stream = TcpStream::connect(&self.authority)
            .await
            .unwrap_or_else(|e| panic!("the stack at {} does not answer: {e}", self.authority));
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("an HTTP/1 connection to the stack");
        tokio::spawn(connection);
        let response = sender
            .send_request(Request::from_parts(parts, Full::new(body)))
            .await
            .expect("the stack answers");
        let (parts, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .expect("the response body can be read")
            .to_bytes();
        TestResponse {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
        }
    }
}
