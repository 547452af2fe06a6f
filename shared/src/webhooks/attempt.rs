//! One webhook attempt (contract section 9): the URL checked again, one
//! connection to an address that check returned, a signed `POST`, an answer
//! judged within 15 seconds, no redirect followed.
//!
//! The connection is made here rather than by a general HTTP client because
//! the rules are about *where* it goes: a client that resolves the name
//! itself would look it up a second time, after the check, and a name can
//! answer differently the second time (rebinding). So the attempt dials a
//! `SocketAddr` it was given, and TLS checks the certificate against the
//! URL's host name (SNI too), as a browser would.

use super::address::{check_url, CheckedUrl, Resolve, UrlPolicy, UrlRefusal};
use super::sign;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use http_body_util::{BodyExt, Full};
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::{timeout_at, Instant};
use tokio_rustls::rustls;

mod outcome;
#[cfg(test)]
mod tests;

pub use outcome::{Attempt, Failure, FailureKind, Outcome, RetryAfter};

/// An attempt's whole budget: look-up, connection, TLS, answer (section 9).
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(15);
/// The largest payload an attempt sends (section 9: 20 KB).
pub const MAX_BODY_BYTES: usize = 20 * 1024;
/// How much of an answer's body is read before the connection is dropped:
/// nothing in it matters, and a receiver must not make us read megabytes.
const ANSWER_BODY_READ: usize = 4 * 1024;

/// What one attempt sends: to whom, and the signed payload.
pub struct AttemptRequest<'a> {
    pub url: &'a str,
    /// The event's `eventId`: the `webhook-id` of every attempt.
    pub webhook_id: &'a str,
    pub body: &'a str,
    /// The endpoint's active secrets, newest first.
    pub secrets: &'a [String],
}

/// Makes attempts: the URL rules, the resolver and the TLS settings, built
/// once per process.
#[derive(Clone)]
pub struct Attempter {
    policy: UrlPolicy,
    resolver: Arc<dyn Resolve>,
    /// Built at the first `https` attempt, not at start-up: loading the
    /// system's root certificates is most of a cold start's own work
    /// (about 8.8 million instructions, 0.6 of the bare function's whole
    /// init, as make bench measures it), and the `events` function, which only fans
    /// out, and most of the `webhooks` function's starts never attempt.
    tls: Arc<OnceLock<Result<tokio_rustls::TlsConnector, String>>>,
    timeout: Duration,
}

impl Attempter {
    /// With the operating system's root certificates (as the SDK's own
    /// client: Lambda's image, the laptop's, CI's), rustls on ring, loaded
    /// at the first `https` attempt.
    pub fn new(policy: UrlPolicy, resolver: Arc<dyn Resolve>) -> Result<Attempter, rustls::Error> {
        Ok(Attempter {
            policy,
            resolver,
            tls: Arc::new(OnceLock::new()),
            timeout: ATTEMPT_TIMEOUT,
        })
    }

    /// The TLS settings, built once; why not, when they cannot be (no root
    /// certificate on the system: every `https` attempt then fails as `tls`).
    fn tls(&self) -> Result<&tokio_rustls::TlsConnector, &str> {
        let built = self.tls.get_or_init(|| {
            let connector = tls_connector().map_err(|e| e.to_string());
            if let Err(error) = &connector {
                tracing::error!(%error, "webhook attempts cannot use TLS");
            }
            connector
        });
        built.as_ref().map_err(String::as_str)
    }

    /// The same with another budget than section 9's 15 seconds (tests).
    pub fn with_timeout(mut self, timeout: Duration) -> Attempter {
        self.timeout = timeout;
        self
    }

    pub fn policy(&self) -> &UrlPolicy {
        &self.policy
    }

