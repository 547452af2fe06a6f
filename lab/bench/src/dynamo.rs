//! DynamoDB's JSON protocol by hand, for the few calls the bench makes itself
//! (reading the table's layout, reading items before and after a write):
//! the bench links no AWS SDK. DynamoDB Local checks that a request names an
//! access key, never its signature.

use crate::client::Error;
use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::net::SocketAddr;

/// One keep-alive connection to DynamoDB (Local).
pub struct DynamoDb {
    addr: SocketAddr,
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl DynamoDb {
    pub fn new(addr: SocketAddr) -> DynamoDb {
        DynamoDb { addr, sender: None }
    }

    /// Sends `operation` (e.g. `DescribeTable`) with `body`; its answer, or
    /// the error DynamoDB gave.
    pub async fn call(&mut self, operation: &str, body: &Value) -> Result<Value, Error> {
        if self.sender.as_ref().is_none_or(|s| s.is_closed()) {
            let stream = tokio::net::TcpStream::connect(self.addr).await?;
            stream.set_nodelay(true)?;
            let (sender, conn) =
                hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            self.sender = Some(sender);
        }
        let sender = self.sender.as_mut().ok_or("no connection to DynamoDB")?;
        sender.ready().await?;
        let request = Request::post("/")
            .header(http::header::HOST, self.addr.to_string())
            .header(http::header::CONTENT_TYPE, "application/x-amz-json-1.0")
            .header("x-amz-target", format!("DynamoDB_20120810.{operation}"))
            .header(
                http::header::AUTHORIZATION,
                "AWS4-HMAC-SHA256 Credential=local/20250101/us-east-1/dynamodb/aws4_request, \
                 SignedHeaders=host, Signature=0",
            )
            .body(Full::new(Bytes::from(serde_json::to_vec(body)?)))?;
        let response = sender.send_request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        let answer: Value = serde_json::from_slice(&body)?;
        if !status.is_success() {
            return Err(format!("DynamoDB {operation} answered {status}: {answer}").into());
        }
        Ok(answer)
    }
}
