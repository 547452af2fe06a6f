//! A fault-injecting HTTP proxy between the service and DynamoDB Local.
//!
//! Each call it receives draws a fault from a seeded generator: the
//! connection reset before the call is forwarded (DynamoDB never sees it),
//! reset after DynamoDB answered (the change is made, the answer lost),
//! throttled (400 `ProvisionedThroughputExceededException`), 500
//! `InternalServerError`, or delayed; or forwarded untouched. The SDK sees what
//! it would see from DynamoDB on a bad day, and its own retries (which retry
//! throttles, 500s and resets) are part of the picture. Concurrency decides
//! which call gets which draw, so a run is reproducible in its mix of faults,
//! not call for call: tests assert invariants, not counts.
//!
//! [`FaultProxy::calls`] lists every call it received (operation and
//! request body), so a test can count what a request cost.
//!
//! [`FaultProxy::cancel_next_transaction`] scripts one fault exactly: the
//! next `TransactWriteItems` is cancelled by a conflict on its last item, as
//! DynamoDB cancels one that meets another transaction on an item.
//!
//! [`FaultProxy::hold_first`] forces an interleaving: the first call a
//! predicate picks is held before it is forwarded, until the test has made
//! the write it must meet and releases it. A race test asserts that its
//! race happened only when the race was made to happen this way, so it
//! passes on every machine and fails without the code it protects.
//!
//! Two more script one call each, picked by its operation and a text its
//! body holds (a key such as `PET#42`): [`FaultProxy::hold_next`] keeps it
//! from DynamoDB until the test lets it go, so another write lands first
//! (a race forced, not hoped for); [`FaultProxy::lose_next_answer`]
//! forwards it and resets the connection once DynamoDB answered (the change
//! made, the answer lost).

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};

/// How often each fault is drawn, in percent of calls.
#[derive(Debug, Clone, Copy)]
pub struct FaultMix {
    pub reset_before: u32,
    pub reset_after: u32,
    pub throttle: u32,
    pub server_error: u32,
    pub delay: u32,
    /// The longest delay.
    pub max_delay: Duration,
}

impl FaultMix {
    /// No random faults.
    pub const NONE: FaultMix = FaultMix {
        reset_before: 0,
        reset_after: 0,
        throttle: 0,
        server_error: 0,
        delay: 0,
        max_delay: Duration::ZERO,
    };

    fn total(&self) -> u32 {
        self.reset_before + self.reset_after + self.throttle + self.server_error + self.delay
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    ResetBefore,
    ResetAfter,
    Throttle,
    ServerError,
    Delay(Duration),
}

/// What the proxy did, by fault.
#[derive(Debug, Default)]
pub struct FaultCounts {
    pub calls: AtomicU64,
    pub reset_before: AtomicU64,
    pub reset_after: AtomicU64,
    pub throttled: AtomicU64,
    pub server_errors: AtomicU64,
    pub delayed: AtomicU64,
}

impl FaultCounts {
    pub fn summary(&self) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        format!(
            "{} calls: {} reset before forwarding, {} reset after DynamoDB answered, \
             {} throttled, {} answered 500, {} delayed",
            get(&self.calls),
            get(&self.reset_before),
            get(&self.reset_after),
            get(&self.throttled),
            get(&self.server_errors),
            get(&self.delayed)
        )
    }
}

/// One call the proxy received.
#[derive(Debug, Clone)]
pub struct Call {
    /// `GetItem`, `UpdateItem`, ...
    pub operation: String,
    /// The request's JSON body (table names, keys, expressions).
    pub body: String,
    /// When it came in, and when its answer went back (`None`: not yet, or never).
    pub received: Instant,
    pub answered: Option<Instant>,
}

/// How many round trips `calls` made one after another: the longest chain
/// of calls each received after the one before it was answered.
pub fn sequential_round_trips(calls: &[Call]) -> usize {
    let mut chain: Vec<usize> = Vec::with_capacity(calls.len());
    for (i, call) in calls.iter().enumerate() {
        let before = calls[..i]
            .iter()
            .zip(&chain)
            .filter(|(earlier, _)| earlier.answered.is_some_and(|at| at <= call.received))
            .map(|(_, length)| *length)
            .max()
            .unwrap_or(0);
        chain.push(before + 1);
    }
    chain.into_iter().max().unwrap_or(0)
}

impl Call {
    /// Whether the call reaches `table`.
    pub fn reaches(&self, table: &str) -> bool {
        self.body.contains(&format!("\"{table}\""))
    }
}

/// What picks the call a [`HeldCall`] holds: its operation and body.
type Picks = Box<dyn Fn(&str, &str) -> bool + Send + Sync>;

