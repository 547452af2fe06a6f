//! DynamoDB over TLS, as in AWS: a proxy that terminates TLS with a
//! certificate signed by a CA made for the run, and forwards the plain bytes
//! to DynamoDB Local. The functions trust the CA through `SSL_CERT_FILE` (the
//! system's bundle plus ours, so loading it costs what Lambda's bundle does).
//!
//! [`TlsProxy::close_idle`] closes every connection (TLS close_notify, then
//! FIN), as DynamoDB closes connections left idle; the harness calls it while
//! the function is frozen between invocations.

use crate::spawn::CloseIdle;
use petstore_bench::client::Error;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{crypto::ring, ServerConfig};
use tokio_rustls::TlsAcceptor;

/// Where the system keeps its CA bundle (Debian's, then Amazon Linux's).
const SYSTEM_BUNDLES: [&str; 2] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
];

pub struct TlsProxy {
    pub addr: SocketAddr,
    /// Bumped to close every open connection.
    close: watch::Sender<u64>,
    open: Arc<AtomicUsize>,
    accept: tokio::task::JoinHandle<()>,
}

/// A CA and a server certificate for `localhost` and 127.0.0.1 it signed.
struct RunCertificates {
    ca_pem: String,
    server_der: CertificateDer<'static>,
    server_key: PrivateKeyDer<'static>,
}

fn make_certificates() -> Result<RunCertificates, Error> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "petstore coldstart run CA");
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, ca_key);
    let server_key = KeyPair::generate()?;
    let mut server = CertificateParams::new(vec!["localhost".to_string()])?;
    server
        .subject_alt_names
        .push(SanType::IpAddress([127, 0, 0, 1].into()));
    let server_cert = server.signed_by(&server_key, &issuer)?;
    Ok(RunCertificates {
        ca_pem: ca_cert.pem(),
        server_der: server_cert.der().clone(),
        server_key: PrivatePkcs8KeyDer::from(server_key.serialize_der()).into(),
    })
}

impl TlsProxy {
    /// Listens on a free port in front of `upstream`; writes the bundle the
    /// functions trust to `bundle`.
    pub async fn start(upstream: SocketAddr, bundle: &Path) -> Result<TlsProxy, Error> {
        let certificates = make_certificates()?;
        let system = SYSTEM_BUNDLES
            .iter()
            .find_map(|path| std::fs::read_to_string(path).ok())
            .unwrap_or_default();
        std::fs::write(bundle, format!("{system}\n{}", certificates.ca_pem))?;
        let config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(vec![certificates.server_der], certificates.server_key)?;
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (close, _) = watch::channel(0);
        let open = Arc::new(AtomicUsize::new(0));
        let accept = tokio::spawn(accept_loop(
            listener,
            acceptor,
            upstream,
            close.clone(),
            open.clone(),
        ));
        Ok(TlsProxy {
            addr,
            close,
            open,
            accept,
        })
    }

    /// The endpoint the functions are given.
    pub fn endpoint(&self) -> String {
        format!("https://localhost:{}", self.addr.port())
    }
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl CloseIdle for TlsProxy {
    fn close_idle(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            self.close.send_modify(|generation| *generation += 1);
            // Until every connection has sent its close, or 2 s.
            for _ in 0..200 {
                if self.open.load(Ordering::SeqCst) == 0 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    upstream: SocketAddr,
    close: watch::Sender<u64>,
    open: Arc<AtomicUsize>,
) {
    while let Ok((stream, _)) = listener.accept().await {
        let (acceptor, close, open) = (acceptor.clone(), close.subscribe(), open.clone());
        tokio::spawn(async move {
            open.fetch_add(1, Ordering::SeqCst);
            let _ = forward(stream, acceptor, upstream, close).await;
            open.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// One client connection: TLS in, plain out, until either side ends or the
/// proxy is told to close.
async fn forward(
    stream: TcpStream,
    acceptor: TlsAcceptor,
    upstream: SocketAddr,
    mut close: watch::Receiver<u64>,
) -> Result<(), Error> {
    let _ = stream.set_nodelay(true);
    close.borrow_and_update();
    let mut tls = acceptor.accept(stream).await?;
    let mut plain = TcpStream::connect(upstream).await?;
    let _ = plain.set_nodelay(true);
    let closed = tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut tls, &mut plain) => false,
        _ = close.changed() => true,
    };
    if closed {
        // close_notify, then FIN: what a server closing an idle connection sends.
        let _ = tls.shutdown().await;
    }
    Ok(())
}