    /// One attempt, start to end; never an error: every way it can fail is
    /// an [`Outcome`] the delivery records.
    pub async fn attempt(&self, request: &AttemptRequest<'_>) -> Attempt {
        let at = Utc::now();
        let started = Instant::now();
        let deadline = started + self.timeout;
        let outcome = match timeout_at(deadline, self.exchange(request, at, deadline)).await {
            Ok(outcome) => outcome,
            Err(_) => Outcome::failed(FailureKind::Timeout),
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Attempt {
            at,
            duration_ms,
            outcome,
        }
    }

    async fn exchange(
        &self,
        request: &AttemptRequest<'_>,
        at: DateTime<Utc>,
        deadline: Instant,
    ) -> Outcome {
        if request.body.len() > MAX_BODY_BYTES {
            return Outcome::failed(FailureKind::TooLarge);
        }
        let checked = match check_url(request.url, &self.policy, self.resolver.as_ref()).await {
            Ok(checked) => checked,
            Err(UrlRefusal::Unresolvable) => return Outcome::failed(FailureKind::Dns),
            Err(UrlRefusal::LookupTimedOut) => return Outcome::failed(FailureKind::DnsTimeout),
            Err(_) => return Outcome::failed(FailureKind::BlockedAddress),
        };
        let signed = match signed_request(&checked, request, at.timestamp()) {
            Ok(signed) => signed,
            Err(kind) => return Outcome::failed(kind),
        };
        let tcp = match connect(&checked).await {
            Ok(tcp) => tcp,
            Err(kind) => return Outcome::failed(kind),
        };
        let answer = if checked.is_https() {
            let Ok(name) = rustls::pki_types::ServerName::try_from(checked.host.clone()) else {
                return Outcome::failed(FailureKind::Tls);
            };
            let Ok(tls) = self.tls() else {
                return Outcome::failed(FailureKind::Tls);
            };
            match tls.connect(name, tcp).await {
                Ok(tls) => send(tls, signed, deadline).await,
                Err(_) => return Outcome::failed(FailureKind::Tls),
            }
        } else {
            send(tcp, signed, deadline).await
        };
        answer.map_or_else(Outcome::failed, |(status, headers)| {
            Outcome::judge(status, &headers)
        })
    }
}

/// The TLS settings of every attempt: the system's root certificates,
/// rustls on ring, HTTP/1.1.
fn tls_connector() -> Result<tokio_rustls::TlsConnector, rustls::Error> {
    let mut roots = rustls::RootCertStore::empty();
    let (trusted, _unreadable) =
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if trusted == 0 {
        return Err(rustls::Error::General(
            "no root certificate found on this system".into(),
        ));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(tls)))
}

/// The `POST` every attempt makes: the payload and the three signature headers.
fn signed_request(
    checked: &CheckedUrl,
    request: &AttemptRequest<'_>,
    timestamp: i64,
) -> Result<http::Request<Full<Bytes>>, FailureKind> {
    let signature =
        sign::signature_header(request.secrets, request.webhook_id, timestamp, request.body)
            .map_err(|_| FailureKind::Secret)?;
    let path = checked.url.path_and_query().map_or("/", |p| p.as_str());
    let host = checked
        .url
        .authority()
        .map_or(checked.host.as_str(), |a| a.as_str());
    http::Request::post(path)
        .header(http::header::HOST, host)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::USER_AGENT, "petstore-webhooks/1")
        .header(sign::HEADER_ID, request.webhook_id)
        .header(sign::HEADER_TIMESTAMP, timestamp.to_string())
        .header(sign::HEADER_SIGNATURE, signature)
        .body(Full::new(Bytes::copy_from_slice(request.body.as_bytes())))
        .map_err(|_| FailureKind::Connect)
}

/// A connection to the first of the checked addresses that answers: those
/// addresses and no other.
async fn connect(checked: &CheckedUrl) -> Result<TcpStream, FailureKind> {
    for &address in &checked.addresses {
        if let Ok(stream) = TcpStream::connect(SocketAddr::new(address, checked.port)).await {
            return Ok(stream);
        }
    }
    Err(FailureKind::Connect)
}

/// Sends the request on `io` (HTTP/1.1, one request) and returns the
/// answer's status and headers, having read at most a few KB of its body.
async fn send<IO>(
    io: IO,
    request: http::Request<Full<Bytes>>,
    deadline: Instant,
) -> Result<(http::StatusCode, http::HeaderMap), FailureKind>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = hyper_util::rt::TokioIo::new(io);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|_| FailureKind::Connect)?;
    // The connection's task ends with this attempt, whatever the receiver does.
    let driver = AbortOnDrop(tokio::spawn(async move {
        let _ = connection.await;
    }));
    let answer = sender
        .send_request(request)
        .await
        .map_err(|_| FailureKind::Connect)?;
    let (parts, mut body) = answer.into_parts();
    let mut read = 0;
    while read < ANSWER_BODY_READ {
        match timeout_at(deadline, body.frame()).await {
            Ok(Some(Ok(frame))) => read += frame.data_ref().map_or(0, Bytes::len),
            _ => break,
        }
    }
    drop(driver);
    Ok((parts.status, parts.headers))
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