/// One [`FaultProxy::hold_first`]: taken by the first call it picks.
struct Hold {
    picks: Picks,
    taken: AtomicBool,
    /// The held call's body, sent when it arrives.
    arrived: Mutex<Option<tokio::sync::oneshot::Sender<String>>>,
    released: tokio::sync::Notify,
}

/// A call held at the proxy until [`HeldCall::release`] (or its drop, so
/// that a failing test never leaves a call hanging).
pub struct HeldCall {
    hold: Arc<Hold>,
    arrived: Option<tokio::sync::oneshot::Receiver<String>>,
}

impl HeldCall {
    /// Waits until the call arrives and is held; its request body. Panics
    /// after `within` with none: the test never made the call it holds.
    pub async fn arrived(&mut self, within: Duration) -> String {
        let arrived = self.arrived.take().expect("arrived is awaited once");
        match tokio::time::timeout(within, arrived).await {
            Ok(Ok(body)) => body,
            _ => panic!("no call the hold picks arrived within {within:?}"),
        }
    }

    /// Forwards the held call (or lets the first picked call through
    /// unheld, if none has arrived yet).
    pub fn release(self) {}
}

impl Drop for HeldCall {
    fn drop(&mut self) {
        self.hold.taken.store(true, Ordering::SeqCst);
        self.hold.released.notify_one();
    }
}

struct Shared {
    upstream: SocketAddr,
    holds: Mutex<Vec<Arc<Hold>>>,
    calls: Mutex<Vec<Call>>,
    mix: FaultMix,
    rng: Mutex<StdRng>,
    counts: FaultCounts,
    cancel_next_transaction: AtomicBool,
    throttle_record_reads: AtomicU32,
    scripted: Mutex<Vec<Scripted>>,
}

/// One call scripted by [`FaultProxy::hold_next`] or
/// [`FaultProxy::lose_next_answer`].
struct Scripted {
    operation: String,
    holding: String,
    action: Action,
}

enum Action {
    Hold(Arc<Held>),
    LoseAnswer,
}

/// A call held back: [`Held::arrived`] once it reached the proxy, and it
/// goes on to DynamoDB once [`Held::release`] is called.
#[derive(Default)]
pub struct Held {
    arrived: tokio::sync::Notify,
    released: tokio::sync::Notify,
}

impl Held {
    /// Waits until the held call has reached the proxy (at most 10 s).
    pub async fn arrived(&self) {
        tokio::time::timeout(Duration::from_secs(10), self.arrived.notified())
            .await
            .expect("the held call reached the proxy");
    }

    /// Lets the held call go on to DynamoDB.
    pub fn release(&self) {
        self.released.notify_one();
    }
}

impl Shared {
    /// The scripted action for a call of `operation` whose body is `body`,
    /// taken (each acts once).
    fn scripted(&self, operation: &str, body: &[u8]) -> Option<Action> {
        let mut scripted = self.scripted.lock().unwrap_or_else(|e| e.into_inner());
        let body = String::from_utf8_lossy(body);
        let at = scripted
            .iter()
            .position(|s| s.operation == operation && body.contains(&s.holding))?;
        Some(scripted.remove(at).action)
    }

    fn draw(&self) -> Fault {
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        let mix = &self.mix;
        let roll = rng.random_range(0..100);
        let mut bound = 0;
        let mut next = |percent: u32| {
            bound += percent;
            roll < bound
        };
        if next(mix.reset_before) {
            Fault::ResetBefore
        } else if next(mix.reset_after) {
            Fault::ResetAfter
        } else if next(mix.throttle) {
            Fault::Throttle
        } else if next(mix.server_error) {
            Fault::ServerError
        } else if next(mix.delay) {
            let millis = mix.max_delay.as_millis().max(1) as u64;
            Fault::Delay(Duration::from_millis(rng.random_range(1..=millis)))
        } else {
            Fault::None
        }
    }
}

/// A running proxy; it stops with the test's runtime.
pub struct FaultProxy {
    pub endpoint: String,
    shared: Arc<Shared>,
}

