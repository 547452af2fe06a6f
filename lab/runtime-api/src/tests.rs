//! The emulator against an in-process runtime client: `next`, then an
//! answer or an error, as a bootstrap's runtime loop makes them.

use super::*;
use http_body_util::Empty;
use std::sync::Mutex;

/// Hands out `events` numbered events, then holds; records what it is told.
#[derive(Default)]
struct Fake {
    events: usize,
    nexts: Mutex<Vec<usize>>,
    answers: Mutex<Vec<Answer>>,
    reports: Mutex<Vec<Report>>,
}

impl Function for Fake {
    async fn next(&self, served: usize, _at: Instant) -> Option<Bytes> {
        self.nexts.lock().unwrap().push(served);
        (served <= self.events).then(|| Bytes::from(format!("{{\"event\":{served}}}")))
    }

    fn response(&self, answer: Answer) {
        self.answers.lock().unwrap().push(answer);
    }

    fn error(&self, report: Report) {
        self.reports.lock().unwrap().push(report);
    }
}

const ARN: &str = "arn:aws:lambda:us-east-1:123456789012:function:fake";

async fn start(events: usize) -> (RuntimeApi, Arc<Fake>) {
    let fake = Arc::new(Fake {
        events,
        ..Fake::default()
    });
    let api = RuntimeApi::start(ARN.to_string(), fake.clone())
        .await
        .unwrap();
    (api, fake)
}

/// One call on a connection of its own: the status, headers and body.
async fn call(
    api: &RuntimeApi,
    method: Method,
    path: &str,
    body: &str,
) -> (StatusCode, http::HeaderMap, String) {
    let stream = tokio::net::TcpStream::connect(api.addr()).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", api.addr().to_string())
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

#[tokio::test]
async fn next_hands_out_the_event_with_the_headers_the_runtime_client_reads() {
    let (api, fake) = start(2).await;
    let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let (status, headers, body) = call(&api, Method::GET, NEXT, "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, "{\"event\":1}");
    let header = |name: &str| headers[name].to_str().unwrap().to_string();
    assert_eq!(header("lambda-runtime-aws-request-id"), "bench-request-1");
    assert_eq!(header("lambda-runtime-invoked-function-arn"), ARN);
    assert!(header("lambda-runtime-trace-id").ends_with("Sampled=0"));
    let deadline: u128 = header("lambda-runtime-deadline-ms").parse().unwrap();
    let ahead = deadline - before.as_millis();
    assert!((29_000..=31_000).contains(&ahead), "deadline {ahead} ms on");
    let (_, headers, body) = call(&api, Method::GET, NEXT, "").await;
    assert_eq!(body, "{\"event\":2}");
    assert_eq!(headers["lambda-runtime-aws-request-id"], "bench-request-2");
    assert_eq!(*fake.nexts.lock().unwrap(), [1, 2]);
}

#[tokio::test]
async fn an_answer_is_the_last_invocations_with_its_status() {
    let (api, fake) = start(3).await;
    let path = |n: usize| format!("{INVOCATION}bench-request-{n}/response");
    call(&api, Method::GET, NEXT, "").await;
    let (status, _, body) = call(&api, Method::POST, &path(1), r#"{"statusCode":201}"#).await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::ACCEPTED, "{\"status\":\"OK\"}")
    );
    call(&api, Method::GET, NEXT, "").await;
    call(&api, Method::POST, &path(2), r#"{"batchItemFailures":[]}"#).await;
    call(&api, Method::GET, NEXT, "").await;
    call(&api, Method::POST, &path(3), "not json").await;
    let answers = fake.answers.lock().unwrap();
    let seen: Vec<(usize, u16)> = answers.iter().map(|a| (a.served, a.status)).collect();
    assert_eq!(seen, [(1, 201), (2, 200), (3, 0)]);
    assert!(answers[0].at <= answers[1].at);
    assert!(fake.reports.lock().unwrap().is_empty());
}

#[tokio::test]
async fn errors_and_unknown_calls_are_reported_by_kind() {
    let (api, fake) = start(1).await;
    call(&api, Method::GET, NEXT, "").await;
    let failed = format!("{INVOCATION}bench-request-1/error");
    let (status, _, _) = call(&api, Method::POST, &failed, "{\"errorType\":\"Boom\"}").await;
    assert_eq!(status, StatusCode::ACCEPTED);
    call(&api, Method::POST, INIT_ERROR, "no table").await;
    call(&api, Method::GET, "/2020-01-01/extension/event/next", "").await;
    let reports = fake.reports.lock().unwrap();
    let kinds: Vec<ReportKind> = reports.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [
            ReportKind::Invocation,
            ReportKind::Init,
            ReportKind::Unknown
        ]
    );
    assert_eq!(
        reports[0].to_string(),
        format!("{failed}: {{\"errorType\":\"Boom\"}}")
    );
    assert_eq!(reports[1].to_string(), format!("{INIT_ERROR}: no table"));
    assert!(fake.answers.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_next_past_the_last_event_is_never_answered() {
    let (api, fake) = start(0).await;
    let held = tokio::time::timeout(
        Duration::from_millis(200),
        call(&api, Method::GET, NEXT, ""),
    )
    .await;
    assert!(held.is_err(), "a held next was answered");
    assert_eq!(*fake.nexts.lock().unwrap(), [1]);
}

#[tokio::test]
async fn a_stopped_emulator_takes_no_more_calls() {
    let (api, _) = start(1).await;
    let addr = api.addr();
    drop(api);
    // The accept loop is aborted with it: a connection is refused, or
    // accepted by the backlog and never served.
    tokio::task::yield_now().await;
    let connected = tokio::time::timeout(Duration::from_millis(200), async {
        let stream = tokio::net::TcpStream::connect(addr).await.ok()?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .ok()?;
        tokio::spawn(connection);
        let request = Request::get(NEXT).body(Empty::<Bytes>::new()).ok()?;
        sender.send_request(request).await.ok()
    })
    .await;
    assert!(
        !matches!(connected, Ok(Some(_))),
        "served after it was dropped"
    );
}
