use super::*;
use crate::webhooks::address::ScriptedResolver;
use std::net::IpAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const LOCAL: UrlPolicy = UrlPolicy {
    allow_loopback: true,
};
const STRICT: UrlPolicy = UrlPolicy {
    allow_loopback: false,
};

/// A receiver on 127.0.0.1 that answers every request with `answer` (or
/// never, when `None`), and hands each request's text to the test.
async fn receiver(answer: Option<&'static str>) -> (SocketAddr, mpsc::UnboundedReceiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (seen, requests) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let request = read_request(&mut stream).await;
                let _ = seen.send(request);
                match answer {
                    Some(answer) => stream.write_all(answer.as_bytes()).await.unwrap(),
                    None => std::future::pending::<()>().await,
                }
            });
        }
    });
    (address, requests)
}

async fn read_request(stream: &mut TcpStream) -> String {
    let mut text = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let n = stream.read(&mut buffer).await.unwrap_or(0);
        text.extend_from_slice(&buffer[..n]);
        let request = String::from_utf8_lossy(&text).to_string();
        if let Some((head, body)) = request.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(str::to_string)
                })
                .and_then(|l| l.parse::<usize>().ok())
                .unwrap_or(0);
            if body.len() >= length || n == 0 {
                return request;
            }
        }
        if n == 0 {
            return request;
        }
    }
}

fn attempter(policy: UrlPolicy, resolver: Arc<ScriptedResolver>) -> Attempter {
    Attempter::new(policy, resolver).unwrap()
}

fn secrets() -> Vec<String> {
    vec![sign::new_secret()]
}

async fn attempt_at(url: &str, attempter: &Attempter, body: &str) -> Attempt {
    let secrets = secrets();
    let request = AttemptRequest {
        url,
        webhook_id: "evt_1",
        body,
        secrets: &secrets,
    };
    attempter.attempt(&request).await
}

/// The failure of an attempt on a receiver answering `answer`.
async fn failure_answering(answer: &'static str) -> Failure {
    let (address, _requests) = receiver(Some(answer)).await;
    let url = format!("http://{address}/");
    match attempt_at(&url, &attempter(LOCAL, Arc::default()), "{}")
        .await
        .outcome
    {
        Outcome::Failed(failure) => failure,
        delivered => panic!("{delivered:?}"),
    }
}

#[tokio::test]
async fn a_2xx_is_delivered_with_the_signed_headers_and_the_body_as_given() {
    let (address, mut requests) = receiver(Some("HTTP/1.1 204 No Content\r\n\r\n")).await;
    let secrets = secrets();
    let url = format!("http://{address}/hooks?x=1");
    let body = r#"{"type":"order.placed","timestamp":"t","data":{}}"#;
    let request = AttemptRequest {
        url: &url,
        webhook_id: "evt_1",
        body,
        secrets: &secrets,
    };
    let attempt = attempter(LOCAL, Arc::default()).attempt(&request).await;
    assert_eq!(attempt.outcome, Outcome::Delivered { status: 204 });
    let seen = requests.recv().await.unwrap();
    assert!(seen.starts_with("POST /hooks?x=1 HTTP/1.1\r\n"), "{seen}");
    let header = |name: &str| {
        seen.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")).map(str::to_string))
            .unwrap_or_default()
    };
    let timestamp = attempt.at.timestamp();
    assert_eq!(header("webhook-id"), "evt_1");
    assert_eq!(header("webhook-timestamp"), timestamp.to_string());
    let expected = sign::signature_header(&secrets, "evt_1", timestamp, body).unwrap();
    assert_eq!(header("webhook-signature"), expected);
    assert_eq!(header("content-type"), "application/json");
    assert!(seen.ends_with(body));
}

#[tokio::test]
async fn a_redirect_is_a_failed_attempt_not_followed() {
    let answer = "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.2/\r\ncontent-length: 0\r\n\r\n";
    let failure = failure_answering(answer).await;
    assert_eq!(
        (failure.kind, failure.status),
        (FailureKind::Redirect, Some(307))
    );
}

#[tokio::test]
async fn retry_after_is_read_on_429_and_503_only() {
    let cases = [
        (
            "429 Too Many Requests",
            "120",
            Some(RetryAfter::Delay(Duration::from_secs(120))),
        ),
        (
            "503 Service Unavailable",
            "Wed, 21 Oct 2026 07:28:00 GMT",
            Some(RetryAfter::At("2026-10-21T07:28:00Z".parse().unwrap())),
        ),
        ("503 Service Unavailable", "soon", None),
        ("500 Internal Server Error", "120", None),
    ];
    for (status, value, expected) in cases {
        let answer =
            format!("HTTP/1.1 {status}\r\nRetry-After: {value}\r\ncontent-length: 0\r\n\r\n");
        let failure = failure_answering(answer.leak()).await;
        assert_eq!(failure.kind, FailureKind::Status);
        assert_eq!(failure.retry_after, expected, "{status} {value}");
    }
}

#[tokio::test]
async fn a_receiver_that_never_answers_times_out_within_the_budget() {
    let (address, _requests) = receiver(None).await;
    let budget = Duration::from_millis(200);
    let attempter = attempter(LOCAL, Arc::default()).with_timeout(budget);
    let attempt = attempt_at(&format!("http://{address}/"), &attempter, "{}").await;
    assert_eq!(attempt.outcome, Outcome::failed(FailureKind::Timeout));
    assert!(attempt.duration_ms >= 200);
}

#[tokio::test]
async fn a_name_rebound_to_loopback_is_blocked_and_never_contacted() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let resolver = Arc::new(ScriptedResolver::default());
    let public: IpAddr = "8.8.8.8".parse().unwrap();
    let loopback: IpAddr = "127.0.0.1".parse().unwrap();
    resolver.answer("rebind.example", vec![vec![public], vec![loopback]]);
    let url = format!("https://rebind.example:{port}/");
    // Registration: the name is public then.
    assert!(check_url(&url, &STRICT, resolver.as_ref()).await.is_ok());
    let attempt = attempt_at(&url, &attempter(STRICT, resolver), "{}").await;
    assert_eq!(
        attempt.outcome,
        Outcome::failed(FailureKind::BlockedAddress)
    );
    // The first connection the listener sees is ours: the attempt made none.
    let mut ours = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    ours.write_all(b"ours").await.unwrap();
    let (mut first, _) = listener.accept().await.unwrap();
    let mut marker = [0u8; 4];
    first.read_exact(&mut marker).await.unwrap();
    assert_eq!(&marker, b"ours");
}

#[tokio::test]
async fn no_answer_no_name_or_too_large_a_body_fail_by_kind() {
    let closed = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let local = attempter(LOCAL, Arc::default());
    let refused = attempt_at(&format!("http://{closed}/"), &local, "{}").await;
    assert_eq!(refused.outcome, Outcome::failed(FailureKind::Connect));
    let unknown = attempt_at("https://nowhere.example/", &local, "{}").await;
    assert_eq!(unknown.outcome, Outcome::failed(FailureKind::Dns));
    let large = "x".repeat(MAX_BODY_BYTES + 1);
    let too_large = attempt_at(&format!("http://{closed}/"), &local, &large).await;
    assert_eq!(too_large.outcome, Outcome::failed(FailureKind::TooLarge));
}

#[tokio::test]
async fn https_to_a_plain_http_receiver_fails_as_tls() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        stream.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
    });
    let attempt = attempt_at(
        &format!("https://{address}/"),
        &attempter(LOCAL, Arc::default()),
        "{}",
    )
    .await;
    assert_eq!(attempt.outcome, Outcome::failed(FailureKind::Tls));
}