impl FaultProxy {
    /// Listens on a free port, forwarding to `upstream` (DynamoDB Local's
    /// `http://host:port`) with faults drawn from `seed`.
    pub async fn start(upstream: &str, mix: FaultMix, seed: u64) -> FaultProxy {
        assert!(mix.total() <= 100, "a fault mix is at most 100%");
        let upstream: SocketAddr = upstream
            .trim_start_matches("http://")
            .parse()
            .expect("DynamoDB Local's endpoint is host:port");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let endpoint = format!("http://{}", listener.local_addr().expect("bound"));
        let shared = Arc::new(Shared {
            upstream,
            holds: Mutex::new(Vec::new()),
            calls: Mutex::new(Vec::new()),
            mix,
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            counts: FaultCounts::default(),
            cancel_next_transaction: AtomicBool::new(false),
            throttle_record_reads: AtomicU32::new(0),
            scripted: Mutex::new(Vec::new()),
        });
        let accepting = shared.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let shared = accepting.clone();
                tokio::spawn(async move {
                    let _ = serve_connection(stream, shared).await;
                });
            }
        });
        FaultProxy { endpoint, shared }
    }

    pub fn counts(&self) -> &FaultCounts {
        &self.shared.counts
    }

    /// Every call received so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        let calls = self.shared.calls.lock();
        calls.unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How many `operation` calls (`Query`, `GetItem`, ...) it received so far.
    pub fn calls_to(&self, operation: &str) -> u64 {
        let calls = self.shared.calls.lock();
        let calls = calls.unwrap_or_else(|e| e.into_inner());
        calls.iter().filter(|c| c.operation == operation).count() as u64
    }

    /// Throttles the next `reads` reads of an idempotency record (without
    /// forwarding them): enough for the SDK's own retries to give up.
    pub fn throttle_record_reads(&self, reads: u32) {
        self.shared
            .throttle_record_reads
            .store(reads, Ordering::SeqCst);
    }

    /// Holds the first call that `picks` (given its operation, `GetItem`,
    /// ..., and its JSON body) accepts, before forwarding it, until the
    /// returned [`HeldCall`] is released. Faults are drawn for it as usual
    /// once it is released.
    pub fn hold_first(
        &self,
        picks: impl Fn(&str, &str) -> bool + Send + Sync + 'static,
    ) -> HeldCall {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let hold = Arc::new(Hold {
            picks: Box::new(picks),
            taken: AtomicBool::new(false),
            arrived: Mutex::new(Some(sender)),
            released: tokio::sync::Notify::new(),
        });
        let holds = self.shared.holds.lock();
        holds.unwrap_or_else(|e| e.into_inner()).push(hold.clone());
        HeldCall {
            hold,
            arrived: Some(receiver),
        }
    }

    /// Holds the next `operation` call (`UpdateItem`, ...) whose body holds
    /// `holding` until the returned [`Held`] is released.
    pub fn hold_next(&self, operation: &str, holding: &str) -> Arc<Held> {
        let held = Arc::new(Held::default());
        self.script(operation, holding, Action::Hold(held.clone()));
        held
    }

    /// Forwards the next `operation` call whose body holds `holding`, and
    /// resets the connection once DynamoDB answered it.
    pub fn lose_next_answer(&self, operation: &str, holding: &str) {
        self.script(operation, holding, Action::LoseAnswer);
    }

    fn script(&self, operation: &str, holding: &str, action: Action) {
        let mut scripted = self
            .shared
            .scripted
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        scripted.push(Scripted {
            operation: operation.to_string(),
            holding: holding.to_string(),
            action,
        });
    }

    /// Cancels the next `TransactWriteItems` (without forwarding it) by a
    /// conflict on its last item.
    pub fn cancel_next_transaction(&self) {
        self.shared
            .cancel_next_transaction
            .store(true, Ordering::SeqCst);
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One client connection, with its own connection to DynamoDB Local. A reset
/// is the service failing the call: hyper then closes the connection without
/// an answer, which the SDK sees as a connection error.
async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) -> Result<(), BoxError> {
    let upstream = TcpStream::connect(shared.upstream).await?;
    let (sender, connection) =
        hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(upstream)).await?;
    tokio::spawn(connection);
    let sender = Arc::new(tokio::sync::Mutex::new(sender));
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        handle(request, shared.clone(), sender.clone())
    });
    hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await?;
    Ok(())
}

type Sender = tokio::sync::Mutex<hyper::client::conn::http1::SendRequest<Full<Bytes>>>;

async fn handle(
    request: Request<Incoming>,
    shared: Arc<Shared>,
    sender: Arc<Sender>,
) -> Result<Response<Full<Bytes>>, BoxError> {
    let counts = &shared.counts;
    counts.calls.fetch_add(1, Ordering::Relaxed);
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    let target = parts
        .headers
        .get("x-amz-target")
        .and_then(|t| t.to_str().ok());
    let call = Call {
        operation: call_operation(target),
        body: String::from_utf8_lossy(&body).into_owned(),
        received: Instant::now(),
        answered: None,
    };
    let index = {
        let mut calls = shared.calls.lock().unwrap_or_else(|e| e.into_inner());
        calls.push(call);
        calls.len() - 1
    };
    let operation = target.and_then(|t| t.rsplit('.').next()).unwrap_or("");
    let body_text = String::from_utf8_lossy(&body);
    let held = {
        let holds = shared.holds.lock().unwrap_or_else(|e| e.into_inner());
        holds
            .iter()
            .find(|hold| {
                (hold.picks)(operation, &body_text) && !hold.taken.swap(true, Ordering::SeqCst)
            })
            .cloned()
    };
    if let Some(hold) = held {
        let arrived = hold
            .arrived
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(arrived) = arrived {
            let _ = arrived.send(body_text.into_owned());
        }
        hold.released.notified().await;
    }
    if target.is_some_and(|t| t.ends_with(".TransactWriteItems"))
        && shared.cancel_next_transaction.swap(false, Ordering::SeqCst)
    {
        return Ok(cancelled_by_conflict_on_last_item(&body));
    }
    let reads_a_record = target.is_some_and(|t| t.ends_with(".GetItem"))
        && body.windows(12).any(|w| w == b"IDEMPOTENCY#");
    if reads_a_record
        && shared
            .throttle_record_reads
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    {
        counts.throttled.fetch_add(1, Ordering::Relaxed);
        return Ok(dynamodb_error(
            StatusCode::BAD_REQUEST,
            "ProvisionedThroughputExceededException",
        ));
    }
    let scripted = shared.scripted(&call_operation(target), &body);
    let mut lose_answer = false;
    match scripted {
        Some(Action::Hold(held)) => {
            held.arrived.notify_one();
            held.released.notified().await;
        }
        Some(Action::LoseAnswer) => lose_answer = true,
        None => {}
    }
    let fault = if lose_answer {
        Fault::ResetAfter
    } else {
        shared.draw()
    };
    match fault {
        Fault::ResetBefore => {
            counts.reset_before.fetch_add(1, Ordering::Relaxed);
            return Err("reset before forwarding".into());
        }
        Fault::Throttle => {
            counts.throttled.fetch_add(1, Ordering::Relaxed);
            return Ok(dynamodb_error(
                StatusCode::BAD_REQUEST,
                "ProvisionedThroughputExceededException",
            ));
        }
        Fault::ServerError => {
            counts.server_errors.fetch_add(1, Ordering::Relaxed);
            return Ok(dynamodb_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalServerError",
            ));
        }
        Fault::Delay(pause) => {
            counts.delayed.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(pause).await;
        }
        Fault::ResetAfter | Fault::None => {}
    }
    let response = {
        let mut sender = sender.lock().await;
        sender.ready().await?;
        sender
            .send_request(Request::from_parts(parts, Full::new(body)))
            .await?
    };
    let (parts, body) = response.into_parts();
    let body = body.collect().await?.to_bytes();
    if fault == Fault::ResetAfter {
        counts.reset_after.fetch_add(1, Ordering::Relaxed);
        return Err("reset after DynamoDB answered".into());
    }
    let mut calls = shared.calls.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(call) = calls.get_mut(index) {
        call.answered = Some(Instant::now());
    }
    Ok(Response::from_parts(parts, Full::new(body)))
}

/// The operation an `X-Amz-Target` names: `UpdateItem` of
/// `DynamoDB_20120810.UpdateItem`.
fn call_operation(target: Option<&str>) -> String {
    target
        .and_then(|t| t.rsplit('.').next())
        .unwrap_or_default()
        .to_string()
}

/// DynamoDB's answer to a transaction that met another one on its last item.
fn cancelled_by_conflict_on_last_item(request: &[u8]) -> Response<Full<Bytes>> {
    let items = serde_json::from_slice::<serde_json::Value>(request)
        .ok()
        .and_then(|r| r["TransactItems"].as_array().map(Vec::len))
        .unwrap_or(1);
    let mut reasons = vec![serde_json::json!({"Code": "None"}); items.saturating_sub(1)];
    reasons.push(serde_json::json!({
        "Code": "TransactionConflict",
        "Message": "Transaction is ongoing for the item"
    }));
    let body = serde_json::json!({
        "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
        "Message": "Transaction cancelled, please refer cancellation reasons for specific reasons",
        "CancellationReasons": reasons,
    });
    Response::builder()
        .status(StatusCode::BAD_REQUEST)
        .header("content-type", "application/x-amz-json-1.0")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a valid response")
}

/// An error as DynamoDB sends it (awsJson 1.0), which the SDK classifies.
fn dynamodb_error(status: StatusCode, code: &str) -> Response<Full<Bytes>> {
    let body = format!(
        r#"{{"__type":"com.amazonaws.dynamodb.v20120810#{code}","message":"injected by the test's proxy"}}"#
    );
    Response::builder()
        .status(status)
        .header("content-type", "application/x-amz-json-1.0")
        .header("x-amzn-errortype", code)
        .body(Full::new(Bytes::from(body)))
        .expect("a valid response")
}
